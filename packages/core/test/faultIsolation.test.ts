/**
 * Fault isolation and process hygiene with real
 * children and real actor threads. Every process is counted by a marker unique to its test.
 */
import { describe, expect, it, vi } from 'vitest';
import { BroadcastChannel } from 'node:worker_threads';
import { ErrorCode, MCPCallInterruptedError, McpTransportPool, PoolError, type PoolEvent, type PooledConnection } from '@mcpool/core';
import { FIXTURES, fixtureConfig, isRunning, pidFromResult, pidsWithMarker, textOf, treeOf } from '../../../test/helpers/processes.js';
import { callContinuously } from '../../../test/helpers/calls.js';
import { usePools } from '../../../test/helpers/pools.js';

const CRASHABLE = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url);
/** Crash orders for test/fixtures/workers/crashableWorker.mjs: `{ serverName, kind, sentAt }`. */
const crashes = new BroadcastChannel('mcpool-test-crash');
crashes.unref();

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

function eventually<T>(events: PoolEvent[], predicate: (event: PoolEvent) => event is PoolEvent & T, timeoutMs = 20_000): Promise<T> {
  return vi.waitFor(
    () => {
      const found = events.find(predicate);
      if (found === undefined) throw new Error('not yet');
      return found;
    },
    { timeout: timeoutMs, interval: 10 },
  );
}

describe('transport loss', () => {
  it('kill -9 mid-call: the call rejects as interrupted, the view reconnects and calls again', async () => {
    const pool = newPool();
    const mark = newMark('kill9');
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 's1');
    const pid = pidFromResult(await view.callTool('pid'));
    const seen: string[] = [];
    view.on('disconnected', () => seen.push('disconnected'));
    const reconnected = new Promise<number>((resolve) => view.on('reconnected', (event) => resolve(event.clientGeneration)));

    // 1. A long call is in flight when the server dies: the server has reported progress on it,
    // so it reached the server (a call the actor receives after the loss is refused as
    // NOT_CONNECTED instead, which is right, but not this test's case).
    let progressed!: () => void;
    const inProgress = new Promise<void>((resolve) => (progressed = resolve));
    const inFlight = view.callTool('slow', { ms: 30_000, steps: 300 }, { onProgress: () => progressed() });
    await inProgress;
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toContain(pid), { timeout: 15_000, interval: 20 });
    const killedAt = performance.now();
    process.kill(pid, 'SIGKILL');
    const error = await inFlight.catch((e: unknown) => e);
    const rejectedAfterMs = performance.now() - killedAt;

    // 2. Interrupted, never replayed, with the generation it was sent on.
    expect(error).toBeInstanceOf(MCPCallInterruptedError);
    expect(error).toMatchObject({ code: ErrorCode.CALL_INTERRUPTED, serverName: 'echo', entryIndex: 0, clientGeneration: 1 });
    // Far sooner than the call itself would have ended.
    expect(rejectedAfterMs).toBeLessThan(15_000);

    // 3. The same PooledConnection serves again after `reconnected`, on a new process.
    expect(await reconnected).toBe(2);
    expect(seen).toEqual(['disconnected']);
    const newPid = pidFromResult(await view.callTool('pid'));
    expect(newPid).not.toBe(pid);
    expect(view.clientGeneration).toBe(2);
    expect(textOf(await view.callTool('echo', { text: 'back' }))).toBe('back');
    expect(pidsWithMarker(mark)).toEqual([newPid]);
  });

  it('killed more often than the intensity allows: failed, acquire rejects with the last error, restartByName brings it back', async () => {
    const events: PoolEvent[] = [];
    const pool = newPool({ restartIntensity: { maxRestarts: 2, periodMs: 60_000 }, onEvent: (event) => events.push(event) });
    const mark = newMark('intensity');
    const cfg = fixtureConfig('echo.mjs', mark);
    const view = await pool.acquire('flaky', cfg, 's1');

    // Two losses are within the intensity: each reconnects.
    for (let kill = 1; kill <= 2; kill++) {
      const reconnected = new Promise<void>((resolve) => {
        const off = view.on('reconnected', () => (off(), resolve()));
      });
      process.kill(pidFromResult(await view.callTool('pid')), 'SIGKILL');
      await reconnected;
    }
    // The third trips it.
    const failed = new Promise<void>((resolve) => view.on('failed', () => resolve()));
    process.kill(pidFromResult(await view.callTool('pid')), 'SIGKILL');
    await failed;
    expect(view.status).toBe('failed');
    await expect(view.callTool('echo', { text: 'x' })).rejects.toBeInstanceOf(PoolError);
    const refused = await pool.acquire('flaky', cfg, 's2').catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: ErrorCode.SERVER_FAILED, data: { serverName: 'flaky', lastError: { code: ErrorCode.ENTRY_LOST } } });
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 20_000, interval: 20 });
    expect(pool.getSnapshot().servers.flaky).toMatchObject({ status: 'failed', mcpStatus: 'DISCONNECTED', entrySummary: [{ entryIndex: 0, refs: 0, status: 'failed' }] });
    expect(events.filter((event) => event.type === 'failed')).toHaveLength(1);

    // A manual restart resets the key and starts it again.
    const results = await pool.restartByName('flaky');
    expect(results).toEqual([expect.objectContaining({ entryIndex: 0, restarted: true, reason: 'reset' })]);
    const again = await pool.acquire('flaky', cfg, 's2');
    expect(textOf(await again.callTool('echo', { text: 'alive' }))).toBe('alive');
  });
});

