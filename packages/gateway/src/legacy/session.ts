/**
 * The legacy era (2025-11-25 and older) front: one downstream session over a pool. It has its
 * own {@link LegacyWire} (the Streamable HTTP server side, never shared between sessions:
 * CVE-2026-25536) and one {@link Aggregate} — one pool session holding a view of each server
 * it uses — and reads what its client sees through `directory.ts`, as the modern router does.
 *
 * What it adds for a session:
 * - `initialize` announces the capabilities of the servers ready by then; a server still
 *   starting joins later with `list_changed` (prompts and resources are announced up front while
 *   one is starting: a legacy session cannot add a capability later);
 * - calls go through the view (which enforces the server config's filter too), results as
 *   received; progress and logs of a call ride its own stream (its answer turns to SSE);
 *   cancellation goes both ways;
 * - a server→client request the pool attributes to one of this session's calls goes out on that
 *   call's stream, if the client declared the capability it needs; a modern server's
 *   `input_required` during a call is asked of the client the same way, and the call retried;
 * - `list_changed`, `resources/updated` (subscribers only) and logs no call can be blamed for go
 *   out on the session's GET stream, through a bounded outbox a client that stops reading is cut
 *   from;
 * - a client that declared `roots` is asked for them (`roots/list`, on the stream of its first
 *   request, and again on the first request after it sent `notifications/roots/list_changed`);
 *   the session's `per-workspace` servers wait for them and move when they change;
 * - `logging/setLevel` is this session's filter; upstream gets the most verbose level any session
 *   of the same {@link LegacySessions} asked for.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ErrorCode,
  PoolError,
  type CallOptions,
  type ConnectionStatus,
  type InputRequiredResult,
  type Logger,
  type McpTransportPool,
  type Root,
  type ServerConfig,
  type UpstreamNotification,
  type ViewClientInfo,
} from '@mcpool/core';
import { serverRequestRefused } from '@mcpool/protocol/refusals';
import type { GatewayAccess } from '../aggregate/access.js';
import type { IdleClock } from '../aggregate/idleStop.js';
import { Aggregate, LIST_KINDS, type AcquireFailure, type ListKind } from '../aggregate/aggregate.js';
import { capabilitiesOf, instructionsOf, listPrompts, listResources, listResourceTemplates, resolveCompletion, resolveName, resolveUri, serverInfoOf } from '../aggregate/directory.js';
import { endpointTools, resolveToolCall } from '../aggregate/search.js';
import type { EndpointCapabilities } from '../aggregate/capabilities.js';
import { takesServerRequests, undeclared } from '../clientCapabilities.js';
import { RpcCode, RpcError, stringParam, toRpcError, upstreamMessage, type RequestedName } from '../rpcErrors.js';
import { isLogLevel, passes, UpstreamLogLevels, type LogLevel } from './logLevels.js';
import { droppedMarker, SESSION_STALL_MS, SessionOutbox } from './outbox.js';
import { LegacyWire, type LegacyEndpoint, type LegacyRequestContext } from './wire.js';
import { forwardedParams, type Params } from '../json.js';


/** Upstream notifications delivered through other paths (never forwarded raw). */
const HANDLED_ELSEWHERE = new Set([
  'notifications/progress',
  'notifications/cancelled',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
]);

/** One request a session serves, as {@link LegacySessionsOptions.around} sees it. */
export interface LegacyOperation {
  method: string;
  params: Params;
  context: LegacyRequestContext;
  session: LegacySession;
}

