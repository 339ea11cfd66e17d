/**
 * A small typed request/response/event protocol over a MessagePort-like endpoint.
 *
 * Why not comlink: on Node 20 a comlink call hangs forever when the worker behind it dies, its
 * `releaseProxy` never closes the port (4.4.2), and each subscription opens its own channel
 * (measured with comlink 4.4.2). This layer races every call against the port's
 * `close`, an explicit {@link RpcChannel.fail} (the supervisor calls it on worker `exit`) and an
 * optional timeout, and carries errors with their `code` and `data`.
 *
 * Messages:
 *   `{k:'req', id, op, args}` → `{k:'res', id, ok:true, result}` | `{k:'res', id, ok:false, error}`
 *   `{k:'ev', ev, data}` one-way events; `{k:'cancel', id}` aborts a request's handler signal;
 *   `{k:'prog', id, data}` progress for request `id`, delivered to that request's caller only.
 * A channel with `batch` set sends what it posts within one tick as one array of such messages;
 * every channel reads both forms.
 */
import { ErrorCode, PoolError, errorFromWire, errorToWire, type WireError } from './errors.js';

// Actor threads import the channel and the error types from here (`@mcpool/protocol/rpc`)
// rather than from the package root, which also loads the config schema and its validator.
export { ErrorCode, MCPCallInterruptedError, PoolError, errorFromWire, errorToWire } from './errors.js';

/** What both `MessagePort`, `Worker` and `parentPort` offer. */
export interface RpcPort {
  postMessage(message: unknown, transferList?: readonly Transferable[]): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

type Transferable = import('node:worker_threads').TransferListItem;

/** The context a request handler gets. */
export interface RpcHandlerContext {
  /**
   * Aborted when the caller cancels, times out, or the channel closes. Made on first read, so a
   * handler that may be cancelled must read it before its first await.
   */
  readonly signal: AbortSignal;
  /** Sends a progress payload to this request's caller only. */
  progress(data: unknown): void;
}

export type RpcHandler = (op: string, args: unknown, ctx: RpcHandlerContext) => unknown;

export interface RpcRequestOptions {
  /** Rejects with `MCPOOL_CALL_CANCELLED` and tells the other side to abort. */
  signal?: AbortSignal | undefined;
  /** Rejects with `MCPOOL_CALL_TIMEOUT` after this many ms and tells the other side to abort. @default none */
  timeoutMs?: number | undefined;
  /** Progress payloads the handler sends for this request. */
  onProgress?: ((data: unknown) => void) | undefined;
  /** Ports or buffers to transfer with the request. */
  transfer?: readonly Transferable[] | undefined;
}

export interface RpcChannelOptions {
  /** Answers requests from the other side. Without it, requests are refused. */
  handler?: RpcHandler;
  /** Receives one-way events from the other side. */
  onEvent?: (ev: string, data: unknown) => void;
  /** Called once when the channel closes (port close or {@link RpcChannel.fail}). */
  onClose?: (reason: PoolError) => void;
  /**
   * Close the port when the channel closes. Turn off for a port the channel does not own
   * (a worker's `parentPort`). @default true
   */
  ownsPort?: boolean;
  /**
   * Messages posted within one tick leave as one `postMessage` (an array), in order: under
   * concurrency each hop costs one clone and one wake-up of the other thread instead of one per
   * message. A lone message waits only for the current tick's promise jobs to run. @default false
   */
  batch?: boolean;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: PoolError): void;
  onProgress: ((data: unknown) => void) | undefined;
  cleanup(): void;
}

type Incoming =
  | { k: 'req'; id: number; op: string; args: unknown }
  | { k: 'res'; id: number; ok: true; result: unknown }
  | { k: 'res'; id: number; ok: false; error: WireError }
  | { k: 'ev'; ev: string; data: unknown }
  | { k: 'cancel'; id: number }
  | { k: 'prog'; id: number; data: unknown };

function isIncoming(message: unknown): message is Incoming {
  return typeof message === 'object' && message !== null && typeof (message as { k?: unknown }).k === 'string';
}

/**
 * One side of a channel. Both sides may send requests and events.
 * A `Worker` endpoint never emits `close`: its owner must call {@link RpcChannel.fail} on the
 * worker's `exit`, or calls through it would wait forever.
 * After {@link close} or {@link fail}, every pending request is rejected and new ones reject at once
 * (a `postMessage` on a closed port is silently dropped, so a closed flag is the only safe guard).
 */
export class RpcChannel {
  readonly #port: RpcPort;
  readonly #options: RpcChannelOptions;
  readonly #pending = new Map<number, Pending>();
  /** Requests being handled, with their controller once one was needed. */
  readonly #handling = new Map<number, AbortController | undefined>();
  #nextId = 1;
  #closed: PoolError | undefined;
  /** Messages waiting for the end of the tick (`batch` only). */
  #queue: Incoming[] = [];

