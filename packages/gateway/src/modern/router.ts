/**
 * The 2026-07-28 ("modern") front over a pool: one parsed JSON-RPC message in, its answer out,
 * with no session and no SDK `Server` in between. It only routes; each decision has its file:
 * - the request must be a JSON-RPC request of a version served (400 + -32022 with
 *   `data.supported` otherwise), of a method the revision has (404 + -32601), with its headers
 *   agreeing with its body (`headers.ts`: 400 + -32020); a notification is accepted with 202;
 * - the caller's views are kept per (principal, endpoint) between requests (`holds.ts`);
 * - each method has one handler (`handlers.ts`), over the same aggregate and directory the
 *   legacy session reads: lists in one order, `<server>__` names, URIs, completion;
 * - calls are forwarded as the same method (`forward.ts`), a legacy server's server→client
 *   request offered to its caller as `input_required` and continued by its retry
 *   (`continuations.ts`), and `subscriptions/listen` held as a stream (`listen.ts`).
 * Unknown and forbidden names answer alike (-32602), so a caller cannot probe.
 */
import type { Logger, McpTransportPool, ServerConfig } from '@mcpool/core';
import { ErrorCode } from '@mcpool/protocol';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import { shuttingDown } from '@mcpool/protocol/refusals';
import type { GatewayAccess } from '../aggregate/access.js';
import type { RequestHeaders } from '../era.js';
import { failureAnswer, refusalAnswer, type ModernAnswer } from './answers.js';
import { Continuations } from './continuations.js';
import { UpstreamStates } from './upstreamStates.js';
import { modernHandlers, type Handler } from './handlers.js';
import { headerMismatch } from './headers.js';
import { Holds, type ModernHoldInfo } from './holds.js';
import { asRecord } from '../json.js';
import type { IdleClock } from '../aggregate/idleStop.js';

/** The protocol revisions the router serves. */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28'];


/** Who asks, on which endpoint, and what they may use (the host decides, per request). */
export interface ModernCaller {
  /** The authenticated principal: callers of one principal on one endpoint share views. */
  principal: string;
  /** `/mcp/<server>`: that one server, unprefixed; undefined for the aggregating endpoint. */
  scope: string | undefined;
  /** The aggregating endpoint's servers behind the tool-search view's two tools. @default false */
  search?: boolean | undefined;
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

export interface ModernRouterOptions {
  pool: McpTransportPool;
  /** The current config of a server (it may change on reload); undefined when no longer configured. */
  config(name: string): ServerConfig | undefined;
  /** `serverInfo.version` of the aggregating endpoint. */
  version: string;
  /** Whether the host starts `name` on first use (listed from its catalog until then). @default never */
  startsOnUse?(name: string): boolean;
  /** After how long without a request a caller's view of `name` (of that era) is given back (see `aggregate/idleStop.ts`); undefined or 0: never. @default never */
  idleStopMs?(name: string, era: 'legacy' | 'modern' | undefined): number | undefined;
  /** The clock of the idle rule. @default the system clock */
  idleClock?: IdleClock | undefined;
  /** Silent unless given. */
  logger?: Logger;
  /** How long a (principal, endpoint)'s views stay acquired without a request or listen. @default 60000 */
  viewIdleMs?: number;
  /** How long a call's answer waits for the retry of its caller, once offered input. @default 60000 */
  continuationGraceMs?: number;
  /**
   * The id of a call offered input (what its `requestState` names), for `principal`: a host of
   * several replicas seals its own name into it so that another replica can send the retry here
   * ({@link continuationIdOf} reads it back). It must not be guessable. @default a random UUID
   */
  mintContinuationId?(principal: string): string;
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
  /** Told when a view of `name` was acquired for `principal` (a host's warm hold can follow who uses a server). */
  viewAcquired?(name: string, principal: string): void;
  /**
   * Asked before a `subscriptions/listen` is held open for `principal`: a refusal (a typed code and
   * a message) is answered with that code's HTTP status and JSON-RPC error. A listen holds a stream
   * as a legacy session does, so a host counts them against the same caps.
   */
  admitListen?(principal: string): { code: ErrorCode; message: string } | undefined;
  /**
   * The most distinct resource URIs one `subscriptions/listen` may subscribe to: each is an
   * upstream `resources/subscribe` and state held while the listen lives, so a longer list is
   * refused whole (`MCPOOL_REQUEST_TOO_LARGE`) before anything is subscribed.
   * @default 256
   */
  maxListenSubscriptions?: number;
  /**
   * The keys that bind a modern server's own `requestState` to its caller (32 bytes each; the
   * first wraps, all open): replicas behind one balancer give the same, so a retry may reach any.
   * @default one random key per router
   */
  stateKeys?: readonly Uint8Array[];
}

/**
 * The call id that the `requestState` of a parsed request `message` names when a router minted
 * it (a host's `mintContinuationId`), or undefined (no state, a modern server's own, nobody's).
 * Unchecked: only the router holding the call can check the state's seal.
 */
export function continuationIdOf(message: unknown): string | undefined {
  const state = asRecord(asRecord(message)?.params)?.requestState;
  return typeof state === 'string' ? Continuations.callIdOf(state) : undefined;
}

/**
 * @example
 * ```ts
 * const router = new ModernRouter({ pool, config: (name) => servers[name], version: '1.0.0' });
 * const answer = await router.handle({ message: body, headers: req.headers, caller: { principal: 'me', scope: undefined, access } });
 * await writeModernAnswer(res, answer);
 * ```
 */
export class ModernRouter {
  readonly #holds: Holds;
  readonly #continuations: Continuations;
  readonly #handlers: Readonly<Record<string, Handler>>;
  #closed = false;

