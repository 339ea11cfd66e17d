/**
 * One downstream `/mcp` session: its own {@link LegacyWire} (the Streamable HTTP server side, never
 * shared between sessions: CVE-2026-25536), and one pool session holding a view of each server it uses.
 *
 * What it does with them:
 * - lists: the views' snapshots, filtered by the principal's access, prefixed `<server>__` on the
 *   aggregating endpoint; the pool's own `trust` field is not passed on;
 * - calls: through the view (which enforces the server config's filter too), results as received
 *   (nothing re-validates or strips them on the way);
 * - progress and logging of a call go out with the request context's `notify`, so they ride the
 *   call's own stream (its answer turns to SSE); cancellation both ways (`context.signal` → the
 *   pool; an upstream cancel of its sampling/elicitation request → a cancel to the client);
 * - server→client requests from an upstream go out with the in-flight call's `request`;
 * - list_changed, resources/updated (subscribers only) and logs no call can be blamed for go
 *   out on the session's GET stream;
 * - `logging/setLevel` is this session's filter; upstream gets the most verbose level asked for.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { jsonRpcCodeOf } from '@mcpool/protocol/errorCodes';
import {
  ErrorCode,
  PoolError,
  type CallOptions,
  type ConnectionStatus,
  type InputRequiredResult,
  type McpTransportPool,
  type PooledConnection,
  type ServerConfig,
  type UpstreamNotification,
  type ViewClientInfo,
} from '@mcpool/core';
import {
  LegacyWire,
  RpcCode,
  RpcError,
  acquireFailure,
  acquireView,
  endpointCapabilities,
  qualify,
  splitQualified,
  templateMatches,
  toRpcError,
  unknownNameError,
  upstreamMessage,
  type EndpointCapabilities,
  type LegacyEndpoint,
  type LegacyRequestContext,
  type RequestedName,
} from '@mcpool/gateway';
import type { ServerFailure, ServerOperation, ServerTelemetry } from '../telemetry/serverTelemetry.js';
import type { GatewayAccess } from './access.js';
import { droppedMarker, SESSION_STALL_MS, SessionOutbox } from './sessionOutbox.js';
import { isLogLevel, passes, type LogLevel, type UpstreamLogLevels } from './logLevels.js';

type Extra = LegacyRequestContext;
type Params = Record<string, unknown>;

/** A server that failed to start for this session is tried again on use, at most this often. */
const RETRY_ACQUIRE_MS = 5_000;
/** MCP's "resource not found". */
const RESOURCE_NOT_FOUND = -32002;

/** Upstream notifications the gateway delivers through other paths (never forwarded raw). */
const HANDLED_ELSEWHERE = new Set([
  'notifications/progress',
  'notifications/cancelled',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
]);

export interface GatewaySessionDeps {
  pool: McpTransportPool;
  /** The current config of a server (it may change on reload). */
  config(name: string): ServerConfig | undefined;
  /** The principal's access, read per request. */
  access(): GatewayAccess;
  levels: UpstreamLogLevels;
  logger: Logger;
  callTimeoutMs(): number;
  version: string;
  /**
   * Applied to every message this session sends downstream (results, notifications, requests):
   * the wire writes the HTTP response itself, so no response hook of the app sees it.
   */
  redact(message: Params): Params;
  /** The session is closing: forget it. */
  onClosed(session: GatewaySession): void;
  /** A `tools/call` ended: on which server, whether it succeeded (an answer, even `isError`), how long it took. */
  observeCall?(server: string, ok: boolean, seconds: number): void;
  /** Server spans and the server duration metric, when OpenTelemetry is on. @default off */
  telemetry?: ServerTelemetry | undefined;
}

export interface GatewaySessionInit {
  id: string;
  principalId: string;
  /** `/mcp/<server>`: that server only, unprefixed; undefined for the aggregating `/mcp`. */
  scope: string | undefined;
  servers: readonly string[];
  /** What the downstream client declared in its `initialize`; each view carries it upstream. */
  client?: ViewClientInfo | undefined;
  /** The client's own name for the session (the `Mcpool-Session-Label` header), shown in listings. */
  label?: string | undefined;
}