describe('actor death is contained', () => {
  const DOES = { throw: 'throws', oom: 'exhausts its heap', busy: 'busy-loops', wait: 'waits forever', exit: 'exits' } as const;
  for (const kind of ['throw', 'oom', 'busy', 'wait', 'exit'] as const) {
    it(`a worker that ${DOES[kind]} fails its entry alone while another entry serves with zero errors`, async () => {
      const events: PoolEvent[] = [];
      const pool = newPool({
        // The shipped thread placement (one entry per thread); a small heap makes `oom` quick.
        actorHost: { workerUrl: CRASHABLE, resourceLimits: { maxOldGenerationSizeMb: 48 } },
        onEvent: (event) => events.push(event),
      });
      const mark = newMark(`death-${kind}`);
      const victim = await pool.acquire(`victim-${kind}`, fixtureConfig('echo.mjs', mark, { env: { ROLE: 'victim' } }), 's1');
      const bystander = await pool.acquire(`bystander-${kind}`, fixtureConfig('echo.mjs', mark, { env: { ROLE: 'bystander' } }), 's1');
      const victimPid = pidFromResult(await victim.callTool('pid'));

      // 1. The bystander is called without pause for the whole episode.
      const caller = callContinuously(bystander);

      // 2. The victim's thread dies with a call in flight.
      const inFlight = victim.callTool('slow', { ms: 30_000 }).catch((e: unknown) => e);
      const crashedAt = performance.now();
      crashes.postMessage({ serverName: `victim-${kind}`, kind, sentAt: Date.now() });
      // A spinning thread is found after 5 s of its own CPU time: 19–30 s of wall time at load 12–16.
      const failed = await eventually<{ lastError: { code: string } }>(events, (e): e is PoolEvent & { lastError: { code: string } } => e.type === 'failed', kind === 'busy' ? 90_000 : 20_000);
      const detectedAfterMs = performance.now() - crashedAt;
      expect(failed.lastError.code).toBe(ErrorCode.ACTOR_DIED);
      expect(await inFlight).toBeInstanceOf(MCPCallInterruptedError);
      // A thread that waits forever is found after the default stall bound (5 s) of wall time, far
      // sooner than the call would end. One that spins is found after 5 s of its own CPU time,
      // which a loaded machine stretches in wall time (the liveness tests bound it).
      if (kind === 'wait') expect(detectedAfterMs).toBeLessThan(15_000);

      // 3. Its child is gone; the bystander never failed and still serves.
      await vi.waitFor(() => expect(isRunning(victimPid)).toBe(false), { timeout: 15_000, interval: 20 });
      const okBefore = caller.answered;
      await vi.waitFor(() => expect(caller.answered).toBeGreaterThan(okBefore + 10), { timeout: 15_000, interval: 10 });
      await caller.stop();
      expect(caller.errors).toEqual([]);
      // 4. The entry s1 held is brought back by itself, and s1's view moves to it; the next
      // acquire lands on it too.
      await vi.waitFor(() => expect(pool.getSnapshot().servers[`victim-${kind}`]?.entrySummary).toMatchObject([{ entryIndex: 1, refs: 1 }]), { timeout: 30_000, interval: 20 });
      await vi.waitFor(() => expect(victim.status).toBe('connected'), { timeout: 30_000, interval: 20 });
      const replacement = await pool.acquire(`victim-${kind}`, fixtureConfig('echo.mjs', mark, { env: { ROLE: 'victim' } }), 's2');
      expect(replacement.entryIndex).toBe(1);
      expect(pidFromResult(await replacement.callTool('pid'))).not.toBe(victimPid);
    });
  }
});

