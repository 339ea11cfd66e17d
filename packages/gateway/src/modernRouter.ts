/**
 * The 2026-07-28 ("modern") router over a pool: one parsed JSON-RPC message in, its answer out,
 * with no session and no SDK `Server` in between (each message is parsed once by the host, routed
 * to a pool view and leaves for the server as the same method).
 *
 * What a caller gets, by rule of the 2026-07-28 revision:
 * - Header checks before anything runs: `MCP-Protocol-Version` and `Mcp-Method` are required and
 *   must match the body; `Mcp-Name` must mirror `params.name` (`tools/call`, `prompts/get`) or
 *   `params.uri` (`resources/read`), `=?base64?…?=` decoded. A mismatch is 400 + -32020; a
 *   version the router does not serve is 400 + -32022 with `data.supported`; a method the
 *   revision does not have is 404 + -32601; a notification is accepted with 202.
 * - `server/discover`: the capabilities of the servers behind the endpoint.
 * - Lists come from the views' snapshots, filtered by the caller's access, in a stable order
 *   (by name, by URI), `<server>__` prefixed on the aggregating endpoint; they vary by who asks,
 *   so they carry `cacheScope: "private"` and `ttlMs: 0` (a list may change at any moment; a
 *   listen stream says when).
 * - `tools/call`, `prompts/get`, `resources/read`, `completion/complete` are forwarded with the
 *   prefix taken off (an HTTP upstream's `Mcp-Name` is derived from the forwarded body, so it
 *   names the server's own tool) and the caller's own `_meta` (its protocol version, client
 *   capabilities and info, log level, trace context — `traceparent`/`tracestate` headers too
 *   when `_meta` has none): a modern upstream shared by many callers sees each one's. The result
 *   comes back as the server sent it; an `input_required` result passes unchanged
 *   (`requestState` byte for byte), and the retry, a new request with `inputResponses` and that
 *   state, reaches the same upstream because the caller's views are kept between requests.
 * - Unknown and forbidden names answer alike (-32602), so a caller cannot probe.
 * - An answer is JSON when nothing streams before the result, a stream when a notification
 *   (progress, a log the request asked for) comes first.
 * - `subscriptions/listen` is a stream: acknowledged with the subset of its filter the endpoint
 *   can honour, then the matching list changes of the caller's views, each tagged with
 *   `io.modelcontextprotocol/subscriptionId` (the listen's request id). A filter with nothing
 *   honoured is acknowledged and completed at once (no stream is held for it).
 *
 * Views: a modern caller has no session, so the router keeps one pool session per (principal,
 * endpoint) and acquires its views on first use; they stay while requests or listens use them,
 * and are released after `viewIdleMs` without use (an unref'd timer, never keeping the host
 * alive).
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import {
  ErrorCode,
  PoolError,
  type CallOptions,
  type ConnectionStatus,
  type Logger,
  type McpTransportPool,
  type PooledConnection,
  type ServerConfig,
  type UpstreamNotification,
  type ViewClientInfo,
} from '@mcpool/core';
import { JsonRpcCode, httpStatusOf, jsonRpcCodeOf } from '@mcpool/protocol/errorCodes';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import type { GatewayAccess } from './access.js';
import { acquireFailure, acquireView } from './acquire.js';
import { endpointCapabilities } from './capabilities.js';
import { classifyInbound, headerValue as header, type RequestHeaders } from './era.js';
import { MessageStream } from './messageStream.js';
import { qualify, splitQualified, templateMatches } from './naming.js';
import { RpcError, toRpcError, unknownNameError, type RequestedName } from './rpcErrors.js';

/** The protocol revisions the router serves. */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28'];

type Params = Record<string, unknown>;
export type { RequestHeaders } from './era.js';
type RequestId = string | number;

/** Who asks, on which endpoint, and what they may use (the host decides, per request). */
export interface ModernCaller {
  /** The authenticated principal: callers of one principal on one endpoint share views. */
  principal: string;
  /** `/mcp/<server>`: that one server, unprefixed; undefined for the aggregating endpoint. */
  scope: string | undefined;
  access: GatewayAccess;
}

export interface ModernRequest {
  /** The request body, parsed once by the host. */
  message: unknown;
  /** The HTTP request headers, names lower-case (as `node:http` gives them). */
  headers: RequestHeaders;
  caller: ModernCaller;
  /** Aborted when the caller went away (its HTTP request closed): the upstream call is cancelled. */
  signal?: AbortSignal;
}

/** An answer: a JSON body (none for 202), or a stream of messages ending with the response. */
export type ModernAnswer = { kind: 'json'; status: number; body?: Record<string, unknown> } | { kind: 'stream'; status: 200; stream: MessageStream };

/** How a message is classified by era before routing (what the host does with each). */
export type EraVerdict = { era: 'legacy' } | { era: 'modern' } | { era: 'reject'; status: number; body: Record<string, unknown> };

export interface ModernRouterOptions {
  pool: McpTransportPool;
  /** The current config of a server (it may change on reload); undefined when no longer configured. */
  config(name: string): ServerConfig | undefined;
  /** `serverInfo.version` of the aggregating endpoint. */
  version: string;
  /** Silent unless given. */
  logger?: Logger;
  /** How long a (principal, endpoint)'s views stay acquired without a request or listen. @default 60000 */
  viewIdleMs?: number;
  /** Told when a `tools/call` ended: on which server, whether it got an answer, how long it took. */
  observeCall?(server: string, ok: boolean, seconds: number): void;
  /**
   * When a request stops waiting for `name`, a server its caller has not used yet (epoch ms): a
   * server not ready by then is left out of this answer and joins later (its listens get
   * `list_changed`). The host keeps one window per server, so a hanging one delays callers once.
   * @default no bound: a request waits for every server of its endpoint
   */
  joinDeadline?(name: string): number;
  /** Told when an acquire of `name` settled (ready or failed): the host's window for it can close. */
  joined?(name: string): void;
  /**
   * Asked before a `subscriptions/listen` is held open for `principal`: a refusal (a typed code and
   * a message) is answered with that code's HTTP status and JSON-RPC error. A listen holds a stream
   * as a legacy session does, so a host counts them against the same caps.
   */
  admitListen?(principal: string): { code: ErrorCode; message: string } | undefined;
}

