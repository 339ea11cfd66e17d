/**
 * The connection machine alone: its delays run on xstate's SimulatedClock (no real time in a machine test), and
 * `hooks.open` hands out fake connections whose transport loss the test triggers by hand.
 * The real actors (connectServer, watchConnection, shutdownConnection) are kept: the fakes sit
 * one level lower, where the worker would open a real ServerConnection.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createActor, SimulatedClock, type Actor } from 'xstate';
import { ErrorCode, PoolError, type WireError } from '@mcpool/protocol';
import { connectionMachine, statusOf, type ConnectionHooks, type ReconnectPolicy } from '../src/connectionMachine.js';
import type { ServerConnection } from '../src/serverConnection.js';

type CloseListener = (error: Error | undefined) => void;

/** The part of a ServerConnection the machine touches, plus a way to lose its transport. */
interface FakeConnection {
  readonly name: string;
  closed: boolean;
  readonly listeners: Set<CloseListener>;
  readonly close: ReturnType<typeof vi.fn<() => Promise<void>>>;
  onClose(listener: CloseListener): () => void;
  /** Simulates a transport loss: every onClose listener runs once. */
  lose(error?: Error): void;
}

function fakeConnection(name: string, close: () => Promise<void> = async () => undefined): FakeConnection {
  const listeners = new Set<CloseListener>();
  const connection: FakeConnection = {
    name,
    closed: false,
    listeners,
    close: vi.fn(close),
    onClose(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    lose(error) {
      connection.closed = true;
      for (const listener of [...listeners]) listener(error);
      listeners.clear();
    },
  };
  return connection;
}

const asServerConnection = (connection: FakeConnection): ServerConnection => connection as unknown as ServerConnection;

/** Lets promise settlements (open, shutdown) reach the machine. */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

const FIXED: ReconnectPolicy = { attempts: 3, initialDelayMs: 500, maxDelayMs: 500, factor: 1 };
const EXPONENTIAL: ReconnectPolicy = { attempts: 5, initialDelayMs: 1000, maxDelayMs: 16_000, factor: 2 };

interface HarnessOptions {
  open?: (signal: AbortSignal) => Promise<ServerConnection>;
  spawnTimeoutMs?: number;
  drainDelayMs?: number;
  maxIdleMs?: number;
  reconnect?: ReconnectPolicy;
}

type ConnectionActor = Actor<typeof connectionMachine>;

interface Harness {
  actor: ConnectionActor;
  clock: SimulatedClock;
  hooks: {
    open: ReturnType<typeof vi.fn<ConnectionHooks['open']>>;
    connected: ReturnType<typeof vi.fn<ConnectionHooks['connected']>>;
    disconnected: ReturnType<typeof vi.fn<ConnectionHooks['disconnected']>>;
    failed: ReturnType<typeof vi.fn<ConnectionHooks['failed']>>;
  };
  /** The simulated time of every `open` call, in order. */
  openTimes: number[];
  /** Moves the simulated clock forward 1 ms at a time, letting promises settle between steps. */
  advance(ms: number): Promise<void>;
  /** Advances to an absolute simulated time. */
  advanceTo(t: number): Promise<void>;
  status: () => ReturnType<typeof statusOf>;
}

let actors: ConnectionActor[] = [];
let actorErrors: unknown[] = [];

beforeEach(() => {
  actors = [];
  actorErrors = [];
});

afterEach(() => {
  for (const actor of actors) actor.stop();
  // An actor error would have been rethrown on a timer by xstate without the observer.
  expect(actorErrors).toEqual([]);
});

async function startMachine(options: HarnessOptions = {}): Promise<Harness> {
  const clock = new SimulatedClock();
  const openTimes: number[] = [];
  const defaultOpen = async (): Promise<ServerConnection> => asServerConnection(fakeConnection('default'));
  const open = vi.fn<ConnectionHooks['open']>((signal) => {
    openTimes.push(clock.now());
    return (options.open ?? defaultOpen)(signal);
  });
  const hooks = {
    open,
    connected: vi.fn<ConnectionHooks['connected']>(),
    disconnected: vi.fn<ConnectionHooks['disconnected']>(),
    failed: vi.fn<ConnectionHooks['failed']>(),
    retire: vi.fn<ConnectionHooks['retire']>(),
  };
  const actor = createActor(connectionMachine, {
    input: {
      args: {
        spawnTimeoutMs: options.spawnTimeoutMs ?? 3000,
        drainDelayMs: options.drainDelayMs ?? 400,
        maxIdleMs: options.maxIdleMs ?? 60_000,
      },
      reconnect: options.reconnect ?? FIXED,
      hooks,
      now: () => clock.now(),
    },
    clock,
  });
  actor.subscribe({ error: (error) => actorErrors.push(error) });
  actors.push(actor);
  actor.start();
  await flush();
  const advanceTo = async (t: number): Promise<void> => {
    while (clock.now() < t) {
      clock.increment(1);
      await flush();
    }
  };
  return {
    actor,
    clock,
    hooks,
    openTimes,
    advance: (ms) => advanceTo(clock.now() + ms),
    advanceTo,
    status: () => statusOf(actor.getSnapshot().value),
  };
}

/** An `open` that hands out the given results in order (a connection, or an error to reject with). */
function openSequence(...results: Array<FakeConnection | Error>): (signal: AbortSignal) => Promise<ServerConnection> {
  let index = 0;
  return async () => {
    const result = results[Math.min(index++, results.length - 1)]!;
    if (result instanceof Error) throw result;
    return asServerConnection(result);
  };
}

const never = (): Promise<never> => new Promise<never>(() => undefined);

describe('spawning', () => {
  it('goes active when open resolves and announces client generation 1, not a reconnect', async () => {
    // Arrange
    const connection = fakeConnection('first');
    // Act
    const { actor, hooks, status } = await startMachine({ open: openSequence(connection) });
    // Assert
    expect(actor.getSnapshot().value).toEqual({ active: 'serving' });
    expect(status()).toBe('active');
    expect(hooks.open).toHaveBeenCalledOnce();
    expect(hooks.connected).toHaveBeenCalledExactlyOnceWith(connection, 1, false);
    expect(actor.getSnapshot().context.clientGeneration).toBe(1);
    expect(connection.listeners.size).toBe(1); // watchConnection subscribed via onClose
  });

  it('fails when open rejects, keeping the error code in lastError', async () => {
    // Arrange
    const error = new PoolError(ErrorCode.SPAWN_FAILED, 'command not found', { data: { command: 'nope' } });
    // Act
    const { actor, hooks, status } = await startMachine({ open: openSequence(error) });
    // Assert
    expect(status()).toBe('failed');
    expect(actor.getSnapshot().context.lastError).toEqual({ code: ErrorCode.SPAWN_FAILED, message: 'command not found', data: { command: 'nope' } });
    expect(hooks.failed).toHaveBeenCalledExactlyOnceWith(expect.objectContaining({ code: ErrorCode.SPAWN_FAILED }));
    expect(hooks.connected).not.toHaveBeenCalled();
  });

  it('fails with MCPOOL_SPAWN_TIMEOUT when spawnTimeoutMs elapses first, aborting the open', async () => {
    // Arrange
    let openSignal: AbortSignal | undefined;
    const h = await startMachine({
      spawnTimeoutMs: 1000,
      open: (signal) => {
        openSignal = signal;
        return never();
      },
    });
    // Act
    await h.advance(999);
    const before = h.status();
    await h.advance(1);
    // Assert
    expect(before).toBe('spawning');
    expect(h.status()).toBe('failed');
    expect(h.actor.getSnapshot().context.lastError).toMatchObject({ code: ErrorCode.SPAWN_TIMEOUT, data: { timeoutMs: 1000 } });
    expect(openSignal?.aborted).toBe(true);
    expect(h.hooks.failed).toHaveBeenCalledExactlyOnceWith(expect.objectContaining({ code: ErrorCode.SPAWN_TIMEOUT }));
  });
});

describe('drain', () => {
  it('closes after drainDelayMs of idleness and terminates, closing the connection once', async () => {
    // Arrange
    const connection = fakeConnection('c');
    const h = await startMachine({ open: openSequence(connection), drainDelayMs: 400 });
    // Act
    h.actor.send({ type: 'control.idle' });
    const afterIdle = h.status();
    await h.advance(399);
    const beforeGrace = h.status();
    await h.advance(1);
    // Assert
    expect(afterIdle).toBe('draining');
    expect(beforeGrace).toBe('draining');
    expect(h.actor.getSnapshot().value).toBe('terminated');
    expect(h.actor.getSnapshot().status).toBe('done');
    expect(h.actor.getSnapshot().context.closeReason).toBe('drained');
    expect(h.status()).toBe('closed');
    expect(connection.close).toHaveBeenCalledOnce();
  });

  it('goes back to active on control.busy during the grace and closes nothing at drainDelayMs', async () => {
    // Arrange
    const connection = fakeConnection('c');
    const h = await startMachine({ open: openSequence(connection), drainDelayMs: 400 });
    h.actor.send({ type: 'control.idle' });
    await h.advance(200);
    // Act
    h.actor.send({ type: 'control.busy' });
    await h.advance(1000);
    // Assert
    expect(h.actor.getSnapshot().value).toEqual({ active: 'serving' });
    expect(connection.close).not.toHaveBeenCalled();
    expect(connection.listeners.size).toBe(1);
  });
});

describe('hard idle cap', () => {
  it('closes at firstIdleAt + maxIdleMs even though attach/detach flapping keeps restarting the drain grace', async () => {
    // Arrange
    const connection = fakeConnection('c');
    const h = await startMachine({ open: openSequence(connection), maxIdleMs: 1000, drainDelayMs: 400 });
    await h.advanceTo(100);
    h.actor.send({ type: 'control.idle' }); // firstIdleAt = 100
    // Act: every 300 ms a session attaches and detaches 50 ms later; no idle stretch reaches 400 ms.
    for (const t of [400, 700, 1000]) {
      await h.advanceTo(t);
      h.actor.send({ type: 'control.busy' });
      expect(h.status()).toBe('active');
      await h.advanceTo(t + 50);
      h.actor.send({ type: 'control.idle' });
    }
    await h.advanceTo(1099);
    const justBefore = h.status();
    await h.advanceTo(1100);
    // Assert
    expect(h.actor.getSnapshot().context.firstIdleAt).toBe(100);
    expect(justBefore).toBe('draining');
    expect(h.actor.getSnapshot().value).toBe('terminated');
    expect(h.actor.getSnapshot().context.closeReason).toBe('idle_cap');
    expect(connection.close).toHaveBeenCalledOnce();
  });

  it('does nothing while busy, and forgets the old idle moment', async () => {
    // Arrange
    const connection = fakeConnection('c');
    const h = await startMachine({ open: openSequence(connection), maxIdleMs: 1000, drainDelayMs: 400 });
    h.actor.send({ type: 'control.idle' }); // t = 0
    await h.advanceTo(100);
    h.actor.send({ type: 'control.busy' });
    // Act
    await h.advanceTo(5000);
    // Assert
    expect(h.actor.getSnapshot().value).toEqual({ active: 'serving' });
    expect(connection.close).not.toHaveBeenCalled();
    expect(h.actor.getSnapshot().context.firstIdleAt).toBeUndefined();

    // A later idle starts a fresh cap, so it is the ordinary drain that closes the entry.
    h.actor.send({ type: 'control.idle' });
    await h.advance(399);
    expect(h.status()).toBe('draining');
    await h.advance(1);
    expect(h.actor.getSnapshot().context.closeReason).toBe('drained');
  });
});

describe('transport loss while active', () => {
  it('announces the loss, waits the reconnect delay, reopens and announces client generation 2', async () => {
    // Arrange
    const first = fakeConnection('first');
    const second = fakeConnection('second');
    const h = await startMachine({ open: openSequence(first, second), reconnect: FIXED });
    // Act
    first.lose(new Error('pipe closed'));
    await flush();
    const waiting = h.actor.getSnapshot().value;
    await h.advance(499);
    const opensBeforeDelay = h.hooks.open.mock.calls.length;
    await h.advance(1);
    // Assert
    expect(h.hooks.disconnected).toHaveBeenCalledExactlyOnceWith('pipe closed');
    expect(waiting).toEqual({ active: 'waiting' });
    expect(h.status()).toBe('active');
    expect(opensBeforeDelay).toBe(1);
    expect(h.openTimes).toEqual([0, 500]);
    expect(h.hooks.connected).toHaveBeenCalledTimes(2);
    expect(h.hooks.connected).toHaveBeenLastCalledWith(second, 2, true);
    expect(h.actor.getSnapshot().value).toEqual({ active: 'serving' });
    expect(h.actor.getSnapshot().context.reconnectAttempt).toBe(0);
    expect(second.listeners.size).toBe(1); // the new connection is watched
  });

  it('fails after the policy attempts when every reopen fails, announcing failed once', async () => {
    // Arrange
    const first = fakeConnection('first');
    const refused = new PoolError(ErrorCode.SPAWN_FAILED, 'connection refused');
    const h = await startMachine({ open: openSequence(first, refused), reconnect: FIXED });
    // Act
    first.lose(undefined);
    await h.advance(10_000);
    // Assert
    expect(h.openTimes).toEqual([0, 500, 1000, 1500]); // the spawn, then 3 attempts
    expect(h.status()).toBe('failed');
    expect(h.hooks.disconnected).toHaveBeenCalledExactlyOnceWith(undefined);
    expect(h.hooks.failed).toHaveBeenCalledOnce();
    expect(h.hooks.failed.mock.calls[0]![0]).toMatchObject<Partial<WireError>>({ code: ErrorCode.SPAWN_FAILED });
    expect(h.hooks.connected).toHaveBeenCalledOnce();
  });

  it('tries the first reconnect after firstDelayMs, the next ones after the fixed delay', async () => {
    // Arrange
    const first = fakeConnection('first');
    const h = await startMachine({ open: openSequence(first, new Error('spawn failed')), reconnect: { ...FIXED, firstDelayMs: 0 } });
    // Act
    first.lose(new Error('killed'));
    await h.advance(10_000);
    // Assert
    // The harness moves the clock 1 ms at a time: "at once" is the next tick.
    const gaps = h.openTimes.slice(1).map((t, i) => t - h.openTimes[i]!);
    expect(gaps[0]).toBeLessThanOrEqual(1);
    expect(gaps.slice(1)).toEqual([500, 500]);
    expect(h.status()).toBe('failed');
  });

  it('backs off exponentially: 1000, 2000, 4000, 8000, 16000 ms between opens', async () => {
    // Arrange
    const first = fakeConnection('first');
    const h = await startMachine({ open: openSequence(first, new Error('ECONNREFUSED')), reconnect: EXPONENTIAL, spawnTimeoutMs: 30_000 });
    // Act
    first.lose(new Error('socket hang up'));
    await h.advance(40_000);
    // Assert
    const gaps = h.openTimes.slice(1).map((t, i) => t - h.openTimes[i]!);
    expect(gaps).toEqual([1000, 2000, 4000, 8000, 16_000]);
    expect(h.status()).toBe('failed');
    expect(h.hooks.failed).toHaveBeenCalledOnce();
  });

  it(
    // Regression: idle during the reconnect backoff, then busy again, left the entry 'active' with
    // no connection and nothing reopening it.
    'reconnects when a session attaches again after going idle during the reconnect backoff',
    async () => {
      // Arrange
      const first = fakeConnection('first');
      const second = fakeConnection('second');
      const h = await startMachine({ open: openSequence(first, second), reconnect: FIXED, drainDelayMs: 10_000 });
      first.lose(new Error('pipe closed'));
      await flush();
      // Act
      h.actor.send({ type: 'control.idle' });
      await h.advance(100);
      h.actor.send({ type: 'control.busy' });
      await h.advance(5000);
      // Assert
      expect(h.hooks.connected).toHaveBeenLastCalledWith(second, 2, true);
      expect(h.actor.getSnapshot().context.connection).toBeDefined();
    },
  );
});

describe('transport loss while draining', () => {
  it('closes the entry without reconnecting', async () => {
    // Arrange
    const connection = fakeConnection('c');
    const h = await startMachine({ open: openSequence(connection), reconnect: FIXED });
    h.actor.send({ type: 'control.idle' });
    // Act
    connection.lose(new Error('pipe closed'));
    await flush();
    await h.advance(5000);
    // Assert
    expect(h.actor.getSnapshot().value).toBe('terminated');
    expect(h.actor.getSnapshot().context.closeReason).toBe('transport_closed_while_idle');
    expect(h.hooks.open).toHaveBeenCalledOnce();
    expect(h.hooks.disconnected).not.toHaveBeenCalled();
    expect(h.hooks.failed).not.toHaveBeenCalled();
  });
});

describe('control.close', () => {
  it('closes from spawning, aborting the open', async () => {
    // Arrange
    let openSignal: AbortSignal | undefined;
    const h = await startMachine({
      open: (signal) => {
        openSignal = signal;
        return never();
      },
    });
    // Act
    h.actor.send({ type: 'control.close', reason: 'restart' });
    await flush();
    // Assert
    expect(h.actor.getSnapshot().value).toBe('terminated');
    expect(h.actor.getSnapshot().context.closeReason).toBe('restart');
    expect(openSignal?.aborted).toBe(true);
    expect(h.hooks.connected).not.toHaveBeenCalled();
  });

  it('closes from active, closing the connection once', async () => {
    // Arrange
    const connection = fakeConnection('c');
    const h = await startMachine({ open: openSequence(connection) });
    // Act
    h.actor.send({ type: 'control.close', reason: 'drain_all' });
    await flush();
    // Assert
    expect(h.actor.getSnapshot().value).toBe('terminated');
    expect(h.actor.getSnapshot().context.closeReason).toBe('drain_all');
    expect(connection.close).toHaveBeenCalledOnce();
    expect(connection.listeners.size).toBe(0); // the watch was cleaned up
  });

  it('closes from draining before the grace ends', async () => {
    // Arrange
    const connection = fakeConnection('c');
    const h = await startMachine({ open: openSequence(connection), drainDelayMs: 400 });
    h.actor.send({ type: 'control.idle' });
    await h.advance(100);
    // Act
    h.actor.send({ type: 'control.close', reason: 'restart' });
    await flush();
    await h.advance(1000);
    // Assert
    expect(h.actor.getSnapshot().value).toBe('terminated');
    expect(h.actor.getSnapshot().context.closeReason).toBe('restart');
    expect(connection.close).toHaveBeenCalledOnce();
  });
});

describe('statusOf', () => {
  it('maps each state value reached by the machine to an entry status', async () => {
    // Arrange: a connection whose close never settles keeps the machine in closed.stopping.
    let finishClose: () => void = () => undefined;
    const connection = fakeConnection('c', () => new Promise<void>((resolve) => (finishClose = resolve)));
    let resolveOpen: (value: ServerConnection) => void = () => undefined;
    const h = await startMachine({ open: () => new Promise<ServerConnection>((resolve) => (resolveOpen = resolve)) });
    const seen: Array<[unknown, string]> = [];
    const record = (): void => {
      const value = h.actor.getSnapshot().value;
      seen.push([value, statusOf(value)]);
    };
    // Act
    record();
    resolveOpen(asServerConnection(connection));
    await flush();
    record();
    h.actor.send({ type: 'control.idle' });
    record();
    h.actor.send({ type: 'control.close', reason: 'test' });
    record();
    finishClose();
    await flush();
    record();
    // Assert
    expect(seen).toEqual([
      ['spawning', 'spawning'],
      [{ active: 'serving' }, 'active'],
      ['draining', 'draining'],
      [{ closed: 'stopping' }, 'closed'],
      ['terminated', 'closed'],
    ]);
  });

  it('maps failed and every active sub-state', async () => {
    // Arrange
    const h = await startMachine({ open: openSequence(new Error('boom')) });
    // Act
    const failedValue = h.actor.getSnapshot().value;
    // Assert
    expect(statusOf(failedValue)).toBe('failed');
    expect(statusOf({ failed: 'done' })).toBe('failed');
    expect(statusOf({ active: 'waiting' })).toBe('active');
    expect(statusOf({ active: 'reconnecting' })).toBe('active');
    expect(statusOf({ closed: 'done' })).toBe('closed');
  });
});