/** Three awkward process trees (a shell root with background jobs, an npx-like wrapper, a SIGTERM-ignoring server), each tagged with the test's marker. */
function awkwardServers(mark: string): Record<string, Record<string, unknown>> {
  return {
    // `--norc` everywhere: bash reads ~/.bashrc when its stdin is a socket (Node's pipes are
    // socketpairs), and a user's rc file (a pyenv rehash waiting on its lock) is no part of a test.
    // `bash -c "sleep 60 & sleep 60"`, with the marker as $0 and as each sleep's argv[0] so all
    // three can be counted. Not an MCP server: it never initializes, so it is tested on the
    // spawn-timeout path.
    bashSleeps: { command: 'bash', args: ['--norc', '-c', '(exec -a "$0" sleep 60) & (exec -a "$0" sleep 60)', mark] },
    // The same shape as a real server: bash starts the two sleeps, then execs the server.
    bashTree: {
      command: 'bash',
      args: ['--norc', '-c', '(exec -a "$0" sleep 60) & (exec -a "$0" sleep 60) & exec "$1" "$2" "$0"', mark, process.execPath, FIXTURES + 'echo.mjs'],
    },
    npxLike: { command: FIXTURES + 'npxLike.sh', args: [mark], env: { FIXTURE_NODE: process.execPath } },
    sigtermIgnoring: fixtureConfig('sigtermIgnoring.mjs', mark),
  };
}

/** The pids of a live entry's whole tree: from its `family` tool, else from its marker. */
async function treeFromView(view: PooledConnection, mark: string): Promise<number[]> {
  let root: number;
  if (view.tools.some((tool) => tool.name === 'family')) {
    // npxLike: the server's parent is the sh wrapper, the root of the group.
    root = (JSON.parse(textOf(await view.callTool('family'))) as { ppid: number }).ppid;
  } else if (view.tools.some((tool) => tool.name === 'pid')) {
    root = pidFromResult(await view.callTool('pid'));
  } else {
    const pids = pidsWithMarker(mark);
    expect(pids).toHaveLength(1);
    root = pids[0]!;
  }
  return [root, ...treeOf(root)];
}