/** A (principal, endpoint)'s held views as a host lists them (never a token or a declared capability). */
export interface ModernHoldInfo {
  /** Stable while the hold lives; ends it through {@link ModernRouter.closeHold}. */
  id: string;
  principal: string;
  /** `/mcp/<server>`: that server; undefined for the aggregating endpoint. */
  scope: string | undefined;
  createdAt: number;
  lastActivityAt: number;
  /** Requests under way. */
  active: number;
  /** Open `subscriptions/listen` streams. */
  listens: number;
  servers: { name: string; status: ConnectionStatus | 'connecting' | 'failed' }[];
}

/** A server that failed to start for a caller is tried again on use, at most this often. */
const RETRY_ACQUIRE_MS = 5_000;
const LIST_KINDS = ['tools', 'prompts', 'resources'] as const;
type ListKind = (typeof LIST_KINDS)[number];

/** Methods whose `Mcp-Name` header mirrors a body field, and which field. */
const NAME_SOURCE: Readonly<Record<string, string>> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };
const BASE64_SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;

/** The legacy "resource not found"; the 2026-07-28 revision answers it with -32602. */
const LEGACY_RESOURCE_NOT_FOUND = -32002;

/** The prefix of a `requestState` the router minted itself (a modern server's own states pass through untouched). */
const STATE_PREFIX = 'mcpool.1.';
/** The key of the one input request the router offers per round. */
const INPUT_KEY = 'upstream';
/** How long a call's answer waits for a retry that has not come yet. */
const CONTINUATION_GRACE_MS = 60_000;
/** The client capability each server→client request needs. */
const CAPABILITY_OF: Readonly<Record<string, string>> = { 'sampling/createMessage': 'sampling', 'elicitation/create': 'elicitation', 'roots/list': 'roots' };

const asRecord = (value: unknown): Params | undefined => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Params) : undefined);

/**
 * Legacy or modern, by the body first (`initialize` → legacy; a valid `_meta` envelope → modern;
 * a modern `MCP-Protocol-Version` header without the envelope, or an envelope whose version
 * disagrees with the header → a refusal with the status and JSON-RPC error the revision names).
 */
export function classifyEra(httpMethod: string, headers: RequestHeaders, body: unknown): EraVerdict {
  const outcome = classifyInbound(httpMethod, headers, body);
  if (outcome.kind === 'legacy') return { era: 'legacy' };
  if (outcome.kind === 'modern') return { era: 'modern' };
  const code = outcome.code === JsonRpcCode.HEADER_MISMATCH ? ErrorCode.HEADER_MISMATCH : outcome.code === JsonRpcCode.INVALID_PARAMS ? ErrorCode.INVALID_ARGUMENT : ErrorCode.BAD_REQUEST;
  const id = (asRecord(body)?.id ?? null) as RequestId | null;
  return { era: 'reject', status: outcome.status, body: errorBody(id, outcome.code, outcome.message, { code, ...outcome.data }) };
}

function errorBody(id: RequestId | null, code: number, message: string, data?: unknown): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** A refusal of the request as a whole: its HTTP status from the one code table. */
function refusal(id: RequestId | null, status: number, code: ErrorCode, message: string, data?: Params): ModernAnswer {
  return { kind: 'json', status, body: errorBody(id, jsonRpcCodeOf(code), message, { code, ...data }) };
}

interface Slot {
  readonly name: string;
  view: PooledConnection | undefined;
  error: { code: ErrorCode; message: string } | undefined;
  retryAt: number;
  acquiring: Promise<PooledConnection | undefined> | undefined;
  detach: (() => void)[];
  /** Calls of this hold in flight on the server, oldest first (a server request goes to the newest). */
  readonly inflight: PendingCall[];
}

/** A modern caller's call in flight upstream; it may wait for the caller's input between two of its HTTP requests. */
interface PendingCall {
  id: string;
  principal: string;
  /** What the caller declared (a server request it did not declare is refused upstream). */
  capabilities: Params;
  /** The HTTP request that gets the call's next answer (none while the caller has input to give). */
  sink: Sink | undefined;
  /** The call's answer, when it came while no request was waiting for it. */
  settled: { message: Record<string, unknown>; status: number } | undefined;
  /** The upstream's request waiting for the caller's input. */
  asked: { resolve: (result: Params) => void; reject: (error: unknown) => void } | undefined;
  timer: NodeJS.Timeout | undefined;
}

/** One HTTP request's answer: JSON when it finishes before anything streams, else a stream from the first notification on. */
class Sink {
  readonly settled: Promise<ModernAnswer>;
  #answer!: (value: ModernAnswer) => void;
  #stream: MessageStream | undefined;

