/**
 * `MCPOOL_WORKER_CPU_PROF=<dir>` runs the actor threads under V8's CPU profiler: it is read when
 * a thread is created, not when the pool is made, and a thread that exits by itself (the
 * pool's drain) leaves its `.cpuprofile` in the directory. Real thread, real child.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fixtureConfig, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

const VAR = 'MCPOOL_WORKER_CPU_PROF';
const before = process.env[VAR];
const dirs: string[] = [];
afterEach(() => {
  if (before === undefined) delete process.env[VAR];
  else process.env[VAR] = before;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('actor threads under the CPU profiler', () => {
  it('a thread created after the variable was set writes its profile when the drain ends it', async () => {
    delete process.env[VAR];
    const pool = newPool({ actorHost: { warmSpare: false } });
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-cpuprof-'));
    dirs.push(dir);
    // Set after the pool was made: the variable counts when a thread is created.
    process.env[VAR] = dir;
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', newMark('cpuprof')), 's1');
    expect(textOf(await view.callTool('echo', { text: 'profiled' }))).toContain('profiled');
    await pool.drainAll({ timeoutMs: 15_000 });
    const profiles = readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'));
    expect(profiles).toHaveLength(1);
    const profile = JSON.parse(readFileSync(join(dir, profiles[0]!), 'utf8')) as { nodes: { callFrame: { url: string } }[] };
    // The actor's own code ran in the profiled thread.
    expect(profile.nodes.some((node) => node.callFrame.url.includes('packages/actor/'))).toBe(true);
  });
});