describe('a held view after its actor died', () => {
  it('takes calls as soon as it has the replacement\'s port, before the replacement\'s snapshot arrives', async () => {
    const pool = newPool({ actorHost: { workerUrl: CRASHABLE } });
    const mark = newMark('early-call');
    const view = await pool.acquire('phoenix', fixtureConfig('echo.mjs', mark), 's1');
    const oldPid = pidFromResult(await view.callTool('pid'));
    const reconnected = new Promise<void>((resolve) => view.on('reconnected', () => resolve()));
    crashes.postMessage({ serverName: 'phoenix', kind: 'throw', sentAt: Date.now() });
    // The pool hands the view the replacement's port (its entryIndex moves on) a thread round trip
    // before the replacement's snapshot reaches it; each turn of this loop is one of the main
    // thread's, so the call below is sent inside that window.
    const deadline = performance.now() + 60_000;
    for (let i = 0; i < 10_000_000 && view.entryIndex === 0 && performance.now() < deadline; i++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(view.entryIndex).toBe(1);
    expect(view.status).toBe('disconnected');
    const answered = view.callTool('pid');
    // It waits in the port behind the attach and is answered by the replacement's new server.
    expect(pidFromResult(await answered)).not.toBe(oldPid);
    await reconnected;
    expect(view.status).toBe('connected');
  });
});

describe('nothing is left behind', () => {
  const paths = {
    'release + drain': async (pool: McpTransportPool, view: PooledConnection) => {
      await view.release();
      await vi.waitFor(() => expect(pool.getSnapshot().servers).toEqual({}), { timeout: 20_000, interval: 20 });
    },
    restart: async (pool: McpTransportPool, view: PooledConnection) => {
      const [result] = await pool.restartByName(view.serverName);
      expect(result).toMatchObject({ restarted: true });
    },
    drainAll: async (pool: McpTransportPool) => {
      const result = await pool.drainAll({ timeoutMs: 5_000 });
      expect(result.errors).toEqual([]);
    },
    'actor death': async (pool: McpTransportPool, view: PooledConnection) => {
      // A held entry's view moves to the replacement (`reconnected`); it fails only when none can start.
      const settled = new Promise<void>((resolve) => {
        view.on('reconnected', () => resolve());
        view.on('failed', () => resolve());
      });
      crashes.postMessage({ serverName: view.serverName, kind: 'throw', sentAt: Date.now() });
      await settled;
    },
  } as const;

  for (const server of ['bashTree', 'npxLike', 'sigtermIgnoring'] as const) {
    for (const [path, act] of Object.entries(paths)) {
      it(`${server}: ${path} leaves no process of the old tree`, async () => {
        const pool = newPool({ drainDelayMs: 100, actorHost: { workerUrl: CRASHABLE } });
        const mark = newMark(`${server}-${path.replace(/\W+/g, '')}`);
        const view = await pool.acquire(server, awkwardServers(mark)[server]!, 's1');
        const tree = await treeFromView(view, mark);
        expect(tree.length).toBeGreaterThanOrEqual(server === 'sigtermIgnoring' ? 1 : 3);

        await act(pool, view);

        await vi.waitFor(() => expect(tree.filter(isRunning)).toEqual([]), { timeout: 20_000, interval: 20 });
      });
    }
  }

  it('bash -c "sleep 60 & sleep 60": a failed spawn leaves neither bash nor the sleeps', async () => {
    // The spawn timeout runs from the actor's start, before the child exists: long enough for a
    // loaded machine to start bash and both sleeps, which never answer `initialize`.
    const pool = newPool({ spawnTimeoutMs: 20_000 });
    const mark = newMark('bashsleeps');
    // A warm actor thread first, so the timeout is not spent loading modules.
    await pool.acquire('warm', fixtureConfig('echo.mjs', newMark('bashsleeps-warm')), 's1');
    const acquiring = pool.acquire('bash', awkwardServers(mark).bashSleeps!, 's1');
    const outcome = acquiring.then(() => 'resolved', (error: unknown) => error);
    await vi.waitFor(() => expect(pidsWithMarker(mark).length).toBe(3), { timeout: 60_000, interval: 20 });
    expect(await outcome).toMatchObject({ code: ErrorCode.SPAWN_TIMEOUT });
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 20_000, interval: 20 });
  }, 180_000);

  it('drainAll with a SIGTERM-ignoring server past the deadline kills it and reports it forced', async () => {
    // The deadline (4 s) is long enough for the echo server to exit on stdin EOF on a loaded
    // machine, and shorter than the step (60 s) after which the stubborn one would be killed.
    const pool = newPool({ shutdownStepMs: 60_000 });
    const mark = newMark('stubborn');
    await pool.acquire('stubborn', fixtureConfig('sigtermIgnoring.mjs', mark), 's1');
    await pool.acquire('fine', fixtureConfig('echo.mjs', mark), 's1');
    const result = await pool.drainAll({ timeoutMs: 4_000 });
    expect(result).toEqual({ drained: 1, forced: 1, errors: [] });
    expect(pidsWithMarker(mark)).toEqual([]);
    await expect(pool.acquire('fine', fixtureConfig('echo.mjs', mark), 's2')).rejects.toMatchObject({ code: ErrorCode.POOL_DRAINING });
  });
});

