/**
 * The `/mcp` gateway: Streamable HTTP for any MCP client, over the daemon's pool.
 * - `/mcp`: every configured server the principal may use, tools and prompts as
 *   `<server>__<name>`, resources by URI; `/mcp/<server>`: that one server, unprefixed.
 * - Both eras are served by `@mcpool/gateway` over the daemon's pool: a legacy session
 *   (`LegacySession`, its own wire per downstream session) for 2025-11-25 clients, the
 *   `ModernRouter` for 2026-07-28 requests. This file keeps the HTTP wiring: the routes, the
 *   session map and its idle reaper (`daemon.mcpSessionTtlMs`), the caps, who may use what
 *   ({@link accessOf}), and the secret scrub of everything that leaves.
 * - Sessions are keyed by `Mcp-Session-Id` and bound to the principal that opened them and to the
 *   endpoint: another token, or another endpoint, gets 404 exactly like an unknown id. The MCP
 *   spec (2025-11-25) says an unknown session id gets 404 and a session is never authentication.
 * - Before anything here runs, the app's security hook checked Host, Origin and the bearer token
 *   (any valid token: what it may use is {@link accessOf}); bodies are JSON only (415) and
 *   capped (`daemon.mcpBodyLimitBytes`, 413).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { isInitializeRequest, type InitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ViewClientInfo } from '@mcpool/core';
import { ErrorCode, draining, httpStatusOf, jsonRpcCodeOf, noSuchServer, serverForbidden, serverNotRunnable, serverUnavailable, shuttingDown, type PoolError } from '@mcpool/protocol';
import { LegacySessions, ModernRouter, RpcCode, SEARCH_ENDPOINT, classifyEra, refusalBody, rpcErrorBody, writeModernAnswer, type LegacyOperation, type LegacySession, type ModernAnswer } from '@mcpool/gateway';
import { OPERATOR_ID, type Principal } from '../auth.js';
import type { Daemon } from '../daemon.js';
import { holdsNoShare, operatorHeadroom } from '../daemon/operatorHeadroom.js';
import type { SecretRedactor } from '../secrets.js';
import type { ServerFailure, ServerOperation } from '../telemetry/serverTelemetry.js';
import { ANONYMOUS_ID, accessOf, type GatewayAccess } from './access.js';
import { SESSION_LABEL_HEADER, sessionLabelOf } from '../local/sessionLabel.js';
import { withAuthorizeHint } from '../http/authHint.js';
import { isIdle, leastRecentlyUsedIdle } from './idleSessions.js';

export interface GatewayOptions {
  daemon: Daemon;
  logger: Logger;
  /** What leaves through `/mcp` is scrubbed of the daemon's credentials, as REST bodies are (each server's own secrets are its connection's). */
  redactor: SecretRedactor;
}

/** One open `/mcp` session, as the dashboard lists it (never a token, never the client's declared capabilities). */
export interface GatewaySessionInfo {
  id: string;
  /**
   * `legacy`: a 2025-11-25 session (`Mcp-Session-Id`); `modern`: the views the gateway holds for
   * one client's stateless 2026-07-28 requests on one endpoint, with their listen streams.
   */
  era: 'legacy' | 'modern';
  clientId: string;
  /** `/mcp/<server>`: that server; absent for the aggregating `/mcp`. */
  scope?: string;
  /** Legacy only: the client's own name for the session (its `Mcpool-Session-Label` header). */
  label?: string;
  /** The MCP client, as it named itself (`clientInfo` of its `initialize`, or of its requests' `_meta`). */
  client?: { name: string; version: string };
  createdAt: string;
  lastActivityAt: string;
  /** HTTP requests under way (a GET stream counts). */
  active: number;
  servers: { name: string; status: LegacySession['serverStates'][number]['status'] }[];
  /** Open `subscriptions/listen` streams (modern only). */
  listens?: number;
}

/** The loopback test principal: `/mcp` only, every server. */
const ANONYMOUS: Principal = Object.freeze({ id: ANONYMOUS_ID, rights: new Set(['read'] as const) });