interface Slot {
  readonly name: string;
  view: PooledConnection | undefined;
  error: { code: ErrorCode; message: string } | undefined;
  retryAt: number;
  acquiring: Promise<PooledConnection | undefined> | undefined;
  /** This session's requests in flight on the server, oldest first (server→client requests go to the newest). */
  readonly inflight: Extra[];
  detach: (() => void)[];
}

export class GatewaySession {
  readonly id: string;
  /** The pool session: `mcp:` + the downstream session id. */
  readonly poolSessionId: string;
  readonly principalId: string;
  readonly scope: string | undefined;
  readonly label: string | undefined;
  readonly #client: ViewClientInfo | undefined;
  /** When it was opened (ms since the epoch). */
  readonly createdAt = Date.now();
  /** Last time a request arrived or ended. */
  lastSeen = Date.now();
  /** HTTP requests under way, GET streams included: a session with any is never reaped. */
  active = 0;
  #http: LegacyWire | undefined;
  #caps: EndpointCapabilities = {};
  #logLevel: LogLevel | undefined;
  /** A server joined after the session started (its `list_changed` may have found no stream). */
  #joinedLate = false;
  #closing: Promise<void> | undefined;
  readonly #slots = new Map<string, Slot>();
  /** uri → the server it was subscribed on. */
  readonly #subscriptions = new Map<string, string>();
  readonly #deps: GatewaySessionDeps;
  readonly #logger: Logger;
  /** Notifications the client has not taken yet (bounded; a client that stops reading is cut). */
  readonly #outbox: SessionOutbox;

  /** The name and version the client gave in `initialize`. */
  get clientInfo(): { name: string; version: string } | undefined {
    const info = this.#client?.clientInfo;
    return info === undefined ? undefined : { name: info.name, version: info.version };
  }

