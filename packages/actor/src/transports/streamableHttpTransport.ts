/**
 * The Streamable HTTP client transport of the actor, for both protocol eras.
 *
 * Every message is one POST (`Accept: application/json, text/event-stream`). The answer is JSON
 * (one message), SSE (each event's data, in order: notifications and server requests first, the
 * response last) or 202 (a notification or response was accepted). A non-2xx answer rejects
 * `send` with an `UpstreamHttpError` carrying its status, the start of its body and
 * `WWW-Authenticate`; a network failure rejects with an Error whose `cause` is the socket error.
 *
 * - Legacy era (2025-11-25 and before, after `setProtocol('legacy', v)`): the `Mcp-Session-Id`
 *   of the `initialize` answer is sent, with `MCP-Protocol-Version`, on every later request; once
 *   `notifications/initialized` is accepted a GET stream carries server-initiated messages (405:
 *   the server has none). A 404 to a request carrying the session id means the session is gone:
 *   it is reported (`onerror`, then `onclose`) and the actor starts a new one. `close()` sends
 *   DELETE with the session id.
 * - Modern era (2026-07-28, and any request whose `_meta` claims a protocol version, which is how
 *   the actor's first `server/discover` probe goes out before the era is known): no session, no
 *   GET stream; each request mirrors its body in headers (`httpMcpHeaders.ts`). The tool schemas
 *   that declare `x-mcp-header` are learnt from the `tools/list` answers that pass through.
 *
 * A legacy response stream that ends or breaks before its response, after events that carried
 * ids, is resumed: after the server's `retry:` delay a GET with `Last-Event-ID` asks for the rest,
 * as long as reconnections bring new events (three in a row that bring none give up). The modern
 * revision has no resumption: there the request is lost at once. A lost request is reported
 * through `onerror` as an `UpstreamStreamError` naming its id.
 *
 * Aborting a request's `signal` closes its response stream, which is how an HTTP client cancels
 * (the server treats the disconnect as cancellation). Nothing here validates message schemas.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ERROR_BODY_LIMIT, mediaType, parseMessages, readBoundedText, readSse, readText, type SseHandlers } from './httpBody.js';
import type { ReadGate } from '../sourceThrottle.js';
import { remoteTarget, fetchExchange, nodeHttpExchange, type HttpAnswer, type HttpExchange } from './httpExchange.js';
import {
  PROTOCOL_VERSION_META_KEY,
  encodeHeaderValue,
  mcpNameOf,
  paramHeaders,
  scanParamHeaders,
  type ParamHeaderDeclaration,
} from './httpMcpHeaders.js';
import {
  UpstreamHttpError,
  UpstreamStreamError,
  type JsonRpcMessage,
  type ProtocolEra,
  type SendOptions,
  type UpstreamTransport,
} from './upstreamTransport.js';

export { UpstreamStreamError };

export interface StreamableHttpTransportOptions {
  /** The MCP endpoint. */
  url: URL;
  /** Sent on every request (e.g. `Authorization`). @default {} */
  headers?: Record<string, string> | undefined;
  /**
   * Carry requests with this `fetch` instead of `node:http` (proxies, custom TLS, tests). Its
   * idle sockets close on its own schedule. @default undefined (node:http, one agent per transport)
   */
  fetch?: typeof fetch | undefined;
  /** Merged into every `fetch` call (method, body, signal and redirect are the transport's). Implies `fetch` (the global one when none is given). @default undefined */
  requestInit?: RequestInit | undefined;
  /** How long `close()` waits for the answer to its DELETE, in ms. @default 2000 */
  closeTimeoutMs?: number | undefined;
  /** Asked of each message read: what it refuses (a notification past the bound) is dropped; the SSE body is read on. */
  readGate?: ReadGate | undefined;
}

