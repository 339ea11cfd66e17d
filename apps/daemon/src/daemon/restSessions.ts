/**
 * REST sessions (`POST /sessions`): each is one pool session that acquired the configured servers
 * it asked for, plus any it injected. What this owns:
 * - admission, on counts alone before anything is parsed or started (sessions and injected
 *   servers per client, injected servers per request);
 * - injection: an injected config is interpolated against no variables (the daemon's environment
 *   never flows into a client's config), and a stdio one needs the write right;
 * - access: the configured servers a session holds, the tools it lists and the calls it makes
 *   follow `clients[].servers/includeTools/excludeTools`, by the same rule as `/mcp` ({@link accessOf},
 *   read at each call, so a reload that narrows a client applies to its open sessions). A server
 *   the session injected is its own: the lists name configured servers only;
 * - calls through a session's filtered views, and the calls in flight (shutdown cancels them);
 * - the end of a session: DELETE, shutdown, or **idle past `mcpSessionTtlMs`** (the TTL `/mcp`
 *   sessions have), with no call under way: `pool.releaseSession`, so its entries drain when no
 *   other session holds them and the processes of the servers it injected end. A crashed client
 *   leaves nothing behind for longer than that.
 * Refusals are `PoolError`s with the registry's codes; the HTTP routes map them to statuses.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import { ErrorCode, PoolError, type McpTransportPool, type PooledConnection, type ServerConfig } from '@mcpool/core';
import { parseServersDocument, serverForbidden, unknownName } from '@mcpool/protocol';
import type { CreateSessionRequest, DaemonEventPayload, SessionInfo, SessionServer, ToolCallRequest, ToolCallResponse } from '@mcpool/client';
import { OPERATOR_ID, type Principal } from '../auth.js';
import { accessOf, type GatewayAccess } from '../gateway/access.js';
import type { DaemonMetrics } from '../metrics.js';
import type { SecretRedactor } from '../secrets.js';
import { restFailure, type ServerTelemetry } from '../telemetry/serverTelemetry.js';
import type { DaemonClock } from './clock.js';
import type { ConfigState } from './configState.js';
import { isSpawnFailure, plainError, type PlainError } from './failures.js';

/** An admission limit, as `/metrics` counts its refusals. */
export type AdmissionLimit = 'actors' | 'mcp_sessions' | 'mcp_sessions_per_client' | 'sessions_per_client' | 'injected_per_request' | 'injected_per_client';

interface SessionSlot {
  injected: boolean;
  view?: PooledConnection;
  error?: PlainError;
}

interface RestSession {
  id: string;
  clientId: string;
  /** Whom it acts for: what it may use is this principal's access, whoever calls through it. */
  principal: Principal;
  /** Servers it injected (counted against the client's `maxInjectedServersPerClient` while it is open). */
  injectedCount: number;
  createdAt: string;
  label: string | undefined;
  servers: Map<string, SessionSlot>;
  closed: boolean;
  /** Its servers are still being acquired: never idle. */
  opening: boolean;
  /** Calls under way through it: never idle while there are any. */
  calls: number;
  /** When it opened or a call through it last started or ended (the clock's ms). */
  lastActivityAt: number;
}

export interface RestSessionsOptions {
  pool: McpTransportPool;
  config: ConfigState;
  redactor: SecretRedactor;
  logger: Logger;
  metrics: DaemonMetrics;
  publish: (payload: DaemonEventPayload) => void;
  clock: DaemonClock;
  /** Throws SHUTTING_DOWN once the daemon stopped accepting. */
  assertAccepting: () => void;
  /** Throws SHUTTING_DOWN once the daemon is draining: calls go on, no new session opens. */
  assertOpening: () => void;
  /** Server spans of the tool calls, when OpenTelemetry is on. */
  telemetry?: ServerTelemetry | undefined;
  /** A session of `principal` acquired the configured server `name` (the warm hold can follow who uses it). */
  onServerUsed?: ((name: string, principal: string) => void) | undefined;
}