  constructor(port: RpcPort, options: RpcChannelOptions = {}) {
    this.#port = port;
    this.#options = options;
    port.on('message', this.#onMessage);
    port.on('close', this.#onPortClose);
  }

  get closed(): boolean {
    return this.#closed !== undefined;
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Sends a request and resolves with the other side's result. */
  request<T = unknown>(op: string, args: unknown, options: RpcRequestOptions = {}): Promise<T> {
    if (this.#closed) return Promise.reject(this.#closed);
    const { signal, timeoutMs, onProgress, transfer } = options;
    if (signal?.aborted) {
      return Promise.reject(new PoolError(ErrorCode.CALL_CANCELLED, `${op} was cancelled before it was sent`));
    }
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      // Most requests carry neither a timeout nor a signal: only those pay for the timer and listener.
      const pending: Pending = timeoutMs === undefined && signal === undefined
        ? { resolve, reject, onProgress, cleanup: noop }
        : this.#guarded(id, op, options, resolve as (value: unknown) => void, reject);
      this.#pending.set(id, pending);
      this.#post({ k: 'req', id, op, args }, transfer);
    });
  }

  /** A pending request with its timeout and its caller's signal, each ending it on this side and the other. */
  #guarded(id: number, op: string, options: RpcRequestOptions, resolve: (value: unknown) => void, reject: (error: PoolError) => void): Pending {
    const { signal, timeoutMs } = options;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      this.#abandon(id, new PoolError(ErrorCode.CALL_CANCELLED, `${op} was cancelled`));
    };
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        this.#abandon(id, new PoolError(ErrorCode.CALL_TIMEOUT, `${op} timed out after ${timeoutMs} ms`, { data: { timeoutMs } }));
      }, timeoutMs);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    return {
      resolve,
      reject,
      onProgress: options.onProgress,
      cleanup: () => {
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      },
    };
  }

  /**
   * Sends a one-way event. Dropped (returns false) once the channel is closed. Throws a
   * `DataCloneError` when `data` cannot be cloned: that is the sender's bug, not the channel's.
   */
  emit(ev: string, data: unknown, transfer?: readonly Transferable[]): boolean {
    if (this.#closed) return false;
    this.#post({ k: 'ev', ev, data }, transfer);
    return true;
  }

  /**
   * Closes the channel: rejects everything pending with `reason`, aborts running handlers and
   * stops listening. The port itself is closed too when it has a `close` method (MessagePort).
   */
  fail(reason: PoolError): void {
    if (this.#closed) return;
    // What was posted before the close still leaves, as it would have without batching.
    this.#flush();
    this.#closed = reason;
    this.#port.off('message', this.#onMessage);
    this.#port.off('close', this.#onPortClose);
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id);
      pending.cleanup();
      pending.reject(reason);
    }
    for (const id of this.#handling.keys()) this.#abortHandling(id, reason);
    const closable = this.#port as { close?: () => void };
    if (this.#options.ownsPort !== false && typeof closable.close === 'function') closable.close();
    this.#options.onClose?.(reason);
  }

  /** Closes the channel normally. */
  close(message = 'channel closed'): void {
    this.fail(new PoolError(ErrorCode.PORT_CLOSED, message));
  }

  #post(message: Incoming, transfer?: readonly Transferable[]): void {
    if (this.#options.batch !== true) {
      this.#postOne(message, transfer);
      return;
    }
    if (transfer !== undefined && transfer.length > 0) {
      // What is transferred goes alone, after what was queued before it.
      this.#flush();
      this.#postOne(message, transfer);
      return;
    }
    // nextTick, queued from a promise job, runs once every promise job of this tick has run:
    // answers settled together leave together, and nothing waits for the next turn of the loop.
    if (this.#queue.push(message) === 1) process.nextTick(this.#flush);
  }

  readonly #flush = (): void => {
    const queue = this.#queue;
    if (queue.length === 0) return;
    this.#queue = [];
    // A closed port drops what it is given; the pending requests were rejected by the close.
    if (this.#closed) return;
    if (queue.length === 1) {
      this.#postOne(queue[0]!);
      return;
    }
    try {
      this.#port.postMessage(queue);
    } catch {
      // One message that cannot be cloned fails alone: each is sent again on its own.
      for (const message of queue) this.#postOne(message);
    }
  };

  #postOne(message: Incoming, transfer?: readonly Transferable[]): void {
    try {
      this.#port.postMessage(message, transfer);
    } catch (error) {
      // A payload that cannot be cloned must fail its own request, never the channel.
      if (message.k === 'req') {
        this.#settle(message.id, (p) => p.reject(new PoolError(ErrorCode.INVALID_ARGUMENT, `cannot send ${message.op}: ${(error as Error).message}`)));
      } else if (message.k === 'res' && message.ok) {
        this.#port.postMessage({ k: 'res', id: message.id, ok: false, error: errorToWire(error) });
      } else if (message.k === 'res') {
        // An error whose `data` cannot be cloned still answers its request, without the data.
        this.#port.postMessage({ k: 'res', id: message.id, ok: false, error: { code: message.error.code, message: message.error.message } });
      } else {
        throw error;
      }
    }
  }

  #abortHandling(id: number, reason: PoolError): void {
    if (!this.#handling.has(id)) return;
    let controller = this.#handling.get(id);
    if (controller === undefined) this.#handling.set(id, (controller = new AbortController()));
    controller.abort(reason);
  }

  #abandon(id: number, error: PoolError): void {
    if (!this.#pending.has(id)) return;
    this.#settle(id, (p) => p.reject(error));
    if (!this.#closed) this.#post({ k: 'cancel', id });
  }

  #settle(id: number, action: (pending: Pending) => void): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    pending.cleanup();
    action(pending);
  }

  readonly #onPortClose = (): void => {
    this.fail(new PoolError(ErrorCode.PORT_CLOSED, 'the other side closed the channel'));
  };

  readonly #onMessage = (message: unknown): void => {
    if (Array.isArray(message)) {
      for (const one of message) {
        // A message may close the channel (an answer whose caller fails it): the rest is dropped.
        if (this.#closed) return;
        this.#onOne(one);
      }
      return;
    }
    this.#onOne(message);
  };

  #onOne(message: unknown): void {
    if (!isIncoming(message)) return;
    switch (message.k) {
      case 'res':
        if (message.ok) this.#settle(message.id, (p) => p.resolve(message.result));
        else this.#settle(message.id, (p) => p.reject(errorFromWire(message.error)));
        return;
      case 'prog':
        this.#pending.get(message.id)?.onProgress?.(message.data);
        return;
      case 'ev':
        this.#options.onEvent?.(message.ev, message.data);
        return;
      case 'cancel':
        this.#abortHandling(message.id, new PoolError(ErrorCode.CALL_CANCELLED, 'cancelled by the caller'));
        return;
      case 'req':
        void this.#handle(message.id, message.op, message.args);
        return;
    }
  }

  #handle(id: number, op: string, args: unknown): void {
    const handler = this.#options.handler;
    if (handler === undefined) {
      this.#post({ k: 'res', id, ok: false, error: { code: ErrorCode.INTERNAL, message: `no handler for ${op}` } });
      return;
    }
    this.#handling.set(id, undefined);
    // A handler's promise is followed with `then`, not awaited in an async function: on the
    // call path every frame and microtask between the answer and its post is paid per call.
    let result: unknown;
    try {
      result = handler(op, args, new HandlerContext(this, id));
    } catch (error) {
      this.#answerError(id, error);
      return;
    }
    if (isThenable(result)) {
      result.then(
        (value) => this.#answer(id, value),
        (error: unknown) => this.#answerError(id, error),
      );
    } else {
      this.#answer(id, result);
    }
  }

  #answer(id: number, result: unknown): void {
    this.#handling.delete(id);
    if (!this.#closed) this.#post({ k: 'res', id, ok: true, result });
  }

  #answerError(id: number, error: unknown): void {
    this.#handling.delete(id);
    if (!this.#closed) this.#post({ k: 'res', id, ok: false, error: errorToWire(error) });
  }

  /** @internal The signal of request `id`, made on first use (see {@link RpcHandlerContext.signal}). */
  signalOf(id: number): AbortSignal {
    let controller = this.#handling.get(id);
    if (controller === undefined) {
      controller = new AbortController();
      // A request already answered keeps no entry: its signal is a fresh one nobody aborts.
      if (this.#handling.has(id)) this.#handling.set(id, controller);
    }
    return controller.signal;
  }

  /** @internal Progress for request `id`, while it is being handled and not aborted. */
  progressOf(id: number, data: unknown): void {
    if (this.#closed || !this.#handling.has(id) || this.#handling.get(id)?.signal.aborted === true) return;
    this.#post({ k: 'prog', id, data });
  }
}

const noop = (): void => undefined;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * What a handler gets for one request. A class rather than an object literal with a getter and
 * a closure: one is made per request on the call path.
 * The signal is made on first use: an AbortController plus its listeners costs a few µs, a real
 * share of a ~30 µs call, and most handlers never look at it. A cancel (or the channel's end)
 * that comes first leaves an aborted controller behind.
 */
class HandlerContext implements RpcHandlerContext {
  readonly #channel: RpcChannel;
  readonly #id: number;

  constructor(channel: RpcChannel, id: number) {
    this.#channel = channel;
    this.#id = id;
  }

  get signal(): AbortSignal {
    return this.#channel.signalOf(this.#id);
  }

  progress(data: unknown): void {
    this.#channel.progressOf(this.#id, data);
  }
}
