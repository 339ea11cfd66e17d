/**
 * RpcChannel over real ports: a `MessageChannel` with both ends in this thread, and a real
 * worker thread (`fixtures/rpcWorker.mjs`, which imports the compiled `@mcpool/protocol`).
 * Everything is imported from `@mcpool/protocol` too, so `instanceof` compares the same classes
 * the worker throws. Real timers only: there are real ports and threads here, which a fake clock cannot drive.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ErrorCode,
  MCPCallInterruptedError,
  PoolError,
  RpcChannel,
  type RpcChannelOptions,
  type RpcHandler,
  type RpcHandlerContext,
} from '@mcpool/protocol';

const WORKER_ENTRY = new URL('./fixtures/rpcWorker.mjs', import.meta.url);

/** Resolves with the error a promise rejects with; fails the test if it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<PoolError> {
  try {
    await promise;
  } catch (error) {
    return error as PoolError;
  }
  throw new Error('expected a rejection');
}

/** Resolves when `signal` is aborted, with its reason. */
const abortOf = (signal: AbortSignal): Promise<unknown> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });

const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Pair {
  client: RpcChannel;
  server: RpcChannel;
  clientPort: MessagePort;
  serverPort: MessagePort;
}

/** Both ends of a MessageChannel in this thread: `server` answers with `handler`. */
function pair(handler: RpcHandler, clientOptions: RpcChannelOptions = {}, serverOptions: RpcChannelOptions = {}): Pair {
  const { port1: clientPort, port2: serverPort } = new MessageChannel();
  const server = new RpcChannel(serverPort, { handler, ...serverOptions });
  const client = new RpcChannel(clientPort, clientOptions);
  cleanups.push(() => {
    client.close();
    server.close();
    clientPort.close();
    serverPort.close();
  });
  return { client, server, clientPort, serverPort };
}

/** A handler that records the context of every request it gets, by op. */
function recordingHandler(answer: (op: string, args: unknown, ctx: RpcHandlerContext) => unknown) {
  const contexts = new Map<string, RpcHandlerContext>();
  let onContext: () => void = () => undefined;
  const handler: RpcHandler = (op, args, ctx) => {
    contexts.set(op, ctx);
    onContext();
    return answer(op, args, ctx);
  };
  /** Resolves with the handler context of `op` once its request arrived. */
  const contextOf = async (op: string): Promise<RpcHandlerContext> => {
    while (!contexts.has(op)) await new Promise<void>((resolve) => (onContext = resolve));
    return contexts.get(op)!;
  };
  return { handler, contextOf };
}

const hang = (): Promise<never> => new Promise<never>(() => undefined);