describe('restartByName', () => {
  it('restarts in place: views see disconnected then reconnected with a fresh snapshot, on a new process', async () => {
    const pool = newPool();
    const mark = newMark('restart');
    const a = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 'A');
    const b = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 'B');
    const pid = pidFromResult(await a.callTool('pid'));
    const seen: string[] = [];
    b.on('disconnected', (event) => seen.push(`disconnected:${event.reason}`));
    b.on('reconnected', () => seen.push('reconnected'));

    const [first, second] = await Promise.all([pool.restartByName('echo'), pool.restartByName('echo')]);
    expect(first).toEqual([expect.objectContaining({ entryIndex: 0, restarted: true })]);
    expect(second).toEqual(first); // coalesced: one restart, one result
    await vi.waitFor(() => expect(seen).toEqual(['disconnected:restart', 'reconnected']), { timeout: 15_000, interval: 10 });
    const newPid = pidFromResult(await b.callTool('pid'));
    expect(newPid).not.toBe(pid);
    expect(pidsWithMarker(mark)).toEqual([newPid]);
    expect(b.clientGeneration).toBe(2);
  });

  it('selects one entry by entryIndex, and an unknown name gives []', async () => {
    const pool = newPool();
    const mark = newMark('restartindex');
    const a = await pool.acquire('gh', fixtureConfig('envTools.mjs', mark, { env: { FIXTURE_TOKEN: 'A' } }), 'A');
    const b = await pool.acquire('gh', fixtureConfig('envTools.mjs', mark, { env: { FIXTURE_TOKEN: 'B' } }), 'B');
    const results = await pool.restartByName('gh', { entryIndex: b.entryIndex });
    expect(results).toEqual([expect.objectContaining({ entryIndex: b.entryIndex, restarted: true })]);
    expect(a.clientGeneration).toBe(1);
    await vi.waitFor(() => expect(b.clientGeneration).toBe(2), { timeout: 15_000, interval: 10 });
    expect(await pool.restartByName('nope')).toEqual([]);
  });

  it('restarting an idle entry re-arms its drain', async () => {
    const pool = newPool({ drainDelayMs: 300 });
    const mark = newMark('restartidle');
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 'A');
    await view.release();
    await vi.waitFor(() => expect(pool.getSnapshot().servers.echo?.entrySummary[0]?.status).toBe('draining'), { timeout: 15_000, interval: 10 });
    expect(await pool.restartByName('echo')).toEqual([expect.objectContaining({ restarted: true })]);
    // Nobody holds it: after the restart it drains again and closes.
    await vi.waitFor(() => expect(pool.getSnapshot().servers).toEqual({}), { timeout: 20_000, interval: 20 });
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 20_000, interval: 20 });
  });

  it('a tripped key is not reset when the budget would be exceeded', async () => {
    const pool = newPool({ budget: { clientBudget: 1, mode: 'enforce' }, restartIntensity: { maxRestarts: 0, periodMs: 60_000 } });
    const mark = newMark('restartbudget');
    const view = await pool.acquire('one', fixtureConfig('echo.mjs', mark), 'A');
    const failed = new Promise<void>((resolve) => view.on('failed', () => resolve()));
    process.kill(pidFromResult(await view.callTool('pid')), 'SIGKILL');
    await failed;
    await vi.waitFor(() => expect(pool.getSnapshot().budget.liveCount).toBe(0), { timeout: 20_000, interval: 20 });
    await pool.acquire('two', fixtureConfig('promptsOnly.mjs', mark), 'A');
    expect(await pool.restartByName('one')).toEqual([expect.objectContaining({ restarted: false, reason: 'budget_would_exceed' })]);
    await expect(pool.acquire('one', fixtureConfig('echo.mjs', mark), 'B')).rejects.toMatchObject({ code: ErrorCode.SERVER_FAILED });
  });

  it('a draining pool restarts nothing', async () => {
    const pool = newPool();
    await pool.acquire('echo', fixtureConfig('echo.mjs', newMark('restartdraining')), 'A');
    const draining = pool.drainAll();
    expect(await pool.restartByName('echo')).toEqual([]);
    await draining;
  });
});