  constructor(readonly id: RequestId) {
    this.settled = new Promise<ModernAnswer>((resolve) => (this.#answer = resolve));
  }

  emit(message: Record<string, unknown>): void {
    if (this.#stream === undefined) {
      this.#stream = new MessageStream();
      this.#answer({ kind: 'stream', status: 200, stream: this.#stream });
    }
    this.#stream.push(message);
  }

  /** The response (carrying this request's id). */
  finish(message: Record<string, unknown>, status: number): void {
    if (this.#stream === undefined) {
      this.#answer({ kind: 'json', status, body: message });
      return;
    }
    this.#stream.push(message);
    this.#stream.end();
  }
}

interface Listen {
  id: RequestId;
  kinds: Set<ListKind>;
  uris: Set<string>;
  stream: MessageStream;
}

/** One (principal, endpoint)'s pool session and views, kept between its stateless requests. */
class Hold {
  readonly id = randomUUID();
  readonly poolSessionId = `mcp-modern:${this.id}`;
  readonly createdAt = Date.now();
  lastSeen = this.createdAt;
  readonly slots = new Map<string, Slot>();
  readonly listens = new Set<Listen>();
  users = 0;
  timer: NodeJS.Timeout | undefined;
  client: ViewClientInfo | undefined;
  released = false;

  constructor(
    readonly key: string,
    readonly principal: string,
    readonly scope: string | undefined,
  ) {}

  slot(name: string): Slot {
    let slot = this.slots.get(name);
    if (slot === undefined) this.slots.set(name, (slot = { name, view: undefined, error: undefined, retryAt: 0, acquiring: undefined, detach: [], inflight: [] }));
    return slot;
  }
}

export class ModernRouter {
  readonly #options: ModernRouterOptions;
  readonly #holds = new Map<string, Hold>();
  readonly #idleMs: number;
  #closed = false;
  /** Calls offered input, by their id, until retried (their `requestState` names them). */
  readonly #calls = new Map<string, PendingCall>();
  /** Seals the router's own `requestState`s: a caller cannot forge or swap one (a new key per router). */
  readonly #key = randomBytes(32);

  constructor(options: ModernRouterOptions) {
    this.#options = options;
    this.#idleMs = options.viewIdleMs ?? 60_000;
  }

  /** Pool sessions held for modern callers (one per principal and endpoint in use). */
  get heldSessions(): number {
    return this.#holds.size;
  }

  /** Open `subscriptions/listen` streams. */
  get listens(): number {
    let count = 0;
    for (const hold of this.#holds.values()) count += hold.listens.size;
    return count;
  }

  /** The held (principal, endpoint)s, oldest first. */
  holds(): ModernHoldInfo[] {
    return [...this.#holds.values()].map((hold) => ({
      id: hold.id,
      principal: hold.principal,
      scope: hold.scope,
      createdAt: hold.createdAt,
      lastActivityAt: hold.lastSeen,
      active: hold.users,
      listens: hold.listens.size,
      servers: [...hold.slots.values()].map((slot) => ({
        name: slot.name,
        status: slot.view !== undefined ? slot.view.status : slot.error === undefined ? 'connecting' : 'failed',
      })),
    }));
  }

  /** Open listens of one principal (on every endpoint). */
  listensOf(principal: string): number {
    let count = 0;
    for (const hold of this.#holds.values()) if (hold.principal === principal) count += hold.listens.size;
    return count;
  }

  /**
   * Ends the hold `id` when `may` allows its principal: its listens get their completion result,
   * its views are released. A later request of that principal starts a new hold. False when
   * there is no such hold, or `may` refused it (another client's hold does not exist for it).
   */
  async closeHold(id: string, may: (principal: string) => boolean): Promise<boolean> {
    for (const hold of this.#holds.values()) {
      if (hold.id !== id) continue;
      if (!may(hold.principal)) return false;
      await this.#release(hold);
      return true;
    }
    return false;
  }

  /** Routes one message. Never throws: every failure is an answer. */
  async handle(request: ModernRequest): Promise<ModernAnswer> {
    const message = asRecord(request.message);
    const id = message?.id;
    const method = message?.method;
    if (message === undefined || typeof method !== 'string') return refusal(null, 400, ErrorCode.BAD_REQUEST, 'Bad Request: the body is not a JSON-RPC request or notification');
    const params = asRecord(message.params) ?? {};
    const meta = asRecord(params._meta) ?? {};
    const version = meta[MODERN_META.protocolVersion];
    if (typeof id !== 'string' && typeof id !== 'number') {
      // A notification: accepted (on HTTP a request is cancelled by closing its stream).
      return { kind: 'json', status: 202 };
    }
    if (typeof version === 'string' && !MODERN_PROTOCOL_VERSIONS.includes(version)) {
      return refusal(id, 400, ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, `Unsupported protocol version ${version} (supported: ${MODERN_PROTOCOL_VERSIONS.join(', ')})`, {
        supported: [...MODERN_PROTOCOL_VERSIONS],
        requested: version,
      });
    }
    const handler = this.#handlers[method];
    if (handler === undefined) return refusal(id, 404, ErrorCode.METHOD_NOT_FOUND, `Method not found: ${method} (not a method of protocol revision ${MODERN_PROTOCOL_VERSIONS[0]})`);
    const mismatch = headerMismatch(request.headers, method, params);
    if (mismatch !== undefined) return refusal(id, 400, ErrorCode.HEADER_MISMATCH, `Bad Request: the request headers and body disagree: ${mismatch}`);
    if (this.#closed) return refusal(id, 503, ErrorCode.SHUTTING_DOWN, 'the gateway is shutting down');

    const hold = this.#hold(request.caller, meta);
    hold.users += 1;
    try {
      return await handler({ id, params, meta, headers: request.headers, caller: request.caller, hold, signal: request.signal });
    } catch (error) {
      const rpc = toRpcError(error, method);
      const code = rpc.code === LEGACY_RESOURCE_NOT_FOUND ? JsonRpcCode.INVALID_PARAMS : rpc.code;
      // An error of the request's own handling is in-band (200), but a missing client capability is the caller's to fix (400).
      return { kind: 'json', status: code === JsonRpcCode.MISSING_REQUIRED_CLIENT_CAPABILITY ? 400 : 200, body: errorBody(id, code, rpc.message, rpc.data) };
    } finally {
      hold.users -= 1;
      this.#idle(hold);
    }
  }

  /** Ends every listen (each gets its result) and releases every view. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#holds.values()].map((hold) => this.#release(hold)));
  }

  // --- Views ------------------------------------------------------------------------------------

  #hold(caller: ModernCaller, meta: Params): Hold {
    const key = `${caller.principal}\u0000${caller.scope ?? ''}`;
    let hold = this.#holds.get(key);
    if (hold === undefined) {
      hold = new Hold(key, caller.principal, caller.scope);
      // The first caller's declaration is the views' default; each request's own `_meta` wins upstream.
      hold.client = declared(meta);
      this.#holds.set(key, hold);
    }
    clearTimeout(hold.timer);
    hold.timer = undefined;
    hold.lastSeen = Date.now();
    return hold;
  }

  #idle(hold: Hold): void {
    if (hold.users > 0 || hold.listens.size > 0 || hold.released) return;
    hold.lastSeen = Date.now();
    clearTimeout(hold.timer);
    hold.timer = setTimeout(() => void this.#release(hold), this.#idleMs);
    hold.timer.unref();
  }

  async #release(hold: Hold): Promise<void> {
    if (hold.released) return;
    hold.released = true;
    clearTimeout(hold.timer);
    if (this.#holds.get(hold.key) === hold) this.#holds.delete(hold.key);
    for (const listen of [...hold.listens]) this.#endListen(hold, listen);
    for (const slot of hold.slots.values()) unwire(slot);
    await this.#options.pool.releaseSession(hold.poolSessionId).catch(() => undefined);
  }

  /** The servers of the endpoint the caller may use. */
  #serversOf(caller: ModernCaller): string[] {
    if (caller.scope !== undefined) return caller.access.servers.has(caller.scope) ? [caller.scope] : [];
    return [...caller.access.servers].sort();
  }

  /** Live views of the caller's servers, acquiring the missing ones (a failed one waits for its retry time). */
  async #views(hold: Hold, caller: ModernCaller): Promise<{ slot: Slot; view: PooledConnection }[]> {
    const slots = this.#serversOf(caller).map((name) => hold.slot(name));
    const timers: NodeJS.Timeout[] = [];
    try {
      await Promise.all(
        slots
          .filter((slot) => slot.view === undefined && Date.now() >= slot.retryAt)
          .map((slot) => {
            const acquired = this.#acquire(hold, slot);
            const deadline = this.#options.joinDeadline?.(slot.name);
            if (deadline === undefined) return acquired;
            const waitMs = deadline - Date.now();
            if (waitMs <= 0) return Promise.resolve();
            return Promise.race([acquired, new Promise<void>((resolve) => timers.push(setTimeout(resolve, waitMs)))]);
          }),
      );
    } finally {
      for (const timer of timers) clearTimeout(timer);
    }
    const out: { slot: Slot; view: PooledConnection }[] = [];
    for (const slot of slots) if (slot.view !== undefined) out.push({ slot, view: slot.view });
    return out;
  }

  #acquire(hold: Hold, slot: Slot): Promise<PooledConnection | undefined> {
    if (slot.view !== undefined) return Promise.resolve(slot.view);
    slot.acquiring ??= (async () => {
      try {
        const options = { principal: hold.principal, ...(hold.client === undefined ? {} : { client: hold.client }) };
        const view = await acquireView(this.#options.pool, slot.name, this.#options.config(slot.name), hold.poolSessionId, options, () => hold.released);
        if (view === undefined) return undefined;
        slot.view = view;
        slot.error = undefined;
        this.#wire(hold, slot, view);
        // A server that joins changes what its listens can list.
        for (const kind of LIST_KINDS) this.#fanOut(hold, kind);
        return view;
      } catch (error) {
        slot.error = acquireFailure(error);
        slot.retryAt = Date.now() + RETRY_ACQUIRE_MS;
        this.#options.logger?.debug({ server: slot.name, code: slot.error.code, error: slot.error.message }, 'modern gateway: could not acquire a server');
        return undefined;
      } finally {
        slot.acquiring = undefined;
        this.#options.joined?.(slot.name);
      }
    })();
    return slot.acquiring;
  }

  #wire(hold: Hold, slot: Slot, view: PooledConnection): void {
    slot.detach.push(
      view.on('toolsChanged', () => this.#fanOut(hold, 'tools')),
      view.on('promptsChanged', () => this.#fanOut(hold, 'prompts')),
      view.on('resourcesChanged', () => this.#fanOut(hold, 'resources')),
      view.on('resourceUpdated', ({ uri }) => this.#updated(hold, uri)),
      // A new server process may list other things than the one before it.
      view.on('reconnected', () => {
        for (const kind of LIST_KINDS) this.#fanOut(hold, kind);
      }),
      view.on('failed', () => {
        if (slot.view !== view) return;
        unwire(slot);
        slot.view = undefined;
        slot.error = { code: ErrorCode.SERVER_FAILED, message: `${slot.name} failed` };
        slot.retryAt = Date.now() + RETRY_ACQUIRE_MS;
        void view.release().catch(() => undefined);
        for (const kind of LIST_KINDS) this.#fanOut(hold, kind);
      }),
    );
    view.setServerRequestHandler((request, signal) => this.#serverRequest(slot, request, signal));
  }

  #fanOut(hold: Hold, kind: ListKind): void {
    for (const listen of hold.listens) {
      if (listen.kinds.has(kind)) listen.stream.push(notification(`notifications/${kind}/list_changed`, {}, listen.id));
    }
  }

  #updated(hold: Hold, uri: string): void {
    for (const listen of hold.listens) {
      if (listen.uris.has(uri)) listen.stream.push(notification('notifications/resources/updated', { uri }, listen.id));
    }
  }

  // --- Methods ----------------------------------------------------------------------------------

  readonly #handlers: Readonly<Record<string, (ctx: Ctx) => Promise<ModernAnswer>>> = {
    'server/discover': (ctx) => this.#discover(ctx),
    'tools/list': (ctx) => this.#listTools(ctx),
    'prompts/list': (ctx) => this.#listPrompts(ctx),
    'resources/list': (ctx) => this.#listResources(ctx),
    'resources/templates/list': (ctx) => this.#listTemplates(ctx),
    'tools/call': (ctx) => this.#callTool(ctx),
    'prompts/get': (ctx) => this.#getPrompt(ctx),
    'resources/read': (ctx) => this.#readResource(ctx),
    'completion/complete': (ctx) => this.#complete(ctx),
    'subscriptions/listen': (ctx) => this.#listen(ctx),
  };

  async #discover(ctx: Ctx): Promise<ModernAnswer> {
    const views = await this.#views(ctx.hold, ctx.caller);
    const scoped = ctx.caller.scope === undefined ? undefined : views[0]?.view;
    const instructions =
      ctx.caller.scope === undefined
        ? views
            .filter(({ view }) => view.instructions)
            .map(({ slot, view }) => `## ${slot.name}\n${view.instructions}`)
            .join('\n\n')
        : scoped?.instructions;
    return result(ctx.id, {
      supportedVersions: [...MODERN_PROTOCOL_VERSIONS],
      capabilities: endpointCapabilities(ctx.caller.scope === undefined, views.map(({ view }) => view.capabilities)),
      ...(instructions ? { instructions } : {}),
      ttlMs: 0,
      cacheScope: 'private',
      resultType: 'complete',
      _meta: { [MODERN_META.serverInfo]: this.#serverInfo(scoped) },
    });
  }

  #serverInfo(view: PooledConnection | undefined): Record<string, unknown> {
    return view?.serverInfo ?? { name: 'mcpool', version: this.#options.version };
  }

  async #listTools(ctx: Ctx): Promise<ModernAnswer> {
    const { access, scope } = ctx.caller;
    const views = await this.#views(ctx.hold, ctx.caller);
    const tools = views.flatMap(({ slot, view }) =>
      view.tools.filter((tool) => access.allows(slot.name, tool.name)).map(({ trust: _trust, ...tool }) => (scope === undefined ? { ...tool, name: qualify(slot.name, tool.name) } : tool)),
    );
    return listResult(ctx.id, { tools: tools.sort(byKey('name')) });
  }

  async #listPrompts(ctx: Ctx): Promise<ModernAnswer> {
    const { access, scope } = ctx.caller;
    const views = await this.#views(ctx.hold, ctx.caller);
    const prompts = views.flatMap(({ slot, view }) =>
      view.prompts.filter((prompt) => access.allows(slot.name, prompt.name)).map((prompt) => (scope === undefined ? { ...prompt, name: qualify(slot.name, prompt.name) } : prompt)),
    );
    return listResult(ctx.id, { prompts: prompts.sort(byKey('name')) });
  }

