/**
 * Issue 3: "500 acquire/release cycles → open MessagePorts, worker threads, child processes and
 * timers back to their baseline". Real actor threads, real fixture servers, every release path:
 * `view.release()`, `pool.release(id, session)`, `pool.releaseSession(session)`, `await using`.
 *
 * Measured:
 * - handles by type from `process.getActiveResourcesInfo()` (MessagePort, Timeout, …), per type;
 * - worker threads: `getSnapshot().liveActors` and this process's OS threads (/proc/self/task);
 * - child processes: by a marker unique to the test, and zombie children (`getHealth()`).
 * Counts are always read inside `expect.poll`, baseline included, so the poller's own timer
 * weighs the same on both sides.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpTransportPool, type PooledConnection } from '@mcpool/core';
import { isRunning } from '@mcpool/protocol/processTree';
import { SPAWN_TIMEOUT_MS } from '../../../test/helpers/pools.js';
import { expectNoSurvivors, fixtureConfig, killMarked, marker, pidFromResult, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';

// Hundreds of real actor threads and processes: minutes on a loaded two-core machine.
vi.setConfig({ testTimeout: 300_000 });

const WAIT = { timeout: 30_000, interval: 25 };

const pools: McpTransportPool[] = [];
const marks: string[] = [];
const dirs: string[] = [];

function newPool(options: ConstructorParameters<typeof McpTransportPool>[0]): McpTransportPool {
  const stateDir = mkdtempSync(join(tmpdir(), 'mcpool-leaks-'));
  dirs.push(stateDir);
  const pool = new McpTransportPool({ stateDir, spawnTimeoutMs: SPAWN_TIMEOUT_MS, ...options });
  pools.push(pool);
  return pool;
}

function newMark(label: string): string {
  const mark = marker(label);
  marks.push(mark);
  return mark;
}

type Counts = Record<string, number>;

/** Active handles of this thread, by type. */
function resources(): Counts {
  const counts: Counts = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

/** OS threads of this process: the main thread, V8/libuv helpers, and one per worker thread. */
function threads(): number {
  return readdirSync('/proc/self/task').length;
}

interface Baseline {
  resources: Counts;
  threads: number;
}

/**
 * Read inside `expect.poll`, like every later comparison: its own timeout timer counts on both
 * sides. Vitest itself keeps a timer or so for a moment at the start of a test: the baseline is
 * taken once only the poller's timer is left.
 */
async function baseline(): Promise<Baseline> {
  let base: Baseline | undefined;
  await expect
    .poll(() => {
      base = { resources: resources(), threads: threads() };
      return base.resources.Timeout ?? 0;
    }, WAIT)
    .toBeLessThanOrEqual(1);
  return base!;
}

/** Everything back to `base`: every handle type at its count, no extra thread. */
async function expectBackTo(base: Baseline): Promise<void> {
  await expect.poll(resources, WAIT).toEqual(base.resources);
  await expect.poll(threads, WAIT).toBeLessThanOrEqual(base.threads);
}

/**
 * No zombie child. Polled: a `ps` the pool itself just ran (a tree sweep) is a zombie for the
 * instant before the event loop reaps it.
 */
async function expectNoZombies(pool: McpTransportPool): Promise<void> {
  await expect.poll(async () => (await pool.getHealth()).zombies, WAIT).toBe(0);
}

type ReleasePath = 'view.release()' | 'pool.release(id, session)' | 'pool.releaseSession' | 'await using';
const PATHS: ReleasePath[] = ['view.release()', 'pool.release(id, session)', 'pool.releaseSession', 'await using'];

/**
 * One cycle: acquire, optionally use, release by `path`. Returns the server pid when `usePid`.
 * The view must be unusable afterwards, whichever path released it.
 */
async function cycle(pool: McpTransportPool, cfg: Record<string, unknown>, session: string, path: ReleasePath, call: 'none' | 'echo' | 'pid'): Promise<number | undefined> {
  let pid: number | undefined;
  let released: PooledConnection;
  const use = async (view: PooledConnection): Promise<void> => {
    if (call === 'echo') expect(textOf(await view.callTool('echo', { text: session }))).toBe(session);
    if (call === 'pid') pid = pidFromResult(await view.callTool('pid'));
  };
  if (path === 'await using') {
    {
      await using view = await pool.acquire('echo', cfg, session);
      await use(view);
      released = view;
    }
  } else {
    const view = await pool.acquire('echo', cfg, session);
    await use(view);
    released = view;
    if (path === 'view.release()') await view.release();
    else if (path === 'pool.release(id, session)') await pool.release(view.id, session);
    else await pool.releaseSession(session);
  }
  expect(released.status).toBe('released');
  await expect(released.callTool('echo', { text: 'late' })).rejects.toMatchObject({ code: 'MCPOOL_CONNECTION_RELEASED' });
  return pid;
}

beforeAll(async () => {
  // Warm-up outside any measurement: lazy module state (SDK imports in this thread, pino, the libuv
  // thread pool) is created once per process, not per cycle.
  const mark = newMark('warmup');
  const pool = newPool({ drainDelayMs: 30_000 });
  await cycle(pool, fixtureConfig('echo.mjs', mark), 'w', 'view.release()', 'echo');
  await pool.drainAll();
  expect(killMarked(mark)).toBe(0);
}, 120_000);

afterEach(async () => {
  try {
    await Promise.all(pools.splice(0).map((pool) => pool.drainAll({ force: true })));
    for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
  } finally {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
});

describe('acquire/release cycles leave nothing behind', () => {
  it('500 cycles on one live entry (long drain, alternating sessions, all four release paths)', async () => {
    const base = await baseline();
    const mark = newMark('cycles500');
    const cfg = fixtureConfig('echo.mjs', mark);
    const pool = newPool({ drainDelayMs: 60_000 });

    // 1. The first cycle spawns the entry; it then stays warm (draining) between cycles.
    const pid = await cycle(pool, cfg, 'a', 'view.release()', 'pid');
    expect(pidsWithMarker(mark)).toEqual([pid]);
    // Steady state with the entry idle: what every later cycle must come back to. An idle
    // entry's thread is unref'd, so it holds no active handle of the host.
    const steady = await baseline();
    expect(steady.resources.MessagePort ?? 0).toBe(base.resources.MessagePort ?? 0);
    expect(pool.getSnapshot().liveActors).toBe(1);

    // 2. 500 cycles, sessions a/b alternating, the release path rotating; a call now and then.
    const perPath = new Map<ReleasePath, number>();
    for (let i = 0; i < 500; i++) {
      const path = PATHS[i % PATHS.length]!;
      perPath.set(path, (perPath.get(path) ?? 0) + 1);
      const call = i % 50 === 7 ? 'pid' : i % 10 === 3 ? 'echo' : 'none';
      const seen = await cycle(pool, cfg, i % 2 === 0 ? 'a' : 'b', path, call);
      if (seen !== undefined) expect(seen).toBe(pid);
      if (i % 100 === 99) {
        // Same process, one actor, no refs left.
        expect(pidsWithMarker(mark)).toEqual([pid]);
        expect(pool.getSnapshot()).toMatchObject({ liveActors: 1, servers: { echo: { entryCount: 1, entrySummary: [{ entryIndex: 0, refs: 0 }] } } });
      }
    }
    expect([...perPath.values()]).toEqual([125, 125, 125, 125]);
    await vi.waitFor(() => expect(pool.getSnapshot().servers.echo!.entrySummary[0]!.status).toBe('draining'), WAIT);
    expect(pool.getSnapshot().budget.liveCount).toBe(1);

    // 3. Back to the steady state: no port, timer or thread per cycle survived.
    await expectBackTo(steady);
    await expectNoZombies(pool);

    // 4. drainAll: back to the baseline before the pool existed.
    expect(await pool.drainAll()).toEqual({ drained: 1, forced: 0, errors: [] });
    expect(pool.getSnapshot().liveActors).toBe(0);
    expect(isRunning(pid!)).toBe(false);
    expect(pidsWithMarker(mark)).toEqual([]);
    await expectBackTo(base);
    await expectNoZombies(pool);
  });

  it('20 cycles that let the entry drain and respawn each time (short drain)', async () => {
    const base = await baseline();
    const mark = newMark('respawn20');
    const cfg = fixtureConfig('echo.mjs', mark);
    const pool = newPool({ drainDelayMs: 30, shutdownStepMs: 1000 });
    const pids: number[] = [];

    for (let i = 0; i < 20; i++) {
      const session = i % 2 === 0 ? 'a' : 'b';
      const pid = await cycle(pool, cfg, session, PATHS[i % PATHS.length]!, 'pid');
      pids.push(pid!);
      expect(pidsWithMarker(mark).length).toBeLessThanOrEqual(1);
      // The entry drains and closes: its process and its actor thread go.
      await vi.waitFor(() => {
        expect(pool.getSnapshot().servers.echo).toBeUndefined();
        expect(pool.getSnapshot().liveActors).toBe(0);
        expect(isRunning(pid!)).toBe(false);
      }, WAIT);
      expect(pidsWithMarker(mark)).toEqual([]);
    }
    // A new process every time.
    expect(new Set(pids).size).toBe(20);
    expect(pool.getSnapshot().budget.liveCount).toBe(0);
    await expectNoZombies(pool);

    expect(await pool.drainAll()).toEqual({ drained: 0, forced: 0, errors: [] });
    await expectBackTo(base);
    expect(pidsWithMarker(mark)).toEqual([]);
  });

  it('per-session keys that lost their transport, some past the restart limit, are forgotten with their sessions: no phantom failed entry', async () => {
    const mark = newMark('phantom');
    const cfg = fixtureConfig('crashy.mjs', mark, { sharing: 'per-session' });
    const pool = newPool({ drainDelayMs: 60_000, restartIntensity: { maxRestarts: 2, periodMs: 60_000 } });
    const sessions = ['a', 'b', 'c', 'd'];
    for (const [i, session] of sessions.entries()) {
      // 1. Each session's own entry loses its server: once, or (every other session) past the limit.
      const view = await pool.acquire('crashy', cfg, session);
      const losses = i % 2 === 0 ? 3 : 1;
      for (let loss = 1; loss <= losses; loss++) {
        const next = new Promise<string>((resolve) => {
          const offReconnected = view.on('reconnected', () => (offReconnected(), offFailed(), resolve('reconnected')));
          const offFailed = view.on('failed', () => (offReconnected(), offFailed(), resolve('failed')));
        });
        await view.callTool('crash').catch(() => undefined);
        expect(await next).toBe(loss <= 2 ? 'reconnected' : 'failed');
      }
    }
    // 2. While their sessions live, the tripped keys show as failed entries and refuse acquires.
    await vi.waitFor(() => expect(pool.getSnapshot().servers.crashy!.entrySummary.filter((entry) => entry.status === 'failed')).toHaveLength(2), WAIT);
    await expect(pool.acquire('crashy', cfg, 'a')).rejects.toMatchObject({ code: 'MCPOOL_SERVER_FAILED' });
    expect(await pool.getHealth()).toMatchObject({ trippedKeys: 2, failingKeys: 4 });
    // 3. The sessions let go: every record kept for them goes, and no phantom entry is left.
    for (const session of sessions) await pool.releaseSession(session);
    expect(await pool.getHealth()).toMatchObject({ trippedKeys: 0, failingKeys: 0 });
    await vi.waitFor(() => expect(pool.getSnapshot().servers.crashy?.entrySummary.filter((entry) => entry.status === 'failed') ?? []).toEqual([]), WAIT);
    // 4. A session of the same id starts over.
    const again = await pool.acquire('crashy', cfg, 'a');
    expect(textOf(await again.callTool('echo', { text: 'fresh' }))).toBe('fresh');
  });
});

describe('the stdio of a server that died', () => {
  /** Sockets this process holds open (fds are the process's, whichever thread opened them). */
  function openSockets(): number {
    return readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:');
      } catch {
        return false;
      }
    }).length;
  }

  it('8 kills and reconnects of one entry leave no socket open: each dead child’s stdio is closed', async () => {
    const mark = newMark('stdio-sockets');
    const pool = newPool({ drainDelayMs: 60_000, restartIntensity: { maxRestarts: 100, periodMs: 60_000 } });
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 's');
    const pidNow = async (): Promise<number> => pidFromResult(await view.callTool('pid'));
    await pidNow();
    const before = openSockets();
    for (let kill = 0; kill < 8; kill++) {
      const back = new Promise<void>((resolve) => {
        const off = view.on('reconnected', () => (off(), resolve()));
      });
      process.kill(await pidNow(), 'SIGKILL');
      await back;
    }
    await pidNow();
    await expect.poll(openSockets, WAIT).toBe(before);
  });
});
