/**
 * The chaos run: 4 entries, 16 sessions calling concurrently, random server kills
 * (SIGKILL by marker) and actor-thread crashes (throw / exit through the crashable test worker)
 * for CHAOS_MS → every call resolves or fails with one of the codes a lost transport may give,
 * none hangs, and no process of the pool is left at the end.
 *
 * Seeded: the kill/crash schedule and every session's choice of entry come from fast-check with
 * the seed in the test's title; `MCPOOL_CHAOS_SEED=<seed>` replays that schedule (the interleaving
 * with real threads and processes still varies). `MCPOOL_CHAOS_MS` sets the length of the chaos
 * phase (default 8000).
 */
import { afterAll, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { BroadcastChannel } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ErrorCode, McpTransportPool, PoolError, type ConnectionStatus, type PooledConnection } from '@mcpool/core';
import { fixtureConfig, killMarked, marker, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';

const CHAOS_MS = Number(process.env.MCPOOL_CHAOS_MS ?? 8_000);
const SEED = process.env.MCPOOL_CHAOS_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.MCPOOL_CHAOS_SEED);
if (!Number.isSafeInteger(SEED)) throw new Error(`MCPOOL_CHAOS_SEED must be an integer, got ${process.env.MCPOOL_CHAOS_SEED}`);
const ENTRIES = 4;
const SESSIONS = 16;
/** A call's own timeout: on a loaded machine an echo can take this long while its entry respawns. */
const CALL_TIMEOUT_MS = 15_000;
/** A call not settled by then is a hang (its own timeout plus the view's grace and a margin). */
const HANG_MS = CALL_TIMEOUT_MS + 15_000;
/** The pool's spawn timeout: many actors and servers start at once here, on a busy machine. */
const SPAWN_TIMEOUT_MS = 60_000;
/** An acquire not settled by then is a hang (spawn timeout + the actor's slack 5 s + margin). */
const ACQUIRE_HANG_MS = SPAWN_TIMEOUT_MS + 30_000;
/** Consecutive failed acquires of one session on one entry before it stops trying that entry. */
const MAX_ACQUIRE_RETRIES = 25;
/** Longest a session waits for a disconnected view to come back (or fail) before trying again. */
const RECONNECT_WAIT_MS = 5_000;

const WORKER_URL = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url);
const REACQUIRE = new Set<string>([ErrorCode.SERVER_FAILED, ErrorCode.ACTOR_DIED, ErrorCode.CONNECTION_RELEASED]);
/**
 * What a call may fail with while its server is killed or its actor crashes: interrupted in
 * flight, refused while reconnecting, the entry or its actor given up (then re-acquired), or its
 * own timeout while the entry respawns. Never UPSTREAM_ERROR, INTERNAL or an untyped error.
 */
const CALL_CODES = new Set<string>([
  ErrorCode.CALL_INTERRUPTED,
  ErrorCode.NOT_CONNECTED,
  ErrorCode.CALL_TIMEOUT,
  ...REACQUIRE,
]);
/**
 * What an acquire may fail with meanwhile: the entry or its actor died during the start (the
 * actor's `start` request then times out as CALL_TIMEOUT, or fails as ACTOR_DIED), the server
 * was killed while it started (its era probe or `initialize` sees the connection close:
 * SPAWN_FAILED), the server did not come up in time, or the entry closed under every one of the
 * acquire's attaches (ENTRY_UNSTABLE: killed again each time the acquire took a fresh one).
 */
const ACQUIRE_CODES = new Set<string>([
  ErrorCode.SERVER_FAILED,
  ErrorCode.ACTOR_DIED,
  ErrorCode.CALL_TIMEOUT,
  ErrorCode.SPAWN_TIMEOUT,
  ErrorCode.SPAWN_FAILED,
  ErrorCode.ENTRY_UNSTABLE,
]);

/** The seeded plan: the chaos actions in order, and each session's run of entry choices. */
const MAX_ACTIONS = Math.ceil(CHAOS_MS / 300) + 1;
const PICKS = 512;
const [PLAN] = fc.sample(
  fc.record({
    actions: fc.array(
      fc.record({
        pauseMs: fc.integer({ min: 300, max: 800 }),
        entry: fc.integer({ min: 0, max: ENTRIES - 1 }),
        kind: fc.constantFrom('kill', 'kill', 'throw', 'exit'),
      }),
      { minLength: MAX_ACTIONS, maxLength: MAX_ACTIONS },
    ),
    picks: fc.array(fc.array(fc.integer({ min: 0, max: ENTRIES - 1 }), { minLength: PICKS, maxLength: PICKS }), { minLength: SESSIONS, maxLength: SESSIONS }),
  }),
  { seed: SEED, numRuns: 1 },
);
const plan = PLAN!;
const REPLAY = `seed ${SEED} (replay: MCPOOL_CHAOS_SEED=${SEED})`;

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
  calls: number;
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
  if (error instanceof PoolError) {
    if (!counts.samples.has(error.code)) counts.samples.set(error.code, error.message);
    return error.code;
  }
  counts.untyped.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  return 'UNTYPED';
}