  async #listResources(ctx: Ctx): Promise<ModernAnswer> {
    const views = await this.#views(ctx.hold, ctx.caller);
    return listResult(ctx.id, { resources: views.flatMap(({ view }) => view.resources).sort(byKey('uri')) });
  }

  async #listTemplates(ctx: Ctx): Promise<ModernAnswer> {
    const views = await this.#views(ctx.hold, ctx.caller);
    return listResult(ctx.id, { resourceTemplates: views.flatMap(({ view }) => view.resourceTemplates).sort(byKey('uriTemplate')) });
  }

  /** `<server>__<name>` (or the bare name on a server's endpoint) → its view and the server's own name; unknown and forbidden alike. */
  async #resolve(ctx: Ctx, qualified: string, kind: 'tool' | 'prompt'): Promise<{ slot: Slot; view: PooledConnection; name: string }> {
    const { access, scope } = ctx.caller;
    const servers = this.#serversOf(ctx.caller);
    const found = scope === undefined ? splitQualified(qualified, servers) : servers.length > 0 ? { server: scope, name: qualified } : undefined;
    if (found === undefined || !access.allows(found.server, found.name)) throw unknownNameError({ kind, name: qualified });
    const slot = ctx.hold.slot(found.server);
    const view = await this.#viewOf(ctx.hold, slot);
    // A name the caller's view does not list is unknown, whoever would refuse it upstream.
    const listed = kind === 'tool' ? view.tools.some((tool) => tool.name === found.name) : view.prompts.some((prompt) => prompt.name === found.name);
    if (!listed) throw unknownNameError({ kind, name: qualified });
    return { slot, view, name: found.name };
  }

  async #viewOf(hold: Hold, slot: Slot): Promise<PooledConnection> {
    const view = slot.view ?? (await this.#acquire(hold, slot));
    if (view !== undefined) return view;
    const code = slot.error?.code ?? ErrorCode.SERVER_FAILED;
    throw new RpcError(jsonRpcCodeOf(code), `${slot.name} is not available: ${slot.error?.message ?? 'it did not start'}`, { code });
  }

  async #callTool(ctx: Ctx): Promise<ModernAnswer> {
    const name = stringParam(ctx.params, 'name');
    const { slot, view, name: tool } = await this.#resolve(ctx, name, 'tool');
    const schema = view.tools.find((listed) => listed.name === tool)?.inputSchema;
    const mismatch = paramHeaderMismatch(schema, asRecord(ctx.params.arguments) ?? {}, ctx.headers);
    if (mismatch !== undefined) return refusal(ctx.id, 400, ErrorCode.HEADER_MISMATCH, `Bad Request: the request headers and body disagree: ${mismatch}`);
    const started = performance.now();
    let ok = false;
    try {
      const answer = await this.#forward(ctx, view, 'tools/call', { ...ctx.params, name: tool }, { kind: 'tool', name }, slot);
      ok = true;
      return answer;
    } finally {
      this.#options.observeCall?.(slot.name, ok, (performance.now() - started) / 1000);
    }
  }

  async #getPrompt(ctx: Ctx): Promise<ModernAnswer> {
    const name = stringParam(ctx.params, 'name');
    const { slot, view, name: prompt } = await this.#resolve(ctx, name, 'prompt');
    return this.#forward(ctx, view, 'prompts/get', { ...ctx.params, name: prompt }, { kind: 'prompt', name }, slot);
  }

  async #readResource(ctx: Ctx): Promise<ModernAnswer> {
    const uri = stringParam(ctx.params, 'uri');
    const view = await this.#viewForUri(ctx, uri);
    return this.#forward(ctx, view, 'resources/read', ctx.params);
  }

  async #complete(ctx: Ctx): Promise<ModernAnswer> {
    const ref = asRecord(ctx.params.ref) ?? {};
    if (ref.type === 'ref/prompt') {
      const name = stringParam(ref, 'name');
      const { view, name: prompt } = await this.#resolve(ctx, name, 'prompt');
      return this.#forward(ctx, view, 'completion/complete', { ...ctx.params, ref: { ...ref, name: prompt } }, { kind: 'prompt', name });
    }
    if (ref.type === 'ref/resource') return this.#forward(ctx, await this.#viewForUri(ctx, stringParam(ref, 'uri')), 'completion/complete', ctx.params);
    throw new RpcError(JsonRpcCode.INVALID_PARAMS, 'completion/complete needs a ref of type ref/prompt or ref/resource');
  }

  /** The view a resource URI belongs to: the one listing it, else the one whose template matches, else the only one with resources. */
  async #viewForUri(ctx: Ctx, uri: string): Promise<PooledConnection> {
    const views = (await this.#views(ctx.hold, ctx.caller)).filter(({ view }) => view.capabilities.resources !== undefined);
    const found =
      views.find(({ view }) => view.resources.some((resource) => resource.uri === uri)) ??
      views.find(({ view }) => view.resourceTemplates.some((template) => templateMatches(template.uriTemplate, uri))) ??
      (views.length === 1 ? views[0] : undefined);
    if (found === undefined) throw new RpcError(JsonRpcCode.INVALID_PARAMS, `Resource not found: ${uri}`, { uri });
    return found.view;
  }

  /**
   * Sends the request to the view as the same method; the answer is JSON unless a notification of
   * the request (progress, a log it asked for) comes before the result. A retry whose
   * `requestState` is one the router minted (a legacy server's sampling, elicitation or roots
   * request offered as `input_required`) continues that call instead.
   */
  #forward(ctx: Ctx, view: PooledConnection, method: string, params: Params, requested?: RequestedName, slot?: Slot): Promise<ModernAnswer> {
    const sink = new Sink(ctx.id);
    const state = params.requestState;
    if (typeof state === 'string' && state.startsWith(STATE_PREFIX)) {
      this.#continue(ctx, state, asRecord(params.inputResponses) ?? {}, sink);
      return sink.settled;
    }
    const { _meta: _dropped, ...body } = params;
    const { progressToken, ...meta } = ctx.meta;
    // Trace context of the HTTP request, when the caller put none in `_meta`.
    for (const name of ['traceparent', 'tracestate'] as const) {
      const value = header(ctx.headers, name);
      if (value !== undefined && meta[name] === undefined) meta[name] = value;
    }
    const wantsLogs = typeof meta[MODERN_META.logLevel] === 'string';
    const call: PendingCall = { id: randomUUID(), principal: ctx.caller.principal, capabilities: asRecord(meta[MODERN_META.clientCapabilities]) ?? {}, sink, settled: undefined, asked: undefined, timer: undefined };
    const options: CallOptions = {
      ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
      ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}),
      ...(progressToken === undefined ? {} : { onProgress: (progress) => call.sink?.emit({ jsonrpc: '2.0', method: 'notifications/progress', params: { ...progress, progressToken } }) }),
      // A server must not log for a request that did not ask for a level.
      ...(wantsLogs ? { onNotification: (note: UpstreamNotification) => (note.method === 'notifications/message' ? call.sink?.emit({ jsonrpc: '2.0', ...note }) : undefined) } : {}),
    };
    // The call keeps its views held until its answer, however long after the first notification.
    ctx.hold.users += 1;
    slot?.inflight.push(call);
    const finish = (message: Record<string, unknown>, status: number): void => {
      ctx.hold.users -= 1;
      this.#idle(ctx.hold);
      const index = slot?.inflight.indexOf(call) ?? -1;
      if (index !== -1) slot!.inflight.splice(index, 1);
      if (call.sink !== undefined) {
        // The retry's own id: the answer goes to the request that is waiting now.
        call.sink.finish({ ...message, id: call.sink.id }, status);
        this.#calls.delete(call.id);
        return;
      }
      // Its caller was offered input and has not retried yet: the answer waits for the retry, a while.
      call.settled = { message, status };
      call.timer = setTimeout(() => this.#calls.delete(call.id), CONTINUATION_GRACE_MS);
      call.timer.unref();
    };
    view.request(method, body, options).then(
      (result) => finish({ jsonrpc: '2.0', id: ctx.id, result: shapeResult(method, result) }, 200),
      (error: unknown) => {
        const rpc = toRpcError(error, describe(method, params), requested);
        const code = rpc.code === LEGACY_RESOURCE_NOT_FOUND ? JsonRpcCode.INVALID_PARAMS : rpc.code;
        finish(errorBody(ctx.id, code, rpc.message, rpc.data), code === JsonRpcCode.MISSING_REQUIRED_CLIENT_CAPABILITY ? 400 : 200);
      },
    );
    return sink.settled;
  }

  /**
   * A legacy server's request during a modern caller's call (sampling, elicitation, roots): the
   * caller's answer to that call becomes `input_required` with the request and the router's own
   * sealed `requestState`; the upstream request waits for the retry. The newest call of the
   * caller on that server gets it, if the caller declared the capability.
   */
  #serverRequest(slot: Slot, request: { method: string; params: Params }, signal: AbortSignal): Promise<Params> {
    const capability = CAPABILITY_OF[request.method];
    const call = [...slot.inflight].reverse().find((pending) => pending.sink !== undefined && pending.asked === undefined);
    if (call === undefined || capability === undefined || call.capabilities[capability] === undefined) {
      const why = call === undefined ? `no call of this caller is waiting on ${slot.name}` : `the caller did not declare the ${capability ?? request.method} capability`;
      return Promise.reject(new PoolError(ErrorCode.DOWNSTREAM_ERROR, `mcpool cannot route ${request.method}: ${why}`, { data: { mcpCode: JsonRpcCode.METHOD_NOT_FOUND } }));
    }
    return new Promise<Params>((resolve, reject) => {
      call.asked = { resolve, reject };
      signal.addEventListener(
        'abort',
        () => {
          if (call.asked?.resolve !== resolve) return;
          call.asked = undefined;
          reject(new PoolError(ErrorCode.CALL_CANCELLED, `${request.method} was cancelled by ${slot.name}`));
        },
        { once: true },
      );
      this.#calls.set(call.id, call);
      const sink = call.sink!;
      call.sink = undefined;
      const inputRequests = { [INPUT_KEY]: { method: request.method, params: request.params } };
      sink.finish({ jsonrpc: '2.0', id: sink.id, result: { resultType: 'input_required', inputRequests, requestState: this.#seal(call) } }, 200);
    });
  }

  /** The retry of a call that was offered input: its answer goes upstream, and this request gets the call's next answer. */
  #continue(ctx: Ctx, state: string, inputResponses: Params, sink: Sink): void {
    const call = this.#unseal(state, ctx.caller.principal);
    if (call === undefined || call.sink !== undefined) {
      const message = 'Invalid requestState: it is not one this gateway issued to this caller, or its call is over; send the request again without it';
      sink.finish(errorBody(ctx.id, JsonRpcCode.INVALID_PARAMS, message, { code: ErrorCode.INVALID_ARGUMENT }), 200);
      return;
    }
    const asked = call.asked;
    call.sink = sink;
    clearTimeout(call.timer);
    if (call.settled !== undefined) {
      this.#calls.delete(call.id);
      sink.finish({ ...call.settled.message, id: ctx.id }, call.settled.status);
      return;
    }
    if (asked === undefined) return;
    call.asked = undefined;
    const response = asRecord(inputResponses[INPUT_KEY]);
    if (response === undefined) asked.reject(new PoolError(ErrorCode.DOWNSTREAM_ERROR, `the client answered without inputResponses.${INPUT_KEY}`, { data: { mcpCode: JsonRpcCode.INVALID_PARAMS } }));
    else asked.resolve(response);
  }

  #seal(call: PendingCall): string {
    return `${STATE_PREFIX}${call.id}.${createHmac('sha256', this.#key).update(`${call.principal}\u0000${call.id}`).digest('base64url')}`;
  }

  #unseal(state: string, principal: string): PendingCall | undefined {
    const [id, mac] = state.slice(STATE_PREFIX.length).split('.');
    if (id === undefined || mac === undefined) return undefined;
    const expected = Buffer.from(createHmac('sha256', this.#key).update(`${principal}\u0000${id}`).digest('base64url'));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const call = this.#calls.get(id);
    return call?.principal === principal ? call : undefined;
  }

  async #listen(ctx: Ctx): Promise<ModernAnswer> {
    const filter = asRecord(ctx.params.notifications) ?? {};
    const views = await this.#views(ctx.hold, ctx.caller);
    const caps = endpointCapabilities(ctx.caller.scope === undefined, views.map(({ view }) => view.capabilities));
    const kinds = new Set<ListKind>();
    if (filter.toolsListChanged === true && caps.tools !== undefined) kinds.add('tools');
    if (filter.promptsListChanged === true && caps.prompts !== undefined) kinds.add('prompts');
    if (filter.resourcesListChanged === true && caps.resources !== undefined) kinds.add('resources');
    const wanted = Array.isArray(filter.resourceSubscriptions) ? filter.resourceSubscriptions.filter((uri): uri is string => typeof uri === 'string') : [];
    // Only a listen that will be held open counts against the host's caps.
    if (kinds.size > 0 || wanted.length > 0) {
      const refused = this.#options.admitListen?.(ctx.caller.principal);
      if (refused !== undefined) return refusal(ctx.id, httpStatusOf(refused.code), refused.code, refused.message);
    }
    const listen: Listen = { id: ctx.id, kinds, uris: new Set(), stream: new MessageStream() };
    for (const uri of wanted) {
      const owner = views.find(({ view }) => (view.capabilities.resources as { subscribe?: unknown } | undefined)?.subscribe === true && ownsUri(view, uri));
      if (owner === undefined) continue;
      try {
        await owner.view.subscribeResource(uri);
        listen.uris.add(uri);
      } catch (error) {
        this.#options.logger?.debug({ uri, err: error }, 'modern gateway: a listen subscription was not honoured');
      }
    }
    const honoured: Params = {
      ...(kinds.has('tools') ? { toolsListChanged: true } : {}),
      ...(kinds.has('prompts') ? { promptsListChanged: true } : {}),
      ...(kinds.has('resources') ? { resourcesListChanged: true } : {}),
      ...(wanted.length > 0 ? { resourceSubscriptions: [...listen.uris] } : {}),
    };
    listen.stream.push(notification('notifications/subscriptions/acknowledged', { notifications: honoured }, ctx.id));
    if (kinds.size === 0 && listen.uris.size === 0) {
      // Nothing to wait for: complete at once rather than hold a stream open.
      listen.stream.push({ jsonrpc: '2.0', id: ctx.id, result: { resultType: 'complete' } });
      listen.stream.end();
      return { kind: 'stream', status: 200, stream: listen.stream };
    }
    ctx.hold.listens.add(listen);
    const end = (): void => this.#endListen(ctx.hold, listen, false);
    if (ctx.signal?.aborted) end();
    else ctx.signal?.addEventListener('abort', end, { once: true });
    return { kind: 'stream', status: 200, stream: listen.stream };
  }

  /** Ends a listen: with its completion result when the router ends it, silently when its caller went away. */
  #endListen(hold: Hold, listen: Listen, graceful = true): void {
    if (!hold.listens.delete(listen)) return;
    if (graceful) listen.stream.push({ jsonrpc: '2.0', id: listen.id, result: { resultType: 'complete' } });
    listen.stream.end();
    const held = new Set<string>();
    for (const other of hold.listens) for (const uri of other.uris) held.add(uri);
    for (const uri of listen.uris) {
      if (held.has(uri)) continue;
      for (const slot of hold.slots.values()) if (slot.view !== undefined && ownsUri(slot.view, uri)) void slot.view.unsubscribeResource(uri).catch(() => undefined);
    }
    this.#idle(hold);
  }
}

