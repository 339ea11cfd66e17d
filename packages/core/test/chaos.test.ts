/**
 * The chaos run of issue 3: 4 entries, 16 sessions calling concurrently, random server kills
 * (SIGKILL by marker) and actor-thread crashes (throw / exit through the crashable test worker)
 * for CHAOS_MS → every call resolves or fails with a typed error, none hangs, and no process of
 * the pool is left at the end.
 *
 * `MCPOOL_CHAOS_MS` sets the length of the chaos phase (default 20000).
 */
import { afterAll, expect, it, vi } from 'vitest';
import { BroadcastChannel } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { McpTransportPool, PoolError, type ConnectionStatus, type PooledConnection } from '@mcpool/core';
import { fixtureConfig, killMarked, marker, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';

const CHAOS_MS = Number(process.env.MCPOOL_CHAOS_MS ?? 20_000);
const ENTRIES = 4;
const SESSIONS = 16;
/** A call not settled by then is a hang. */
const HANG_MS = 10_000;
/** An acquire not settled by then is a hang (spawn timeout 30 s + the actor's slack 5 s + margin). */
const ACQUIRE_HANG_MS = 45_000;
/** Consecutive failed acquires of one session on one entry before it stops trying that entry. */
const MAX_ACQUIRE_RETRIES = 25;
/** Longest a session waits for a disconnected view to come back (or fail) before trying again. */
const RECONNECT_WAIT_MS = 5_000;

const WORKER_URL = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url);
const REACQUIRE = new Set(['MCPOOL_SERVER_FAILED', 'MCPOOL_ACTOR_DIED', 'MCPOOL_CONNECTION_RELEASED']);

const marks = Array.from({ length: ENTRIES }, (_, i) => marker(`chaos${i}`));
const names = Array.from({ length: ENTRIES }, (_, i) => `chaos${i}`);
const configs = marks.map((mark, i) => fixtureConfig('echo.mjs', mark, { env: { CHAOS_ENTRY: String(i) } }));
const stateDir = mkdtempSync(join(tmpdir(), 'mcpool-chaos-'));
let pool: McpTransportPool | undefined;

afterAll(async () => {
  await pool?.drainAll({ force: true }).catch(() => undefined);
  for (const mark of marks) killMarked(mark);
  rmSync(stateDir, { recursive: true, force: true });
});

