/**
 * Liveness that tells busy from dead: an actor thread that blocks its event loop for a while
 * misses a heartbeat and lives; one that never yields is ended, and the entry its session held is
 * brought back; a server that stops answering (SIGSTOP) makes its entry `unresponsive` after a
 * call deadline, and healthy again once a call is answered.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode, MCPCallInterruptedError, PoolError, type PoolEvent } from '@mcpool/core';
import { fixtureConfig, pidFromResult, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const CRASHABLE = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url);
const crashes = new BroadcastChannel('mcpool-test-crash');
crashes.unref();

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

describe('the heartbeat', () => {
  it('does not end an actor whose event loop is blocked for 1.5 s: the call sent meanwhile is answered', async () => {
    const events: PoolEvent[] = [];
    const pool = newPool({ actorHost: { workerUrl: CRASHABLE }, onEvent: (event) => events.push(event) });
    const view = await pool.acquire('blocky', fixtureConfig('echo.mjs', newMark('block')), 's1');
    // 1. Block the actor's loop once for 1.5 s: two heartbeat timeouts (700 ms) pass meanwhile.
    crashes.postMessage({ serverName: 'blocky', kind: 'block', ms: 1500, sentAt: Date.now() });
    // 2. A call queued behind the block is answered once it ends.
    expect(textOf(await view.callTool('echo', { text: 'still here' }))).toBe('still here');
    // 3. And again a few heartbeat windows later, on the same entry.
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setTimeout(resolve, 300));
    expect(textOf(await view.callTool('echo', { text: 'again' }))).toBe('again');
    expect(events.filter((event) => event.type === 'failed')).toEqual([]);
    expect(pool.getSnapshot().servers.blocky!.entrySummary).toMatchObject([{ entryIndex: 0, status: 'active', refs: 1 }]);
  });

  it('ends an actor blocked forever, and brings the entry its session held back', async () => {
    const events: PoolEvent[] = [];
    const pool = newPool({ actorHost: { workerUrl: CRASHABLE }, onEvent: (event) => events.push(event) });
    const config = fixtureConfig('echo.mjs', newMark('stuck'));
    const view = await pool.acquire('stuck', config, 's1');
    const inFlight = view.callTool('slow', { ms: 60_000 }).catch((error: unknown) => error);
    crashes.postMessage({ serverName: 'stuck', kind: 'busy', sentAt: Date.now() });
    // 1. Declared dead (not a thread exit: the heartbeat).
    expect(await inFlight).toBeInstanceOf(MCPCallInterruptedError);
    await vi.waitFor(() => expect(events.some((event) => event.type === 'failed')).toBe(true), { timeout: 15_000, interval: 20 });
    expect(events.find((event) => event.type === 'failed')).toMatchObject({ entryIndex: 0, lastError: { code: ErrorCode.ACTOR_DIED, message: expect.stringContaining('stopped answering') } });
    // 2. A replacement starts by itself, before any session acquires again (held by nobody, it drains).
    await vi.waitFor(() => expect(pool.getSnapshot().servers.stuck?.entrySummary).toMatchObject([{ entryIndex: 1, status: expect.stringMatching(/^(active|draining)$/) }]), { timeout: 30_000, interval: 50 });
    // 3. The session acquires again and lands on it: no second spawn.
    const again = await pool.acquire('stuck', config, 's1');
    expect(again.entryIndex).toBe(1);
    expect(textOf(await again.callTool('echo', { text: 'back' }))).toBe('back');
    expect(pool.getSnapshot().servers.stuck).toMatchObject({ entryCount: 1, entrySummary: [{ entryIndex: 1, status: 'active', refs: 1 }] });
  });
});

describe('a server that stops answering', () => {
  const stopped = new Set<number>();
  afterEach(() => {
    // Only the child this test stopped, by its pid.
    for (const pid of stopped) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // already gone
      }
    }
    stopped.clear();
  });

  it('is shown unresponsive after a call deadline, and healthy again after SIGCONT and an answered call', async () => {
    const pool = newPool();
    const view = await pool.acquire('frozen', fixtureConfig('echo.mjs', newMark('sigstop')), 's1');
    const pid = pidFromResult(await view.callTool('pid'));
    const entry = () => pool.getSnapshot().servers.frozen!.entrySummary[0]!;
    expect(entry().health).toBeUndefined();
    // 1. Stopped: the call hits its deadline, the entry stays active but is unresponsive.
    process.kill(pid, 'SIGSTOP');
    stopped.add(pid);
    const timedOut = await view.callTool('echo', { text: 'x' }, { timeoutMs: 500 }).catch((error: unknown) => error);
    expect(timedOut).toBeInstanceOf(PoolError);
    expect((timedOut as PoolError).code).toBe(ErrorCode.CALL_TIMEOUT);
    expect(entry()).toMatchObject({ status: 'active', health: 'unresponsive' });
    // 2. Continued: the next answered call clears it.
    process.kill(pid, 'SIGCONT');
    stopped.delete(pid);
    expect(textOf(await view.callTool('echo', { text: 'awake' }))).toBe('awake');
    expect(entry().health).toBeUndefined();
    expect(entry().status).toBe('active');
  });
});