interface Ctx {
  id: RequestId;
  params: Params;
  meta: Params;
  headers: RequestHeaders;
  caller: ModernCaller;
  hold: Hold;
  signal: AbortSignal | undefined;
}

function unwire(slot: Slot): void {
  for (const off of slot.detach) off();
  slot.detach = [];
  slot.view?.setServerRequestHandler(undefined);
}

function ownsUri(view: PooledConnection, uri: string): boolean {
  return view.resources.some((resource) => resource.uri === uri) || view.resourceTemplates.some((template) => templateMatches(template.uriTemplate, uri));
}

/** What a modern request declares about its client, as a view's defaults. */
function declared(meta: Params): ViewClientInfo | undefined {
  const version = meta[MODERN_META.protocolVersion];
  const capabilities = asRecord(meta[MODERN_META.clientCapabilities]);
  const info = asRecord(meta[MODERN_META.clientInfo]);
  const clientInfo = typeof info?.name === 'string' && typeof info.version === 'string' ? (info as ViewClientInfo['clientInfo']) : undefined;
  if (typeof version !== 'string' && capabilities === undefined && clientInfo === undefined) return undefined;
  return {
    ...(typeof version === 'string' ? { protocolVersion: version } : {}),
    ...(capabilities === undefined ? {} : { capabilities }),
    ...(clientInfo === undefined ? {} : { clientInfo }),
  };
}