/** What the sessions of one pool share. */
export interface LegacySessionsOptions {
  pool: McpTransportPool;
  /** The current config of a server (it may change on reload); undefined when no longer configured. */
  config(name: string): ServerConfig | undefined;
  /** `serverInfo.version` of the aggregating endpoint. */
  version: string;
  /** Whether the host starts `name` on first use (listed from its catalog until then). @default never */
  startsOnUse?(name: string): boolean;
  /**
   * After how long without a request of a caller its view of `name` (of that era) is given back,
   * the caller shown the catalog meanwhile (see `aggregate/idleStop.ts`); undefined or 0: never. @default never
   */
  idleStopMs?(name: string, era: 'legacy' | 'modern' | undefined): number | undefined;
  /** The clock of the idle rule. @default the system clock */
  idleClock?: IdleClock | undefined;
  /** Silent unless given. */
  logger?: Logger | undefined;
  /** How long a server→client request waits for the client's answer, read per request. @default 60000 */
  callTimeoutMs?(): number;
  /**
   * Applied to every message a session sends downstream (results, errors, notifications,
   * requests): the wire writes the HTTP response itself. @default none
   */
  encode?(message: Params): Params;
  /** A `tools/call` ended: on which server, whether it got an answer (even `isError`), how long it took. */
  observeCall?(server: string, ok: boolean, seconds: number): void;
  /** Runs around the serving of each request (a trace span): must call `serve` and return its promise's outcome. @default none */
  around?(operation: LegacyOperation, serve: () => Promise<Params>): Promise<Params>;
  /**
   * When a new session of the aggregating endpoint stops waiting for `name` (epoch ms): a server
   * not ready by then joins the open session later. The host keeps one window per server, so a
   * hanging server delays sessions once. @default no bound
   */
  joinDeadline?(name: string): number;
  /** Told when an acquire of `name` settled (ready or failed): the host's window for it can close. */
  joined?(name: string): void;
  /** Told when a view of `name` was acquired for `principal` (a host's warm hold can follow who uses a server). */
  viewAcquired?(name: string, principal: string): void;
  /** A comment on a quiet SSE stream this often keeps proxies from closing it. @default 15000 */
  keepAliveMs?: number;
}

/** One session to open. */
export interface LegacySessionInit {
  /** The `Mcp-Session-Id`. @default a random UUID */
  id?: string;
  /** Who the session acts for (the token's client): a `per-principal` server is shared by its sessions only. */
  principal: string;
  /** `/mcp/<server>`: that server only, unprefixed; undefined for the aggregating endpoint. */
  scope: string | undefined;
  /** The aggregating endpoint's servers behind the tool-search view's two tools. @default false */
  search?: boolean | undefined;
  /** The servers of the session, chosen at `initialize` (the principal's, or the scope). */
  servers: readonly string[];
  /** What the principal may use, read per request: a narrowed client is narrowed on its next one. */
  access(): GatewayAccess;
  /** What the client declared in its `initialize`; each view carries it upstream. */
  client?: ViewClientInfo | undefined;
  /** The client's own name for the session (the daemon's `Mcpool-Session-Label` header), for listings. */
  label?: string | undefined;
  /** The wire accepted `initialize`: the session id is live, before its answer leaves. */
  onInitialized?(session: LegacySession): void;
  /** The session is closing (DELETE, a stalled client, {@link LegacySession.close}). */
  onClosed?(session: LegacySession): void;
}

/**
 * The legacy sessions over one pool: each {@link open} makes one; they share the log levels sent
 * upstream (a shared server gets the most verbose level any session asked for).
 *
 * @example
 * ```ts
 * const sessions = new LegacySessions({ pool, config: (name) => servers[name], version: '1.0.0' });
 * // On an `initialize` POST (no Mcp-Session-Id):
 * const session = await sessions.open({ principal: 'me', scope: undefined, servers: Object.keys(servers), access: () => everything });
 * await session.handle(req, res, body); // later requests of the session: session.handle too
 * ```
 */
export class LegacySessions {
  readonly #options: LegacySessionsOptions;
  readonly #levels = new UpstreamLogLevels();

  constructor(options: LegacySessionsOptions) {
    this.#options = options;
  }

