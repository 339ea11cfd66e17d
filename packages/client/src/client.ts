/**
 * `McpoolClient`: one method per route of the daemon's REST control API, on `fetch` only (no
 * Node-only import), so an IDE webview can use it as well as a CLI.
 */
import { ErrorCode, McpoolHttpError, McpoolRequestError, errorFromResponse } from './errors.js';
import { SseParser } from './sse.js';
import type {
  AuthStartResponse,
  CapabilitiesResponse,
  CreateSessionRequest,
  DaemonEvent,
  DashboardCode,
  DaemonEventPayload,
  HealthResponse,
  ReadyResponse,
  ReloadResult,
  RestartEntriesResponse,
  RestartResponse,
  SessionInfo,
  SessionList,
  StderrTail,
  ToolCallRequest,
  ToolCallResponse,
  WorkspaceMcpStatus,
  CloseIdleRequest,
  CloseIdleResponse,
  WorkspaceSession,
  WorkspaceSessionList,
} from './types.js';

export interface McpoolClientOptions {
  /** The daemon's base URL. @default 'http://127.0.0.1:7070' */
  baseUrl?: string;
  /**
   * The bearer token (the daemon's token file, `MCPOOL_TOKEN`, or a client token from its config).
   * Left out only where the connection itself authenticates: the daemon's local socket
   * (`connectLocal` of `@mcpool/client/node`); over TCP the daemon answers 401 without one.
   */
  token?: string | undefined;
  /** The fetch to use. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Timeout of each request (the event stream has none). @default 30000 */
  timeoutMs?: number;
}

export interface RequestOptions {
  /** Aborts the request: it rejects with `McpoolRequestError` code `MCPOOL_REQUEST_ABORTED`. */
  signal?: AbortSignal;
}

export interface EventStreamOptions {
  /** Resume after this event id (sent as `Last-Event-ID`). @default undefined (live events only) */
  lastEventId?: string;
  /** Ends the stream: the iteration finishes without an error. */
  signal?: AbortSignal;
  /** Reconnect when the connection drops or the daemon answers 5xx. @default true */
  reconnect?: boolean;
  /** Wait before reconnecting, unless the daemon sent `retry:`. @default 1000 */
  retryMs?: number;
  /** Failed connection attempts in a row before giving up (with the last error). @default 10 */
  maxRetries?: number;
  /** Reconnect when nothing at all (not even a heartbeat) arrived for this long. @default 60000 */
  idleTimeoutMs?: number;
  /** Called each time the stream is (re)connected. */
  onOpen?: () => void;
}

/** An async iterable of daemon events that remembers where it is, for `Last-Event-ID`. */
export interface EventStream extends AsyncIterable<DaemonEvent> {
  /** The id of the last event received (what a reconnect sends as `Last-Event-ID`). */
  readonly lastEventId: string | undefined;
  /** Stops the stream; a pending iteration ends. */
  close(): void;
}

const DEFAULT_BASE_URL = 'http://127.0.0.1:7070';