describe('over a MessageChannel', () => {
  it('answers a request with the handler result', async () => {
    // Arrange
    const { client } = pair((op, args) => ({ op, args }));
    const payload = { n: 1, list: [1, 2], nested: { when: new Date(0) } };
    // Act
    const result = await client.request('echo', payload);
    // Assert
    expect(result).toEqual({ op: 'echo', args: payload });
    expect(client.pendingCount).toBe(0);
  });

  it('keeps an error code and data across the hop, as a PoolError', async () => {
    // Arrange
    const { client } = pair(() => {
      throw new PoolError(ErrorCode.UPSTREAM_ERROR, 'upstream said no', { data: { x: 1 } });
    });
    // Act
    const error = await rejectionOf(client.request('throwCoded', undefined));
    // Assert
    expect(error).toBeInstanceOf(PoolError);
    expect(error.code).toBe(ErrorCode.UPSTREAM_ERROR);
    expect(error.message).toBe('upstream said no');
    expect(error.data).toEqual({ x: 1 });
  });

  it('rebuilds MCPCallInterruptedError with its fields', async () => {
    // Arrange
    const { client } = pair(() => {
      throw new MCPCallInterruptedError('lost', { serverName: 'files', entryIndex: 1, clientGeneration: 3 });
    });
    // Act
    const error = await rejectionOf(client.request('interrupted', undefined));
    // Assert
    expect(error).toBeInstanceOf(MCPCallInterruptedError);
    expect(error).toBeInstanceOf(PoolError);
    expect(error.code).toBe(ErrorCode.CALL_INTERRUPTED);
    expect(error).toMatchObject({ serverName: 'files', entryIndex: 1, clientGeneration: 3 });
  });

  it('rejects with MCPOOL_CALL_TIMEOUT and aborts the handler signal on the other side', async () => {
    // Arrange
    const { handler, contextOf } = recordingHandler(hang);
    const { client } = pair(handler);
    // Act
    const error = await rejectionOf(client.request('hang', undefined, { timeoutMs: 30 }));
    const ctx = await contextOf('hang');
    const reason = await abortOf(ctx.signal);
    // Assert
    expect(error.code).toBe(ErrorCode.CALL_TIMEOUT);
    expect(error.data).toEqual({ timeoutMs: 30 });
    expect(ctx.signal.aborted).toBe(true);
    expect((reason as PoolError).code).toBe(ErrorCode.CALL_CANCELLED);
    expect(client.pendingCount).toBe(0);
  });

  it('rejects with MCPOOL_CALL_CANCELLED on abort and aborts the handler signal', async () => {
    // Arrange
    const { handler, contextOf } = recordingHandler(hang);
    const { client } = pair(handler);
    const controller = new AbortController();
    const call = client.request('hang', undefined, { signal: controller.signal });
    const ctx = await contextOf('hang');
    // Act
    controller.abort();
    // Assert
    const error = await rejectionOf(call);
    expect(error.code).toBe(ErrorCode.CALL_CANCELLED);
    await abortOf(ctx.signal);
    expect(ctx.signal.aborted).toBe(true);
    expect(client.pendingCount).toBe(0);
  });

  it('rejects at once, sending nothing, when the signal is already aborted', async () => {
    // Arrange
    const handler = vi.fn<RpcHandler>(() => 'never');
    const { client } = pair(handler);
    // Act
    const error = await rejectionOf(client.request('echo', 1, { signal: AbortSignal.abort() }));
    await client.request('echo', 2); // a later request proves the first never reached the handler
    // Assert
    expect(error.code).toBe(ErrorCode.CALL_CANCELLED);
    expect(handler).toHaveBeenCalledOnce();
    expect(handler.mock.calls[0]![1]).toBe(2);
  });

  it('delivers progress only to the request that asked for it', async () => {
    // Arrange: both requests are in flight before either handler sends progress.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let arrived = 0;
    let bothArrived: () => void = () => undefined;
    const arrivedPromise = new Promise<void>((resolve) => (bothArrived = resolve));
    const { client } = pair(async (_op, args, ctx) => {
      if (++arrived === 2) bothArrived();
      await gate;
      for (let step = 1; step <= 3; step++) ctx.progress({ tag: args, step });
      return args;
    });
    const seenA: unknown[] = [];
    const seenB: unknown[] = [];
    const a = client.request('progress', 'A', { onProgress: (data) => seenA.push(data) });
    const b = client.request('progress', 'B', { onProgress: (data) => seenB.push(data) });
    const silent = client.request('progress', 'C'); // no onProgress: its payloads are dropped
    await arrivedPromise;
    // Act
    release();
    const results = await Promise.all([a, b, silent]);
    // Assert
    expect(results).toEqual(['A', 'B', 'C']);
    expect(seenA).toEqual([1, 2, 3].map((step) => ({ tag: 'A', step })));
    expect(seenB).toEqual([1, 2, 3].map((step) => ({ tag: 'B', step })));
  });

  it('rejects every pending request with MCPOOL_PORT_CLOSED when the other port closes, and later ones at once', async () => {
    // Arrange
    const onClose = vi.fn<(reason: PoolError) => void>();
    const { handler, contextOf } = recordingHandler(hang);
    const { client, serverPort } = pair(handler, { onClose });
    const first = client.request('hang', 1);
    const second = client.request('other', 2);
    await contextOf('other');
    // Act
    serverPort.close();
    // Assert
    const errors = await Promise.all([rejectionOf(first), rejectionOf(second)]);
    expect(errors.map((e) => e.code)).toEqual([ErrorCode.PORT_CLOSED, ErrorCode.PORT_CLOSED]);
    expect(client.closed).toBe(true);
    expect(client.pendingCount).toBe(0);
    expect(onClose).toHaveBeenCalledOnce();
    const later = await rejectionOf(client.request('echo', 3));
    expect(later.code).toBe(ErrorCode.PORT_CLOSED);
    expect(client.emit('ev', 1)).toBe(false);
  });

  it('fail(reason) rejects pending requests with that reason and calls onClose once', async () => {
    // Arrange
    const onClose = vi.fn<(reason: PoolError) => void>();
    const { handler, contextOf } = recordingHandler(hang);
    const { client } = pair(handler, { onClose });
    const first = client.request('hang', 1);
    const second = client.request('hang2', 2, { timeoutMs: 10_000 });
    await contextOf('hang2');
    const reason = new PoolError(ErrorCode.ACTOR_DIED, 'the actor died');
    // Act
    client.fail(reason);
    client.fail(new PoolError(ErrorCode.INTERNAL, 'second call is ignored'));
    client.close();
    // Assert
    await expect(first).rejects.toBe(reason);
    await expect(second).rejects.toBe(reason);
    expect(onClose).toHaveBeenCalledExactlyOnceWith(reason);
    await expect(client.request('echo', 1)).rejects.toBe(reason);
  });

  it('aborts the handlers it is running when it fails', async () => {
    // Arrange
    const { handler, contextOf } = recordingHandler(hang);
    const { client, server } = pair(handler);
    void client.request('hang', 1).catch(() => undefined);
    const ctx = await contextOf('hang');
    const reason = new PoolError(ErrorCode.ACTOR_DIED, 'shutting down');
    // Act
    server.fail(reason);
    // Assert
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBe(reason);
  });

  it('rejects a request whose argument cannot be cloned with MCPOOL_INVALID_ARGUMENT, keeping the channel open', async () => {
    // Arrange
    const { client } = pair((_op, args) => args);
    // Act
    const error = await rejectionOf(client.request('echo', { fn: () => 1 }));
    // Assert
    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(client.closed).toBe(false);
    expect(client.pendingCount).toBe(0);
    await expect(client.request('echo', 'still works')).resolves.toBe('still works');
  });

  it('answers with an error when the handler result cannot be cloned', async () => {
    // Arrange
    const { client } = pair(() => ({ fn: () => 1 }));
    // Act
    const error = await rejectionOf(client.request('echo', undefined));
    // Assert
    expect(error).toBeInstanceOf(PoolError);
    expect(error.code).toBe(ErrorCode.INTERNAL);
    expect(client.closed).toBe(false);
  });

  it('delivers events to onEvent', async () => {
    // Arrange
    const events: Array<[string, unknown]> = [];
    let received: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (received = resolve));
    const { server } = pair(
      () => undefined,
      {
        onEvent: (ev, data) => {
          events.push([ev, data]);
          if (events.length === 2) received();
        },
      },
    );
    // Act
    const sent = [server.emit('status', { status: 'active' }), server.emit('toolsChanged', [1, 2])];
    await done;
    // Assert
    expect(sent).toEqual([true, true]);
    expect(events).toEqual([
      ['status', { status: 'active' }],
      ['toolsChanged', [1, 2]],
    ]);
  });

  it('refuses requests when it has no handler', async () => {
    // Arrange
    const { client, server } = pair(() => undefined);
    // Act: the server side asks the client side, which has no handler.
    const error = await rejectionOf(server.request('anything', 1));
    // Assert
    expect(error.code).toBe(ErrorCode.INTERNAL);
    expect(client.closed).toBe(false);
  });

  it('leaves no listener on the port after fail()', () => {
    // Arrange
    const { port1, port2 } = new MessageChannel();
    cleanups.push(() => {
      port1.close();
      port2.close();
    });
    const channel = new RpcChannel(port1, { ownsPort: false });
    const during = [port1.listenerCount('message'), port1.listenerCount('close')];
    // Act
    channel.fail(new PoolError(ErrorCode.PORT_CLOSED, 'done'));
    // Assert
    expect(during).toEqual([1, 1]);
    expect(port1.listenerCount('message')).toBe(0);
    expect(port1.listenerCount('close')).toBe(0);
  });
});