const DEFAULT_CLOSE_TIMEOUT_MS = 2000;
/** Default wait before reopening a legacy GET stream the server ended; the server's `retry:` wins. */
const GET_REOPEN_DELAY_MS = 1000;
/** Consecutive GET streams that open and end without a message before we stop reopening. */
const GET_REOPEN_LIMIT = 3;
/** Default wait before resuming a response stream the server ended early; the server's `retry:` wins. */
const RESUME_DELAY_MS = 1000;
/** A server's `retry:` above this is clamped, so a resumption stays within the call's own timeout. */
const RESUME_MAX_DELAY_MS = 30_000;
/** Consecutive resumptions that bring no new event before the request is given up as lost. */
const RESUME_ATTEMPTS = 3;
/** How long one resumption GET waits for its response head (a host that drops packets never answers). */
const RESUME_HEAD_TIMEOUT_MS = 10_000;
/** Event ids remembered per request to skip replays; past it, replays are delivered again. */
const SEEN_EVENT_IDS_LIMIT = 4096;

/** One request's SSE stream across its resumptions. */
interface RequestStream {
  readonly requestId: string | number;
  answered: boolean;
  /** The id of the last event that had one: what a resumption sends as `Last-Event-ID`. */
  lastEventId: string | undefined;
  /** This stream's `retry:`, in ms. */
  retryMs: number | undefined;
  readonly seen: Set<string>;
}