/** Why the headers disagree with the body (undefined: they agree). The classifier checked the version and method pairs when both were present. */
function headerMismatch(headers: RequestHeaders, method: string, params: Params): string | undefined {
  if (header(headers, 'mcp-protocol-version') === undefined) return 'the required MCP-Protocol-Version header is absent';
  const named = header(headers, 'mcp-method');
  if (named === undefined) return `the body names method ${method} but the required Mcp-Method header is absent`;
  if (named !== method) return `the body names method ${method} but the Mcp-Method header names ${named}`;
  const field = NAME_SOURCE[method];
  if (field === undefined) return undefined;
  const value = params[field];
  if (typeof value !== 'string') return undefined;
  const raw = header(headers, 'mcp-name');
  if (raw === undefined) return `the body carries params.${field}=${JSON.stringify(value)} but the required Mcp-Name header is absent`;
  const decoded = decodeName(raw);
  if (decoded === undefined) return 'the Mcp-Name header carries an invalid Base64 sentinel value';
  if (decoded !== value) return `the body carries params.${field}=${JSON.stringify(value)} but the Mcp-Name header names ${JSON.stringify(decoded)}`;
  return undefined;
}

/**
 * Why a tool call's `Mcp-Param-{Name}` headers disagree with its arguments (undefined: they
 * agree). Each property the tool's input schema marks `x-mcp-header: Name` (through a chain of
 * `properties`) whose argument is present must come with that header, equal to it once decoded
 * (numbers compared as numbers); an absent or null argument needs none.
 */