describe('batching', () => {
  /** Counts the postMessage calls a port makes and the messages they carry. */
  function countPosts(port: MessagePort): { posts: number; arrays: number } {
    const counts = { posts: 0, arrays: 0 };
    const post = port.postMessage.bind(port);
    port.postMessage = (message: unknown, transfer?: readonly import('node:worker_threads').TransferListItem[]) => {
      counts.posts++;
      if (Array.isArray(message)) counts.arrays++;
      post(message, transfer);
    };
    return counts;
  }

  it('sends the requests of one tick as one post and the answers of one tick as one, in order', async () => {
    // Arrange
    const order: number[] = [];
    const { clientPort, serverPort, client } = pair(
      (_op, args) => {
        order.push(args as number);
        return (args as number) * 2;
      },
      { batch: true },
      { batch: true },
    );
    const sent = countPosts(clientPort);
    const answered = countPosts(serverPort);
    // Act
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => client.request('double', i)));
    // Assert
    expect(results).toEqual(Array.from({ length: 16 }, (_, i) => i * 2));
    expect(order).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(sent).toEqual({ posts: 1, arrays: 1 });
    expect(answered).toEqual({ posts: 1, arrays: 1 });
  });

  it('a lone message goes alone, not wrapped, and a channel without batch reads a batch', async () => {
    // Arrange: only the client batches.
    const { clientPort, client } = pair((_op, args) => args, { batch: true });
    const sent = countPosts(clientPort);
    // Act
    const one = await client.request('echo', 'one');
    const many = await Promise.all([client.request('echo', 'a'), client.request('echo', 'b')]);
    // Assert
    expect(one).toBe('one');
    expect(many).toEqual(['a', 'b']);
    expect(sent).toEqual({ posts: 2, arrays: 1 });
  });

  it('a message that cannot be cloned fails alone; the others of its batch are answered', async () => {
    // Arrange
    const { client } = pair(
      (_op, args) => {
        if (args === 'bad answer') return { fn: () => 1 };
        return args;
      },
      { batch: true },
      { batch: true },
    );
    // Act
    const outcomes = await Promise.allSettled([
      client.request('echo', 'a'),
      client.request('echo', { fn: () => 1 }),
      client.request('echo', 'bad answer'),
      client.request('echo', 'b'),
    ]);
    // Assert
    expect(outcomes[0]).toEqual({ status: 'fulfilled', value: 'a' });
    expect((outcomes[1] as PromiseRejectedResult).reason.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect((outcomes[2] as PromiseRejectedResult).reason.code).toBe(ErrorCode.INTERNAL);
    expect(outcomes[3]).toEqual({ status: 'fulfilled', value: 'b' });
    expect(client.closed).toBe(false);
  });

  it('events and answers keep their order within a batch, and what was queued before a close still leaves', async () => {
    // Arrange
    const seen: string[] = [];
    let done: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (done = resolve));
    const { server } = pair(() => undefined, {
      onEvent: (ev) => seen.push(ev),
      onClose: () => done(),
    }, { batch: true });
    // Act: three events in one tick, then the channel is closed in the same tick.
    server.emit('first', 1);
    server.emit('second', 2);
    server.emit('third', 3);
    server.close('done');
    await closed;
    // Assert
    expect(seen).toEqual(['first', 'second', 'third']);
  });

  it('requests queued on a channel whose port closes reject with MCPOOL_PORT_CLOSED', async () => {
    // Arrange
    const { client, serverPort } = pair(hang, { batch: true });
    // Act
    const pending = [client.request('a', 1), client.request('b', 2)];
    serverPort.close();
    const errors = await Promise.all(pending.map(rejectionOf));
    // Assert
    expect(errors.map((e) => e.code)).toEqual([ErrorCode.PORT_CLOSED, ErrorCode.PORT_CLOSED]);
    expect(client.pendingCount).toBe(0);
    await expect(client.request('c', 3)).rejects.toMatchObject({ code: ErrorCode.PORT_CLOSED });
  });
});