export class StreamableHttpTransport implements UpstreamTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  readonly #url: URL;
  readonly #display: string;
  readonly #headers: Record<string, string>;
  readonly #options: StreamableHttpTransportOptions;
  #exchange: HttpExchange | undefined;
  #era: ProtocolEra | undefined;
  #protocolVersion: string | undefined;
  #sessionId: string | undefined;
  #initializedAccepted = false;
  /** Every request or stream in flight; aborted by `close()`. */
  readonly #inflight = new Set<AbortController>();
  /** Response streams being read; `close()` waits for them to finish. */
  readonly #readers = new Set<Promise<void>>();
  #getStream: AbortController | undefined;
  #getReopenTimer: NodeJS.Timeout | undefined;
  #getIdleStreams = 0;
  #retryMs: number | undefined;
  /** The id of the GET stream's last event: a reopened stream resumes after it. */
  #getLastEventId: string | undefined;
  /** tools/list requests in flight → whether the answer's tools are to be scanned. */
  readonly #toolListings = new Set<string | number>();
  /** Tool name → its `x-mcp-header` declarations (only tools that have some). */
  readonly #paramDeclarations = new Map<string, ParamHeaderDeclaration[]>();
  #closed = false;
  #closing: Promise<void> | undefined;
  #closeNotified = false;

  constructor(options: StreamableHttpTransportOptions) {
    const target = remoteTarget(options.url, options.headers);
    this.#options = options;
    this.#url = target.url;
    this.#display = target.display;
    this.#headers = target.headers;
  }

  /** Replaces one header for every later request (the `Authorization` of a refreshed token). */
  setHeader(name: string, value: string): void {
    this.#headers[name.toLowerCase()] = value;
  }

  /** The era and version set by `setProtocol`, and the legacy session id: for diagnostics. */
  get state(): { era: ProtocolEra | undefined; protocolVersion: string | undefined; sessionId: string | undefined } {
    return { era: this.#era, protocolVersion: this.#protocolVersion, sessionId: this.#sessionId };
  }

  async start(): Promise<void> {
    if (this.#exchange !== undefined || this.#closed) throw new Error(`Streamable HTTP ${this.#display}: already started or closed`);
    const { fetch: fetchFn, requestInit } = this.#options;
    this.#exchange = fetchFn !== undefined || requestInit !== undefined ? fetchExchange(fetchFn ?? fetch, requestInit) : await nodeHttpExchange(this.#url);
    if (this.#closed) this.#exchange.close();
  }

  setProtocol(era: ProtocolEra, protocolVersion: string): void {
    this.#era = era;
    this.#protocolVersion = protocolVersion;
    this.#maybeOpenGetStream();
  }

  async send(message: JsonRpcMessage, options?: SendOptions): Promise<void> {
    const exchange = this.#exchange;
    if (exchange === undefined) throw new Error(`Streamable HTTP ${this.#display}: send before start`);
    if (this.#closed) throw new Error(`Streamable HTTP ${this.#display}: the transport is closed`);
    const signal = options?.signal;
    signal?.throwIfAborted();

    const isRequest = message.method !== undefined && message.id !== undefined;
    const isInitialize = message.method === 'initialize';
    const headers = this.#requestHeaders(message);
    if (message.method === 'tools/list' && message.id !== undefined) this.#toolListings.add(message.id);

    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.#inflight.add(controller);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      signal?.removeEventListener('abort', onAbort);
      this.#inflight.delete(controller);
      if (message.method === 'tools/list' && message.id !== undefined) this.#toolListings.delete(message.id);
    };

    let handedToReader = false;
    try {
      const answer = await exchange.request({ method: 'POST', url: this.#url, headers, body: JSON.stringify(message), signal: controller.signal });
      const ok = answer.status >= 200 && answer.status < 300;
      if (isInitialize && ok) this.#sessionId = answer.header('mcp-session-id') || undefined;
      if (!ok) {
        const error = await this.#httpError(answer, `POST ${message.method ?? 'response'}`);
        if (answer.status === 404 && headers['mcp-session-id'] !== undefined) this.#sessionLost(error);
        throw error;
      }
      if (!isRequest || answer.status === 202) {
        // A notification or response is answered 202 without a body. A request answered 202
        // gets its response on the GET stream (servers of the 2025-03-26 revision may do so).
        answer.discard();
        if (message.method === 'notifications/initialized') {
          this.#initializedAccepted = true;
          this.#maybeOpenGetStream();
        }
        return;
      }
      const type = mediaType(answer.header('content-type'));
      if (type === 'application/json') {
        const text = await readText(answer.body);
        let messages: JsonRpcMessage[];
        try {
          messages = parseMessages(text);
        } catch (error) {
          throw new UpstreamHttpError(`Streamable HTTP ${this.#display}: the answer to ${message.method} is not JSON-RPC (${(error as Error).message})`, answer.status, text.slice(0, ERROR_BODY_LIMIT));
        }
        for (const each of messages) this.#deliver(each);
        return;
      }
      if (type === 'text/event-stream') {
        handedToReader = true;
        this.#track(this.#readResponseStream(answer, message.id!, controller.signal).finally(release));
        return;
      }
      const body = await readBoundedText(answer.body);
      throw new UpstreamHttpError(`Streamable HTTP ${this.#display}: the answer to ${message.method} has content type "${type}"`, answer.status, body);
    } finally {
      if (!handedToReader) release();
    }
  }

  /** Aborts every stream, sends DELETE for a legacy session (bounded), closes every socket. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown(true);
    return this.#closing;
  }

  /** Legacy once the actor says so, or once an `initialize` answer gave a session before it did. */
  #isLegacy(): boolean {
    return this.#era === 'legacy' || (this.#era === undefined && this.#sessionId !== undefined);
  }

  #requestHeaders(message: JsonRpcMessage): Record<string, string> {
    const headers: Record<string, string> = {
      ...this.#headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (this.#isLegacy()) {
      // `initialize` opens a new session: it carries neither the old session id nor a version.
      if (message.method !== 'initialize') {
        if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
        if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
      }
      return headers;
    }
    const claimed = (message.params?._meta as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY];
    // The header must equal the body's claim; without one, the version the actor settled on.
    const version = typeof claimed === 'string' ? claimed : this.#era === 'modern' ? this.#protocolVersion : undefined;
    // Era not known yet and no modern claim (a first `initialize`): a plain legacy-shaped POST.
    if (version === undefined) return headers;
    headers['mcp-protocol-version'] = version;
    if (message.method !== undefined) {
      headers['mcp-method'] = message.method;
      const name = mcpNameOf(message.method, message.params);
      if (name !== undefined) headers['mcp-name'] = encodeHeaderValue(name);
      if (message.method === 'tools/call' && typeof message.params?.name === 'string') {
        const declarations = this.#paramDeclarations.get(message.params.name);
        if (declarations !== undefined) Object.assign(headers, paramHeaders(declarations, message.params.arguments));
      }
    }
    return headers;
  }

  #deliver(message: JsonRpcMessage): void {
    if (this.#options.readGate?.admit(message) === false) return;
    if (message.id !== undefined && message.method === undefined && this.#toolListings.has(message.id)) this.#learnTools(message.result);
    try {
      this.onmessage?.(message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Keeps the `x-mcp-header` declarations of the tools in a `tools/list` result (valid tools only). */
  #learnTools(result: Record<string, unknown> | undefined): void {
    const tools = result?.tools;
    if (!Array.isArray(tools)) return;
    for (const tool of tools as { name?: unknown; inputSchema?: unknown }[]) {
      if (typeof tool?.name !== 'string') continue;
      const scan = scanParamHeaders(tool.inputSchema);
      if (scan.valid && scan.declarations.length > 0) this.#paramDeclarations.set(tool.name, scan.declarations);
      else this.#paramDeclarations.delete(tool.name);
    }
  }

  async #readResponseStream(answer: HttpAnswer, requestId: string | number, signal: AbortSignal): Promise<void> {
    const stream: RequestStream = { requestId, answered: false, lastEventId: undefined, retryMs: undefined, seen: new Set() };
    let failure: unknown;
    try {
      await readSse(answer.body, this.#streamHandlers(stream));
    } catch (error) {
      failure = error;
    }
    // An abort (the caller's signal, or close()) ends the stream on purpose.
    if (stream.answered || signal.aborted || this.#closed) return;
    if (this.#resumable(stream)) failure = (await this.#resume(stream, signal)) ?? failure;
    if (stream.answered || signal.aborted || this.#closed) return;
    const how = failure === undefined ? 'ended before its response' : `broke: ${(failure as Error).message}`;
    this.onerror?.(new UpstreamStreamError(`Streamable HTTP ${this.#display}: the response stream of request ${requestId} ${how}`, requestId, failure));
  }

  /** The SSE handlers of one request's stream (the POST answer, then each resumption GET). */
  #streamHandlers(stream: RequestStream): SseHandlers {
    return {
      onEvent: (event) => {
        // Once the response is in, the request's stream has nothing more for us.
        if (stream.answered) return;
        if (event.id !== undefined && event.id.length > 0) {
          // A server replaying from Last-Event-ID may resend what we already delivered.
          if (stream.seen.has(event.id)) return;
          if (stream.seen.size < SEEN_EVENT_IDS_LIMIT) stream.seen.add(event.id);
          stream.lastEventId = event.id;
        }
        for (const message of this.#eventMessages(event)) {
          if (message.id === stream.requestId && message.method === undefined) stream.answered = true;
          this.#deliver(message);
        }
      },
      onRetry: (ms) => {
        stream.retryMs = ms;
        this.#retryMs = ms;
      },
    };
  }

  /**
   * A stream that ended before its response can be resumed when the server gave its events ids
   * (a server that did so announces it can replay after `Last-Event-ID`) and the era has
   * resumption: the 2026-07-28 revision removed it, so a modern request's lost stream is lost.
   */
  #resumable(stream: RequestStream): boolean {
    return stream.lastEventId !== undefined && this.#era !== 'modern' && this.#exchange !== undefined;
  }

  /**
   * Reconnects with GET and `Last-Event-ID` after the server's `retry` delay (clamped), as often as
   * each reconnect brings new events, and at most {@link RESUME_ATTEMPTS} times in a row without.
   * Resolves when the response arrived (`stream.answered`), on abort, or with the last failure.
   */
  async #resume(stream: RequestStream, signal: AbortSignal): Promise<unknown> {
    let failure: unknown;
    let idle = 0;
    while (idle < RESUME_ATTEMPTS) {
      const wait = Math.min(stream.retryMs ?? this.#retryMs ?? RESUME_DELAY_MS, RESUME_MAX_DELAY_MS);
      try {
        // Unref'd: a resumption that is due never keeps the process alive by itself.
        await delay(wait, undefined, { signal, ref: false });
      } catch {
        return undefined;
      }
      if (this.#closed) return undefined;
      const before = stream.lastEventId;
      const outcome = await this.#resumeOnce(stream, signal);
      if (stream.answered || signal.aborted || this.#closed) return undefined;
      if (outcome !== undefined) {
        failure = outcome.error;
        if (outcome.final) return failure;
      }
      idle = stream.lastEventId === before ? idle + 1 : 0;
    }
    return failure ?? new Error(`${RESUME_ATTEMPTS} reconnections in a row brought no new event`);
  }

  /** One resumption GET, read until it ends or carries the response. Undefined: it was read. */
  async #resumeOnce(stream: RequestStream, signal: AbortSignal): Promise<{ error: unknown; final: boolean } | undefined> {
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const headTimer = setTimeout(() => controller.abort(new Error(`no answer to the reconnection within ${RESUME_HEAD_TIMEOUT_MS} ms`)), RESUME_HEAD_TIMEOUT_MS);
    headTimer.unref();
    const headers: Record<string, string> = { ...this.#headers, accept: 'text/event-stream', 'last-event-id': stream.lastEventId! };
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
    try {
      const answer = await this.#exchange!.request({ method: 'GET', url: this.#url, headers, signal: controller.signal });
      clearTimeout(headTimer);
      if (answer.status < 200 || answer.status >= 300) {
        const error = await this.#httpError(answer, 'GET (resuming a response stream)');
        if (answer.status === 404 && headers['mcp-session-id'] !== undefined) this.#sessionLost(error);
        // A server error may pass (a restart behind a proxy); any other refusal is its answer.
        return { error, final: answer.status < 500 };
      }
      if (mediaType(answer.header('content-type')) !== 'text/event-stream') {
        answer.discard();
        return { error: new Error('the reconnection is not text/event-stream'), final: true };
      }
      const handlers = this.#streamHandlers(stream);
      await readSse(answer.body, {
        ...handlers,
        onEvent: (event) => {
          handlers.onEvent(event);
          // The server may keep the GET open after the response: we close it.
          if (stream.answered) controller.abort(new Error('the response arrived'));
        },
      });
      return undefined;
    } catch (error) {
      if (stream.answered) return undefined;
      return { error, final: false };
    } finally {
      clearTimeout(headTimer);
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** The messages of one SSE event: `message` events (or untyped ones) with JSON-RPC data. */
  #eventMessages(event: { event?: string | undefined; data: string }): JsonRpcMessage[] {
    if ((event.event !== undefined && event.event !== 'message') || event.data.length === 0) return [];
    try {
      return parseMessages(event.data);
    } catch (error) {
      this.onerror?.(new Error(`Streamable HTTP ${this.#display}: skipped an SSE event that is not JSON-RPC: ${event.data.slice(0, 200)}`, { cause: error }));
      return [];
    }
  }

  #maybeOpenGetStream(): void {
    // A server without sessions may still offer the stream (or answer 405).
    if (!this.#isLegacy() || !this.#initializedAccepted) return;
    if (this.#getStream !== undefined || this.#getReopenTimer !== undefined || this.#closed || this.#exchange === undefined) return;
    const controller = new AbortController();
    this.#getStream = controller;
    this.#inflight.add(controller);
    this.#track(
      this.#readGetStream(this.#exchange, controller.signal).then((outcome) => {
        this.#inflight.delete(controller);
        this.#getStream = undefined;
        if (outcome === 'reopen') this.#scheduleGetReopen();
      }),
    );
  }

  /** One GET stream from open to end; says whether to open another. */
  async #readGetStream(exchange: HttpExchange, signal: AbortSignal): Promise<'reopen' | 'done'> {
    const headers: Record<string, string> = { ...this.#headers, accept: 'text/event-stream' };
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
    if (this.#getLastEventId !== undefined) headers['last-event-id'] = this.#getLastEventId;
    let delivered = false;
    try {
      const answer = await exchange.request({ method: 'GET', url: this.#url, headers, signal });
      if (answer.status === 405) {
        // The server offers no stream for server-initiated messages.
        answer.discard();
        return 'done';
      }
      if (answer.status < 200 || answer.status >= 300) {
        const error = await this.#httpError(answer, 'GET stream');
        if (answer.status === 404 && headers['mcp-session-id'] !== undefined) this.#sessionLost(error);
        else this.onerror?.(error);
        return 'done';
      }
      if (mediaType(answer.header('content-type')) !== 'text/event-stream') {
        answer.discard();
        this.onerror?.(new Error(`Streamable HTTP ${this.#display}: the GET stream is not text/event-stream`));
        return 'done';
      }
      await readSse(answer.body, {
        onEvent: (event) => {
          if (event.id !== undefined && event.id.length > 0) this.#getLastEventId = event.id;
          for (const message of this.#eventMessages(event)) {
            delivered = true;
            this.#deliver(message);
          }
        },
        onRetry: (ms) => (this.#retryMs = ms),
      });
    } catch (error) {
      if (signal.aborted || this.#closed) return 'done';
      this.onerror?.(new Error(`Streamable HTTP ${this.#display}: the GET stream broke: ${(error as Error).message}`, { cause: error }));
    }
    if (this.#closed) return 'done';
    this.#getIdleStreams = delivered ? 0 : this.#getIdleStreams + 1;
    if (this.#getIdleStreams >= GET_REOPEN_LIMIT) {
      this.onerror?.(new Error(`Streamable HTTP ${this.#display}: the GET stream ended ${GET_REOPEN_LIMIT} times without a message; not reopened`));
      return 'done';
    }
    return 'reopen';
  }

  #scheduleGetReopen(): void {
    if (this.#closed) return;
    this.#getReopenTimer = setTimeout(() => {
      this.#getReopenTimer = undefined;
      this.#maybeOpenGetStream();
    }, this.#retryMs ?? GET_REOPEN_DELAY_MS);
    // A reopen that is due never keeps the process alive by itself.
    this.#getReopenTimer.unref();
  }

  async #httpError(answer: HttpAnswer, what: string): Promise<UpstreamHttpError> {
    const body = await readBoundedText(answer.body);
    const auth = answer.status === 401 || answer.status === 403 ? answer.header('www-authenticate') : undefined;
    const location = answer.status >= 300 && answer.status < 400 ? answer.header('location') : undefined;
    const detail = location !== undefined ? ` (redirect to ${location} not followed)` : '';
    return new UpstreamHttpError(`Streamable HTTP ${this.#display}: ${what} answered HTTP ${answer.status}${detail}`, answer.status, body, auth);
  }

  /** The server forgot the session (404 to a request carrying its id): report, then close without DELETE. */
  #sessionLost(cause: UpstreamHttpError): void {
    if (this.#closed) return;
    this.#sessionId = undefined;
    this.onerror?.(new UpstreamHttpError(`Streamable HTTP ${this.#display}: the session is gone (HTTP 404); a new one must be initialized`, 404, cause.body));
    this.#closing ??= this.#shutdown(false);
  }

  #track(reader: Promise<void>): void {
    this.#readers.add(reader);
    void reader.finally(() => this.#readers.delete(reader));
  }

  async #shutdown(sendDelete: boolean): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#getReopenTimer);
    this.#getReopenTimer = undefined;
    for (const controller of this.#inflight) controller.abort(new Error(`Streamable HTTP ${this.#display}: the transport is closed`));
    this.#inflight.clear();
    const exchange = this.#exchange;
    try {
      if (sendDelete && exchange !== undefined && this.#isLegacy() && this.#sessionId !== undefined) await this.#deleteSession(exchange, this.#sessionId);
      await Promise.allSettled([...this.#readers]);
    } finally {
      exchange?.close();
      this.#sessionId = undefined;
      this.#notifyClose();
    }
  }

  /** DELETE ends the session on the server; 405 (not supported) or no answer in time are fine. */
  async #deleteSession(exchange: HttpExchange, sessionId: string): Promise<void> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('DELETE timed out')), this.#options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
    const headers: Record<string, string> = { ...this.#headers, 'mcp-session-id': sessionId };
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
    try {
      const answer = await exchange.request({ method: 'DELETE', url: this.#url, headers, signal: controller.signal });
      await readBoundedText(answer.body, 1024);
    } catch {
      // The session dies with its idle timeout on the server instead.
    } finally {
      clearTimeout(timer);
    }
  }

  #notifyClose(): void {
    if (this.#closeNotified) return;
    this.#closeNotified = true;
    this.onclose?.();
  }
}
