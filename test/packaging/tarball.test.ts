/**
 * The published packages, used as a user would: every workspace package is packed with
 * `npm pack`, the tarballs are installed into an empty project outside the workspace (third-party
 * dependencies come from the registry, or npm's cache), and then
 * - `npx mcpool --version` prints the command's version;
 * - `mcpool serve` runs the built-in demo on 127.0.0.1 (a port of its own, a fresh HOME and state
 *   dir), answers its REST API, and exits 0 on SIGTERM leaving no server process behind;
 * - a plain ESM script imports `@mcpool/core` and `@mcpool/client`, pools the installed demo
 *   server through core (its worker entry resolved from the installed layout), and talks to the
 *   running daemon through the client; a CommonJS script can require() both.
 * Needs a built workspace (`npm test` builds first).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNoSurvivors } from '../helpers/processes.js';

const run = promisify(execFile);
const root = realpathSync(fileURLToPath(new URL('../..', import.meta.url)));
const workspaces = ['packages/protocol', 'packages/actor', 'packages/core', 'packages/client', 'packages/gateway', 'apps/daemon'];
const manifest = (dir: string): { name: string; version: string; license: string; engines: { node: string } } =>
  JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { name: string; version: string; license: string; engines: { node: string } };

/**
 * The environment of a user's shell: this run's npm (when the suite runs under `npm test`) sets
 * npm_* variables that would point an inner npm back at the workspace. The registry, cache and
 * user config are kept so a CI's npm setup still applies.
 */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const keep = new Set(['npm_config_registry', 'npm_config_cache', 'npm_config_userconfig']);
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) && !keep.has(key.toLowerCase())) continue;
    if (key === 'INIT_CWD' || key.startsWith('MCPOOL_') || key === 'VITEST' || key.startsWith('VITEST_')) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

let tmp: string;
let project: string;
let home: string;
let env: NodeJS.ProcessEnv;
let packed: Array<{ name: string; filename: string; files: Array<{ path: string }> }>;
let daemon: ChildProcess | undefined;

beforeAll(async () => {
  const started = Date.now();
  tmp = realpathSync(mkdtempSync(join(tmpdir(), 'mcpool-tarballs-')));
  project = join(tmp, 'project');
  home = join(tmp, 'home');
  env = userEnv({ HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_STATE_HOME: join(home, '.local', 'state') });

  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', tmp, ...workspaces.flatMap((w) => ['-w', w])], {
    cwd: root,
    env: userEnv({}),
    maxBuffer: 64 * 1024 * 1024,
  });
  packed = JSON.parse(stdout) as typeof packed;
  if (process.env.MCPOOL_TIMINGS) console.log(`packed in ${Date.now() - started} ms`);

  // An empty project: nothing of the workspace above it (tmp is outside the repository).
  mkdirSync(project, { recursive: true });
  mkdirSync(home, { recursive: true });
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'mcpool-install-check', private: true, type: 'module' }, null, 2));
  await run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', ...packed.map((p) => join(tmp, p.filename))],
    { cwd: project, env, maxBuffer: 64 * 1024 * 1024 },
  );
  if (process.env.MCPOOL_TIMINGS) console.log(`packed and installed in ${Date.now() - started} ms`);
}, 600_000);

afterAll(async () => {
  if (daemon?.exitCode === null && daemon.signalCode === null) daemon.kill('SIGKILL');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}, 120_000);