it(
  `chaos: ${ENTRIES} entries, ${SESSIONS} sessions, random child kills and actor crashes for ${CHAOS_MS} ms, ${REPLAY}`,
  async () => {
    const p = new McpTransportPool({
      stateDir,
      spawnTimeoutMs: SPAWN_TIMEOUT_MS,
      drainDelayMs: 30_000,
      restartIntensity: { maxRestarts: 1000, periodMs: 1000 },
      // The shipped placement (one thread per entry): an actor crash must hit its own entry only.
      actorHost: { workerUrl: WORKER_URL },
    });
    pool = p;
    const counts: Counts = {
      ok: 0,
      failures: new Map(),
      untyped: [],
      calls: 0,
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
        const k = plan.picks[s]![seq % PICKS]!;
        let view = views[s]![k];
        if (view === undefined || view.status === 'failed' || view.status === 'released') {
          seq += 1;
          view = await reacquire(s, k);
          if (view === undefined) continue;
        }
        if (view.status === 'disconnected') {
          seq += 1;
          counts.reconnectWaits += 1;
          await nextRecovery(view, RECONNECT_WAIT_MS);
          continue;
        }
        const text = `s${s}-e${k}-${seq++}`;
        counts.calls += 1;
        const outcome = await guarded(view.callTool('echo', { text }, { timeoutMs: CALL_TIMEOUT_MS }), HANG_MS);
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

    // 3. The chaos, as planned: after each pause of 300–800 ms, SIGKILL one server or crash one
    //    actor thread.
    const crashes = new BroadcastChannel('mcpool-test-crash');
    const actions = { kill: 0, killMissed: 0, throw: 0, exit: 0 };
    async function chaos(): Promise<void> {
      const deadline = Date.now() + CHAOS_MS;
      for (const action of plan.actions) {
        if (Date.now() >= deadline) break;
        await delay(action.pauseMs);
        const k = action.entry;
        if (action.kind === 'kill') {
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
          // `sentAt`: the worker ignores orders older than its own start (a replacement must not
          // die of its predecessor's order).
          crashes.postMessage({ serverName: names[k], kind: action.kind, sentAt: Date.now() });
          actions[action.kind] += 1;
        }
      }
    }

    const started = Date.now();
    const callers = Array.from({ length: SESSIONS }, (_, s) => caller(s));
    await chaos();
    const callsDuringChaos = counts.calls;
    crashes.close();

    // 4. Stop the callers (each settles its current call within the guard), release, drain.
    stop = true;
    await Promise.all(callers);
    const chaosMs = Date.now() - started;
    await Promise.all(Array.from({ length: SESSIONS }, (_, s) => p.releaseSession(`session-${s}`)));
    const drained = await p.drainAll();
    const orphans = marks.flatMap((mark) => pidsWithMarker(mark));
    const health = await p.getHealth();

    const report = JSON.stringify({
      seed: SEED,
      setupMs,
      setupFailures,
      chaosMs,
      calls: counts.calls,
      ok: counts.ok,
      failures: Object.fromEntries([...counts.failures].sort()),
      acquires: counts.acquires,
      acquireFailures: Object.fromEntries([...counts.acquireFailures].sort()),
      givenUp: counts.givenUp,
      actions,
      samples: Object.fromEntries(counts.samples),
      untyped: counts.untyped,
    });
    // Every outcome typed and allowed; nothing hung or crossed sessions.
    expect(counts.untyped, report).toEqual([]);
    expect([...counts.failures.keys()].filter((code) => !CALL_CODES.has(code)), report).toEqual([]);
    expect([...counts.acquireFailures.keys()].filter((code) => !ACQUIRE_CODES.has(code)), report).toEqual([]);
    expect(counts.hangs, report).toBe(0);
    expect(counts.acquireHangs, report).toBe(0);
    expect(counts.mismatches, report).toBe(0);
    // The run did what it says: calls went out during the chaos and succeeded, and the planned
    // kills and crashes happened.
    expect(callsDuringChaos, report).toBeGreaterThanOrEqual(SESSIONS);
    expect(counts.ok, report).toBeGreaterThan(0);
    expect(actions.kill + actions.throw + actions.exit, report).toBeGreaterThan(0);
    expect(drained.errors).toEqual([]);
    expect(orphans).toEqual([]);
    expect(health.liveActors).toBe(0);
  },
  // Setup alone took 40 s at load 30 (64 acquires, 4 cold actors).
  CHAOS_MS + ACQUIRE_HANG_MS + 180_000,
);

// Two defects the chaos run surfaced, each isolated so it shows deterministically.

// Regression: a call sent between the child's exit and the reported loss failed its write and
// came back as MCPOOL_UPSTREAM_ERROR; it is an interrupted call.
it('calls racing a server SIGKILL fail as CALL_INTERRUPTED or NOT_CONNECTED, never UPSTREAM_ERROR', async () => {
  const mark = marker('race');
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-race-'));
  const p = new McpTransportPool({ stateDir: dir, spawnTimeoutMs: SPAWN_TIMEOUT_MS, drainDelayMs: 30_000, restartIntensity: { maxRestarts: 1000, periodMs: 1000 } });
  const ROUNDS = 10;
  const CALLS = 40;
  try {
    const view = await p.acquire('race', fixtureConfig('echo.mjs', mark), 's1');
    const codes = new Map<string, number>();
    let ok = 0;
    /** Calls sent after the kill while the view still said `connected`: the race itself. */
    let intoTheRace = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const [pid] = pidsWithMarker(mark);
      expect(pid).toBeDefined();
      // 1. Calls go out back to back while the server dies under them, whatever the status says.
      process.kill(pid!, 'SIGKILL');
      const calls: Promise<{ text: string; outcome: unknown }>[] = [];
      for (let i = 0; i < CALLS; i++) {
        if (view.status === 'connected') intoTheRace += 1;
        const text = `${round}-${i}`;
        calls.push(view.callTool('echo', { text }).then((outcome) => ({ text, outcome }), (error: unknown) => ({ text, outcome: error })));
        await delay(0);
      }
      // 2. Each one either succeeded before the death or failed with a transport-loss code.
      for (const { text, outcome } of await Promise.all(calls)) {
        if (outcome instanceof PoolError) codes.set(outcome.code, (codes.get(outcome.code) ?? 0) + 1);
        else if (outcome instanceof Error) {
          const key = `untyped ${outcome.name}: ${outcome.message}`;
          codes.set(key, (codes.get(key) ?? 0) + 1);
        } else {
          expect(textOf(outcome as Record<string, unknown>)).toBe(text);
          ok += 1;
        }
      }
      await nextRecovery(view, RECONNECT_WAIT_MS);
      await vi.waitFor(() => expect(view.status).toBe('connected'), { timeout: 30_000, interval: 10 });
    }
    const histogram = JSON.stringify({ ok, intoTheRace, codes: Object.fromEntries(codes) });
    expect([...codes.keys()].filter((code) => code !== ErrorCode.CALL_INTERRUPTED && code !== ErrorCode.NOT_CONNECTED), histogram).toEqual([]);
    expect(ok + [...codes.values()].reduce((a, b) => a + b, 0), histogram).toBe(ROUNDS * CALLS);
    // Calls did hit the window between the exit and the reported loss.
    expect(intoTheRace, histogram).toBeGreaterThan(0);
  } finally {
    await p.drainAll({ force: true });
    killMarked(mark);
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

// Regression: the heartbeat pinged actors still loading their modules and killed them.
it('concurrent cold acquires without a warm spare are not killed by the heartbeat', async () => {
  const marks8 = Array.from({ length: 8 }, (_, i) => marker(`cold${i}`));
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-cold-'));
  // Threads still loading the SDK cannot answer within this timeout; they must not be pinged.
  // Eight cold actors load the SDK at once: seconds on two cores, far longer than this heartbeat
  // timeout, which a loaded actor that is merely busy still meets. The spawn timeout is generous:
  // slowness is not what this test is about.
  const p = new McpTransportPool({ stateDir: dir, spawnTimeoutMs: 120_000, heartbeatIntervalMs: 100, heartbeatTimeoutMs: 1_000, actorHost: { warmSpare: false } });
  try {
    const views = await Promise.all(marks8.map((mark, i) => p.acquire(`cold${i}`, fixtureConfig('echo.mjs', mark), 's1')));
    expect(views.map((view) => view.status)).toEqual(Array(8).fill('connected'));
    expect(p.getSnapshot().liveActors).toBe(8);
  } finally {
    await p.drainAll({ force: true });
    for (const mark of marks8) killMarked(mark);
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);