function paramHeaderMismatch(schema: unknown, args: Params, headers: RequestHeaders): string | undefined {
  const declarations: { path: string[]; name: string; type: unknown }[] = [];
  const visit = (node: unknown, path: string[]): void => {
    const properties = asRecord(asRecord(node)?.properties);
    if (properties === undefined || path.length > 16) return;
    for (const [key, child] of Object.entries(properties)) {
      const declared = asRecord(child)?.['x-mcp-header'];
      if (typeof declared === 'string' && declared.length > 0) declarations.push({ path: [...path, key], name: declared, type: asRecord(child)?.type });
      visit(child, [...path, key]);
    }
  };
  visit(schema, []);
  for (const { path, name, type } of declarations) {
    let value: unknown = args;
    for (const key of path) value = asRecord(value)?.[key];
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') continue;
    const expected = String(value);
    const raw = header(headers, `mcp-param-${name.toLowerCase()}`);
    if (raw === undefined) return `the body carries arguments.${path.join('.')}=${JSON.stringify(value)} but the Mcp-Param-${name} header is absent`;
    const decoded = decodeName(raw);
    if (decoded === undefined) return `the Mcp-Param-${name} header carries an invalid Base64 sentinel value`;
    const numeric = (type === 'number' || type === 'integer') && typeof value === 'number';
    if (numeric ? Number(decoded) !== value : decoded !== expected) return `the Mcp-Param-${name} header decodes to ${JSON.stringify(decoded)} but the body carries arguments.${path.join('.')}=${JSON.stringify(value)}`;
  }
  return undefined;
}