interface Counts {
  ok: number;
  failures: Map<string, number>;
  untyped: string[];
  hangs: number;
  acquireHangs: number;
  mismatches: number;
  acquires: number;
  acquireFailures: Map<string, number>;
  givenUp: number;
  reconnectWaits: number;
  /** One message per error code, for the report. */
  samples: Map<string, string>;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** Races `promise` against a guard timer: 'hang' when it has not settled within `ms`. */
async function guarded<T>(promise: Promise<T>, ms: number): Promise<{ value: T } | { error: unknown } | 'hang'> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<'hang'>((resolve) => {
    timer = setTimeout(() => resolve('hang'), ms);
  });
  try {
    return await Promise.race([promise.then((value) => ({ value }), (error: unknown) => ({ error })), guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves on the view's next `reconnected` or `failed`, or after `ms` (an event wait, bounded). */
function nextRecovery(view: PooledConnection, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const offs: (() => void)[] = [];
    const done = (): void => {
      clearTimeout(timer);
      for (const off of offs) off();
      resolve();
    };
    const timer = setTimeout(done, ms);
    offs.push(view.on('reconnected', done), view.on('failed', done));
    if (view.status !== 'disconnected') done();
  });
}

function typedCode(error: unknown, counts: Counts): string {
  if (error instanceof PoolError && typeof error.code === 'string' && error.code.startsWith('MCPOOL_')) {
    if (!counts.samples.has(error.code)) counts.samples.set(error.code, error.message);
    return error.code;
  }
  counts.untyped.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  return 'UNTYPED';
}

it(
  `chaos: ${ENTRIES} entries, ${SESSIONS} sessions, random child kills and actor crashes for ${CHAOS_MS} ms`,
  async () => {
    const p = new McpTransportPool({
      stateDir,
      drainDelayMs: 30_000,
      restartIntensity: { maxRestarts: 1000, periodMs: 1000 },
      actorHost: { workerUrl: WORKER_URL },
    });
    pool = p;
    const counts: Counts = {
      ok: 0,
      failures: new Map(),
      untyped: [],
      hangs: 0,
      acquireHangs: 0,
      mismatches: 0,
      acquires: 0,
      acquireFailures: new Map(),
      givenUp: 0,
      reconnectWaits: 0,
      samples: new Map(),
    };
    let stop = false;

    const views: (PooledConnection | undefined)[][] = Array.from({ length: SESSIONS }, () => Array.from({ length: ENTRIES }, () => undefined));

    /** Releases a dead view and acquires a new one; undefined once this entry is given up. */
    async function reacquire(s: number, k: number): Promise<PooledConnection | undefined> {
      const session = `session-${s}`;
      await views[s]![k]?.release();
      views[s]![k] = undefined;
      for (let attempt = 0; attempt < MAX_ACQUIRE_RETRIES && !stop; attempt++) {
        counts.acquires += 1;
        const outcome = await guarded(p.acquire(names[k]!, configs[k]!, session), ACQUIRE_HANG_MS);
        if (outcome === 'hang') {
          counts.acquireHangs += 1;
          return undefined;
        }
        if ('value' in outcome) {
          views[s]![k] = outcome.value;
          return outcome.value;
        }
        bump(counts.acquireFailures, typedCode(outcome.error, counts));
      }
      if (!stop) counts.givenUp += 1;
      return undefined;
    }

    // 1. Every session takes a view of every entry (4 processes shared by 16 sessions). One at a
    //    time, with retries.
    const setupStarted = Date.now();
    for (let s = 0; s < SESSIONS; s++) for (let k = 0; k < ENTRIES; k++) expect(await reacquire(s, k)).toBeDefined();
    const setupMs = Date.now() - setupStarted;
    const setupFailures = Object.fromEntries(counts.acquireFailures);
    counts.acquireFailures.clear();
    for (const mark of marks) expect(pidsWithMarker(mark)).toHaveLength(1);
    expect(p.getSnapshot().liveActors).toBe(ENTRIES);

    // 2. The callers: each session loops echo calls on a random one of its views.
    async function caller(s: number): Promise<void> {
      let seq = 0;
      while (!stop) {
        const k = Math.floor(Math.random() * ENTRIES);
        let view = views[s]![k];
        if (view === undefined || view.status === 'failed' || view.status === 'released') {
          view = await reacquire(s, k);
          if (view === undefined) continue;
        }
        if (view.status === 'disconnected') {
          counts.reconnectWaits += 1;
          await nextRecovery(view, RECONNECT_WAIT_MS);
          continue;
        }
        const text = `s${s}-e${k}-${seq++}`;
        const outcome = await guarded(view.callTool('echo', { text }, { timeoutMs: 5000 }), HANG_MS);
        if (outcome === 'hang') {
          counts.hangs += 1;
          continue;
        }
        if ('value' in outcome) {
          if (textOf(outcome.value) === text) counts.ok += 1;
          else counts.mismatches += 1;
          continue;
        }
        const code = typedCode(outcome.error, counts);
        bump(counts.failures, code);
        // Read again: the call's await may have changed it.
        const status = view.status as ConnectionStatus;
        if (REACQUIRE.has(code) || status === 'failed' || status === 'released') await reacquire(s, k);
        else if (status === 'disconnected') {
          counts.reconnectWaits += 1;
          await nextRecovery(view, RECONNECT_WAIT_MS);
        }
      }
    }

    // 3. The chaos: every 300–800 ms, SIGKILL one server or crash one actor thread.
    const crashes = new BroadcastChannel('mcpool-test-crash');
    const actions = { kill: 0, killMissed: 0, throw: 0, exit: 0 };
    async function chaos(): Promise<void> {
      const deadline = Date.now() + CHAOS_MS;
      const maxActions = Math.ceil(CHAOS_MS / 300) + 1;
      for (let n = 0; n < maxActions && Date.now() < deadline; n++) {
        await delay(300 + Math.random() * 500);
        const k = Math.floor(Math.random() * ENTRIES);
        if (Math.random() < 0.5) {
          // Only pids of this test's servers: the marker is unique to this run.
          const pids = pidsWithMarker(marks[k]!);
          if (pids.length === 0) actions.killMissed += 1;
          for (const pid of pids) {
            try {
              process.kill(pid, 'SIGKILL');
              actions.kill += 1;
            } catch {
              actions.killMissed += 1;
            }
          }
        } else {
          const kind = Math.random() < 0.5 ? 'throw' : 'exit';
          // `sentAt`: the worker ignores orders older than its own start (a replacement must not
          // die of its predecessor's order).
          crashes.postMessage({ serverName: names[k], kind, sentAt: Date.now() });
          actions[kind] += 1;
        }
      }
    }

    const started = Date.now();
    const callers = Array.from({ length: SESSIONS }, (_, s) => caller(s));
    await chaos();
    crashes.close();

    // 4. Stop the callers (each settles its current call within the guard), release, drain.
    stop = true;
    await Promise.all(callers);
    const chaosMs = Date.now() - started;
    await Promise.all(Array.from({ length: SESSIONS }, (_, s) => p.releaseSession(`session-${s}`)));
    const drained = await p.drainAll();
    const orphans = marks.flatMap((mark) => pidsWithMarker(mark));
    const health = await p.getHealth();

    const failures = Object.fromEntries([...counts.failures].sort());
    const acquireFailures = Object.fromEntries([...counts.acquireFailures].sort());
    const typed = [...counts.failures.values()].reduce((a, b) => a + b, 0) - (counts.failures.get('UNTYPED') ?? 0);
    console.log(
      `chaos: setup ${setupMs} ms (failed acquires ${JSON.stringify(setupFailures)}); ${chaosMs} ms, ${ENTRIES} entries × ${SESSIONS} sessions: calls ok=${counts.ok}, typed failures=${typed} ${JSON.stringify(failures)}, ` +
        `untyped=${counts.untyped.length}, hangs=${counts.hangs}, mismatches=${counts.mismatches}; acquires=${counts.acquires} ` +
        `(failed ${JSON.stringify(acquireFailures)}, hangs=${counts.acquireHangs}, given up=${counts.givenUp}), reconnect waits=${counts.reconnectWaits}; ` +
        `chaos: SIGKILL=${actions.kill} (missed ${actions.killMissed}), throw=${actions.throw}, exit=${actions.exit}; ` +
        `drainAll=${JSON.stringify(drained)}; orphans=${orphans.length}, zombies=${health.zombies}, liveActors=${health.liveActors}`,
    );

    console.log(`chaos error samples: ${JSON.stringify(Object.fromEntries(counts.samples))}`);
    expect(counts.untyped).toEqual([]);
    expect(counts.hangs).toBe(0);
    expect(counts.acquireHangs).toBe(0);
    expect(counts.mismatches).toBe(0);
    expect(counts.ok).toBeGreaterThan(0);
    expect(actions.kill + actions.throw + actions.exit).toBeGreaterThan(0);
    expect(drained.errors).toEqual([]);
    expect(orphans).toEqual([]);
    expect(health.liveActors).toBe(0);
  },
  CHAOS_MS + 60_000,
);

// Two defects the chaos run surfaced, each isolated so it shows deterministically.

// Regression: a call sent between the child's exit and the reported loss failed its write and
// came back as MCPOOL_UPSTREAM_ERROR; it is an interrupted call.
it('calls racing a server SIGKILL fail as CALL_INTERRUPTED or NOT_CONNECTED, never UPSTREAM_ERROR', async () => {
  const mark = marker('race');
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-race-'));
  const p = new McpTransportPool({ stateDir: dir, drainDelayMs: 30_000, restartIntensity: { maxRestarts: 1000, periodMs: 1000 } });
  try {
    const view = await p.acquire('race', fixtureConfig('echo.mjs', mark), 's1');
    const codes = new Map<string, number>();
    for (let round = 0; round < 10; round++) {
      const [pid] = pidsWithMarker(mark);
      expect(pid).toBeDefined();
      // 1. Calls go out back to back while the server dies under them.
      process.kill(pid!, 'SIGKILL');
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < 40 && view.status === 'connected'; i++) {
        calls.push(view.callTool('echo', { text: String(i) }).catch((error: unknown) => error));
        await delay(0);
      }
      // 2. Each one either succeeded before the death or failed with a transport-loss code.
      for (const outcome of await Promise.all(calls)) {
        if (!(outcome instanceof PoolError)) continue;
        codes.set(outcome.code, (codes.get(outcome.code) ?? 0) + 1);
      }
      await nextRecovery(view, RECONNECT_WAIT_MS);
      await vi.waitFor(() => expect(view.status).toBe('connected'), { timeout: 10_000, interval: 10 });
    }
    expect([...codes.keys()].filter((code) => code !== 'MCPOOL_CALL_INTERRUPTED' && code !== 'MCPOOL_NOT_CONNECTED')).toEqual([]);
  } finally {
    await p.drainAll({ force: true });
    killMarked(mark);
    rmSync(dir, { recursive: true, force: true });
  }
});

// Regression: the heartbeat pinged actors still loading their modules and killed them.
it('concurrent cold acquires without a warm spare are not killed by the heartbeat', async () => {
  const marks8 = Array.from({ length: 8 }, (_, i) => marker(`cold${i}`));
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-cold-'));
  // Threads still loading the SDK cannot answer within this timeout; they must not be pinged.
  const p = new McpTransportPool({ stateDir: dir, heartbeatIntervalMs: 50, heartbeatTimeoutMs: 250, actorHost: { warmSpare: false } });
  try {
    const views = await Promise.all(marks8.map((mark, i) => p.acquire(`cold${i}`, fixtureConfig('echo.mjs', mark), 's1')));
    expect(views.map((view) => view.status)).toEqual(Array(8).fill('connected'));
    expect(p.getSnapshot().liveActors).toBe(8);
  } finally {
    await p.drainAll({ force: true });
    for (const mark of marks8) killMarked(mark);
    rmSync(dir, { recursive: true, force: true });
  }
});