/** What a downstream client declared about itself in `initialize` (no log level yet: that comes with `logging/setLevel`). */
function declaredClient(params: { protocolVersion: string; capabilities: Record<string, unknown>; clientInfo: { name: string; version: string } }): ViewClientInfo {
  return { protocolVersion: params.protocolVersion, capabilities: params.capabilities, clientInfo: params.clientInfo };
}

/** True when `url` (a request target, query and all) is one of the gateway's: `/mcp` or `/mcp/…`. */
export function isGatewayUrl(url: string): boolean {
  const path = url.split('?', 1)[0]!;
  return path === '/mcp' || path.startsWith('/mcp/');
}

/**
 * The body of a refusal on `/mcp` made before the gateway ran (Host, Origin, token, body size,
 * content type, malformed JSON): an MCP client reads JSON-RPC there, so a JSON-RPC error with no
 * id, its code from the protocol's one code → JSON-RPC table and the pool's code in `data.code`.
 */
export function gatewayRefusalBody(code: ErrorCode, message: string): { jsonrpc: '2.0'; id: null; error: { code: number; message: string; data: { code: ErrorCode } } } {
  return { jsonrpc: '2.0', id: null, error: { code: jsonRpcCodeOf(code), message, data: { code } } };
}

/** Methods the endpoint refuses with 405 (GET, POST and DELETE are the wire's). */
const OTHER_METHODS = ['PUT', 'PATCH', 'HEAD', 'OPTIONS'] as const;

/** Which `/mcp` endpoint a request is on: the aggregating one, a server's (`scope`), or the tool-search view. */
interface Endpoint {
  scope: string | undefined;
  search: boolean;
}
const AGGREGATING: Endpoint = Object.freeze({ scope: undefined, search: false });
const SEARCH: Endpoint = Object.freeze({ scope: undefined, search: true });

export class Gateway {
  readonly #daemon: Daemon;
  readonly #logger: Logger;
  readonly #redactor: SecretRedactor;
  readonly #sessions = new Map<string, LegacySession>();
  /** 2025-11-25 clients: a session each, made by the gateway package over the daemon's pool. */
  readonly #legacy: LegacySessions;
  /** Initializes under way, by client (they count against both session caps). */
  readonly #opening = new Map<string, number>();
  #openingTotal = 0;
  #reaper: NodeJS.Timeout | undefined;
  #closed = false;
  /** POSTs under way (see {@link callsInFlight}). */
  #calls = 0;
  /**
   * Since when new sessions have been waiting for a server that was not ready, by name: the
   * sessions that open meanwhile share one join window, so a hanging server delays them once.
   */
  readonly #joinWaits = new Map<string, number>();

  /** 2026-07-28 callers: stateless, served by the router over views it keeps per (principal, endpoint). */
  readonly #modern: ModernRouter;
  /** Modern answers being written (streams included): each ends with the gateway. */
  readonly #modernResponses = new Set<ServerResponse>();
  readonly #offAuth: () => void;
  readonly #offAdded: () => void;