export class RestSessions {
  readonly #pool: McpTransportPool;
  readonly #config: ConfigState;
  readonly #redactor: SecretRedactor;
  readonly #logger: Logger;
  readonly #metrics: DaemonMetrics;
  readonly #publish: (payload: DaemonEventPayload) => void;
  readonly #clock: DaemonClock;
  readonly #assertAccepting: () => void;
  readonly #assertOpening: () => void;
  readonly #telemetry: ServerTelemetry | undefined;
  readonly #onServerUsed: ((name: string, principal: string) => void) | undefined;
  readonly #sessions = new Map<string, RestSession>();
  readonly #inFlight = new Map<AbortController, Promise<unknown>>();
  #stopReaper: (() => void) | undefined;

  constructor(options: RestSessionsOptions) {
    this.#pool = options.pool;
    this.#config = options.config;
    this.#redactor = options.redactor;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#publish = options.publish;
    this.#clock = options.clock;
    this.#assertAccepting = options.assertAccepting;
    this.#assertOpening = options.assertOpening;
    this.#telemetry = options.telemetry;
    this.#onServerUsed = options.onServerUsed;
  }

  /** Open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Tool calls under way through sessions. */
  get inFlightCalls(): number {
    return this.#inFlight.size;
  }

  /** Starts reaping idle sessions (checked every quarter of the TTL, at most every minute). Idempotent. */
  startReaper(): void {
    if (this.#stopReaper !== undefined) return;
    const ttl = this.#config.settings.mcpSessionTtlMs;
    this.#stopReaper = this.#clock.every(Math.max(20, Math.min(60_000, Math.floor(ttl / 4))), () => this.reapIdle());
  }

  /**
   * Ends the sessions `principal` may end (the operator any, a client its own) with no call under
   * way and none for `idleForMs` (`mcpool sessions --close-idle`); resolves with their ids.
   */
  async closeIdle(principal: Principal, idleForMs: number): Promise<string[]> {
    const now = this.#clock.now();
    const idle = [...this.#sessions.values()].filter((session) => (session.clientId === principal.id || principal.id === OPERATOR_ID) && !session.opening && session.calls === 0 && now - session.lastActivityAt >= idleForMs);
    await Promise.all(idle.map((session) => this.#close(session, `idle, ended by ${principal.id}`)));
    return idle.map((session) => session.id);
  }

  /** Closes every session idle (no call under way, none since) for longer than `mcpSessionTtlMs`. */
  reapIdle(): void {
    const ttl = this.#config.settings.mcpSessionTtlMs;
    const now = this.#clock.now();
    for (const session of [...this.#sessions.values()]) {
      if (session.opening || session.calls > 0 || now - session.lastActivityAt <= ttl) continue;
      void this.#close(session, `idle for more than ${ttl} ms`).catch((error: unknown) => this.#logger.error({ err: error, sessionId: session.id }, 'releasing an idle session failed'));
    }
  }

  /**
   * Refuses a request that injects more servers than one request may. The route calls it on the
   * raw body too, before validating it: a huge map is refused without walking it.
   *
   * @throws PoolError REQUEST_TOO_LARGE
   */
  assertInjectionSize(injecting: number): void {
    const max = this.#config.settings.maxInjectedServersPerRequest;
    if (injecting <= max) return;
    this.#refused('injected_per_request');
    throw new PoolError(ErrorCode.REQUEST_TOO_LARGE, `mcpServers holds ${injecting} servers; one request may inject at most ${max} (daemon.maxInjectedServersPerRequest)`, {
      data: { injected: injecting, max },
    });
  }

  /** Injected servers held by open sessions, all clients (or one). */
  injectedLive(clientId?: string): number {
    let count = 0;
    for (const session of this.#sessions.values()) if (clientId === undefined || session.clientId === clientId) count += session.injectedCount;
    return count;
  }

  /**
   * Creates a session: acquires the configured servers it asked for (all by default) and the ones
   * it injected, each through the pool under the session's id. A server that fails to start is
   * reported in the session, not as a failed request.
   *
   * @throws ConfigError for a bad injected config; PoolError BAD_REQUEST for an unknown configured
   *   server, FORBIDDEN when a stdio server is injected without the `write` right,
   *   CLIENT_LIMIT_REACHED / REQUEST_TOO_LARGE past an admission limit.
   */
  async create(principal: Principal, request: CreateSessionRequest): Promise<SessionInfo> {
    this.#assertOpening();
    // Admission first, on counts alone: a refused request parses no config and starts nothing.
    const settings = this.#config.settings;
    const injecting = request.mcpServers === undefined ? 0 : Object.keys(request.mcpServers).length;
    this.assertInjectionSize(injecting);
    let open = 0;
    for (const session of this.#sessions.values()) if (session.clientId === principal.id) open += 1;
    if (open >= settings.maxSessionsPerClient) {
      this.#refused('sessions_per_client');
      throw new PoolError(ErrorCode.CLIENT_LIMIT_REACHED, `client ${principal.id} has ${open} open sessions, its limit (daemon.maxSessionsPerClient ${settings.maxSessionsPerClient}); delete some first`, {
        data: { limit: 'maxSessionsPerClient', open, max: settings.maxSessionsPerClient },
      });
    }
    const held = this.injectedLive(principal.id);
    if (injecting > 0 && held + injecting > settings.maxInjectedServersPerClient) {
      this.#refused('injected_per_client');
      throw new PoolError(
        ErrorCode.CLIENT_LIMIT_REACHED,
        `client ${principal.id} holds ${held} injected servers; ${injecting} more would pass its limit (daemon.maxInjectedServersPerClient ${settings.maxInjectedServersPerClient}); delete sessions that inject servers first`,
        { data: { limit: 'maxInjectedServersPerClient', held, requested: injecting, max: settings.maxInjectedServersPerClient } },
      );
    }
    const configured = this.#config.config.servers;
    const access = this.#accessOf(principal);
    const wanted = request.servers ?? Object.keys(configured).filter((name) => access.servers.has(name));
    const injected = request.mcpServers === undefined ? {} : parseServersDocument({ mcpServers: request.mcpServers }, { env: {} }).servers;
    // A server injected under a configured name is held to that name's access: no way around the lists by naming it again.
    for (const name of Object.keys(injected)) if (Object.hasOwn(configured, name) && !access.servers.has(name)) throw serverForbidden(name);
    wanted.forEach((name, i) => {
      if (Object.hasOwn(injected, name)) return;
      if (!Object.hasOwn(configured, name)) throw new PoolError(ErrorCode.BAD_REQUEST, `servers[${i}]: no configured server is named ${JSON.stringify(name)}`);
      if (!access.servers.has(name)) throw serverForbidden(name);
    });
    // Running a command is remote code execution: it takes the write right, whatever the route.
    if (Object.values(injected).some((config) => config.transport === 'stdio') && !principal.rights.has('write')) {
      throw new PoolError(ErrorCode.FORBIDDEN, 'injecting a stdio server needs the write right');
    }

    const plan = new Map<string, { config: ServerConfig; injected: boolean }>();
    for (const name of wanted) if (Object.hasOwn(configured, name)) plan.set(name, { config: configured[name]!, injected: false });
    for (const [name, config] of Object.entries(injected)) plan.set(name, { config, injected: true });

    const now = this.#clock.now();
    const session: RestSession = {
      id: randomUUID(),
      clientId: principal.id,
      principal,
      injectedCount: Object.keys(injected).length,
      createdAt: new Date(now).toISOString(),
      label: request.label,
      servers: new Map(),
      closed: false,
      opening: true,
      calls: 0,
      lastActivityAt: now,
    };
    this.#sessions.set(session.id, session);
    // The injected servers' secrets are this session's: kept out of log lines while it lives, and
    // dropped with it. Their answers are scrubbed of them by their own connections.
    this.#redactor.setServers(`session:${session.id}`, Object.values(injected));
    // A stdio server is a command run for a client, so every such launch is logged (command only: never env or headers).
    for (const [name, config] of Object.entries(injected)) {
      this.#logger.debug({ sessionId: session.id, client: principal.id, server: name, transport: config.transport, command: config.command }, 'session injects a server');
    }
    try {
      await Promise.all([...plan].map(([name, { config, injected: isInjected }]) => this.#acquireInto(session, name, config, isInjected)));
    } finally {
      session.opening = false;
      session.lastActivityAt = this.#clock.now();
    }
    if (session.closed) throw new PoolError(ErrorCode.CONNECTION_RELEASED, `session ${session.id} was closed while its servers started`);
    this.#logger.debug({ sessionId: session.id, client: principal.id, servers: plan.size }, 'session created');
    this.#publish({ type: 'session_created', sessionId: session.id, clientId: principal.id });
    return this.#info(session);
  }

  async #acquireInto(session: RestSession, name: string, config: ServerConfig, injected: boolean): Promise<void> {
    try {
      // The principal is the token's client id: a per-principal server is shared by its sessions only.
      const view = await this.#pool.acquire(name, config, session.id, { principal: session.clientId });
      session.servers.set(name, { injected, view });
      if (!injected) this.#onServerUsed?.(name, session.clientId);
    } catch (error) {
      const wire = plainError(error);
      session.servers.set(name, { injected, error: wire });
      if (wire.code === ErrorCode.ACTOR_CAP_REACHED) this.#refused('actors');
      const spawnFailure = isSpawnFailure(wire.code);
      if (spawnFailure) this.#metrics.failures.inc({ server: name, kind: 'spawn' });
      // A failed spawn has its one log line from the entry watcher already.
      (spawnFailure ? this.#logger.debug : this.#logger.warn).call(this.#logger, { sessionId: session.id, server: name, code: wire.code, error: wire.message }, 'session could not acquire a server');
    }
  }

  /** Sessions that hold `name` without a live view (it waited for authorization) acquire it again. */
  async rejoin(name: string): Promise<void> {
    const config = this.#config.server(name);
    if (config === undefined) return;
    await Promise.all(
      [...this.#sessions.values()].map(async (session) => {
        const slot = session.servers.get(name);
        if (session.closed || slot === undefined || slot.injected || (slot.view !== undefined && slot.view.status !== 'failed')) return;
        try {
          const view = await this.#pool.acquire(name, config, session.id, { principal: session.clientId });
          if (session.closed) return void view.release().catch(() => undefined);
          session.servers.set(name, { injected: false, view });
        } catch (error) {
          session.servers.set(name, { injected: false, error: plainError(error) });
        }
      }),
    );
  }

  list(): SessionInfo[] {
    return [...this.#sessions.values()].map((session) => this.#info(session));
  }

  /** The sessions with the time of their last call (the dashboard shows how recently each was used). */
  listActivity(): (SessionInfo & { lastActivityAt: string })[] {
    return [...this.#sessions.values()].map((session) => ({ ...this.#info(session), lastActivityAt: new Date(session.lastActivityAt).toISOString() }));
  }

  /** @throws PoolError NOT_FOUND */
  get(id: string): SessionInfo {
    const session = this.#sessions.get(id);
    if (session === undefined) throw new PoolError(ErrorCode.NOT_FOUND, `no session ${JSON.stringify(id)}`);
    return this.#info(session);
  }

  /** Whether `principal` may see the session `id` (its own, or any for the operator). */
  has(principal: Principal, id: string): boolean {
    const session = this.#sessions.get(id);
    return session !== undefined && (session.clientId === principal.id || principal.id === OPERATOR_ID);
  }

  /**
   * Closes a session: `pool.releaseSession`, so its entries drain when no other session holds
   * them. Only its creator or the operator may; to anyone else it does not exist (NOT_FOUND).
   */
  async delete(principal: Principal, id: string): Promise<void> {
    await this.#close(this.#owned(principal, id), `deleted by ${principal.id}`);
  }

  async #close(session: RestSession, why: string): Promise<void> {
    if (this.#sessions.get(session.id) !== session) return;
    this.#sessions.delete(session.id);
    session.closed = true;
    try {
      await this.#pool.releaseSession(session.id);
    } finally {
      this.#redactor.drop(`session:${session.id}`);
    }
    this.#logger.debug({ sessionId: session.id, client: session.clientId, why }, 'session closed');
    this.#publish({ type: 'session_closed', sessionId: session.id });
  }

  /**
   * Calls a tool through the session's filtered view of `request.server`. `headers` are the HTTP
   * request's: with telemetry on, their `traceparent` makes the call's server span a child of the caller's.
   */
  callTool(principal: Principal, id: string, request: ToolCallRequest, headers?: IncomingHttpHeaders): Promise<ToolCallResponse> {
    if (this.#telemetry === undefined) return this.#callTool(principal, id, request);
    return this.#telemetry.run({ method: 'tools/call', tool: request.name, restSessionId: id, headers }, () => this.#callTool(principal, id, request), restFailure, (response) => response.result);
  }

  async #callTool(principal: Principal, id: string, request: ToolCallRequest): Promise<ToolCallResponse> {
    this.#assertAccepting();
    const session = this.#owned(principal, id);
    const slot = session.servers.get(request.server);
    if (slot === undefined) throw new PoolError(ErrorCode.NOT_FOUND, `session ${id} has no server ${JSON.stringify(request.server)}`);
    if (!slot.injected) {
      const access = this.#accessOf(session.principal);
      if (!access.servers.has(request.server)) throw serverForbidden(request.server);
      if (!access.allows(request.server, request.name)) throw unknownName('tool', request.name);
    }
    if (slot.view === undefined) {
      const error = slot.error ?? { code: ErrorCode.SERVER_FAILED, message: 'the server did not start' };
      // Named, so the HTTP edge can say what to do about it (an authorization, for one).
      throw new PoolError(error.code, `${request.server} did not start for this session: ${error.message}`, { data: { serverName: request.server } });
    }
    const controller = new AbortController();
    const started = performance.now();
    session.calls += 1;
    session.lastActivityAt = this.#clock.now();
    const call = slot.view.callTool(request.name, request.arguments, { signal: controller.signal, ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }) });
    this.#inFlight.set(controller, call.catch(() => undefined));
    try {
      const result = await call;
      this.#metrics.observeCall(request.server, true, (performance.now() - started) / 1000);
      return { result };
    } catch (error) {
      this.#metrics.observeCall(request.server, false, (performance.now() - started) / 1000);
      if (controller.signal.aborted) throw new PoolError(ErrorCode.SHUTTING_DOWN, 'the daemon is shutting down; the call was cancelled');
      throw error;
    } finally {
      this.#inFlight.delete(controller);
      session.calls -= 1;
      session.lastActivityAt = this.#clock.now();
    }
  }

  /** Cancels every call in flight (each sends `notifications/cancelled` upstream) and waits for them. */
  async cancelCalls(): Promise<void> {
    const calls = [...this.#inFlight];
    for (const [controller] of calls) controller.abort();
    await Promise.all(calls.map(([, settled]) => settled));
  }

  /** Stops the reaper and forgets every session; returns their ids, for the caller to release. */
  closeAll(): string[] {
    this.#stopReaper?.();
    const ids = [...this.#sessions.keys()];
    for (const session of this.#sessions.values()) {
      session.closed = true;
      this.#redactor.drop(`session:${session.id}`);
    }
    this.#sessions.clear();
    return ids;
  }

  #owned(principal: Principal, id: string): RestSession {
    const session = this.#sessions.get(id);
    // Session ids are not credentials (the MCP spec (2025-11-25) says a session is never
    // authentication): another client's session is "not found".
    if (session === undefined || (session.clientId !== principal.id && principal.id !== OPERATOR_ID)) {
      throw new PoolError(ErrorCode.NOT_FOUND, `no session ${JSON.stringify(id)}`);
    }
    return session;
  }

  /** What `principal` may use of the configured servers now (the `/mcp` rule). */
  #accessOf(principal: Principal): GatewayAccess {
    return accessOf(principal, this.#config.settings, Object.keys(this.#config.config.servers));
  }

  #info(session: RestSession): SessionInfo {
    return infoOf(session, this.#accessOf(session.principal));
  }

  #refused(limit: AdmissionLimit): void {
    this.#metrics.refusals.inc({ limit });
  }
}

/** The session as the API shows it: a configured server's tools as its owner's access lets it see them. */
function infoOf(session: RestSession, access: GatewayAccess): SessionInfo {
  const servers = [...session.servers]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, slot]): SessionServer => {
      if (slot.view === undefined) return { name, injected: slot.injected, status: 'failed', tools: [], ...(slot.error ? { error: { ...slot.error } } : {}) };
      const tools = slot.view.tools.filter((tool) => slot.injected || access.allows(name, tool.name));
      return { name, injected: slot.injected, status: slot.view.status, entryIndex: slot.view.entryIndex, tools: tools.map((tool) => tool.name) };
    });
  return { id: session.id, clientId: session.clientId, createdAt: session.createdAt, ...(session.label === undefined ? {} : { label: session.label }), servers };
}