describe('the packed packages, installed into an empty project', () => {
  it('each tarball carries the licence and only source maps whose sources it ships', () => {
    expect(packed.map((p) => p.name).sort()).toEqual(workspaces.map((w) => manifest(w).name).sort());
    const licence = readFileSync(join(root, 'LICENSE'), 'utf8');
    for (const pkg of packed) {
      const dir = workspaces.find((w) => manifest(w).name === pkg.name)!;
      expect(manifest(dir).license, pkg.name).toBe('MIT');
      expect(manifest(dir).engines.node, pkg.name).toMatch(/>=/);
      const files = new Set(pkg.files.map((f) => f.path));
      expect(files.has('LICENSE'), `${pkg.name} LICENSE`).toBe(true);
      expect(readFileSync(join(root, dir, 'LICENSE'), 'utf8'), `${pkg.name} LICENSE`).toBe(licence);
      expect([...files].some((f) => f.endsWith('.test.ts') || f.endsWith('.tsbuildinfo')), `${pkg.name} ships tests or build info`).toBe(false);
      const broken: string[] = [];
      for (const file of files) {
        if (!file.endsWith('.map')) continue;
        const map = JSON.parse(readFileSync(join(root, dir, file), 'utf8')) as { sources: string[] };
        for (const source of map.sources) {
          const shipped = relative(join(root, dir), join(root, dir, dirname(file), source));
          if (!files.has(shipped)) broken.push(`${file} -> ${source}`);
        }
      }
      expect(broken, pkg.name).toEqual([]);
    }
  });

  it('installs without the workspace: every package comes from its tarball', () => {
    for (const w of workspaces) {
      const installed = join(project, 'node_modules', manifest(w).name);
      expect(existsSync(join(installed, 'package.json')), manifest(w).name).toBe(true);
      // A real copy, not a link back into the repository.
      expect(realpathSync(installed).startsWith(root)).toBe(false);
    }
  });

  it('`npx mcpool --version` prints the command’s version', async () => {
    // `--no`: never fetch a package called mcpool from the registry when the local bin is missing.
    const { stdout } = await run('npx', ['--no', '--', 'mcpool', '--version'], { cwd: project, env });
    expect(stdout.trim()).toBe(manifest('apps/daemon').version);
  }, 120_000);

  it('a CommonJS host can require() both libraries (require(esm), which `engines` relies on)', async () => {
    const { stdout } = await run(
      process.execPath,
      ['-e', "const core = require('@mcpool/core'); const client = require('@mcpool/client'); console.log(typeof core.McpTransportPool, typeof client.McpoolClient)"],
      { cwd: project, env },
    );
    expect(stdout.trim()).toBe('function function');
  }, 60_000);

  it('`mcpool serve` runs the built-in demo, the libraries work from a plain ESM script, SIGTERM ends it cleanly', async () => {
    const token = randomUUID();
    const state = join(tmp, 'state');
    const bin = join(project, 'node_modules', '.bin', 'mcpool');
    daemon = spawn(bin, ['serve', '--host', '127.0.0.1', '--port', '0'], {
      cwd: project,
      env: { ...env, MCPOOL_TOKEN: token, MCPOOL_STATE_DIR: state, MCPOOL_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const child = daemon;
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );

    // Bounded wait for the listening line (a cold start on a loaded machine takes seconds).
    const deadline = Date.now() + 120_000;
    let baseUrl: string | undefined;
    while (baseUrl === undefined) {
      baseUrl = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      if (baseUrl !== undefined) break;
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`mcpool serve did not listen:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(output).toMatch(/built-in/i);

    const demoServer = join(project, 'node_modules', 'mcpool', 'demo', 'demoServer.mjs');
    writeFileSync(
      join(project, 'use.mjs'),
      `import { McpTransportPool, ErrorCode } from '@mcpool/core';
import { McpoolClient } from '@mcpool/client';

const client = new McpoolClient({ baseUrl: process.env.BASE_URL, token: process.env.TOKEN });
const health = await client.health();
const workspace = await client.getWorkspaceMcp();

// Generous: a cold start on a loaded machine is slow, and speed is not what this checks.
const pool = new McpTransportPool({ stateDir: false, spawnTimeoutMs: 120000 });
const demo = await pool.acquire('demo', { command: process.execPath, args: [process.env.DEMO] }, 'script');
const result = await demo.callTool('add', { a: 2, b: 3 }, { timeoutMs: 60000 });
await demo.release();
const drained = await pool.drainAll();
console.log(JSON.stringify({
  health,
  servers: workspace.servers.map((s) => s.name),
  tools: demo.tools.map((t) => t.name),
  sum: result.content[0].text,
  drained: drained.errors.length,
  codes: typeof ErrorCode,
}));
`,
    );
    const script = await run(process.execPath, ['use.mjs'], {
      cwd: project,
      env: { ...env, BASE_URL: baseUrl, TOKEN: token, DEMO: demoServer },
      timeout: 240_000,
    });
    const used = JSON.parse(script.stdout.trim().split('\n').at(-1)!) as {
      health: unknown;
      servers: string[];
      tools: string[];
      sum: string;
      drained: number;
      codes: string;
    };
    expect(used.health).toBeTruthy();
    expect(used.servers.length).toBeGreaterThan(0);
    expect(used.tools).toContain('add');
    expect(used.sum).toBe('5');
    expect(used.drained).toBe(0);
    expect(used.codes).toBe('object');

    expect(child.kill('SIGTERM')).toBe(true);
    const end = await Promise.race([
      exited,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`mcpool serve did not exit on SIGTERM:\n${output}`)), 60_000)),
    ]);
    expect(end, output).toEqual({ code: 0, signal: null });
    // Nothing started from the project is left: not the daemon's demo server, not the script's.
    await expectNoSurvivors(project);
  }, 480_000);
});