  /**
   * Opens a session: acquires its servers (a server's endpoint waits for its one server; the
   * aggregating endpoint waits for each until `joinDeadline`), then builds its wire, which
   * answers the `initialize` the host hands it next.
   */
  async open(init: LegacySessionInit): Promise<LegacySession> {
    const session = new LegacySession(this.#options, this.#levels, init);
    const joinDeadline = this.#options.joinDeadline === undefined || init.scope !== undefined ? undefined : (name: string) => this.#options.joinDeadline!(name);
    await session.acquire(joinDeadline);
    session.start();
    return session;
  }
}

export class LegacySession {
  readonly id: string;
  /** The pool session: `mcp:` + the session id. */
  readonly poolSessionId: string;
  readonly principal: string;
  readonly scope: string | undefined;
  /** Opened on the tool-search view. */
  readonly search: boolean;
  /** When it was opened (ms since the epoch). */
  readonly createdAt = Date.now();
  /** Last time a request arrived or ended. */
  lastSeen = this.createdAt;
  /** HTTP requests under way, GET streams included: a session with any is never idle. */
  active = 0;
  readonly #options: LegacySessionsOptions;
  readonly #init: LegacySessionInit;
  readonly #levels: UpstreamLogLevels;
  readonly #aggregate: Aggregate;
  readonly #logger: Logger | undefined;
  /** Notifications the client has not taken yet (bounded; a client that stops reading is cut). */
  readonly #outbox: SessionOutbox;
  /** uri → the server it was subscribed on. */
  readonly #subscriptions = new Map<string, string>();
  #wire: LegacyWire | undefined;
  #caps: EndpointCapabilities = {};
  #logLevel: LogLevel | undefined;
  /** A server joined after the session started (its `list_changed` may have found no stream). */
  #joinedLate = false;
  /** Whether the client declared any capability a server→client request needs. */
  readonly #takesServerRequests: boolean;
  /** Whether the client declared `roots`: it is asked for them. */
  readonly #takesRoots: boolean;
  /** The client's roots are to be asked (not yet, or they changed since). */
  #rootsStale: boolean;
  #rootsAsking: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  /** @internal {@link LegacySessions.open} makes sessions. */
  constructor(options: LegacySessionsOptions, levels: UpstreamLogLevels, init: LegacySessionInit) {
    this.#options = options;
    this.#levels = levels;
    this.#init = init;
    this.id = init.id ?? randomUUID();
    this.poolSessionId = `mcp:${this.id}`;
    this.principal = init.principal;
    this.scope = init.scope;
    this.search = init.scope === undefined && init.search === true;
    this.#logger = options.logger;
    this.#takesServerRequests = takesServerRequests(init.client?.capabilities);
    this.#takesRoots = undeclared('roots/list', init.client?.capabilities, 'the client') === undefined;
    this.#rootsStale = this.#takesRoots;
    this.#outbox = new SessionOutbox({
      onStall: (stalledMs) => {
        this.#logger?.warn({ sessionId: this.id, client: this.principal, stalledMs }, `closing a /mcp session whose client did not read its stream for ${SESSION_STALL_MS / 1000} s`);
        void this.close('its client stopped reading');
      },
      onBurstEnd: (report) => {
        this.#logger?.warn({ sessionId: this.id, client: this.principal, ...report }, 'a /mcp client read slower than its notifications came: dropped and coalesced some');
        if (report.dropped > 0) this.#forward(droppedMarker(report.dropped), undefined);
      },
    });
    this.#aggregate = new Aggregate({
      pool: options.pool,
      config: (name) => options.config(name),
      startsOnUse: (name) => options.startsOnUse?.(name) === true,
      ...(options.idleStopMs === undefined ? {} : { idleStopMs: (name: string, era: 'legacy' | 'modern' | undefined) => options.idleStopMs?.(name, era) }),
      clock: options.idleClock,
      poolSessionId: this.poolSessionId,
      principal: init.principal,
      scope: init.scope,
      search: this.search,
      client: init.client,
      servers: init.servers,
      logger: options.logger,
      rootsPending: this.#takesRoots,
      settled: (name) => options.joined?.(name),
      events: {
        listChanged: (kind) => this.#listChanged(kind),
        resourceUpdated: (server, uri) => {
          if (this.#subscriptions.get(uri) === server) this.#send({ method: 'notifications/resources/updated', params: { uri } }, `updated:${uri}`);
        },
        notification: (_server, notification) => this.#forward(notification, undefined),
        reconnected: (_server, view) => {
          // A new server process knows no log level.
          const level = this.#levels.reset(view.id);
          if (level !== undefined) void view.request('logging/setLevel', { level }).catch(() => undefined);
        },
        joined: (name) => {
          options.viewAcquired?.(name, init.principal);
          // A server that joins a running session changes what it can list.
          if (this.#wire !== undefined) this.#joinedLate = true;
        },
      },
    });
  }

  /**
   * Serves one HTTP request of the session (`body`: the JSON the host parsed, if it did). The
   * response is watched until it closes: it counts in {@link active}, and its back-pressure holds
   * the session's notifications.
   */
  async handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
    if (this.#wire === undefined) throw new PoolError(ErrorCode.INTERNAL, 'the legacy session has not started');
    this.active += 1;
    this.lastSeen = Date.now();
    this.#outbox.track(res);
    res.once('close', () => {
      this.active -= 1;
      this.lastSeen = Date.now();
    });
    await this.#wire.handle(req, res, body);
    // The client opened its GET stream: a server that joined after `initialize` was announced
    // with `list_changed`, which the wire drops while no GET stream is open. Announce it again,
    // so a client that listed before the join and opened its stream after still learns of it.
    if (req.method === 'GET' && res.statusCode === 200 && !res.writableEnded && this.#joinedLate) {
      for (const kind of LIST_KINDS) this.#listChanged(kind);
    }
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /** What the client declared in its `initialize`. */
  get client(): ViewClientInfo | undefined {
    return this.#init.client;
  }

  /** The client's own name for the session, when it gave one. */
  get label(): string | undefined {
    return this.#init.label;
  }

  /** Each server of the session and where its view stands. */
  get serverStates(): { name: string; status: ConnectionStatus | 'connecting' | 'failed' | 'cold'; error?: AcquireFailure }[] {
    return this.#aggregate.states();
  }

  /** Acquires `name` again now if this session has it and it did not start (it was just authorized). */
  retryServer(name: string): void {
    this.#aggregate.retry(name);
  }

  /** A server that became available while this session is open joins it when its client may use it. */
  addServer(name: string): void {
    this.#aggregate.add(name, this.#init.access());
  }

  /** Closes the wire (its streams end) and releases the pool session. Idempotent. */
  close(reason: string): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    let done!: () => void;
    this.#closing = new Promise<void>((resolve) => (done = resolve));
    this.#init.onClosed?.(this);
    this.#outbox.close();
    void (async () => {
      try {
        this.#levels.forget(this.id);
        this.#wire?.close();
        await this.#aggregate.close();
        this.#logger?.debug({ sessionId: this.id, client: this.principal, reason }, 'gateway session closed');
      } finally {
        done();
      }
    })();
    return this.#closing;
  }

  /** @internal Acquires the session's servers, each waited for until `deadlineOf` (none: every one). */
  acquire(deadlineOf: ((name: string) => number) | undefined): Promise<void> {
    return this.#aggregate.join(this.#init.access(), deadlineOf);
  }

  /** @internal Builds the wire (capabilities from the views acquired). */
  start(): void {
    const access = this.#init.access();
    this.#caps = capabilitiesOf(this.#aggregate, access, this.#aggregate.joining > 0);
    const instructions = instructionsOf(this.#aggregate, access);
    const serverInfo = serverInfoOf(this.#aggregate, access, this.#options.version);
    const endpoint: LegacyEndpoint = {
      handles: (method) => this.#handles(method),
      handle: (method, params, context) => this.#dispatch(method, params, context),
      initialize: () => ({ serverInfo, capabilities: this.#caps, instructions }),
    };
    this.#wire = new LegacyWire({
      sessionId: this.id,
      endpoint,
      ...(this.#options.encode === undefined ? {} : { encode: (message: Params) => this.#options.encode!(message) }),
      ...(this.#options.keepAliveMs === undefined ? {} : { keepAliveMs: this.#options.keepAliveMs }),
      onInitialized: () => this.#init.onInitialized?.(this),
      onDeleted: () => void this.close('transport closed'),
      onNotification: (method) => {
        if (method === 'notifications/roots/list_changed' && this.#takesRoots) this.#rootsStale = true;
      },
    });
  }

  // --- Downstream notifications -----------------------------------------------------------------

  #listChanged(kind: ListKind): void {
    if (this.#caps[kind] === undefined || !this.#aggregate.announces(kind)) return;
    this.#send({ method: `notifications/${kind}/list_changed` }, `list:${kind}`);
  }

  /** On the session's GET stream (dropped by the wire when the client has none open): the one place GET-stream notifications are queued. */
  #send(notification: UpstreamNotification, key?: string): void {
    const wire = this.#wire;
    if (this.closed || wire === undefined) return;
    this.#outbox.push(key, () => void wire.notify(notification), notification);
  }

  /** An upstream notification: on the call's stream when it belongs to one, else on the GET stream. */
  #forward(notification: UpstreamNotification, context: LegacyRequestContext | undefined): void {
    if (HANDLED_ELSEWHERE.has(notification.method)) return;
    if (notification.method === 'notifications/message') {
      // A log goes only to a client told the session has logging, and past its level.
      if (this.#caps.logging === undefined || !passes(notification.params?.level, this.#logLevel)) return;
    }
    if (context === undefined) this.#send(notification);
    else this.#outbox.push(undefined, () => context.notify(notification), notification);
  }

  // --- Requests ---------------------------------------------------------------------------------

  /** The methods this session serves: those of the capabilities it announced. */
  #handles(method: string): boolean {
    const caps = this.#caps;
    switch (method) {
      case 'tools/list':
      case 'tools/call':
        return caps.tools !== undefined;
      case 'prompts/list':
      case 'prompts/get':
        return caps.prompts !== undefined;
      case 'resources/list':
      case 'resources/templates/list':
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return caps.resources !== undefined;
      case 'logging/setLevel':
        return caps.logging !== undefined;
      case 'completion/complete':
        return caps.completions !== undefined;
      default:
        return false;
    }
  }

  #dispatch(method: string, params: Params, context: LegacyRequestContext): Promise<Params> {
    if (this.#options.around === undefined) return this.#serve(method, params, context);
    return this.#options.around({ method, params, context, session: this }, () => this.#serve(method, params, context));
  }

  async #serve(method: string, params: Params, context: LegacyRequestContext): Promise<Params> {
    if (this.#rootsStale) await this.#learnRoots(context);
    const access = this.#init.access();
    const aggregate = this.#aggregate;
    switch (method) {
      case 'tools/list':
        return { tools: endpointTools(aggregate, access) };
      case 'prompts/list':
        return { prompts: listPrompts(aggregate, access) };
      case 'resources/list':
        return { resources: listResources(aggregate, access) };
      case 'resources/templates/list':
        return { resourceTemplates: listResourceTemplates(aggregate, access) };
      case 'tools/call':
        return this.#callTool(access, params, context);
      case 'prompts/get': {
        const asked = stringParam(params, 'name');
        const requested: RequestedName = { kind: 'prompt', name: asked };
        return this.#run(context, `prompt ${asked}`, requested, async (options) => {
          const { view, name } = await resolveName(aggregate, access, 'prompt', asked);
          return view.request('prompts/get', { ...forwardedParams(params), name }, options);
        });
      }
      case 'resources/read': {
        const uri = stringParam(params, 'uri');
        return this.#run(context, `resources/read ${uri}`, undefined, async (options) => (await resolveUri(aggregate, access, uri)).view.request('resources/read', forwardedParams(params), options));
      }
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.#subscribe(access, params, context, method === 'resources/subscribe');
      case 'logging/setLevel':
        return this.#setLevel(access, params);
      default:
        return this.#run(context, 'completion/complete', undefined, async (options) => {
          const target = await resolveCompletion(aggregate, access, params);
          return target.view.request('completion/complete', target.params, options);
        });
    }
  }

  async #callTool(access: GatewayAccess, params: Params, context: LegacyRequestContext): Promise<Params> {
    const asked = stringParam(params, 'name');
    const started = performance.now();
    let server: string | undefined;
    let ok = false;
    try {
      const result = await this.#run(context, `tool ${asked}`, { kind: 'tool', name: asked }, async (options) => {
        const call = await resolveToolCall(this.#aggregate, access, params);
        if (call.kind === 'answer') return call.result;
        server = call.resolved.server;
        return call.resolved.view.request('tools/call', call.params, options);
      });
      ok = true;
      return result;
    } finally {
      if (server !== undefined) this.#options.observeCall?.(server, ok, (performance.now() - started) / 1000);
    }
  }

  async #subscribe(access: GatewayAccess, params: Params, context: LegacyRequestContext, subscribe: boolean): Promise<Params> {
    const uri = stringParam(params, 'uri');
    // An unsubscribe goes to the server the URI was subscribed on.
    const subscribed = subscribe ? undefined : this.#subscriptions.get(uri);
    let server = subscribed;
    await this.#run(context, `resources/${subscribe ? 'subscribe' : 'unsubscribe'} ${uri}`, undefined, async () => {
      const target = subscribed === undefined ? await resolveUri(this.#aggregate, access, uri) : { server: subscribed, view: await this.#aggregate.viewOf(subscribed) };
      server = target.server;
      if (subscribe) await target.view.subscribeResource(uri);
      else await target.view.unsubscribeResource(uri);
      return {};
    });
    if (subscribe && server !== undefined) this.#subscriptions.set(uri, server);
    else this.#subscriptions.delete(uri);
    return {};
  }

  async #setLevel(access: GatewayAccess, params: Params): Promise<Params> {
    const level = params.level;
    if (!isLogLevel(level)) throw new RpcError(RpcCode.INVALID_PARAMS, `Invalid log level: ${String(level)}`);
    this.#logLevel = level;
    await Promise.all(
      this.#aggregate
        .live(access)
        .filter(({ view }) => view.capabilities.logging !== undefined)
        .map(async ({ name, view }) => {
          const due = this.#levels.set(view.id, this.id, level);
          if (due === undefined) return;
          await view.request('logging/setLevel', { level: due }).catch((error: unknown) => {
            this.#logger?.debug({ sessionId: this.id, server: name, err: error }, 'logging/setLevel upstream failed');
          });
        }),
    );
    return {};
  }

  /**
   * Runs one request with this request's signal (cancellation), progress (when the request
   * carries a progress token), notifications (logs during it) and server→client requests tied
   * to it; a failure becomes the JSON-RPC error the client gets.
   */
  async #run(context: LegacyRequestContext, what: string, requested: RequestedName | undefined, work: (options: CallOptions) => Promise<Params>): Promise<Params> {
    const { progressToken, ...meta } = context.meta ?? {};
    const options: CallOptions = { signal: context.signal, onNotification: (notification) => this.#forward(notification, context) };
    if (Object.keys(meta).length > 0) options._meta = meta;
    if (progressToken !== undefined) {
      options.onProgress = (progress) => {
        const send = (): void => context.notify({ method: 'notifications/progress', params: { ...progress, progressToken } });
        this.#outbox.push(`progress:${JSON.stringify(progressToken)}`, send);
      };
    }
    // A client that takes server→client requests answers those of its calls, and a modern
    // server's input requests, itself; one that takes none gets the input_required result as
    // it came, and the pool refuses a legacy server's requests for it.
    if (this.#takesServerRequests) {
      options.onServerRequest = (request, signal) => this.#serverRequest(request, signal, context);
      options.onInputRequired = (request) => this.#answerInputs(request, context);
    }
    try {
      return await work(options);
    } catch (error) {
      throw toRpcError(error, what, requested);
    }
  }


  /** A server→client request on the call's own stream, if the client declared what it needs. */
  async #serverRequest(request: { method: string; params: Params }, signal: AbortSignal, context: LegacyRequestContext): Promise<Params> {
    const why = undeclared(request.method, this.#init.client?.capabilities, "the session's client");
    if (why !== undefined) throw serverRequestRefused(request.method, why);
    if (this.closed) throw serverRequestRefused(request.method, 'the session is closing');
    try {
      // Cancelled when the upstream cancels it, or when the downstream call it was asked for is.
      return await context.request(request, { signal: AbortSignal.any([signal, context.signal]), timeoutMs: this.#timeoutMs() });
    } catch (error) {
      throw clientFailure(request.method, error);
    }
  }

  /**
   * A modern server's `input_required` during this session's call: each input request is sent to
   * the client as the server→client request it is (on the call's stream), and the answers, keyed
   * as asked, go back with the retry (the pool adds the server's `requestState`).
   */
  async #answerInputs(request: InputRequiredResult, context: LegacyRequestContext): Promise<Params> {
    const answers = await Promise.all(
      Object.entries(request.inputRequests ?? {}).map(async ([key, input]) => [key, await this.#serverRequest({ method: input.method, params: input.params ?? {} }, context.signal, context)] as const),
    );
    return Object.fromEntries(answers);
  }

  /**
   * Asks the client for its roots on this request's stream (one ask at a time: concurrent requests
   * wait for it) and hands them to the aggregate, which starts or moves the `per-workspace`
   * servers. A client that refuses has no roots; one that does not answer (a cancel, a timeout)
   * is asked again at its next request.
   */
  async #learnRoots(context: LegacyRequestContext): Promise<void> {
    this.#rootsAsking ??= (async () => {
      this.#rootsStale = false;
      let roots: Root[];
      try {
        roots = rootsIn(await context.request({ method: 'roots/list', params: {} }, { signal: context.signal, timeoutMs: this.#timeoutMs() }));
      } catch (error) {
        this.#logger?.debug({ sessionId: this.id, err: error }, 'the client did not give its roots');
        if (!(error instanceof RpcError)) {
          this.#rootsStale = true;
          return;
        }
        roots = [];
      }
      await this.#aggregate.setRoots(roots);
    })().finally(() => (this.#rootsAsking = undefined));
    await this.#rootsAsking;
  }

  #timeoutMs(): number {
    return this.#options.callTimeoutMs?.() ?? 60_000;
  }
}

/** The roots of a client's `roots/list` answer: each entry with a string `uri`, its `name` when it is a string. */
function rootsIn(result: Params): Root[] {
  const listed = Array.isArray(result.roots) ? (result.roots as unknown[]) : [];
  const roots: Root[] = [];
  for (const root of listed) {
    if (typeof root !== 'object' || root === null || typeof (root as Root).uri !== 'string') continue;
    const { uri, name } = root as Root;
    roots.push(typeof name === 'string' ? { uri, name } : { uri });
  }
  return roots;
}

/** The client's failure to answer a server→client request, as the server gets it: the client's own JSON-RPC error when it sent one. */
function clientFailure(method: string, error: unknown): unknown {
  if (error instanceof RpcError) {
    return new PoolError(ErrorCode.DOWNSTREAM_ERROR, upstreamMessage(error.message), { data: { mcpCode: error.code, ...(error.data === undefined ? {} : { mcpData: error.data }) } });
  }
  // A pool error (a cancel, a timeout) keeps its code; anything else is a bug here.
  if (error instanceof PoolError) return error;
  return new PoolError(ErrorCode.INTERNAL, `the downstream client did not answer ${method}: ${(error as Error)?.message ?? String(error)}`);
}
