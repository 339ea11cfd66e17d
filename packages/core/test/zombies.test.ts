/**
 * No zombies: a connection's child is reaped whatever happens to its thread. The supervisor (this
 * process's main thread) spawns every stdio server and its loop reaps it; the actor thread only
 * owns the child's stdio. Zombies are counted among this process's own children only.
 * - an actor thread terminated (`worker.terminate()`) with a call in flight and its child alive:
 *   the child reads EOF, exits, and is reaped;
 * - a child that would outlive its terminated thread (it ignores EOF and SIGTERM) is ended by the
 *   supervisor once its actor's channel closes, and reaped;
 * - a churn of actor deaths of every kind (throw, exit, out of memory, a busy loop ended by the
 *   heartbeat) and server kills, each with a call in flight: no zombie at any point after.
 */
import { describe, expect, it, vi } from 'vitest';
import { MessageChannel, BroadcastChannel } from 'node:worker_threads';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ErrorCode, type PoolEvent } from '@mcpool/core';
import { RpcChannel, type ActorStartArgs } from '@mcpool/protocol';
import { countZombieChildren, isRunning } from '@mcpool/protocol/processTree';
import { FIXTURES, fixtureConfig, pidFromResult, pidsWithMarker } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const HOST = pathToFileURL(fileURLToPath(new URL('../dist/actorHost.js', import.meta.url))).href;
const CRASHABLE = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url);
const crashes = new BroadcastChannel('mcpool-test-crash');
crashes.unref();

const WAIT = { timeout: 30_000, interval: 25 };

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

/** Zombie children of this process, read until none is left (a `ps` just run is one for an instant). */
async function expectNoZombies(): Promise<void> {
  await expect.poll(countZombieChildren, WAIT).toBe(0);
}

function startArgs(fixture: string, mark: string): ActorStartArgs {
  return {
    serverName: fixture,
    entryIndex: 0,
    config: { transport: 'stdio', command: process.execPath, args: [FIXTURES + fixture, mark] },
    spawnTimeoutMs: 60_000,
    callTimeoutMs: 60_000,
    drainDelayMs: 60_000,
    maxIdleMs: 600_000,
    shutdownStepMs: 300,
    logLevel: 'silent',
  };
}

describe('a terminated actor thread leaves no zombie', () => {
  it('with a call in flight and its child alive: the child reads EOF, exits and is reaped', async () => {
    const { ActorHost } = (await import(HOST)) as typeof import('../src/actorHost.js');
    const host = new ActorHost({ warmSpare: false });
    const mark = newMark('terminated-mid-call');
    try {
      const handle = host.create();
      await handle.request('start', startArgs('echo.mjs', mark), { timeoutMs: 120_000 });
      const [pid] = pidsWithMarker(mark);
      expect(handle.pgid).toBe(pid);

      // 1. A call the server is working on (it reported progress).
      const { port1, port2 } = new MessageChannel();
      await handle.request('attach', { viewId: 'v1', sessionId: 's1', port: port2 }, { transfer: [port2] });
      const view = new RpcChannel(port1);
      let progressed!: () => void;
      const working = new Promise<void>((resolve) => (progressed = resolve));
      const call = view
        .request('request', { method: 'tools/call', params: { name: 'slow', arguments: { ms: 60_000, steps: 600 } }, wantProgress: true, timeoutMs: 60_000 }, { onProgress: () => progressed() })
        .catch((error: unknown) => error);
      await working;

      // 2. The thread is terminated under it; nothing kills the child.
      expect(isRunning(pid!)).toBe(true);
      await handle.worker.terminate();
      expect(await call).toMatchObject({ code: expect.stringMatching(/^MCPOOL_(PORT_CLOSED|ACTOR_DIED)$/) });

      // 3. Its stdio closed with the thread: it ends by itself, and this process reaps it.
      await vi.waitFor(() => expect(isRunning(pid!)).toBe(false), WAIT);
      await expectNoZombies();
      expect(pidsWithMarker(mark)).toEqual([]);
    } finally {
      await host.close();
    }
  });

  it('with a child that would outlive its thread: ended as soon as its actor is gone, and reaped', async () => {
    const { ActorHost } = (await import(HOST)) as typeof import('../src/actorHost.js');
    const host = new ActorHost({ warmSpare: false });
    const mark = newMark('outlives-thread');
    try {
      const handle = host.create();
      // It ignores stdin's end and SIGTERM: only SIGKILL ends it, and nothing here sends one.
      await handle.request('start', startArgs('sigtermIgnoring.mjs', mark), { timeoutMs: 120_000 });
      const [pid] = pidsWithMarker(mark);
      expect(isRunning(pid!)).toBe(true);

      await handle.worker.terminate();

      await vi.waitFor(() => expect(isRunning(pid!)).toBe(false), WAIT);
      await expectNoZombies();
    } finally {
      await host.close();
    }
  });
});

describe('a churn of actor deaths and server kills', () => {
  it('leaves no zombie: each death with a call in flight, the entry brought back each time', async () => {
    const events: PoolEvent[] = [];
    const pool = newPool({ actorHost: { workerUrl: CRASHABLE }, restartIntensity: { maxRestarts: 100, periodMs: 60_000 }, onEvent: (event) => events.push(event) });
    const mark = newMark('churn');
    const cfg = fixtureConfig('echo.mjs', mark);
    const view = await pool.acquire('churn', cfg, 's1');
    const kinds = ['exit', 'throw', 'oom', 'busy', 'kill', 'exit', 'kill', 'throw'] as const;

    for (const [round, kind] of kinds.entries()) {
      const pid = pidFromResult(await view.callTool('pid'));
      // In flight for certain once the server reported progress: a crash before the call left
      // the view refuses it as not connected instead, which is not what this round checks.
      let progressed!: () => void;
      const working = new Promise<void>((resolve) => (progressed = resolve));
      const inFlight = view.callTool('slow', { ms: 60_000, steps: 600 }, { onProgress: () => progressed() }).catch((error: unknown) => error);
      await working;
      const back = new Promise<void>((resolve) => {
        const off = view.on('reconnected', () => (off(), resolve()));
      });
      if (kind === 'kill') process.kill(pid, 'SIGKILL');
      else crashes.postMessage({ serverName: 'churn', kind, sentAt: Date.now() });
      expect(await inFlight).toMatchObject({ code: ErrorCode.CALL_INTERRUPTED });
      await back;
      await vi.waitFor(() => expect(isRunning(pid)).toBe(false), WAIT);
      // The dead child of every round so far is reaped, not only the last.
      await expectNoZombies();
      expect(pidsWithMarker(mark), `round ${round} (${kind})`).toHaveLength(1);
    }
    expect(events.filter((event) => event.type === 'failed' && event.lastError.code === ErrorCode.ACTOR_DIED)).toHaveLength(6);
    expect((await pool.getHealth()).zombies).toBe(0);
  });
});