/** An `Mcp-Name` or `Mcp-Param-*` value: as is, or the UTF-8 of its `=?base64?…?=` payload (undefined when that is not valid). */
function decodeName(raw: string): string | undefined {
  if (!raw.startsWith('=?base64?')) return raw;
  const match = BASE64_SENTINEL.exec(raw);
  if (match === null) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(match[1]!, 'base64'));
  } catch {
    return undefined;
  }
}

function notification(method: string, params: Params, subscriptionId: RequestId): Record<string, unknown> {
  return { jsonrpc: '2.0', method, params: { ...params, _meta: { [MODERN_META.subscriptionId]: subscriptionId } } };
}

function result(id: RequestId, body: Params): ModernAnswer {
  return { kind: 'json', status: 200, body: { jsonrpc: '2.0', id, result: body } };
}

/** A list the router built: it varies by who asks and may change at any time. */
function listResult(id: RequestId, body: Params): ModernAnswer {
  return result(id, { ...body, ttlMs: 0, cacheScope: 'private', resultType: 'complete' });
}

/**
 * A forwarded result as a modern caller must get it: `resultType` (a legacy server's result is
 * complete), and on `resources/read` the cache hints it must carry (the server's own, else none
 * to reuse). An `input_required` result is the server's to shape: it passes untouched.
 */
function shapeResult(method: string, result: Params): Params {
  if (result.resultType === 'input_required') return result;
  const shaped: Params = { ...result, resultType: typeof result.resultType === 'string' ? result.resultType : 'complete' };
  if (method === 'resources/read') {
    shaped.ttlMs = typeof result.ttlMs === 'number' ? result.ttlMs : 0;
    shaped.cacheScope = result.cacheScope === 'public' || result.cacheScope === 'private' ? result.cacheScope : 'private';
  }
  return shaped;
}

function describe(method: string, params: Params): string {
  const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined;
  return name === undefined ? method : `${method} ${name}`;
}

function stringParam(params: Params, key: string): string {
  const value = params[key];
  if (typeof value !== 'string') throw new RpcError(JsonRpcCode.INVALID_PARAMS, `params.${key} must be a string`);
  return value;
}

const byKey =
  <K extends string>(key: K) =>
  (a: Record<K, unknown>, b: Record<K, unknown>): number => {
    const x = String(a[key]);
    const y = String(b[key]);
    return x < y ? -1 : x > y ? 1 : 0;
  };