describe('across a worker thread', () => {
  interface WorkerHarness {
    worker: Worker;
    channel: RpcChannel;
    events: Array<[string, unknown]>;
    /** Resolves with the first event named `ev` (already received or not). */
    nextEvent: (ev: string) => Promise<unknown>;
    exited: Promise<number>;
    errors: unknown[];
  }

  /** Starts the fixture worker; on its exit the channel fails with MCPOOL_ACTOR_DIED, as the supervisor does. */
  async function startWorker(): Promise<WorkerHarness> {
    const worker = new Worker(WORKER_ENTRY);
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    const events: Array<[string, unknown]> = [];
    const waiters: Array<{ ev: string; resolve: (data: unknown) => void }> = [];
    const channel = new RpcChannel(worker, {
      onEvent: (ev, data) => {
        events.push([ev, data]);
        for (const waiter of waiters.filter((w) => w.ev === ev)) waiter.resolve(data);
      },
    });
    const exited = new Promise<number>((resolve) => {
      worker.once('exit', (code) => {
        channel.fail(new PoolError(ErrorCode.ACTOR_DIED, `the actor exited with code ${code}`, { data: { exitCode: code } }));
        resolve(code);
      });
    });
    cleanups.push(async () => {
      await worker.terminate();
    });
    const nextEvent = (ev: string): Promise<unknown> => {
      const seen = events.find(([name]) => name === ev);
      if (seen !== undefined) return Promise.resolve(seen[1]);
      return new Promise((resolve) => waiters.push({ ev, resolve }));
    };
    await nextEvent('ready');
    return { worker, channel, events, nextEvent, exited, errors };
  }

  it('round-trips requests, coded errors, interrupted calls, progress and events', async () => {
    // Arrange
    const { channel, events, errors } = await startWorker();
    const progress: unknown[] = [];
    // Act
    const echoed = await channel.request('echo', { a: [1, 2, 3] });
    const coded = await rejectionOf(channel.request('throwCoded', undefined));
    const interrupted = await rejectionOf(channel.request('interrupted', undefined));
    const done = await channel.request('progress', undefined, { onProgress: (data) => progress.push(data) });
    // Assert
    expect(echoed).toEqual({ a: [1, 2, 3] });
    expect(coded).toBeInstanceOf(PoolError);
    expect(coded).toMatchObject({ code: ErrorCode.UPSTREAM_ERROR, data: { x: 1 } });
    expect(interrupted).toBeInstanceOf(MCPCallInterruptedError);
    expect(interrupted).toMatchObject({ code: ErrorCode.CALL_INTERRUPTED, serverName: 'fixture', entryIndex: 2, clientGeneration: 7 });
    expect(done).toBe('done');
    expect(progress).toEqual([{ step: 1 }, { step: 2 }, { step: 3 }]);
    expect(events[0]?.[0]).toBe('ready');
    expect(errors).toEqual([]);
  });

  it('cancels the handler in the worker when a call times out', async () => {
    // Arrange
    const { channel, nextEvent } = await startWorker();
    // Act
    const error = await rejectionOf(channel.request('hang', undefined, { timeoutMs: 50 }));
    const aborted = await nextEvent('aborted');
    // Assert
    expect(error.code).toBe(ErrorCode.CALL_TIMEOUT);
    expect(aborted).toEqual({ op: 'hang', reason: ErrorCode.CALL_CANCELLED });
  });

  it('rejects a hanging call when the worker dies, instead of hanging', async () => {
    // Arrange
    const { worker, channel, exited } = await startWorker();
    const hanging = channel.request('hang', undefined);
    // Act
    const dying = channel.request('die', undefined);
    // Assert
    const [hangError, dieError] = await Promise.all([rejectionOf(hanging), rejectionOf(dying)]);
    expect(await exited).toBe(3);
    expect(hangError.code).toBe(ErrorCode.ACTOR_DIED);
    expect(hangError.data).toEqual({ exitCode: 3 });
    expect(dieError.code).toBe(ErrorCode.ACTOR_DIED);
    expect(channel.closed).toBe(true);
    expect(worker.listenerCount('message')).toBe(0); // the channel's listener is gone
  });

  it('rejects a hanging call when the worker is terminated', async () => {
    // Arrange
    const { worker, channel, exited } = await startWorker();
    const hanging = channel.request('hang', undefined);
    // Act
    await worker.terminate();
    // Assert
    const error = await rejectionOf(hanging);
    expect(await exited).toBe(1);
    expect(error.code).toBe(ErrorCode.ACTOR_DIED);
    await expect(channel.request('echo', 1)).rejects.toBe(error);
  });

  it(
    // Regression: an error reply that could not be cloned became an unhandled rejection that
    // killed the worker, instead of answering its own request.
    'answers a handler error whose data cannot be cloned without killing the worker',
    async () => {
      // Arrange
      const { channel, errors } = await startWorker();
      // Act
      const error = await rejectionOf(channel.request('throwUncloneable', undefined, { timeoutMs: 15_000 }));
      // Assert
      expect(error.code).not.toBe(ErrorCode.ACTOR_DIED);
      expect(errors).toEqual([]);
      await expect(channel.request('echo', 'alive')).resolves.toBe('alive');
    },
  );
});
