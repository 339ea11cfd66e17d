/**
 * The actor's JSON-RPC client of one upstream server: it sends the method a view asked for,
 * correlates the answer by id and hands the result back as parsed by the transport (once, every
 * field kept). No schema validation and no MCP method knowledge beyond what correlation needs:
 * progress (`notifications/progress` by token), cancellation (`notifications/cancelled`, or an
 * aborted HTTP request where the transport ends the request's stream) and `ping` from a legacy
 * server, which the client itself answers.
 *
 * Deadlines: each request has one timer, armed here with the value the caller chose. Progress
 * for the request re-arms it, but never past `maxTotalTimeoutMs` from the start.
 */
import type { Root } from '@mcpool/protocol';
import { ErrorCode, PoolError } from '@mcpool/protocol/rpc';
import { jsonRpcCodeOf } from '@mcpool/protocol/errorCodes';
import { UpstreamStreamError, type JsonRpcMessage, type OversizedMessage, type UpstreamTransport } from './transports/upstreamTransport.js';

/** What a call gets when `timeoutMs` passes without its answer (or its progress). */
export function callTimedOut(timeoutMs: number): PoolError {
  return new PoolError(ErrorCode.CALL_TIMEOUT, `the call timed out after ${timeoutMs} ms`, { data: { timeoutMs } });
}

/** What a call its caller cancelled gets. */
export function callCancelled(): PoolError {
  return new PoolError(ErrorCode.CALL_CANCELLED, 'the call was cancelled');
}

