import { defineConfig } from 'vitest/config';

// One config for the workspace: tests import the packages by name, i.e. their compiled `dist/`
// (worker entries must be compiled JS on Node 20), so `npm test` builds first.
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', 'test/bench/**'],
    // Real threads and processes on a machine that may be busy: a test that spawns two servers
    // took 25 s at load 30. The budgets are generous; a test where time is the point bounds it
    // itself.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two test files at a time, whatever the core count (vitest's default on a 2-core machine is
    // one): the files mostly wait on child processes, threads and sockets, so two at once cut the
    // suite's wall time by about 40 % at load 20, with no test retried.
    maxWorkers: 2,
    // One retry: a test whose behaviour broke fails twice and stays red, while one that lost a
    // race with a loaded machine's scheduler gets a second chance. Every retried test is named
    // (the default reporter marks it, and CI's closing lines list it as flaky), so a flake is
    // seen and mended, not hidden.
    retry: 1,
    // Pools log to stderr at 'warn' by default; tests that read logs set their own logger.
    env: { MCPOOL_LOG_LEVEL: process.env.MCPOOL_LOG_LEVEL ?? 'silent' },
    reporters: process.env.CI ? ['default', ['json', { outputFile: 'test-results/vitest.json' }]] : ['default'],
  },
});