  constructor(options: GatewayOptions) {
    this.#daemon = options.daemon;
    this.#redactor = options.redactor;
    this.#logger = options.logger.child({ component: 'gateway' });
    const settings = this.#daemon.settings;
    if (settings.insecureNoAuthLoopback) {
      this.#logger.warn(
        { host: settings.host },
        'INSECURE TEST MODE (daemon.insecureNoAuthLoopback): /mcp accepts requests WITHOUT a bearer token from this machine. Meant for the conformance suite only; never leave it on.',
      );
    }
    const ttl = settings.mcpSessionTtlMs;
    this.#reaper = setInterval(() => this.reap(), Math.max(20, Math.min(60_000, Math.floor(ttl / 4))));
    this.#reaper.unref();
    this.#daemon.countMcpSessionsWith(() => this.#sessions.size + this.#modern.listens, () => this.countByClient());
    this.#daemon.countMcpCallsWith(() => this.#calls);
    this.#modern = new ModernRouter({
      pool: this.#daemon.pool,
      config: (name) => (Object.hasOwn(this.#daemon.config.servers, name) ? this.#daemon.config.servers[name] : undefined),
      startsOnUse: (name) => this.#daemon.startsOnUse(name),
      idleStopMs: (name, era) => this.#daemon.idleStopMsOf(name, era),
      idleClock: this.#daemon.clock,
      version: this.#daemon.version,
      logger: this.#logger,
      viewIdleMs: Math.min(settings.mcpSessionTtlMs, 60_000),
      observeCall: (server, ok, seconds) => this.#daemon.metrics.observeCall(server, ok, seconds),
      // A modern caller's first request waits for a hanging server no longer than a legacy initialize does.
      joinDeadline: (name) => this.#joinDeadline(name),
      joined: (name) => this.#joinWaits.delete(name),
      // A held listen stream costs what a legacy session does: it counts against the same caps.
      admitListen: (principal) => this.#admission(principal),
      viewAcquired: (name, principal) => this.#daemon.serverUsed(name, principal),
      // A replica seals itself into the calls it holds for a retry, so any replica can send the retry here.
      ...(this.#daemon.cluster === undefined ? {} : { mintContinuationId: (principal: string) => this.#daemon.cluster!.mintSessionId(principal) }),
      // Replicas share the keys of modern servers' enveloped states, so a retry may reach any of them.
      ...(this.#daemon.cluster === undefined ? {} : { stateKeys: this.#daemon.cluster.stateKeys }),
    });
    this.#legacy = new LegacySessions({
      pool: this.#daemon.pool,
      config: (name) => (Object.hasOwn(this.#daemon.config.servers, name) ? this.#daemon.config.servers[name] : undefined),
      startsOnUse: (name) => this.#daemon.startsOnUse(name),
      idleStopMs: (name, era) => this.#daemon.idleStopMsOf(name, era),
      idleClock: this.#daemon.clock,
      version: this.#daemon.version,
      logger: this.#logger,
      callTimeoutMs: () => this.#daemon.settings.callTimeoutMs,
      // Every message a session sends goes through the secret policy first (one place: the wire's encode).
      // The command a refusal for lack of authorization asks for goes on too (`../http/authHint.ts`).
      encode: (message) => this.#redactor.scrubAnswer(withAuthorizeHint(message)),
      observeCall: (server, ok, seconds) => this.#daemon.metrics.observeCall(server, ok, seconds),
      ...(this.#daemon.telemetry === undefined ? {} : { around: (operation, serve) => this.#daemon.telemetry!.server.run(serverOperation(operation), serve, rpcFailure) }),
      joinDeadline: (name) => this.#joinDeadline(name),
      joined: (name) => this.#joinWaits.delete(name),
      viewAcquired: (name, principal) => this.#daemon.serverUsed(name, principal),
    });
    // A server just authorized joins the sessions that were waiting for it (they get list_changed).
    this.#offAuth = this.#daemon.onServerAuthorized((name) => {
      for (const session of this.#sessions.values()) session.retryServer(name);
    });
    // A server a reload added (or a fixed one) joins the open sessions, which get list_changed.
    this.#offAdded = this.#daemon.onServersAdded((names) => {
      for (const session of this.#sessions.values()) for (const name of names) session.addServer(name);
      this.#modern.serversChanged();
    });
  }

