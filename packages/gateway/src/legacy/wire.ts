/**
 * The server side of one legacy (2025-11-25 and older) Streamable HTTP session, written directly
 * on `node:http`: no SDK `Server`, no SDK transport, each message parsed once.
 *
 * - POST: one JSON-RPC message or a batch. Notifications and responses only → 202. A single
 *   request is answered as `application/json` when nothing has to go out before its result, and
 *   as SSE (`text/event-stream`) from the first message that does (progress, a log, a
 *   server→client request); a batch with requests is always SSE, ended after its last answer.
 * - GET: the session's one standalone SSE stream (a second one gets 409), for what no request
 *   can be blamed for; a notification sent while none is open is dropped, as the SDK does.
 * - DELETE: 200, then the session ends.
 * - Status codes and messages are the SDK transport's (1.32): 400 for a missing session header
 *   or a request before `initialize`, 404 for another session id, 406 / 415 for Accept /
 *   Content-Type, 400 for an `MCP-Protocol-Version` header the SDK does not support, 405 else.
 * - The protocol layer is the SDK `Protocol`'s: `initialize` (the client's version if supported,
 *   else the latest), `ping`, `-32601` for a method the session does not serve, a handler's
 *   error as `{ code, message, data }`, `notifications/cancelled` aborting the request (whose
 *   answer is then never sent), server→client requests with their own ids from 1 (SDK ≤ 1.32.2
 *   clients ignore a cancel for id 0), a timeout or abort cancelling them on the client.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { endJson } from '../jsonBody.js';
import { RpcCode, RpcError } from '../rpcErrors.js';

/** A JSON-RPC params or result object, as the wire passes it. */
export type LegacyParams = Record<string, unknown>;
/** A JSON-RPC request id. */
export type LegacyRequestId = string | number;

/** The protocol versions a legacy session accepts, newest first (the SDK 1.32 list). */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];
/** The SDK transport refuses batches longer than this. */
const MAX_BATCH = 100;
/** A comment on a quiet SSE stream this often keeps proxies from closing it (the SDK's default). */
const KEEP_ALIVE_MS = 15_000;

/** One downstream request being served: what its handler can do on its stream. */
export interface LegacyRequestContext {
  readonly requestId: LegacyRequestId;
  /** Aborted when the client cancels the request or the session ends. */
  readonly signal: AbortSignal;
  /** `params._meta` as the client sent it. */
  readonly meta: LegacyParams | undefined;
  readonly headers: IncomingHttpHeaders;
  /** A notification on this request's stream (the answer turns to SSE); dropped once it was answered. */
  notify(notification: { method: string; params?: LegacyParams | undefined }): void;
  /**
   * A server→client request on this request's stream; resolves with the client's result.
   * @throws RpcError the client's error, or `-32001` on timeout; the abort reason when `signal` aborts.
   */
  request(request: { method: string; params?: LegacyParams | undefined }, options: { signal?: AbortSignal; timeoutMs: number }): Promise<LegacyParams>;
}

/** What the session serves, asked per request (no per-method closures are kept per session). */
export interface LegacyEndpoint {
  /** True when the session serves `method` (else `-32601`). */
  handles(method: string): boolean;
  handle(method: string, params: LegacyParams, context: LegacyRequestContext): Promise<LegacyParams> | LegacyParams;
  /** The result of `initialize`, from what the client declared. */
  initialize(params: LegacyParams): { serverInfo: unknown; capabilities: unknown; instructions?: string | undefined };
}

export interface LegacyWireOptions {
  sessionId: string;
  endpoint: LegacyEndpoint;
  /** Applied to every JSON-RPC message written downstream (results, errors, notifications, requests). */
  encode?(message: LegacyParams): LegacyParams;
  /** `initialize` was accepted: the session id is live, before its answer leaves. */
  onInitialized?(): void;
  /** The session ended by DELETE (not by {@link LegacyWire.close}). */
  onDeleted?(): void;
  /** A notification the client sent that the wire does not handle itself (`notifications/roots/list_changed`). */
  onNotification?(method: string, params: LegacyParams | undefined): void;
  /** Each HTTP response the wire answers with, as it starts (for back-pressure watching). */
  onResponse?(res: ServerResponse): void;
  keepAliveMs?: number;
}