  constructor(deps: GatewaySessionDeps, init: GatewaySessionInit) {
    this.#deps = deps;
    this.id = init.id;
    this.poolSessionId = `mcp:${init.id}`;
    this.principalId = init.principalId;
    this.scope = init.scope;
    this.label = init.label;
    this.#client = init.client;
    this.#logger = deps.logger;
    this.#outbox = new SessionOutbox({
      onStall: (stalledMs) => {
        this.#logger.warn({ sessionId: this.id, client: this.principalId, stalledMs }, `closing a /mcp session whose client did not read its stream for ${SESSION_STALL_MS / 1000} s`);
        void this.close('its client stopped reading');
      },
      onBurstEnd: (report) => {
        this.#logger.warn({ sessionId: this.id, client: this.principalId, ...report }, 'a /mcp client read slower than its notifications came: dropped and coalesced some');
        if (report.dropped > 0) this.#forward(droppedMarker(report.dropped), undefined);
      },
    });
    for (const name of [...init.servers].sort()) {
      this.#slots.set(name, { name, view: undefined, error: undefined, retryAt: 0, acquiring: undefined, inflight: [], detach: [] });
    }
  }

  /** Serves one HTTP request of the session (`body`: the JSON the host parsed). */
  handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    if (this.#http === undefined) throw new Error('the session has not started');
    return this.#http.handle(req, res, body);
  }

  /** An HTTP response the wire writes for this session: its back-pressure holds the session's notifications. */
  track(res: ServerResponse): void {
    this.#outbox.track(res);
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /** Servers whose view is live, and the errors of those that did not start. */
  get servers(): { name: string; ok: boolean; error?: { code: ErrorCode; message: string } }[] {
    return [...this.#slots.values()].map((slot) => ({ name: slot.name, ok: slot.view !== undefined, ...(slot.error ? { error: slot.error } : {}) }));
  }

  /** Each server of the session and where its view stands: `connecting` while it is still being acquired or retried. */
  get serverStates(): { name: string; status: ConnectionStatus | 'connecting' }[] {
    return [...this.#slots.values()].map((slot) => {
      if (slot.view !== undefined) return { name: slot.name, status: slot.view.status };
      return { name: slot.name, status: slot.error === undefined ? 'connecting' : 'failed' };
    });
  }

  /** Acquires `name` again now if this session has it and it did not start (it was just authorized). */
  retryServer(name: string): void {
    const slot = this.#slots.get(name);
    if (slot !== undefined && slot.view === undefined && !this.closed) void this.#acquire(slot);
  }

  /** Acquires every server of the session (in parallel); a failure is kept in its slot. */
  async acquireAll(): Promise<void> {
    await Promise.all([...this.#slots.values()].map((slot) => this.#acquire(slot)));
  }

  /**
   * Acquires every server of the session (in parallel), waiting for each only until
   * `deadlineOf(name)` (`Date.now()` time): a server still starting then is left to join the
   * open session later, with `list_changed`. `onSettled(name)` runs when an acquire ends either way.
   */
  async acquireReady(deadlineOf: (name: string) => number, onSettled: (name: string) => void): Promise<void> {
    const timers: NodeJS.Timeout[] = [];
    try {
      await Promise.all(
        [...this.#slots.values()].map((slot) => {
          const acquired = this.#acquire(slot).finally(() => onSettled(slot.name));
          const waitMs = deadlineOf(slot.name) - Date.now();
          if (waitMs <= 0) return slot.view === undefined ? Promise.resolve() : acquired;
          return Promise.race([acquired, new Promise<void>((resolve) => timers.push(setTimeout(resolve, waitMs)))]);
        }),
      );
    } finally {
      for (const timer of timers) clearTimeout(timer);
    }
  }

  /** Servers of the session still being acquired (they join when ready). */
  get joining(): number {
    let count = 0;
    for (const slot of this.#slots.values()) if (slot.view === undefined && slot.acquiring !== undefined) count += 1;
    return count;
  }

  /**
   * The client opened its GET stream. A server that joined after `initialize` was announced with
   * `list_changed`, which the wire drops while no GET stream is open: announce it again, so
   * a client that listed before the join and opened its stream after it still learns of it.
   */
  streamOpened(): void {
    if (!this.#joinedLate) return;
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.#listChanged(kind);
  }

  /**
   * Builds the wire (capabilities from the views acquired). `onInitialized` runs when the wire
   * accepts `initialize`, before its answer leaves.
   */
  start(onInitialized: () => void): void {
    const views = this.#views();
    const first = this.scope === undefined ? undefined : this.#slots.get(this.scope)?.view;
    const instructions =
      this.scope === undefined
        ? views
            .filter(({ view }) => view.instructions)
            .map(({ slot, view }) => `## ${slot.name}\n${view.instructions}`)
            .join('\n\n')
        : first?.instructions;
    this.#caps = this.#capabilities();
    const serverInfo = first?.serverInfo ?? { name: 'mcpool', version: this.#deps.version };
    const endpoint: LegacyEndpoint = {
      handles: (method) => this.#handles(method),
      handle: (method, params, extra) => this.#dispatch(method, params, extra),
      initialize: () => ({ serverInfo, capabilities: this.#caps, instructions }),
    };
    // Every message out goes through the secret policy first (one place: the wire's encode).
    this.#http = new LegacyWire({
      sessionId: this.id,
      endpoint,
      encode: (message) => this.#deps.redact(message),
      onInitialized,
      onDeleted: () => {
        this.#logger.debug({ sessionId: this.id }, 'gateway session: DELETE');
        void this.close('transport closed');
      },
    });
  }

  /** Closes the wire (its streams end) and releases the pool session. Idempotent. */
  close(reason: string): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    let done!: () => void;
    this.#closing = new Promise<void>((resolve) => (done = resolve));
    this.#deps.onClosed(this);
    this.#outbox.close();
    void (async () => {
      try {
        for (const slot of this.#slots.values()) this.#unwire(slot);
        this.#deps.levels.forget(this.id);
        this.#http?.close();
        await this.#deps.pool.releaseSession(this.poolSessionId).catch(() => undefined);
        this.#logger.debug({ sessionId: this.id, client: this.principalId, reason }, 'gateway session closed');
      } finally {
        done();
      }
    })();
    return this.#closing;
  }

  // --- Views ------------------------------------------------------------------------------------

  #views(): { slot: Slot; view: PooledConnection }[] {
    const out: { slot: Slot; view: PooledConnection }[] = [];
    for (const slot of this.#slots.values()) if (slot.view !== undefined) out.push({ slot, view: slot.view });
    return out;
  }

  /** The session's servers the principal may use now, with a live view; missing ones are retried in the background. */
  #visible(access: GatewayAccess): { slot: Slot; view: PooledConnection }[] {
    const out: { slot: Slot; view: PooledConnection }[] = [];
    for (const slot of this.#slots.values()) {
      if (!access.servers.has(slot.name)) continue;
      if (slot.view !== undefined) out.push({ slot, view: slot.view });
      else if (Date.now() >= slot.retryAt) void this.#acquire(slot);
    }
    return out;
  }

  #acquire(slot: Slot): Promise<PooledConnection | undefined> {
    if (slot.view !== undefined) return Promise.resolve(slot.view);
    slot.acquiring ??= (async () => {
      try {
        // The principal is the token's client id: a per-principal server is shared by its sessions only.
        const options = { principal: this.principalId, ...(this.#client === undefined ? {} : { client: this.#client }) };
        const view = await acquireView(this.#deps.pool, slot.name, this.#deps.config(slot.name), this.poolSessionId, options, () => this.closed);
        if (view === undefined) return undefined;
        slot.view = view;
        slot.error = undefined;
        this.#wire(slot, view);
        // A server that joins a running session changes what it can list.
        if (this.#http !== undefined) {
          this.#joinedLate = true;
          for (const kind of ['tools', 'prompts', 'resources'] as const) this.#listChanged(kind);
        }
        return view;
      } catch (error) {
        slot.error = acquireFailure(error);
        slot.retryAt = Date.now() + RETRY_ACQUIRE_MS;
        // A failed spawn has its one log line from the daemon's entry watcher already.
        const spawnFailure = slot.error.code === ErrorCode.SPAWN_FAILED || slot.error.code === ErrorCode.SPAWN_TIMEOUT;
        if (!this.closed) (spawnFailure ? this.#logger.debug : this.#logger.warn).call(this.#logger, { sessionId: this.id, server: slot.name, code: slot.error.code, error: slot.error.message }, 'gateway session could not acquire a server');
        return undefined;
      } finally {
        slot.acquiring = undefined;
      }
    })();
    return slot.acquiring;
  }

  /** The view of `slot`, acquiring it again when it failed; a JSON-RPC error when it cannot. */
  async #viewOf(slot: Slot): Promise<PooledConnection> {
    const view = slot.view ?? (await this.#acquire(slot));
    if (view === undefined) {
      const code = slot.error?.code ?? ErrorCode.SERVER_FAILED;
      throw new RpcError(jsonRpcCodeOf(code), `${slot.name} is not available: ${slot.error?.message ?? 'it did not start'}`, { code });
    }
    return view;
  }

  #wire(slot: Slot, view: PooledConnection): void {
    slot.detach.push(
      view.on('toolsChanged', () => this.#listChanged('tools')),
      view.on('promptsChanged', () => this.#listChanged('prompts')),
      view.on('resourcesChanged', () => this.#listChanged('resources')),
      view.on('notification', (notification) => this.#forward(notification, undefined)),
      view.on('resourceUpdated', ({ uri }) => {
        if (this.#subscriptions.get(uri) === slot.name) this.#send({ method: 'notifications/resources/updated', params: { uri } }, `updated:${uri}`);
      }),
      view.on('reconnected', () => {
        // A new server process knows no log level.
        const level = this.#deps.levels.reset(view.id);
        if (level !== undefined) void view.request('logging/setLevel', { level }).catch(() => undefined);
      }),
      view.on('failed', () => {
        if (slot.view !== view) return;
        this.#unwire(slot);
        slot.view = undefined;
        slot.error = { code: ErrorCode.SERVER_FAILED, message: `${slot.name} failed` };
        slot.retryAt = Date.now() + RETRY_ACQUIRE_MS;
        void view.release().catch(() => undefined);
        for (const kind of ['tools', 'prompts', 'resources'] as const) this.#listChanged(kind);
      }),
    );
    view.setServerRequestHandler((request, signal) => this.#serverRequest(slot, request, signal));
  }

  #unwire(slot: Slot): void {
    for (const off of slot.detach) off();
    slot.detach = [];
    slot.view?.setServerRequestHandler(undefined);
  }

  // --- Downstream notifications and server→client requests ----------------------------------------

  #listChanged(kind: 'tools' | 'prompts' | 'resources'): void {
    if (this.#caps[kind] === undefined) return;
    this.#send({ method: `notifications/${kind}/list_changed` }, `list:${kind}`);
  }

  /** On the session's GET stream (dropped by the wire when the client has none open): the one place GET-stream notifications are queued. */
  #send(notification: UpstreamNotification, key?: string): void {
    const wire = this.#http;
    if (this.closed || wire === undefined) return;
    this.#outbox.push(key, () => void wire.notify(notification), notification);
  }

  /** An upstream notification: on the call's stream when it belongs to one, else on the GET stream. */
  #forward(notification: UpstreamNotification, extra: Extra | undefined): void {
    if (HANDLED_ELSEWHERE.has(notification.method)) return;
    if (notification.method === 'notifications/message') {
      // A log goes only to a client told the session has logging, and past its level.
      if (this.#caps.logging === undefined || !passes(notification.params?.level, this.#logLevel)) return;
    }
    if (extra === undefined) this.#send(notification);
    else this.#outbox.push(undefined, () => extra.notify(notification), notification);
  }

  /** Whether this session's client declared any capability a modern server's input request can need. */
  get #answersInputs(): boolean {
    const caps = this.#client?.capabilities;
    return caps !== undefined && Object.values(INPUT_CAPABILITY).some((kind) => caps[kind] !== undefined && caps[kind] !== null);
  }

  /**
   * A modern server's `input_required` during this session's call: each input request is sent to
   * the legacy client as the server→client request it is (on the call's stream), and the answers,
   * keyed as asked, go back with the retry (the pool adds the server's `requestState`).
   */
  async #answerInputs(slot: Slot, request: InputRequiredResult, extra: Extra): Promise<Params> {
    const caps = this.#client?.capabilities ?? {};
    const entries = Object.entries(request.inputRequests ?? {});
    const answers = await Promise.all(
      entries.map(async ([key, input]) => {
        const kind = INPUT_CAPABILITY[input.method];
        if (kind === undefined || caps[kind] === undefined || caps[kind] === null) {
          throw new PoolError(ErrorCode.DOWNSTREAM_ERROR, `${slot.name} asked for ${input.method}, which this session's client did not declare (${kind ?? 'an unknown request'})`, {
            data: { mcpCode: RpcCode.INVALID_REQUEST },
          });
        }
        try {
          const result = await extra.request({ method: input.method, params: input.params ?? {} }, { signal: extra.signal, timeoutMs: this.#deps.callTimeoutMs() });
          return [key, result] as const;
        } catch (error) {
          const code = error instanceof RpcError ? error.code : RpcCode.INTERNAL_ERROR;
          throw new PoolError(ErrorCode.DOWNSTREAM_ERROR, `the downstream client did not answer ${input.method} for ${slot.name}: ${(error as Error).message}`, { data: { mcpCode: code } });
        }
      }),
    );
    return Object.fromEntries(answers);
  }

  /** sampling/createMessage, elicitation/create, roots/list from upstream: to this session's newest call on that server. */
  async #serverRequest(slot: Slot, request: { method: string; params: Params }, signal: AbortSignal): Promise<Params> {
    const extra = slot.inflight.at(-1);
    if (extra === undefined || this.closed) {
      throw new PoolError(ErrorCode.DOWNSTREAM_ERROR, `mcpool cannot route ${request.method}: this session has no request in flight on ${slot.name}`, { data: { mcpCode: RpcCode.INTERNAL_ERROR } });
    }
    try {
      // Cancelled when the upstream cancels it, or when the downstream call it was asked for is.
      const either = AbortSignal.any([signal, extra.signal]);
      return await extra.request({ method: request.method, params: request.params }, { signal: either, timeoutMs: this.#deps.callTimeoutMs() });
    } catch (error) {
      if (error instanceof RpcError) {
        throw new PoolError(ErrorCode.DOWNSTREAM_ERROR, upstreamMessage(error.message), { data: { mcpCode: error.code, ...(error.data === undefined ? {} : { mcpData: error.data }) } });
      }
      throw new PoolError(ErrorCode.DOWNSTREAM_ERROR, `the downstream client did not answer ${request.method}: ${(error as Error).message}`, { data: { mcpCode: RpcCode.INTERNAL_ERROR } });
    }
  }

  // --- Requests ---------------------------------------------------------------------------------

  #capabilities(): EndpointCapabilities {
    return endpointCapabilities(this.scope === undefined, this.#views().map(({ view }) => view.capabilities), this.joining > 0);
  }

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

  /** One request the session serves ({@link #handles} said so), in a server span when OpenTelemetry is on. */
  #dispatch(method: string, params: Params, extra: Extra): Promise<Params> {
    const telemetry = this.#deps.telemetry;
    if (telemetry === undefined) return this.#serve(method, params, extra);
    return telemetry.run(this.#operation(method, params, extra), () => this.#serve(method, params, extra), rpcFailure);
  }

  async #serve(method: string, params: Params, extra: Extra): Promise<Params> {
    switch (method) {
      case 'tools/list':
        return this.#listTools();
      case 'tools/call':
        return this.#callTool(params, extra);
      case 'prompts/list':
        return this.#listPrompts();
      case 'prompts/get':
        return this.#getPrompt(params, extra);
      case 'resources/list':
        return { resources: this.#visible(this.#deps.access()).flatMap(({ view }) => view.resources) };
      case 'resources/templates/list':
        return { resourceTemplates: this.#visible(this.#deps.access()).flatMap(({ view }) => view.resourceTemplates) };
      case 'resources/read': {
        const uri = stringParam(params, 'uri');
        return this.#run(this.#slotForUri(uri), extra, `resources/read ${uri}`, (view, options) => view.readResource(uri, options));
      }
      case 'resources/subscribe':
        return this.#subscribe(params, extra, true);
      case 'resources/unsubscribe':
        return this.#subscribe(params, extra, false);
      case 'logging/setLevel':
        return this.#setLevel(params);
      default:
        return this.#complete(params, extra);
    }
  }

  /** What a server span records of one request (the names as the client wrote them). */
  #operation(method: string, params: Params, extra: Extra): ServerOperation {
    const name = typeof params.name === 'string' ? params.name : undefined;
    const header = extra.headers['mcp-protocol-version'];
    return {
      method,
      tool: method === 'tools/call' ? name : undefined,
      prompt: method === 'prompts/get' ? name : undefined,
      requestId: extra.requestId,
      mcpSessionId: this.id,
      protocolVersion: typeof header === 'string' ? header : this.#client?.protocolVersion,
      meta: extra.meta,
      headers: extra.headers,
    };
  }

  #listTools(): Params {
    const access = this.#deps.access();
    const tools = this.#visible(access).flatMap(({ slot, view }) =>
      view.tools
        .filter((tool) => access.allows(slot.name, tool.name))
        .map(({ trust: _trust, ...tool }) => (this.scope === undefined ? { ...tool, name: qualify(slot.name, tool.name) } : tool)),
    );
    return { tools };
  }

  #listPrompts(): Params {
    const access = this.#deps.access();
    const prompts = this.#visible(access).flatMap(({ slot, view }) =>
      view.prompts.filter((prompt) => access.allows(slot.name, prompt.name)).map((prompt) => (this.scope === undefined ? { ...prompt, name: qualify(slot.name, prompt.name) } : prompt)),
    );
    return { prompts };
  }

  /** `<server>__<name>` (or the bare name on `/mcp/<server>`) → its slot, if the principal may use it. */
  #resolveName(qualified: string, kind: 'tool' | 'prompt'): { slot: Slot; name: string } {
    const access = this.#deps.access();
    const found = this.scope === undefined ? splitQualified(qualified, this.#slots.keys()) : { server: this.scope, name: qualified };
    const slot = found === undefined ? undefined : this.#slots.get(found.server);
    // Unknown and not allowed look the same: a client cannot probe for what it may not use.
    if (found === undefined || slot === undefined || !access.allows(found.server, found.name)) {
      throw unknownNameError({ kind, name: qualified });
    }
    return { slot, name: found.name };
  }

  #callTool(params: Params, extra: Extra): Promise<Params> {
    const name = stringParam(params, 'name');
    const { slot, name: tool } = this.#resolveName(name, 'tool');
    const args = params.arguments as Params | undefined;
    const requested: RequestedName = { kind: 'tool', name };
    const started = performance.now();
    const observe = (ok: boolean) => this.#deps.observeCall?.(slot.name, ok, (performance.now() - started) / 1000);
    return this.#run(slot, extra, `tool ${name}`, (view, options) => {
      // A name this session's view does not list is unknown, whoever would refuse it upstream.
      if (!view.tools.some((listed) => listed.name === tool)) throw unknownNameError(requested);
      return view.callTool(tool, args, options);
    }, requested).then(
      (result) => {
        observe(true);
        return result;
      },
      (error: unknown) => {
        observe(false);
        throw error;
      },
    );
  }

  #getPrompt(params: Params, extra: Extra): Promise<Params> {
    const name = stringParam(params, 'name');
    const { slot, name: prompt } = this.#resolveName(name, 'prompt');
    const args = params.arguments as Record<string, string> | undefined;
    const requested: RequestedName = { kind: 'prompt', name };
    return this.#run(slot, extra, `prompt ${name}`, (view, options) => {
      if (!view.prompts.some((listed) => listed.name === prompt)) throw unknownNameError(requested);
      return view.getPrompt(prompt, args, options);
    }, requested);
  }

  /** The server a resource URI belongs to: the one listing it, else the one whose template matches, else the only one with resources. */
  #slotForUri(uri: string): Slot {
    const access = this.#deps.access();
    if (this.scope !== undefined) {
      const slot = this.#slots.get(this.scope);
      if (slot !== undefined && access.servers.has(slot.name)) return slot;
    } else {
      const candidates = this.#visible(access).filter(({ view }) => view.capabilities.resources !== undefined);
      const found =
        candidates.find(({ view }) => view.resources.some((resource) => resource.uri === uri)) ??
        candidates.find(({ view }) => view.resourceTemplates.some((template) => templateMatches(template.uriTemplate, uri))) ??
        (candidates.length === 1 ? candidates[0] : undefined);
      if (found !== undefined) return found.slot;
    }
    throw new RpcError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri });
  }

  async #subscribe(params: Params, extra: Extra, subscribe: boolean): Promise<Params> {
    const uri = stringParam(params, 'uri');
    const server = subscribe ? undefined : this.#subscriptions.get(uri);
    const slot = server === undefined ? this.#slotForUri(uri) : this.#slots.get(server)!;
    await this.#run(slot, extra, `resources/${subscribe ? 'subscribe' : 'unsubscribe'} ${uri}`, async (view) => {
      if (subscribe) await view.subscribeResource(uri);
      else await view.unsubscribeResource(uri);
      return {};
    });
    if (subscribe) this.#subscriptions.set(uri, slot.name);
    else this.#subscriptions.delete(uri);
    return {};
  }

  async #setLevel(params: Params): Promise<Params> {
    const level = params.level;
    if (!isLogLevel(level)) throw new RpcError(RpcCode.INVALID_PARAMS, `Invalid log level: ${String(level)}`);
    this.#logLevel = level;
    await Promise.all(
      this.#views()
        .filter(({ view }) => view.capabilities.logging !== undefined)
        .map(async ({ slot, view }) => {
          const due = this.#deps.levels.set(view.id, this.id, level);
          if (due === undefined) return;
          await view.request('logging/setLevel', { level: due }).catch((error: unknown) => {
            this.#logger.debug({ sessionId: this.id, server: slot.name, err: error }, 'logging/setLevel upstream failed');
          });
        }),
    );
    return {};
  }

  #complete(params: Params, extra: Extra): Promise<Params> {
    const ref = (params.ref ?? {}) as Params;
    if (ref.type === 'ref/prompt') {
      const name = stringParam(ref, 'name');
      const { slot, name: prompt } = this.#resolveName(name, 'prompt');
      return this.#run(slot, extra, `completion/complete for ${name}`, (view, options) => view.request('completion/complete', { ...params, ref: { ...ref, name: prompt } }, options), { kind: 'prompt', name });
    }
    if (ref.type === 'ref/resource') {
      const uri = stringParam(ref, 'uri');
      return this.#run(this.#slotForUri(uri), extra, `completion/complete for ${uri}`, (view, options) => view.request('completion/complete', params, options));
    }
    throw new RpcError(RpcCode.INVALID_PARAMS, 'completion/complete needs a ref of type ref/prompt or ref/resource');
  }

  /**
   * Runs one request on `slot`'s view with this request's signal (cancellation), progress (when
   * the request carries a progress token) and notifications (logs during it) tied to it; a failure
   * becomes the JSON-RPC error the client gets.
   */
  async #run(slot: Slot, extra: Extra, what: string, work: (view: PooledConnection, options: CallOptions) => Promise<Params>, requested?: RequestedName): Promise<Params> {
    const view = await this.#viewOf(slot);
    const { progressToken, ...meta } = extra.meta ?? {};
    const options: CallOptions = {
      signal: extra.signal,
      onNotification: (notification) => this.#forward(notification, extra),
      // A legacy client that takes server→client requests answers a modern server's input
      // requests itself; one that takes none gets the input_required result as it came.
      ...(this.#answersInputs ? { onInputRequired: (request) => this.#answerInputs(slot, request, extra) } : {}),
      ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}),
      ...(progressToken === undefined
        ? {}
        : {
            onProgress: (progress) => {
              const send = (): void => extra.notify({ method: 'notifications/progress', params: { ...progress, progressToken } });
              this.#outbox.push(`progress:${JSON.stringify(progressToken)}`, send);
            },
          }),
    };
    slot.inflight.push(extra);
    try {
      return await work(view, options);
    } catch (error) {
      throw toRpcError(error, what, requested);
    } finally {
      const index = slot.inflight.indexOf(extra);
      if (index !== -1) slot.inflight.splice(index, 1);
    }
  }
}

/** Which client capability a modern server's input request needs of a legacy client. */
const INPUT_CAPABILITY: Record<string, string> = { 'elicitation/create': 'elicitation', 'sampling/createMessage': 'sampling', 'roots/list': 'roots' };

function stringParam(params: Params, key: string): string {
  const value = params[key];
  if (typeof value !== 'string') throw new RpcError(RpcCode.INVALID_PARAMS, `params.${key} must be a string`);
  return value;
}

/** A request's failure as the downstream client sees it: the JSON-RPC code it gets back. */
function rpcFailure(error: unknown): ServerFailure {
  if (error instanceof RpcError) return { type: String(error.code), rpcCode: String(error.code), message: error.message };
  return error instanceof Error ? { type: '_OTHER', message: error.message } : { type: '_OTHER' };
}