/** The `Authorization` header of `token`, or none without one. */
function bearer(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/**
 * A typed client for the daemon. Every method rejects with {@link McpoolHttpError} (the daemon's
 * `{statusCode, code, error, message}`) on a non-2xx answer, or {@link McpoolRequestError} when
 * no answer came (unreachable, timeout, aborted).
 *
 * @example
 * ```ts
 * import { McpoolClient } from '@mcpool/client';
 *
 * // token: the daemon's token file (~/.local/state/mcpool/token) or $MCPOOL_TOKEN
 * const client = new McpoolClient({ baseUrl: 'http://127.0.0.1:7070', token });
 * const { servers, budget } = await client.getWorkspaceMcp();
 * console.log(servers.map((server) => `${server.name}: ${server.status}`), budget);
 * ```
 */
export class McpoolClient {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(options: McpoolClientOptions) {
    if (options?.token !== undefined && (typeof options.token !== 'string' || options.token.length === 0)) throw new TypeError('options.token must be a non-empty string when given');
    const baseUrl = options.baseUrl ?? DEFAULT_BASE_URL;
    try {
      new URL(baseUrl);
    } catch {
      throw new TypeError('options.baseUrl must be an absolute http(s) URL');
    }
    if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) throw new TypeError('options.timeoutMs must be a positive number');
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') throw new TypeError('options.fetch must be given where globalThis.fetch does not exist');
    this.#fetch = fetchImpl.bind(globalThis);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** `GET /workspace/mcp`: servers with their entries, and the budget cell. */
  getWorkspaceMcp(options?: RequestOptions): Promise<WorkspaceMcpStatus> {
    return this.#json('GET', '/workspace/mcp', undefined, options);
  }

  /**
   * `POST /workspace/mcp/:server/restart`. The answer is `{restarted, durationMs}` when the name
   * has one entry and no `entryIndex` was given, else `{entries}`; tell them apart with
   * {@link isRestartEntries}. Unknown server or entry: 404.
   */
  restartServer(server: string, options: RequestOptions & { entryIndex?: number } = {}): Promise<RestartResponse> {
    const query = options.entryIndex === undefined ? '' : `?entryIndex=${encodeURIComponent(String(options.entryIndex))}`;
    return this.#json('POST', `/workspace/mcp/${encodeURIComponent(server)}/restart${query}`, undefined, options);
  }

  /**
   * `POST /workspace/mcp/:server/auth`: starts an OAuth authorization of a remote server and
   * answers where its user goes (a URL to open, or a device code). The daemon finishes the flow
   * itself; `auth_completed` on the event stream says when.
   */
  authorizeServer(server: string, options: RequestOptions & { device?: boolean } = {}): Promise<AuthStartResponse> {
    return this.#json('POST', `/workspace/mcp/${encodeURIComponent(server)}/auth`, options.device === true ? { device: true } : {}, options);
  }

  /** `GET /workspace/mcp/:server/stderr`: the last `lines` (default 50, at most 100) stderr lines of each live entry of a server, scrubbed of secrets. Unknown server: 404. */
  serverStderr(server: string, options: RequestOptions & { lines?: number } = {}): Promise<StderrTail> {
    const query = options.lines === undefined ? '' : `?lines=${encodeURIComponent(String(options.lines))}`;
    return this.#json('GET', `/workspace/mcp/${encodeURIComponent(server)}/stderr${query}`, undefined, options);
  }

  /**
   * `POST /ui/login-code`: a one-time code that signs a browser in to the dashboard — open
   * `<baseUrl>/?code=<code>` within `expiresInMs`; the page trades it for a cookie, once.
   */
  dashboardCode(options?: RequestOptions): Promise<DashboardCode> {
    return this.#json('POST', '/ui/login-code', {}, options);
  }

  /** `POST /workspace/mcp/reload-all`: re-reads the daemon's config. An invalid file: 409, nothing applied. */
  reloadAll(options?: RequestOptions): Promise<ReloadResult> {
    return this.#json('POST', '/workspace/mcp/reload-all', undefined, options);
  }

  /** `POST /sessions`: a new pool session holding the configured servers (and any injected ones). */
  createSession(request: CreateSessionRequest = {}, options?: RequestOptions): Promise<SessionInfo> {
    return this.#json('POST', '/sessions', request, options);
  }

  /** `GET /sessions`. */
  async listSessions(options?: RequestOptions): Promise<SessionInfo[]> {
    return (await this.#json<SessionList>('GET', '/sessions', undefined, options)).sessions;
  }

  /** `GET /sessions/:id`. Unknown id: 404. */
  getSession(id: string, options?: RequestOptions): Promise<SessionInfo> {
    return this.#json('GET', `/sessions/${encodeURIComponent(id)}`, undefined, options);
  }

  /** `DELETE /sessions/:id`: releases the session's pool references. Unknown id: 404. */
  async deleteSession(id: string, options?: RequestOptions): Promise<void> {
    await this.#request('DELETE', `/sessions/${encodeURIComponent(id)}`, undefined, options);
  }

  /** `GET /workspace/sessions`: every session, REST and `/mcp`, with its client and servers. */
  async listWorkspaceSessions(options?: RequestOptions): Promise<WorkspaceSession[]> {
    return (await this.#json<WorkspaceSessionList>('GET', '/workspace/sessions', undefined, options)).sessions;
  }

  /** `DELETE /workspace/sessions/:id`: ends a REST or `/mcp` session (the operator: any; a client: its own). Unknown id: 404. */
  async closeWorkspaceSession(id: string, options?: RequestOptions): Promise<void> {
    await this.#request('DELETE', `/workspace/sessions/${encodeURIComponent(id)}`, undefined, options);
  }

  /**
   * `POST /workspace/sessions/close-idle`: ends, in one go, the sessions (REST and `/mcp`) with
   * nothing in flight — no call, no open stream — and no request for `idleForMs` (default 0: every
   * idle one). The operator ends any; a client its own. Their `/mcp` clients get 404 and initialize again.
   */
  closeIdleSessions(request: CloseIdleRequest = {}, options?: RequestOptions): Promise<CloseIdleResponse> {
    return this.#json('POST', '/workspace/sessions/close-idle', request, options);
  }

  /** `POST /sessions/:id/tools/call`: calls a tool through the session's filtered view. */
  callTool(sessionId: string, request: ToolCallRequest, options?: RequestOptions): Promise<ToolCallResponse> {
    return this.#json('POST', `/sessions/${encodeURIComponent(sessionId)}/tools/call`, request, options);
  }

  /** `GET /capabilities`. */
  capabilities(options?: RequestOptions): Promise<CapabilitiesResponse> {
    return this.#json('GET', '/capabilities', undefined, options);
  }

  /** `GET /healthz`. */
  health(options?: RequestOptions): Promise<HealthResponse> {
    return this.#json('GET', '/healthz', undefined, options);
  }

  /** `GET /readyz`. Resolves with `ready: false` (the daemon answers 503) while the servers warm up. */
  async ready(options?: RequestOptions): Promise<ReadyResponse> {
    const response = await this.#request('GET', '/readyz', undefined, options, (status) => status === 503);
    return (await response.json()) as ReadyResponse;
  }

  /** `GET /metrics`: the Prometheus text exposition. */
  async metrics(options?: RequestOptions): Promise<string> {
    const response = await this.#request('GET', '/metrics', undefined, options);
    return response.text();
  }

  /** `GET /openapi.json`: the OpenAPI 3.1 description of these routes. */
  openapi(options?: RequestOptions): Promise<Record<string, unknown>> {
    return this.#json('GET', '/openapi.json', undefined, options);
  }

  /**
   * `GET /workspace/mcp/events`: pool, budget and daemon events as they happen. The stream
   * reconnects by itself and sends `Last-Event-ID`, so nothing still in the daemon's buffer is
   * lost; when something was, an `events_lost` event says so. 401/403/404 end it with the error.
   *
   * @example
   * ```ts
   * const controller = new AbortController(); // abort to end the stream
   * for await (const event of client.events({ signal: controller.signal })) {
   *   if (event.data.type === 'entry_status') console.log(event.data.serverName, event.data.status);
   * }
   * ```
   */
  events(options: EventStreamOptions = {}): EventStream {
    return new DaemonEventStream(this.baseUrl, this.#token, this.#fetch, options);
  }

  async #json<T>(method: string, path: string, body: unknown, options: RequestOptions | undefined): Promise<T> {
    const response = await this.#request(method, path, body, options);
    try {
      return (await response.json()) as T;
    } catch (error) {
      throw new McpoolRequestError(ErrorCode.BAD_RESPONSE, `${method} ${path}: the answer is not JSON`, { cause: error });
    }
  }

  async #request(
    method: string,
    path: string,
    body: unknown,
    options: RequestOptions | undefined,
    alsoOk: (status: number) => boolean = () => false,
  ): Promise<Response> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const signal = options?.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const headers: Record<string, string> = { ...bearer(this.#token), accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await this.#fetch(this.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
    } catch (error) {
      if (options?.signal?.aborted) throw new McpoolRequestError(ErrorCode.REQUEST_ABORTED, `${method} ${path} was aborted`, { cause: error });
      if (timeout.aborted) throw new McpoolRequestError(ErrorCode.REQUEST_TIMEOUT, `${method} ${path} got no answer within ${this.#timeoutMs} ms`, { cause: error });
      throw new McpoolRequestError(ErrorCode.UNREACHABLE, `cannot reach the mcpool daemon at ${this.baseUrl}: ${(error as Error).message}`, { cause: error });
    }
    if (!response.ok && !alsoOk(response.status)) throw await httpError(response);
    return response;
  }
}

/** True for the per-entry restart answer `{entries}`. */
export function isRestartEntries(response: RestartResponse): response is RestartEntriesResponse {
  return 'entries' in response;
}

async function httpError(response: Response): Promise<McpoolHttpError> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  return errorFromResponse(response.status, response.statusText, body);
}

/** Waits `ms`, or less if `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

class DaemonEventStream implements EventStream {
  #lastEventId: string | undefined;
  readonly #stop = new AbortController();
  readonly #url: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #options: EventStreamOptions;

  constructor(baseUrl: string, token: string | undefined, fetchImpl: typeof fetch, options: EventStreamOptions) {
    this.#url = `${baseUrl}/workspace/mcp/events`;
    this.#token = token;
    this.#fetch = fetchImpl;
    this.#options = options;
    this.#lastEventId = options.lastEventId;
    if (options.signal) {
      if (options.signal.aborted) this.#stop.abort();
      else options.signal.addEventListener('abort', () => this.#stop.abort(), { once: true });
    }
  }

  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  close(): void {
    this.#stop.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<DaemonEvent> {
    const { reconnect = true, maxRetries = 10, idleTimeoutMs = 60_000 } = this.#options;
    let retryMs = this.#options.retryMs ?? 1000;
    let failures = 0;
    const stop = this.#stop.signal;
    while (!stop.aborted) {
      const connection = new AbortController();
      const onStop = (): void => connection.abort();
      stop.addEventListener('abort', onStop, { once: true });
      let idleTimer: ReturnType<typeof setTimeout> | undefined;
      const touch = (): void => {
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => connection.abort(), idleTimeoutMs);
      };
      let lastError: Error | undefined;
      try {
        const headers: Record<string, string> = { ...bearer(this.#token), accept: 'text/event-stream', 'cache-control': 'no-cache' };
        if (this.#lastEventId !== undefined) headers['last-event-id'] = this.#lastEventId;
        touch();
        const response = await this.#fetch(this.#url, { method: 'GET', headers, signal: connection.signal });
        if (!response.ok) {
          const error = await httpError(response);
          // A client error will not fix itself by retrying.
          if (response.status < 500) throw error;
          lastError = error;
        } else if (response.body === null) {
          lastError = new McpoolRequestError(ErrorCode.BAD_RESPONSE, 'the event stream has no body');
        } else {
          this.#options.onOpen?.();
          const queue: DaemonEvent[] = [];
          const parser = new SseParser(
            {
              onMessage: (message) => {
                let parsed: (DaemonEventPayload & { at?: string }) | undefined;
                try {
                  parsed = JSON.parse(message.data) as DaemonEventPayload & { at?: string };
                } catch {
                  return; // not one of ours; ignore
                }
                const { at, ...payload } = parsed;
                if (message.hasId) this.#lastEventId = message.lastEventId;
                queue.push({ ...(message.hasId ? { id: message.lastEventId } : {}), at: at ?? new Date().toISOString(), data: payload });
              },
              onRetry: (ms) => {
                retryMs = ms;
              },
            },
            this.#lastEventId,
          );
          const reader = response.body.getReader();
          const decoder = new TextDecoder();
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              touch();
              failures = 0;
              parser.push(decoder.decode(value, { stream: true }));
              while (queue.length > 0) yield queue.shift()!;
            }
          } finally {
            await reader.cancel().catch(() => undefined);
          }
        }
      } catch (error) {
        if (stop.aborted) return;
        if (error instanceof McpoolHttpError) throw error;
        lastError = connection.signal.aborted
          ? new McpoolRequestError(ErrorCode.REQUEST_TIMEOUT, `the event stream was silent for ${idleTimeoutMs} ms`, { cause: error })
          : new McpoolRequestError(ErrorCode.UNREACHABLE, `the event stream failed: ${(error as Error).message}`, { cause: error });
      } finally {
        clearTimeout(idleTimer);
        stop.removeEventListener('abort', onStop);
      }
      if (stop.aborted) return;
      if (!reconnect) {
        if (lastError) throw lastError;
        return;
      }
      if (lastError) {
        failures += 1;
        if (failures > maxRetries) throw lastError;
      }
      await pause(retryMs, stop);
    }
  }
}