/** A JSON-RPC message on the wire, checked by hand (shape only, as the SDK's schema does). */
type Message =
  | { kind: 'request'; id: LegacyRequestId; method: string; params: LegacyParams | undefined }
  | { kind: 'notification'; method: string; params: LegacyParams | undefined }
  | { kind: 'response'; id: LegacyRequestId; result: unknown; error: { code: number; message: string; data?: unknown } | undefined };

interface Pending {
  resolve(result: LegacyParams): void;
  reject(error: Error): void;
}

/** The HTTP answer of one POST: JSON while nothing streamed, SSE from the first early message. */
class Answer {
  readonly #res: ServerResponse;
  readonly #wire: LegacyWire;
  #open: number;
  #sse = false;
  #keepAlive: ReturnType<typeof setInterval> | undefined;

  constructor(wire: LegacyWire, res: ServerResponse, requests: number, sse: boolean) {
    this.#wire = wire;
    this.#res = res;
    this.#open = requests;
    if (sse) this.#startSse();
  }

  get done(): boolean {
    return this.#open === 0 || this.#res.destroyed;
  }

  /** A message before the answer(s): the response becomes an SSE stream. */
  write(message: LegacyParams): void {
    if (this.done) return;
    if (!this.#sse) this.#startSse();
    this.#event(message);
  }

  /** One request of this POST is answered (`message` undefined: it was cancelled, nothing is sent). */
  finish(message: LegacyParams | undefined): void {
    if (this.#open === 0) return;
    this.#open -= 1;
    if (this.#res.destroyed) return this.#stop();
    if (!this.#sse && this.#open === 0 && message !== undefined) {
      endJson(this.#res, 200, JSON.stringify(this.#wire.encode(message)), { 'mcp-session-id': this.#wire.sessionId });
      return;
    }
    if (!this.#sse) this.#startSse();
    if (message !== undefined) this.#event(message);
    if (this.#open === 0) this.end();
  }

  end(): void {
    this.#open = 0;
    this.#stop();
    if (this.#res.writableEnded) return;
    if (!this.#res.headersSent) this.#startSse();
    this.#res.end();
  }

  #startSse(): void {
    this.#sse = true;
    const res = this.#res;
    if (res.headersSent) return;
    res.writeHead(200, sseHeaders(this.#wire.sessionId));
    res.flushHeaders();
    this.#keepAlive = keepAlive(res, this.#wire.keepAliveMs);
  }

  #event(message: LegacyParams): void {
    this.#res.write(sseEvent(this.#wire.encode(message)));
  }

  #stop(): void {
    if (this.#keepAlive !== undefined) clearInterval(this.#keepAlive);
    this.#keepAlive = undefined;
  }
}

interface Running {
  readonly controller: AbortController;
  readonly answer: Answer;
}

export class LegacyWire {
  readonly sessionId: string;
  readonly keepAliveMs: number;
  readonly #options: LegacyWireOptions;
  #initialized = false;
  #closed = false;
  #stream: ServerResponse | undefined;
  #streamKeepAlive: ReturnType<typeof setInterval> | undefined;
  /** Downstream requests being served, by id. */
  readonly #running = new Map<LegacyRequestId, Running>();
  /** Server→client requests waiting for the client's answer, by our id. */
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;

  constructor(options: LegacyWireOptions) {
    this.#options = options;
    this.sessionId = options.sessionId;
    this.keepAliveMs = options.keepAliveMs ?? KEEP_ALIVE_MS;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** True while the client holds its standalone GET stream. */
  get streaming(): boolean {
    return this.#stream !== undefined;
  }

  encode(message: LegacyParams): LegacyParams {
    return this.#options.encode === undefined ? message : this.#options.encode(message);
  }

  /**
   * Serves one HTTP request of the session. `body` is the parsed JSON body when the host parsed
   * it already; otherwise the wire reads and parses the request itself.
   */
  async handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
    if (this.#closed) return refuse(res, 404, RpcCode.SESSION_NOT_FOUND, 'Session not found');
    this.#options.onResponse?.(res);
    switch (req.method) {
      case 'POST':
        return this.#post(req, res, body);
      case 'GET':
        return this.#get(req, res);
      case 'DELETE':
        return this.#delete(req, res);
      default:
        res.writeHead(405, { allow: 'GET, POST, DELETE', 'content-type': 'application/json' });
        res.end(JSON.stringify(errorBody(RpcCode.SERVER_ERROR, 'Method not allowed.')));
    }
  }

  /** A notification on the standalone GET stream; false (dropped) when the client has none open. */
  notify(notification: { method: string; params?: LegacyParams | undefined }): boolean {
    const stream = this.#stream;
    if (stream === undefined || this.#closed) return false;
    stream.write(sseEvent(this.encode({ jsonrpc: '2.0', ...notification })));
    return true;
  }

  /** Ends every stream, aborts the requests being served and rejects the client requests waiting. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const { controller, answer } of this.#running.values()) {
      controller.abort(new RpcError(RpcCode.INTERNAL_ERROR, 'the session closed'));
      answer.end();
    }
    this.#running.clear();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const waiting of pending) waiting.reject(new RpcError(-32000, 'Connection closed'));
    this.#endStream();
  }

  // --- HTTP -------------------------------------------------------------------------------------

  async #post(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const accept = req.headers.accept ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return refuse(res, 406, RpcCode.SERVER_ERROR, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    }
    if (!isJsonContentType(req.headers['content-type'])) {
      return refuse(res, 415, RpcCode.SERVER_ERROR, 'Unsupported Media Type: Content-Type must be application/json');
    }
    let raw = body;
    if (raw === undefined) {
      try {
        raw = JSON.parse(await readBody(req));
      } catch {
        return refuse(res, 400, JSON_PARSE_ERROR, 'Parse error: Invalid JSON');
      }
    }
    if (Array.isArray(raw) && raw.length > MAX_BATCH) return refuse(res, 400, RpcCode.INVALID_REQUEST, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`);
    const messages = Array.isArray(raw) ? raw.map(parseMessage) : [parseMessage(raw)];
    if (messages.length === 0 || messages.some((message) => message === undefined)) return refuse(res, 400, JSON_PARSE_ERROR, 'Parse error: Invalid JSON-RPC message');
    const parsed = messages as Message[];
    const init = parsed.find((message) => message.kind === 'request' && message.method === 'initialize');
    if (init !== undefined) {
      if (this.#initialized) return refuse(res, 400, RpcCode.INVALID_REQUEST, 'Invalid Request: Server already initialized');
      if (parsed.length > 1) return refuse(res, 400, RpcCode.INVALID_REQUEST, 'Invalid Request: Only one initialization request is allowed');
      this.#initialized = true;
      this.#options.onInitialized?.();
    } else if (!this.#sessionOk(req, res) || !protocolOk(req, res)) {
      return;
    }
    const requests = parsed.filter((message) => message.kind === 'request');
    if (requests.length === 0) {
      res.writeHead(202).end();
      for (const message of parsed) this.#receive(message, undefined, req.headers);
      return;
    }
    const answer = new Answer(this, res, requests.length, parsed.length > 1);
    for (const message of parsed) this.#receive(message, answer, req.headers);
  }

  #get(req: IncomingMessage, res: ServerResponse): void {
    if (!(req.headers.accept ?? '').includes('text/event-stream')) return refuse(res, 406, RpcCode.SERVER_ERROR, 'Not Acceptable: Client must accept text/event-stream');
    if (!this.#sessionOk(req, res) || !protocolOk(req, res)) return;
    if (this.#stream !== undefined) return refuse(res, 409, RpcCode.SERVER_ERROR, 'Conflict: Only one SSE stream is allowed per session');
    res.writeHead(200, sseHeaders(this.sessionId));
    res.flushHeaders();
    this.#stream = res;
    this.#streamKeepAlive = keepAlive(res, this.keepAliveMs);
    res.once('close', () => {
      if (this.#stream === res) this.#endStream();
    });
  }

  #delete(req: IncomingMessage, res: ServerResponse): void {
    if (!this.#sessionOk(req, res) || !protocolOk(req, res)) return;
    res.writeHead(200).end();
    this.close();
    this.#options.onDeleted?.();
  }

  #sessionOk(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.#initialized) {
      refuse(res, 400, RpcCode.SERVER_ERROR, 'Bad Request: Server not initialized');
      return false;
    }
    const id = req.headers['mcp-session-id'];
    if (typeof id !== 'string' || id === '') {
      refuse(res, 400, RpcCode.SERVER_ERROR, 'Bad Request: Mcp-Session-Id header is required');
      return false;
    }
    if (id !== this.sessionId) {
      refuse(res, 404, RpcCode.SESSION_NOT_FOUND, 'Session not found');
      return false;
    }
    return true;
  }

  #endStream(): void {
    if (this.#streamKeepAlive !== undefined) clearInterval(this.#streamKeepAlive);
    this.#streamKeepAlive = undefined;
    const stream = this.#stream;
    this.#stream = undefined;
    if (stream !== undefined && !stream.writableEnded) stream.end();
  }

  // --- JSON-RPC ---------------------------------------------------------------------------------

  #receive(message: Message, answer: Answer | undefined, headers: IncomingHttpHeaders): void {
    if (message.kind === 'request') {
      void this.#serve(message, answer!, headers);
    } else if (message.kind === 'response') {
      if (typeof message.id !== 'number') return;
      const pending = this.#pending.get(message.id);
      if (pending === undefined) return;
      this.#pending.delete(message.id);
      if (message.error !== undefined) pending.reject(new RpcError(message.error.code, message.error.message, message.error.data));
      else pending.resolve((message.result ?? {}) as LegacyParams);
    } else if (message.method === 'notifications/cancelled') {
      const id = message.params?.requestId;
      const running = typeof id === 'string' || typeof id === 'number' ? this.#running.get(id) : undefined;
      running?.controller.abort(message.params?.reason);
    } else {
      // Any other client notification (initialized, roots/list_changed, progress) is the endpoint's.
      this.#options.onNotification?.(message.method, message.params);
    }
  }

  async #serve(message: Extract<Message, { kind: 'request' }>, answer: Answer, headers: IncomingHttpHeaders): Promise<void> {
    const { id, method } = message;
    const params = message.params ?? {};
    const endpoint = this.#options.endpoint;
    if (method === 'initialize') return answer.finish({ jsonrpc: '2.0', id, result: this.#initializeResult(params) });
    if (method === 'ping') return answer.finish({ jsonrpc: '2.0', id, result: {} });
    if (!endpoint.handles(method)) return answer.finish({ jsonrpc: '2.0', id, error: { code: RpcCode.METHOD_NOT_FOUND, message: 'Method not found' } });
    const controller = new AbortController();
    const running: Running = { controller, answer };
    this.#running.set(id, running);
    const context = this.#context(id, params, controller.signal, answer, headers);
    let reply: LegacyParams;
    try {
      reply = { jsonrpc: '2.0', id, result: await endpoint.handle(method, params, context) };
    } catch (error) {
      const { code, message: text, data } = error as { code?: unknown; message?: unknown; data?: unknown };
      reply = {
        jsonrpc: '2.0',
        id,
        error: { code: Number.isSafeInteger(code) ? code : RpcCode.INTERNAL_ERROR, message: typeof text === 'string' ? text : 'Internal error', ...(data === undefined ? {} : { data }) },
      };
    }
    if (this.#running.get(id) === running) this.#running.delete(id);
    // A cancelled request gets no answer (the client stopped waiting for it).
    answer.finish(controller.signal.aborted ? undefined : reply);
  }

  #initializeResult(params: LegacyParams): LegacyParams {
    const requested = params.protocolVersion;
    const protocolVersion = typeof requested === 'string' && LEGACY_PROTOCOL_VERSIONS.includes(requested) ? requested : LEGACY_PROTOCOL_VERSIONS[0];
    const { serverInfo, capabilities, instructions } = this.#options.endpoint.initialize(params);
    return { protocolVersion, capabilities, serverInfo, ...(instructions ? { instructions } : {}) };
  }

  #context(requestId: LegacyRequestId, params: LegacyParams, signal: AbortSignal, answer: Answer, headers: IncomingHttpHeaders): LegacyRequestContext {
    return {
      requestId,
      signal,
      meta: isObject(params._meta) ? params._meta : undefined,
      headers,
      notify: (notification) => answer.write({ jsonrpc: '2.0', ...notification }),
      request: (request, options) => this.#request(answer, request, options),
    };
  }

  #request(answer: Answer, request: { method: string; params?: LegacyParams | undefined }, options: { signal?: AbortSignal; timeoutMs: number }): Promise<LegacyParams> {
    if (this.#closed) return Promise.reject(new RpcError(-32000, 'Connection closed'));
    if (answer.done) return Promise.reject(new RpcError(RpcCode.INTERNAL_ERROR, `No connection established for ${request.method}: its request was answered`));
    const { signal, timeoutMs } = options;
    if (signal?.aborted) return Promise.reject(asError(signal.reason));
    const id = this.#nextId++;
    return new Promise<LegacyParams>((resolve, reject) => {
      const cancel = (reason: unknown): void => {
        if (!this.#pending.delete(id)) return;
        settle();
        answer.write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: String(reason) } });
        reject(asError(reason));
      };
      const onAbort = (): void => cancel(signal!.reason);
      const timer = setTimeout(() => cancel(new RpcError(RpcCode.REQUEST_TIMEOUT, 'Request timed out', { timeout: timeoutMs })), timeoutMs);
      timer.unref();
      const settle = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (result) => {
          settle();
          resolve(result);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      answer.write({ jsonrpc: '2.0', id, method: request.method, ...(request.params === undefined ? {} : { params: request.params }) });
    });
  }
}

/** JSON-RPC's parse error. */
const JSON_PARSE_ERROR = -32700;

function errorBody(code: number, message: string): LegacyParams {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function refuse(res: ServerResponse, status: number, code: number, message: string): void {
  endJson(res, status, JSON.stringify(errorBody(code, message)));
}

function sseHeaders(sessionId: string): Record<string, string> {
  return { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no', 'mcp-session-id': sessionId };
}

function sseEvent(message: LegacyParams): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

function keepAlive(res: ServerResponse, ms: number): ReturnType<typeof setInterval> {
  const timer = setInterval(() => {
    if (!res.writableEnded && !res.destroyed) res.write(': keepalive\n\n');
  }, ms);
  timer.unref();
  res.once('close', () => clearInterval(timer));
  return timer;
}

/** A header the SDK would accept: absent, or one of the versions it supports. */
function protocolOk(req: IncomingMessage, res: ServerResponse): boolean {
  const version = req.headers['mcp-protocol-version'];
  if (version === undefined || (typeof version === 'string' && LEGACY_PROTOCOL_VERSIONS.includes(version))) return true;
  const list = LEGACY_PROTOCOL_VERSIONS.join(', ');
  refuse(res, 400, RpcCode.SERVER_ERROR, `Bad Request: Unsupported protocol version: ${String(version)} (supported versions: ${list})`);
  return false;
}

/** `application/json`, by its media type (parameters such as `charset` allowed), never a substring. */
function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  return value.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

/** An abort reason as the error a request rejects with (it is one already, when it came from the pool). */
const asError = (reason: unknown): Error => (reason instanceof Error ? reason : new Error(String(reason)));
const isId = (value: unknown): value is LegacyRequestId => typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
const isObject = (value: unknown): value is LegacyParams => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON-RPC 2.0 message, or undefined when it is none (the SDK's `JSONRPCMessageSchema`, by hand). */
function parseMessage(value: unknown): Message | undefined {
  if (!isObject(value) || value.jsonrpc !== '2.0') return undefined;
  const params = value.params;
  if (params !== undefined && !isObject(params)) return undefined;
  if (typeof value.method === 'string') {
    if (value.id === undefined) return { kind: 'notification', method: value.method, params };
    return isId(value.id) ? { kind: 'request', id: value.id, method: value.method, params } : undefined;
  }
  if (!isId(value.id)) return undefined;
  if (isObject(value.error)) {
    const { code, message, data } = value.error;
    if (typeof code !== 'number' || typeof message !== 'string') return undefined;
    return { kind: 'response', id: value.id, result: undefined, error: { code, message, ...(data === undefined ? {} : { data }) } };
  }
  return isObject(value.result) ? { kind: 'response', id: value.id, result: value.result, error: undefined } : undefined;
}