  /** For the security hook: the principal of a token-less `/mcp` request, in the test mode only. */
  readonly anonymousPrincipal = (): Principal | undefined => (this.#daemon.settings.insecureNoAuthLoopback ? ANONYMOUS : undefined);

  /** Open downstream sessions: legacy sessions and modern listen streams. */
  get size(): number {
    return this.#sessions.size + this.#modern.listens;
  }

  /**
   * The open downstream sessions, legacy ones and modern holds: who opened them, on which
   * endpoint, their servers, when they were opened and last used.
   */
  list(): GatewaySessionInfo[] {
    const legacy = [...this.#sessions.values()]
      .filter((session) => !session.closed)
      .map((session) => ({
        id: session.id,
        era: 'legacy' as const,
        clientId: session.principal,
        ...(session.scope === undefined ? {} : { scope: session.scope }),
        ...(session.label === undefined ? {} : { label: session.label }),
        ...(session.client?.clientInfo === undefined ? {} : { client: { name: session.client.clientInfo.name, version: session.client.clientInfo.version } }),
        createdAt: new Date(session.createdAt).toISOString(),
        lastActivityAt: new Date(session.lastSeen).toISOString(),
        active: session.active,
        servers: session.serverStates.map(({ name, status }) => ({ name, status })),
      }));
    const modern = this.#modern.holds().map((hold) => ({
      id: hold.id,
      era: 'modern' as const,
      clientId: hold.principal,
      ...(hold.scope === undefined ? {} : { scope: hold.scope }),
      createdAt: new Date(hold.createdAt).toISOString(),
      lastActivityAt: new Date(hold.lastActivityAt).toISOString(),
      active: hold.active + hold.listens,
      servers: hold.servers,
      listens: hold.listens,
      ...(hold.clientInfo === undefined ? {} : { client: hold.clientInfo }),
    }));
    return [...legacy, ...modern];
  }

  /**
   * Ends the `/mcp` session `id` for `principal` (the operator may end any; a client only its
   * own): its streams end and its pool session is released. False when there is no such session
   * for this principal (another client's session does not exist for it).
   */
  async closeSession(principal: Principal, id: string): Promise<boolean> {
    const may = (owner: string): boolean => owner === principal.id || principal.id === OPERATOR_ID;
    const session = this.#sessions.get(id);
    if (session === undefined || session.closed) {
      // A modern hold: its listens get their completion result, its views are released.
      const ended = await this.#modern.closeHold(id, may);
      if (ended) this.#logger.debug({ holdId: id, by: principal.id }, 'modern gateway hold ended through the REST API');
      return ended;
    }
    if (!may(session.principal)) return false;
    this.#logger.debug({ sessionId: id, client: session.principal, by: principal.id }, 'gateway session closed through the REST API');
    await session.close('closed through the REST API');
    return true;
  }

  /**
   * Ends the legacy sessions `principal` may end (the operator any, a client its own) that are
   * idle — nothing in flight, no GET stream open — for at least `idleForMs`. Their clients get 404
   * on their next request and initialize again. Modern holds need no such thing: a hold with no
   * listen open is released by itself once idle. Resolves with the ids ended.
   */
  async closeIdle(principal: Principal, idleForMs: number): Promise<string[]> {
    const now = Date.now();
    const idle = [...this.#sessions.values()].filter((session) => (principal.id === OPERATOR_ID || session.principal === principal.id) && isIdle(session, now, idleForMs));
    await Promise.all(idle.map((session) => session.close('closed as idle through the REST API')));
    if (idle.length > 0) this.#logger.info({ by: principal.id, closed: idle.length, idleForMs }, `ended ${idle.length} idle /mcp session(s)`);
    return idle.map((session) => session.id);
  }

  /** Open sessions per client, legacy sessions and modern listen streams (for `/metrics`). */
  countByClient(): Map<string, number> {
    const counts = new Map<string, number>();
    const add = (client: string, n: number): void => {
      if (n > 0) counts.set(client, (counts.get(client) ?? 0) + n);
    };
    for (const session of this.#sessions.values()) if (!session.closed) add(session.principal, 1);
    for (const hold of this.#modern.holds()) add(hold.principal, hold.listens);
    return counts;
  }

  /** Calls under way on `/mcp`: POSTs not yet answered, except listen streams (they last as long as their client). */
  get callsInFlight(): number {
    return this.#calls;
  }

  /** Registers `/mcp` and `/mcp/:server` on `app`. */
  register(app: FastifyInstance): void {
    const bodyLimit = this.#daemon.settings.mcpBodyLimitBytes;
    const config = { right: 'read' as const, anonymous: true };
    // `/mcp/~search` is a static route: it wins over `/mcp/:server`.
    for (const url of ['/mcp', `/mcp/${SEARCH_ENDPOINT}`, '/mcp/:server']) {
      const endpointOf = (request: FastifyRequest): Endpoint =>
        url === '/mcp' ? AGGREGATING : url === `/mcp/${SEARCH_ENDPOINT}` ? SEARCH : { scope: (request.params as { server: string }).server, search: false };
      app.route({
        method: 'POST',
        url,
        bodyLimit,
        config,
        handler: (request, reply) => {
          this.#countCall(request, reply);
          return this.#post(request, reply, endpointOf(request));
        },
      });
      app.route({ method: ['GET', 'DELETE'], url, config, handler: (request, reply) => this.#withSession(request, reply, endpointOf(request)) });
      app.route({
        method: [...OTHER_METHODS],
        url,
        config,
        handler: (_request, reply) => reply.code(405).header('allow', 'GET, POST, DELETE').send(rpcErrorBody(RpcCode.SERVER_ERROR, 'Method not allowed.')),
      });
    }
  }

  /** Counts a POST as a call until its answer is over (a listen stream is not a call: it ends with its client). */
  #countCall(request: FastifyRequest, reply: FastifyReply): void {
    if ((request.body as { method?: unknown } | null | undefined)?.method === 'subscriptions/listen') return;
    this.#calls += 1;
    reply.raw.once('close', () => (this.#calls -= 1));
  }

  /** Closes sessions idle (no request, none under way) for longer than the TTL. */
  reap(): void {
    const ttl = this.#daemon.settings.mcpSessionTtlMs;
    const now = Date.now();
    for (const session of [...this.#sessions.values()]) {
      if (isIdle(session, now, ttl)) void session.close('idle');
    }
  }

  /** Closes every session (their streams end, their pool sessions are released). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#reaper);
    await this.#modern.close();
    for (const res of this.#modernResponses) res.end();
    this.#offAuth();
    this.#offAdded();
    await Promise.all([...this.#sessions.values()].map((session) => session.close('daemon shutting down')));
  }

  // --- Routes -----------------------------------------------------------------------------------

  async #post(request: FastifyRequest, reply: FastifyReply, endpoint: Endpoint): Promise<unknown> {
    if (typeof request.headers['mcp-session-id'] === 'string') return this.#withSession(request, reply, endpoint);
    const { scope, search } = endpoint;
    const body = request.body;
    if (!isInitialize(body)) {
      // Not the legacy handshake and no legacy session: a 2026-07-28 request is served statelessly.
      const verdict = classifyEra('POST', request.headers, body);
      if (verdict.era === 'reject') return reply.code(verdict.status).send(verdict.body);
      if (verdict.era === 'modern') return this.#modernPost(request, reply, endpoint);
      return reply.code(400).send(rpcErrorBody(RpcCode.SERVER_ERROR, 'Bad Request: no Mcp-Session-Id header (only an initialize request may come without one)'));
    }
    // The wire would refuse these too, but only after the servers were acquired.
    const accept = request.headers.accept ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return reply.code(406).send(rpcErrorBody(RpcCode.SERVER_ERROR, 'Not Acceptable: Client must accept both application/json and text/event-stream'));
    }
    const principal = request.principal!;
    if (this.#closed || !this.#daemon.accepting) return this.#refuse(reply, shuttingDown('the daemon'));
    // Draining before a stop: the session would be cut soon; the client opens it on another replica.
    if (this.#daemon.draining) return this.#refuse(reply, draining());
    const refused = this.#admission(principal.id);
    if (refused !== undefined) return reply.code(httpStatusOf(refused.code)).send(gatewayRefusalBody(refused.code, refused.message));
    const access = accessOf(principal, this.#daemon.settings, Object.keys(this.#daemon.config.servers));
    if (this.#scopeRefused(reply, scope, access)) return reply;
    const servers = scope === undefined ? [...access.servers] : [scope];

    this.#opening.set(principal.id, (this.#opening.get(principal.id) ?? 0) + 1);
    this.#openingTotal += 1;
    let session: LegacySession;
    try {
      // The one server of `/mcp/<server>` is waited for; the aggregate opens with those ready in time.
      session = await this.#legacy.open({
        // A replica of a cluster seals its ids (owner, principal, expiry), so any replica can route them.
        ...(this.#daemon.cluster === undefined ? {} : { id: this.#daemon.cluster.mintSessionId(principal.id) }),
        principal: principal.id,
        scope,
        search,
        servers,
        access: () => accessOf(principal, this.#daemon.settings, Object.keys(this.#daemon.config.servers)),
        client: declaredClient(body.params),
        label: sessionLabelOf(request.headers[SESSION_LABEL_HEADER]),
        onInitialized: (opened) => {
          this.#sessions.set(opened.id, opened);
          this.#logger.debug({ sessionId: opened.id, client: principal.id, scope: scope ?? '*', servers: opened.serverStates.map((s) => (s.error === undefined ? s.name : `${s.name} (failed)`)) }, 'gateway session opened');
        },
        onClosed: (closed) => {
          if (this.#sessions.get(closed.id) === closed) this.#sessions.delete(closed.id);
        },
      });
      const failure = scope === undefined ? undefined : session.serverStates[0]?.error;
      if (failure !== undefined) {
        await session.close('its server did not start');
        return this.#refuse(reply, serverUnavailable(scope!, failure));
      }
      if (this.#closed) {
        await session.close('daemon shutting down');
        return this.#refuse(reply, shuttingDown('the daemon'));
      }
    } finally {
      this.#openingTotal -= 1;
      const left = (this.#opening.get(principal.id) ?? 1) - 1;
      if (left === 0) this.#opening.delete(principal.id);
      else this.#opening.set(principal.id, left);
    }
    await this.#handOver(session, request, reply);
    // Refused by the wire (a bad header): nothing was opened.
    if (!this.#sessions.has(session.id)) await session.close('initialize refused');
    return reply;
  }

  /** When a new session stops waiting for `name`: the end of the window the first waiting session opened. */
  #joinDeadline(name: string): number {
    let since = this.#joinWaits.get(name);
    if (since === undefined) this.#joinWaits.set(name, (since = Date.now()));
    return since + this.#daemon.settings.mcpJoinWaitMs;
  }

  /** `/mcp/<server>` of a server that is not configured (404) or not this client's (403): answered, true. */
  #scopeRefused(reply: FastifyReply, scope: string | undefined, access: GatewayAccess): boolean {
    if (scope === undefined) return false;
    const unavailable = Object.hasOwn(this.#daemon.config.unavailable, scope) ? this.#daemon.config.unavailable[scope] : undefined;
    if (unavailable !== undefined && !Object.hasOwn(this.#daemon.config.servers, scope)) {
      void this.#refuse(reply, serverNotRunnable(scope, unavailable));
      return true;
    }
    if (!Object.hasOwn(this.#daemon.config.servers, scope)) {
      void this.#refuse(reply, noSuchServer(scope));
      return true;
    }
    if (!access.servers.has(scope)) {
      void this.#refuse(reply, serverForbidden(scope));
      return true;
    }
    return false;
  }

  /** A 2026-07-28 request: routed once, answered as JSON, or as SSE when something streams before the result. */
  async #modernPost(request: FastifyRequest, reply: FastifyReply, { scope, search }: Endpoint): Promise<unknown> {
    const principal = request.principal!;
    if (this.#closed || !this.#daemon.accepting) return this.#refuse(reply, shuttingDown('the daemon'));
    const access = accessOf(principal, this.#daemon.settings, Object.keys(this.#daemon.config.servers));
    if (this.#scopeRefused(reply, scope, access)) return reply;
    const gone = new AbortController();
    const raw = reply.raw;
    raw.once('close', () => {
      if (!raw.writableFinished) gone.abort();
    });
    const answer = await this.#modern.handle({ message: request.body, headers: request.headers, caller: { principal: principal.id, scope, search, access }, signal: gone.signal });
    if (gone.signal.aborted) {
      if (answer.kind === 'stream') answer.stream.end();
      return reply;
    }
    await this.#write(reply, answer, gone.signal);
    return reply;
  }

  /**
   * Writes a modern answer on the socket itself, as a legacy session's wire writes its own:
   * fastify's reply pipeline (serializer, hooks, header merging) cost more than the answer.
   * Hijacked, so no hook of the app sees it: what leaves is scrubbed of the daemon's credentials
   * here (a JSON body as a value, each streamed message as it goes; each server's own secrets are
   * its connection's), and the headers fastify set so far (CORS) go along.
   */
  async #write(reply: FastifyReply, answer: ModernAnswer, gone: AbortSignal): Promise<void> {
    const raw = reply.raw;
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) raw.setHeader(name, value);
    reply.hijack();
    if (answer.kind === 'stream') this.#modernResponses.add(raw);
    try {
      // The command a refusal for lack of authorization asks for goes on too (`../http/authHint.ts`).
      const body = answer.kind === 'json' && answer.body !== undefined ? withAuthorizeHint(answer.body) : undefined;
      const hinted = body === undefined || answer.kind !== 'json' || body === answer.body ? answer : { ...answer, body };
      await writeModernAnswer(raw, hinted, {
        encodeText: (json) => this.#redactor.scrubBody(json),
        encode: (message) => this.#redactor.scrubAnswer(withAuthorizeHint(message)),
        keepAliveMs: this.#daemon.settings.heartbeatMs,
        signal: gone,
      });
    } finally {
      this.#modernResponses.delete(raw);
    }
  }

  /** Open sessions of one client, its modern listens included (O(open sessions): bounded by `mcpMaxSessions`). */
  #sessionsOf(principalId: string): number {
    let count = this.#modern.listensOf(principalId);
    for (const session of this.#sessions.values()) if (session.principal === principalId) count += 1;
    return count;
  }

  /**
   * Whether `principalId` may open one more session or listen stream: undefined, or the typed
   * refusal. The per-client cap comes first: a client at its own share is told so, and its
   * sessions never fill the global cap alone unless the two caps are set that way.
   */
  #admission(principalId: string): { code: ErrorCode; message: string } | undefined {
    const settings = this.#daemon.settings;
    const mine = this.#sessionsOf(principalId) + (this.#opening.get(principalId) ?? 0);
    // At its cap, a client's least recently used idle session makes room (its client re-initializes on 404).
    const evicted = mine >= settings.mcpMaxSessionsPerClient ? leastRecentlyUsedIdle(this.#sessions.values(), principalId, Date.now()) : undefined;
    if (evicted !== undefined) {
      void evicted.close('evicted: its client was at its session cap and this was its least recently used idle session');
      this.#daemon.metrics.evictions.inc();
      this.#logger.info({ client: principalId, sessionId: evicted.id, idleMs: Date.now() - evicted.lastSeen, max: settings.mcpMaxSessionsPerClient }, 'ended the least recently used idle /mcp session of a client at its cap, to admit a new one');
    } else if (mine >= settings.mcpMaxSessionsPerClient) {
      this.#daemon.refused('mcp_sessions_per_client');
      this.#logger.warn({ client: principalId, open: mine, max: settings.mcpMaxSessionsPerClient }, 'gateway session refused: the client has its share of sessions');
      return {
        code: ErrorCode.CLIENT_LIMIT_REACHED,
        message: `client ${principalId} has ${mine} open MCP sessions and listen streams, its limit (daemon.mcpMaxSessionsPerClient ${settings.mcpMaxSessionsPerClient}), and none is idle to make room; close some (DELETE)`,
      };
    }
    // Clients with a share leave the operator its headroom: four tokens at their shares cannot lock it out.
    const headroom = holdsNoShare(principalId, settings.clients) ? 0 : operatorHeadroom(settings.mcpMaxSessions);
    if (this.size + this.#openingTotal >= settings.mcpMaxSessions - headroom) {
      this.#daemon.refused('mcp_sessions');
      this.#logger.warn({ client: principalId, max: settings.mcpMaxSessions, headroom }, 'gateway session refused: too many open sessions');
      const kept = headroom === 0 ? '' : `, the last ${headroom} of which are kept for the operator`;
      return { code: ErrorCode.SESSION_CAP_REACHED, message: `too many open MCP sessions and listen streams (daemon.mcpMaxSessions ${settings.mcpMaxSessions}${kept}); close some (DELETE) or wait for idle ones to expire` };
    }
    return undefined;
  }

  /** A refusal in the JSON-RPC shape an MCP client reads, its status from the one code table. */
  #refuse(reply: FastifyReply, refusal: PoolError): FastifyReply {
    return reply.code(httpStatusOf(refusal.code)).send(withAuthorizeHint(refusalBody(refusal)));
  }

  async #withSession(request: FastifyRequest, reply: FastifyReply, { scope, search }: Endpoint): Promise<unknown> {
    const id = request.headers['mcp-session-id'];
    if (typeof id !== 'string') return reply.code(400).send(rpcErrorBody(RpcCode.SERVER_ERROR, 'Bad Request: Mcp-Session-Id header is required'));
    const session = this.#sessions.get(id);
    // Another principal's session, or one opened on another endpoint, does not exist for this request.
    if (session === undefined || session.closed || session.principal !== request.principal!.id || session.scope !== scope || session.search !== search) {
      return reply.code(404).send(rpcErrorBody(RpcCode.SESSION_NOT_FOUND, 'Session not found'));
    }
    await this.#handOver(session, request, reply);
    return reply;
  }

  /** The session's wire writes the answer itself (SSE or JSON); headers fastify set so far (CORS) go along. */
  async #handOver(session: LegacySession, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const raw = reply.raw;
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) raw.setHeader(name, value);
    if (request.headers.origin !== undefined) raw.setHeader('access-control-expose-headers', 'mcp-session-id');
    reply.hijack();
    try {
      await session.handle(request.raw, raw, request.body);
    } catch (error) {
      this.#logger.error({ sessionId: session.id, err: error }, 'gateway request failed');
      if (!raw.headersSent) {
        raw.writeHead(500, { 'content-type': 'application/json' });
        raw.end(JSON.stringify(rpcErrorBody(RpcCode.INTERNAL_ERROR, 'internal error (see the daemon log)')));
      }
    }
  }
}

/**
 * The SDK's `isInitializeRequest` (a zod parse of the whole message), run only on a body whose
 * method is `initialize`: the schema requires that literal, so any other body fails it, and the
 * modern requests that come here without a session (every one of them) skip the parse.
 */
function isInitialize(body: unknown): body is InitializeRequest {
  if (typeof body !== 'object' || body === null || (body as { method?: unknown }).method !== 'initialize') return false;
  return isInitializeRequest(body);
}

/** What a server span records of one legacy request (the names as the client wrote them). */
function serverOperation({ method, params, context, session }: LegacyOperation): ServerOperation {
  const name = typeof params.name === 'string' ? params.name : undefined;
  const header = context.headers['mcp-protocol-version'];
  return {
    method,
    tool: method === 'tools/call' ? name : undefined,
    prompt: method === 'prompts/get' ? name : undefined,
    requestId: context.requestId,
    mcpSessionId: session.id,
    protocolVersion: typeof header === 'string' ? header : session.client?.protocolVersion,
    meta: context.meta,
    headers: context.headers,
  };
}

/** A request's failure as the downstream client sees it: the JSON-RPC code it gets back. */
function rpcFailure(error: unknown): ServerFailure {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'number') return { type: String(code), rpcCode: String(code), message: (error as Error).message };
  return error instanceof Error ? { type: '_OTHER', message: error.message } : { type: '_OTHER' };
}