/** A JSON-RPC error answer from the server. */
export class UpstreamRpcError extends Error {
  override name = 'UpstreamRpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** The connection ended while the request was in flight: its result is unknown. */
export class UpstreamClosedError extends Error {
  override name = 'UpstreamClosedError';
}

export interface ProgressPayload {
  progress: number;
  total?: number;
  message?: string;
}

export interface UpstreamRequestOptions {
  /** Time without an answer (or progress, when `onProgress` is set) before the request fails. */
  timeoutMs: number;
  /** Upper bound from the start however much progress arrives. @default timeoutMs × 10 */
  maxTotalTimeoutMs?: number | undefined;
  /** Sets a progress token upstream; each progress notification for it lands here. */
  onProgress?: ((progress: ProgressPayload) => void) | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Tell the server when the timeout gives up on the request. @default true. The era probe
   * turns it off: a server that was only slow to start still reads the probe first and settles
   * its era on it, and its late answer is simply dropped.
   */
  cancelOnTimeout?: boolean | undefined;
}

export interface UpstreamClientHooks {
  /** A request the server sent (sampling, elicitation, roots). Its result or error goes back as is. */
  request(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>>;
  /** Every notification the client does not consume itself (progress and cancellation are its own). */
  notification(method: string, params: Record<string, unknown> | undefined): void;
  /** A message over the size limit was dropped; `failed` is the id of the request it failed, if one. */
  oversized?(message: OversizedMessage, failed: number | undefined): void;
}

/**
 * One request in flight: its deadline timer, its caller's signal and progress. A class, not a set
 * of closures: one is made per call on the call path.
 */
class Pending {
  readonly #client: UpstreamClient;
  readonly id: number;
  readonly onProgress: ((progress: ProgressPayload) => void) | undefined;
  readonly #options: UpstreamRequestOptions;
  readonly #resolve: (result: Record<string, unknown>) => void;
  readonly #reject: (error: Error) => void;
  readonly #maxTotal: number;
  readonly #startedAt: number;
  /** Set when the transport ends the request's stream (`cancelBy: 'signal'`). */
  readonly abortController: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    client: UpstreamClient,
    id: number,
    options: UpstreamRequestOptions,
    cancelBySignal: boolean,
    resolve: (result: Record<string, unknown>) => void,
    reject: (error: Error) => void,
  ) {
    this.#client = client;
    this.id = id;
    this.onProgress = options.onProgress;
    this.#options = options;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#maxTotal = options.maxTotalTimeoutMs ?? options.timeoutMs * 10;
    this.#startedAt = options.onProgress === undefined ? 0 : Date.now();
    this.abortController = cancelBySignal ? new AbortController() : undefined;
    if (this.#maxTotal <= options.timeoutMs) this.#arm(this.#maxTotal, true);
    else this.#arm(options.timeoutMs, false);
    options.signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  resolve(result: Record<string, unknown>): void {
    this.#done();
    this.#resolve(result);
  }

  reject(error: Error): void {
    this.#done();
    this.#reject(error);
  }

  /** Progress arrived: the deadline starts again, never past the total bound from the start. */
  rearm(): void {
    const timeoutMs = this.#options.timeoutMs;
    const left = this.#startedAt + this.#maxTotal - Date.now();
    if (left <= timeoutMs) this.#arm(Math.max(0, left), true);
    else this.#arm(timeoutMs, false);
  }

  #done(): void {
    clearTimeout(this.#timer);
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
    this.#client.forget(this.id);
  }

  #arm(ms: number, total: boolean): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      const { timeoutMs } = this.#options;
      const error = total ? new PoolError(ErrorCode.CALL_TIMEOUT, `the call ran past its total bound of ${this.#maxTotal} ms`, { data: { timeoutMs, maxTotalTimeoutMs: this.#maxTotal } }) : callTimedOut(timeoutMs);
      this.#giveUp(error, error.message, true);
    }, ms);
  }

  readonly #onAbort = (): void => this.#giveUp(callCancelled(), 'cancelled by the caller');

  #giveUp(error: PoolError, reason: string, timedOut = false): void {
    if (!this.#client.isPending(this)) return;
    this.reject(error);
    if (timedOut && this.#options.cancelOnTimeout === false) return;
    if (this.abortController !== undefined) this.abortController.abort(error);
    else void this.#client.notify('notifications/cancelled', { requestId: this.id, reason }).catch(() => undefined);
  }
}

/** JSON-RPC's "the JSON sent is not a valid Request object". */
const INVALID_REQUEST = -32600;

export interface UpstreamClientOptions {
  /**
   * How a cancelled request is ended upstream: `'notification'` sends `notifications/cancelled`
   * (stdio, websocket, a legacy HTTP session); `'signal'` aborts the send (a modern HTTP
   * transport closes that request's stream).
   */
  cancelBy: 'notification' | 'signal';
  /** Where a close listener that throws is reported. @default silent */
  logger?: { error(obj: object, msg?: string): void } | undefined;
  /**
   * The connection's own roots: the server's `roots/list` is answered with them here, at any time
   * (during the handshake too, when a server asks as soon as it is initialized), never sent to a
   * session. @default none: `roots/list` goes to the hooks like any server request
   */
  roots?: readonly Root[] | undefined;
  /**
   * Told the method of every request the server sends but `ping`, as it arrives, whoever answers
   * it (the roots above included): what a server asks of its client is learned from it.
   */
  onRequest?: ((method: string) => void) | undefined;
  /**
   * Applied to every message the server sends before anything reads it: the connection scrubs
   * what its server returns of that server's own secrets. @default nothing changed
   */
  scrub?: ((message: JsonRpcMessage) => JsonRpcMessage) | undefined;
}

export class UpstreamClient {
  readonly #transport: UpstreamTransport;
  readonly #pending = new Map<number, Pending>();
  /** Requests the server sent us and we are answering, by their id (the server may cancel them). */
  readonly #incoming = new Map<string | number, AbortController>();
  readonly #closeListeners = new Set<(error: Error | undefined) => void>();
  #hooks: UpstreamClientHooks | undefined;
  #options: UpstreamClientOptions;
  #nextId = 1;
  #closed = false;
  #lastError: Error | undefined;

  constructor(transport: UpstreamTransport, options: UpstreamClientOptions) {
    this.#transport = transport;
    this.#options = options;
    transport.onmessage = (message) => this.#onMessage(message);
    transport.onerror = (error) => {
      this.#lastError = error;
      // A request whose answer the transport lost fails now, not at its timeout.
      if (error instanceof UpstreamStreamError) this.#pendingOf(error.requestId)?.reject(error);
    };
    transport.onclose = () => this.#onClose();
    transport.onoversized = (message) => this.#onOversized(message);
    // A server that can no longer answer is gone for the client: calls in flight reject and the
    // close listeners (the connection machine) learn now; the transport's own close follows.
    transport.onlost = () => this.#onClose();
  }

  get transport(): UpstreamTransport {
    return this.#transport;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The last error the transport reported (the reason of a close, a skipped stdout banner). */
  get lastError(): Error | undefined {
    return this.#lastError;
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  setHooks(hooks: UpstreamClientHooks): void {
    this.#hooks = hooks;
  }

  setCancelBy(cancelBy: UpstreamClientOptions['cancelBy']): void {
    this.#options = { ...this.#options, cancelBy };
  }

  /** Runs once when the transport closes (at once if it has). */
  onClose(listener: (error: Error | undefined) => void): () => void {
    if (this.#closed) {
      queueMicrotask(() => listener(this.#lastError));
      return () => undefined;
    }
    this.#closeListeners.add(listener);
    return () => this.#closeListeners.delete(listener);
  }

  start(): Promise<void> {
    return this.#transport.start();
  }

  /** Sends a notification; a failed write rejects (the close path reports the loss). */
  notify(method: string, params?: Record<string, unknown>): Promise<void> {
    return this.#transport.send({ jsonrpc: '2.0', method, ...(params ? { params } : {}) });
  }

  /** Sends a request and resolves with its result, as the server sent it. */
  request(method: string, params: Record<string, unknown> | undefined, options: UpstreamRequestOptions): Promise<Record<string, unknown>> {
    if (this.#closed) return Promise.reject(new UpstreamClosedError('the connection is closed'));
    if (options.signal?.aborted) return Promise.reject(new PoolError(ErrorCode.CALL_CANCELLED, 'the call was cancelled'));
    const id = this.#nextId++;
    let body = params;
    if (options.onProgress !== undefined) body = { ...params, _meta: { ...(params?._meta as Record<string, unknown> | undefined), progressToken: id } };
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const pending = new Pending(this, id, options, this.#options.cancelBy === 'signal', resolve, reject);
      this.#pending.set(id, pending);
      const message: JsonRpcMessage = body ? { jsonrpc: '2.0', id, method, params: body } : { jsonrpc: '2.0', id, method };
      const signal = pending.abortController?.signal;
      this.#transport.send(message, signal ? { signal } : undefined).catch((error: unknown) => {
        if (this.#pending.get(id) === pending) pending.reject(error instanceof Error ? error : new Error(String(error)));
      });
    });
  }

  /** @internal A request that settled leaves the table. */
  forget(id: number): void {
    this.#pending.delete(id);
  }

  /** @internal Whether `pending` is still waiting for its answer. */
  isPending(pending: Pending): boolean {
    return this.#pending.get(pending.id) === pending;
  }

  /** Closes the transport; pending requests reject when it reports the close. */
  async close(): Promise<void> {
    await this.#transport.close().catch(() => undefined);
    this.#onClose();
  }

  /** Ids we send are numbers; a server that echoes them as strings still matches. */
  #pendingOf(id: unknown): Pending | undefined {
    return typeof id === 'number' ? this.#pending.get(id) : typeof id === 'string' ? this.#pending.get(Number(id)) : undefined;
  }

  #onMessage(received: JsonRpcMessage): void {
    const message = this.#options.scrub === undefined ? received : this.#options.scrub(received);
    const { id, method } = message;
    if (method === undefined) {
      const pending = this.#pendingOf(id);
      if (pending === undefined) return;
      if (message.error !== undefined) {
        const { code, message: text, data } = message.error;
        pending.reject(new UpstreamRpcError(typeof code === 'number' ? code : -32603, typeof text === 'string' ? text : 'error', data));
      } else {
        pending.resolve((message.result ?? {}));
      }
      return;
    }
    if (id !== undefined && id !== null) {
      void this.#answer(id, method, message.params ?? {});
      return;
    }
    const params = message.params;
    if (method === 'notifications/progress') {
      const pending = this.#pendingOf(params?.progressToken);
      if (pending?.onProgress === undefined) return;
      pending.rearm?.();
      const { progress, total, message: text } = params as { progress: number; total?: number; message?: string };
      pending.onProgress({ progress, ...(total === undefined ? {} : { total }), ...(text === undefined ? {} : { message: text }) });
      return;
    }
    if (method === 'notifications/cancelled') {
      const requestId = params?.requestId as string | number | undefined;
      if (requestId !== undefined && this.#incoming.has(requestId)) {
        this.#incoming.get(requestId)!.abort(new PoolError(ErrorCode.CALL_CANCELLED, 'the server cancelled its request'));
        return;
      }
    }
    this.#hooks?.notification(method, params);
  }

  /**
   * A message dropped for its size fails the call it answers: the one its id names, else the only
   * call in flight (an answer can be nobody else's). With several in flight and no id, no call is
   * guessed at: each waits for its own answer or its deadline. A request of the server's own is
   * refused, so the server does not wait for an answer that will never come.
   */
  #onOversized(message: OversizedMessage): void {
    let failed: Pending | undefined;
    if (message.kind === 'server') {
      if (message.id !== undefined) {
        const refusal = `the request is ${message.bytes} bytes long, over the ${message.limit} bytes this client accepts`;
        void this.#transport.send({ jsonrpc: '2.0', id: message.id, error: { code: INVALID_REQUEST, message: refusal } }).catch(() => undefined);
      }
    } else if (message.id !== undefined) {
      failed = this.#pendingOf(message.id);
    } else if (this.#pending.size === 1) {
      failed = this.#pending.values().next().value;
    }
    failed?.reject(
      new PoolError(ErrorCode.MESSAGE_TOO_LARGE, `the server's answer is ${message.bytes} bytes long, over this connection's limit of ${message.limit} (maxMessageBytes): it was dropped unread`, {
        data: { bytes: message.bytes, maxMessageBytes: message.limit },
      }),
    );
    this.#hooks?.oversized?.(message, failed?.id);
  }

  async #answer(id: string | number, method: string, params: Record<string, unknown>): Promise<void> {
    let reply: JsonRpcMessage;
    const roots = this.#options.roots;
    if (method !== 'ping') this.#options.onRequest?.(method);
    if (method === 'ping') {
      reply = { jsonrpc: '2.0', id, result: {} };
    } else if (method === 'roots/list' && roots !== undefined) {
      reply = { jsonrpc: '2.0', id, result: { roots: roots.map((root) => ({ ...root })) } };
    } else if (this.#hooks === undefined) {
      reply = { jsonrpc: '2.0', id, error: { code: -32601, message: `mcpool does not handle ${method} yet` } };
    } else {
      const controller = new AbortController();
      this.#incoming.set(id, controller);
      try {
        reply = { jsonrpc: '2.0', id, result: await this.#hooks.request(method, params, controller.signal) };
      } catch (error) {
        const rpc = toRpcError(error);
        reply = { jsonrpc: '2.0', id, error: rpc };
      } finally {
        this.#incoming.delete(id);
      }
      if (controller.signal.aborted) return;
    }
    await this.#transport.send(reply).catch(() => undefined);
  }

  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    const error = new UpstreamClosedError(this.#lastError ? `the connection closed: ${this.#lastError.message}` : 'the connection closed');
    for (const pending of [...this.#pending.values()]) pending.reject(error);
    for (const controller of this.#incoming.values()) controller.abort(error);
    for (const listener of [...this.#closeListeners]) {
      try {
        listener(this.#lastError);
      } catch (error) {
        // One listener's failure must not stop the others, and is never silent: it is a bug.
        this.#options.logger?.error({ err: error }, 'a close listener of the upstream client threw');
      }
    }
    this.#closeListeners.clear();
  }
}

/**
 * A thrown error as a JSON-RPC error object: `data.mcpCode` of a PoolError sets the code, else
 * the code table's; anything else is a bug here (-32603).
 */
function toRpcError(error: unknown): { code: number; message: string; data?: unknown } {
  if (error instanceof UpstreamRpcError) return { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) };
  if (error instanceof PoolError) {
    const code = typeof error.data?.mcpCode === 'number' ? error.data.mcpCode : jsonRpcCodeOf(error.code);
    return { code, message: error.message, ...(error.data?.mcpData === undefined ? {} : { data: error.data.mcpData }) };
  }
  return { code: -32603, message: (error as Error)?.message ?? String(error) };
}