  constructor(options: ModernRouterOptions) {
    this.#holds = new Holds({ pool: options.pool, config: (name) => options.config(name), startsOnUse: (name) => options.startsOnUse?.(name) === true, ...(options.idleStopMs === undefined ? {} : { idleStopMs: (name: string, era: 'legacy' | 'modern' | undefined) => options.idleStopMs?.(name, era) }), idleClock: options.idleClock, idleMs: options.viewIdleMs ?? 60_000, joined: (name) => options.joined?.(name), viewAcquired: (name, principal) => options.viewAcquired?.(name, principal), logger: options.logger });
    this.#continuations = new Continuations({ graceMs: options.continuationGraceMs, ...(options.mintContinuationId === undefined ? {} : { mintId: (principal: string) => options.mintContinuationId!(principal) }) });
    this.#handlers = modernHandlers({
      continuations: this.#continuations,
      upstreamStates: new UpstreamStates(options.stateKeys),
      holds: this.#holds,
      versions: MODERN_PROTOCOL_VERSIONS,
      version: options.version,
      ...(options.joinDeadline === undefined ? {} : { joinDeadline: (name: string) => options.joinDeadline!(name) }),
      observeCall: (server, ok, seconds) => options.observeCall?.(server, ok, seconds),
      ...(options.admitListen === undefined ? {} : { admitListen: (principal: string) => options.admitListen!(principal) }),
      ...(options.maxListenSubscriptions === undefined ? {} : { maxListenSubscriptions: options.maxListenSubscriptions }),
    });
  }

  /** Pool sessions held for modern callers (one per principal and endpoint in use). */
  get heldSessions(): number {
    return this.#holds.size;
  }

  /** Calls offered input whose caller has not retried yet. */
  get pendingContinuations(): number {
    return this.#continuations.size;
  }

  /** Open `subscriptions/listen` streams. */
  get listens(): number {
    return this.#holds.listens();
  }

  /** Open listens of one principal (on every endpoint). */
  listensOf(principal: string): number {
    return this.#holds.listens(principal);
  }

  /**
   * The host's servers changed (a reload added one, or one that could not run can now): every open
   * listen is told its lists changed; the next list acquires what the caller may now use.
   */
  serversChanged(): void {
    this.#holds.serversChanged();
  }

  /** The held (principal, endpoint)s, oldest first. */
  holds(): ModernHoldInfo[] {
    return this.#holds.info();
  }

  /**
   * Ends the hold `id` when `may` allows its principal: its listens get their completion result,
   * its views are released. A later request of that principal starts a new hold. False when
   * there is no such hold, or `may` refused it (another client's hold does not exist for it).
   */
  closeHold(id: string, may: (principal: string) => boolean): Promise<boolean> {
    return this.#holds.close(id, may);
  }

  /** Routes one message. Never throws: every failure is an answer. */
  async handle(request: ModernRequest): Promise<ModernAnswer> {
    const message = asRecord(request.message);
    const id = message?.id;
    const method = message?.method;
    if (message === undefined || typeof method !== 'string') return refusalAnswer(null, { code: ErrorCode.BAD_REQUEST, message: 'Bad Request: the body is not a JSON-RPC request or notification' });
    const params = asRecord(message.params) ?? {};
    const meta = asRecord(params._meta) ?? {};
    // A notification: accepted (on HTTP a request is cancelled by closing its stream).
    if (typeof id !== 'string' && typeof id !== 'number') return { kind: 'json', status: 202 };
    const version = meta[MODERN_META.protocolVersion];
    if (typeof version === 'string' && !MODERN_PROTOCOL_VERSIONS.includes(version)) {
      return refusalAnswer(id, {
        code: ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
        message: `Unsupported protocol version ${version} (supported: ${MODERN_PROTOCOL_VERSIONS.join(', ')})`,
        data: { supported: [...MODERN_PROTOCOL_VERSIONS], requested: version },
      });
    }
    const handler = this.#handlers[method];
    if (handler === undefined) return refusalAnswer(id, { code: ErrorCode.METHOD_NOT_FOUND, message: `Method not found: ${method} (not a method of protocol revision ${MODERN_PROTOCOL_VERSIONS[0]})` });
    const mismatch = headerMismatch(request.headers, method, params);
    if (mismatch !== undefined) return refusalAnswer(id, { code: ErrorCode.HEADER_MISMATCH, message: `Bad Request: the request headers and body disagree: ${mismatch}` });
    if (this.#closed) return refusalAnswer(id, shuttingDown('the gateway'));

    const { principal, scope, access } = request.caller;
    const hold = this.#holds.enter(principal, scope, meta, request.caller.search === true);
    try {
      return await handler({ id, params, meta, headers: request.headers, principal, access, hold, signal: request.signal });
    } catch (error) {
      const failed = failureAnswer(id, error, method);
      return { kind: 'json', status: failed.status, body: failed.message };
    } finally {
      this.#holds.leave(hold);
    }
  }

  /** Ends every listen (each gets its result) and releases every view. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#holds.closeAll();
    this.#continuations.clear();
  }
}

