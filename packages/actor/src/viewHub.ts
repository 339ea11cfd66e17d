/**
 * The sessions attached to one actor: a view channel each, the calls each has in flight, and the
 * resources each subscribed to. It forwards the views' requests upstream as the JSON-RPC method
 * they name and decides, in one place ({@link ViewHub.attribute} and the server-request rule
 * beside it), which view and which call a
 * message the server sent on its own belongs to:
 * - progress is the call's own (by its token, in the client);
 * - a server→client request (sampling, elicitation, roots) names no call on a legacy connection,
 *   so it is made certain by serialising the calls that ask: a tool is learned to ask the first
 *   time a request comes while a call of it is in flight (whether or not it could be
 *   attributed), or known from the start when the server's catalog holds it
 *   ({@link ViewHub.seed}: what earlier connections learned), and from then on calls of learned tools run for one view at a time on the
 *   connection (other views' wait in a {@link CallQueue}, within their own timeout and cancel;
 *   one view's own run together, as one of them may wait on its caller while it makes another);
 *   other calls still run beside them. A request goes, in this order: to the one view whose
 *   learned calls are in flight, to its newest one whose tool has asked that method before,
 *   whoever else has calls in flight (a tool that never asked is taken not to ask); else, when every call in flight is one view's, to that
 *   view's newest call that takes server requests (or the view's own handler when none of its
 *   calls takes them); else (no call in flight, or calls of several views and no learned one)
 *   it is refused with `serverRequestRefused` (-32601 upstream), never guessed across sessions.
 *   What is left uncertain: the first time a tool asks while other sessions have calls in
 *   flight, the request is refused (the call fails once, and its tool is learned — once per
 *   server config where the host keeps its catalog, not once per connection); and a tool
 *   that never asked, asking a learned call's method for the first time while that call is in
 *   flight, has its request taken for that call's;
 * - a notification (logging) goes to that view's newest listening call. It is never sent across
 *   principals: when calls of several views are in flight, or none is, it goes to every view only
 *   when all of those views act for one principal; otherwise nobody can say whose it is, and it is
 *   dropped and counted (`unattributed`), not broadcast;
 * - `resources/updated` goes to the views subscribed to that URI (subscriptions are refcounted
 *   upstream and replayed after a reconnect; on a modern server they are the listen filter).
 * What the server sends a view on its own goes through the view's {@link ViewOutbox}: throttled,
 * progress coalesced per call and updates per resource, the rest bounded.
 */
import type { MessagePort } from 'node:worker_threads';
import type { CallEvent, RpcHandlerContext, ServerSnapshot, UpstreamNotification, ViewClientInfo, ViewEvents, ViewRequestArgs } from '@mcpool/protocol';
import { ErrorCode, PoolError, RpcChannel } from '@mcpool/protocol/rpc';
import { serverRequestRefused } from '@mcpool/protocol/refusals';
import type { ListenFilter, ServerConnection } from './serverConnection.js';
import { JsonRpcCode } from '@mcpool/protocol/errorCodes';
import { jsonRpcErrorIn } from './transports/jsonRpcErrorBody.js';
import { refusesToken, UpstreamHttpError } from './transports/upstreamTransport.js';
import { UpstreamRpcError, type ProgressPayload } from './upstreamClient.js';
import { ViewOutbox } from './outbox.js';
import { CallQueue } from './callQueue.js';

export interface ViewHubDeps {
  /** The live connection and its generation; throws a typed error while there is none. */
  live(): { conn: ServerConnection; generation: number };
  callTimeoutMs: number;
  mapError(error: unknown, cancellable: boolean, signal: AbortSignal, generation: number, conn: ServerConnection): PoolError;
  /** Re-lists the server's tools on `conn` and applies the result; never rejects. */
  relistTools(conn: ServerConnection, generation: number): Promise<void>;
  /**
   * The server refused the token (HTTP 401, or 403 with `challenge`): true once the supervisor
   * gave a new one; false when it has none; an error when it said what to do instead. Never rejects.
   */
  reauthorize(challenge: string | undefined, status: 401 | 403): Promise<boolean | PoolError>;
  logger: { warn(obj: object, msg?: string): void };
  /** Notifications dropped because they could not be attributed to one principal, told at most once a turn. */
  unattributed(dropped: number): void;
  /** A tool newly learned to ask `method` (told once per tool and method; tools given to {@link ViewHub.seed} are not told again). */
  learned(tool: string, method: string): void;
}

interface ViewState {
  channel: RpcChannel;
  client: ViewClientInfo | undefined;
  /** Whom the view's session acts for; views attached without one are the host's own, one principal together. */
  principal: string | undefined;
  /** Calls in flight, oldest first: a notification is attributed to the newest. */
  inflight: Set<RpcHandlerContext>;
  subscriptions: Set<string>;
  outbox: ViewOutbox;
}

/**
 * How many tool names a connection learns as asking: the names come from callers, so a caller
 * naming tools the server does not have cannot grow the set without bound. A tool past it is
 * never serialised, and its requests are attributed by the one-view rule alone.
 */
const MAX_LEARNED_TOOLS = 1000;

/** Methods a view never sends itself: the actor owns the connection's lifecycle and streams. */
const RESERVED = new Set(['initialize', 'notifications/initialized', 'server/discover', 'subscriptions/listen']);

export class ViewHub {
  readonly #views = new Map<string, ViewState>();
  readonly #subscribers = new Map<string, Set<string>>();
  /** Calls whose caller asked for the notifications attributed to them. */
  readonly #listening = new WeakSet<RpcHandlerContext>();
  /** Calls whose caller answers the server requests attributed to them, with the number that names each on the view's side. */
  readonly #asking = new WeakMap<RpcHandlerContext, number>();
  /** The tool each `tools/call` in flight calls. */
  readonly #tools = new WeakMap<RpcHandlerContext, string>();
  /** Tools learned to make server→client requests on this connection, with the methods each made. */
  readonly #askers = new Map<string, Set<string>>();
  /** Calls of learned tools in flight: one view's, except just after a tool is learned mid-flight. */
  readonly #asked = new Map<RpcHandlerContext, { view: ViewState; tool: string }>();
  /** Calls of learned tools waiting for the one in flight to end. */
  readonly #queue = new CallQueue();
  readonly #deps: ViewHubDeps;
  /** Numbers the calls, for their progress's coalescing key. */
  #calls = 0;
  /** Unattributed notifications dropped since the last report, and the report waiting for the end of this turn. */
  #unattributed = 0;
  #unattributedReport: NodeJS.Immediate | undefined;

  constructor(deps: ViewHubDeps) {
    this.#deps = deps;
  }

  /**
   * Tools already known to ask, with their methods (what the server's catalog learned on earlier
   * connections): their calls are serialised from the first one, as if this connection had
   * learned them. Within the same bound as tools learned here.
   */
  seed(askingTools: Readonly<Record<string, readonly string[]>>): void {
    for (const [tool, methods] of Object.entries(askingTools)) {
      let known = this.#askers.get(tool);
      if (known === undefined) {
        if (this.#askers.size >= MAX_LEARNED_TOOLS) return;
        this.#askers.set(tool, (known = new Set()));
      }
      for (const method of methods) known.add(method);
    }
  }

  attach(viewId: string, port: MessagePort, snapshot: ServerSnapshot, client?: ViewClientInfo, principal?: string): void {
    const outbox = new ViewOutbox((report) => this.#deps.logger.warn({ viewId, ...report }, 'a session got server messages faster than it may: dropped and coalesced some'));
    const state: ViewState = { channel: undefined!, client, principal, inflight: new Set(), subscriptions: new Set(), outbox };
    state.channel = new RpcChannel(port, {
      handler: (op, opArgs, ctx) => this.#handle(viewId, state, op, opArgs, ctx),
      batch: true,
      onClose: () => this.#forget(viewId, state),
    });
    this.#views.set(viewId, state);
    // Snapshot replay on attach: a view starts from the entry's current lists. It is the port's
    // first message, so every change the actor makes after this attach comes after it.
    state.channel.emit('snapshot', snapshot);
  }

  /** Whether some view's queue is full: reading more from the server now would only drop it. */
  backedUp(): boolean {
    for (const state of this.#views.values()) if (state.outbox.full) return true;
    return false;
  }

  detach(viewId: string): void {
    this.#views.get(viewId)?.channel.close('detached');
  }

  closeAll(reason: string): void {
    for (const state of [...this.#views.values()]) state.channel.close(reason);
    this.#reportUnattributed();
  }

  broadcast<K extends keyof ViewEvents>(ev: K, data: ViewEvents[K]): void {
    for (const state of this.#views.values()) state.channel.emit(ev, data);
  }

  /**
   * The one place that decides whose a server-initiated message is: the single view with calls
   * in flight, with its newest call that listens for notifications and its newest call that
   * takes server requests; or nobody in particular (`busy` views have calls in flight).
   */
  attribute(): { view: ViewState; listening: RpcHandlerContext | undefined; asking: number | undefined } | { view: undefined; busy: number } {
    let found: ViewState | undefined;
    let busy = 0;
    for (const state of this.#views.values()) {
      if (state.inflight.size === 0) continue;
      busy++;
      found = state;
    }
    if (busy !== 1 || found === undefined) return { view: undefined, busy };
    let listening: RpcHandlerContext | undefined;
    let asking: number | undefined;
    for (const ctx of found.inflight) {
      if (this.#listening.has(ctx)) listening = ctx;
      asking = this.#asking.get(ctx) ?? asking;
    }
    return { view: found, listening, asking };
  }

  /** A request the server sent (sampling, elicitation, roots): to the call {@link askerOf} names, through its view. */
  serverRequest(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>> {
    const owner = this.#askerOf(method);
    if (owner.view === undefined) {
      const why = owner.busy === 0 ? 'no session has a call in flight' : `${owner.busy} sessions have calls in flight, and the request names none`;
      return Promise.reject(serverRequestRefused(method, why));
    }
    // The view's answer (or its typed refusal) goes upstream as it is.
    return owner.view.channel.request<Record<string, unknown>>('serverRequest', { method, params, call: owner.asking }, { signal, timeoutMs: this.#deps.callTimeoutMs });
  }

  /**
   * Whose a server request is: the one view whose learned calls are in flight, at the newest
   * whose tool has asked `method` before; else whatever {@link attribute} says. Every `tools/call` that could have sent it (the
   * one view's, or every view's when that is ambiguous) is learned as asking `method`.
   */
  #askerOf(method: string): { view: ViewState; asking: number | undefined } | { view: undefined; busy: number } {
    const view = this.#askingView();
    if (view !== undefined) {
      let asking: RpcHandlerContext | undefined;
      for (const [ctx, call] of this.#asked) if (this.#askers.get(call.tool)?.has(method)) asking = ctx;
      if (asking !== undefined) return { view, asking: this.#asking.get(asking) };
    }
    const owner = this.attribute();
    this.#learn(method, owner.view === undefined ? this.#views.values() : [owner.view]);
    return owner;
  }

  #learn(method: string, views: Iterable<ViewState>): void {
    for (const view of views) {
      for (const ctx of view.inflight) {
        const tool = this.#tools.get(ctx);
        if (tool === undefined) continue;
        let methods = this.#askers.get(tool);
        if (methods === undefined) {
          if (this.#askers.size >= MAX_LEARNED_TOOLS) continue;
          methods = new Set();
          this.#askers.set(tool, methods);
        }
        if (!methods.has(method)) {
          methods.add(method);
          this.#deps.learned(tool, method);
        }
        this.#asked.set(ctx, { view, tool });
      }
    }
  }

  /** The one view whose calls of learned tools are in flight; undefined when none is, or several views' are. */
  #askingView(): ViewState | undefined {
    let view: ViewState | undefined;
    for (const call of this.#asked.values()) {
      if (view !== undefined && call.view !== view) return undefined;
      view = call.view;
    }
    return view;
  }

  /** Whether a call of a learned tool from `view` may start now: no other view's such call is in flight. */
  #mayAsk(view: ViewState): boolean {
    for (const call of this.#asked.values()) if (call.view !== view) return false;
    return true;
  }

  /** Starts waiting calls of learned tools, oldest first, while their turn has come (a start that fails leaves nothing in flight). */
  #startWaiting(): void {
    while (this.#queue.size > 0 && this.#mayAsk(this.#queue.head as ViewState) && this.#queue.startNext());
  }

  /**
   * A notification the server sent: to the newest listening call of the one busy view; else to
   * every view when the views it could be for (the busy ones, or all when none is) act for one
   * principal; else dropped and counted.
   */
  notification(notification: UpstreamNotification): void {
    const owner = this.attribute();
    // A log outside any call takes the outbox's slow lane: nobody waits for it.
    const unasked = notification.method === 'notifications/message';
    if (owner.view === undefined) {
      // Nobody to send it to is not a notification withheld from anyone.
      if (this.#views.size === 0) return;
      const principal = this.#onePrincipal(owner.busy > 0);
      if (principal === undefined) {
        this.#dropUnattributed();
        return;
      }
      for (const state of this.#views.values()) {
        if (state.principal !== principal.id) continue;
        const deliver = (): void => void state.channel.emit('notification', notification);
        if (unasked) state.outbox.pushUnasked(deliver);
        else state.outbox.push(undefined, deliver);
      }
      return;
    }
    const { view, listening: call } = owner;
    if (call !== undefined) view.outbox.push(undefined, () => call.progress({ kind: 'notification', notification } satisfies CallEvent));
    else if (unasked) view.outbox.pushUnasked(() => view.channel.emit('notification', notification));
    else view.outbox.push(undefined, () => view.channel.emit('notification', notification));
  }

  /** The one principal the views act for (only the busy views when `busy`), or undefined when they are several or none. */
  #onePrincipal(busy: boolean): { id: string | undefined } | undefined {
    let found: { id: string | undefined } | undefined;
    for (const state of this.#views.values()) {
      if (busy && state.inflight.size === 0) continue;
      if (found === undefined) found = { id: state.principal };
      else if (found.id !== state.principal) return undefined;
    }
    return found;
  }

  /** Counts a dropped notification; the count is told once this turn ends (a flood costs one message a turn, not one each). */
  #dropUnattributed(): void {
    this.#unattributed += 1;
    this.#unattributedReport ??= setImmediate(() => this.#reportUnattributed());
  }

  #reportUnattributed(): void {
    if (this.#unattributedReport !== undefined) clearImmediate(this.#unattributedReport);
    this.#unattributedReport = undefined;
    const dropped = this.#unattributed;
    this.#unattributed = 0;
    if (dropped > 0) this.#deps.unattributed(dropped);
  }

  resourceUpdated(uri: string): void {
    for (const viewId of this.#subscribers.get(uri) ?? []) {
      const state = this.#views.get(viewId);
      state?.outbox.push(`updated:${uri}`, () => state.channel.emit('resourceUpdated', { uri }));
    }
  }

  /** What a modern connection's `subscriptions/listen` asks for: list changes it announces, and the views' resources. */
  listenFilter(conn: ServerConnection): ListenFilter {
    const caps = conn.capabilities as { tools?: { listChanged?: boolean }; prompts?: { listChanged?: boolean }; resources?: { listChanged?: boolean; subscribe?: boolean } };
    const filter: ListenFilter = {};
    if (caps.tools?.listChanged) filter.toolsListChanged = true;
    if (caps.prompts?.listChanged) filter.promptsListChanged = true;
    if (caps.resources?.listChanged) filter.resourcesListChanged = true;
    if (this.#subscribers.size > 0) filter.resourceSubscriptions = [...this.#subscribers.keys()].sort();
    return filter;
  }

  /** After a reconnect: the new connection gets every subscription the views hold. */
  async resubscribe(conn: ServerConnection): Promise<void> {
    if (conn.era === 'modern') {
      await conn.listen(this.listenFilter(conn)).catch((error: unknown) => this.#deps.logger.warn({ err: error }, 'listen failed'));
      return;
    }
    for (const uri of this.#subscribers.keys()) {
      await conn.request('resources/subscribe', { uri }, { timeoutMs: this.#deps.callTimeoutMs }).catch((error: unknown) => {
        this.#deps.logger.warn({ uri, err: error }, 'resubscribe failed');
      });
    }
  }

  #forget(viewId: string, state: ViewState): void {
    if (this.#views.get(viewId) === state) this.#views.delete(viewId);
    state.outbox.dispose();
    for (const uri of state.subscriptions) void this.#unsubscribe(viewId, state, uri).catch(() => undefined);
  }

  #handle(viewId: string, state: ViewState, op: string, opArgs: unknown, ctx: RpcHandlerContext): Promise<unknown> {
    if (op === 'subscribe') return this.#subscribe(viewId, state, (opArgs as { uri: string }).uri);
    if (op === 'unsubscribe') return this.#unsubscribe(viewId, state, (opArgs as { uri: string }).uri);
    if (op !== 'request') throw new PoolError(ErrorCode.INVALID_ARGUMENT, `unknown view operation ${op}`);
    const args = opArgs as ViewRequestArgs;
    if (typeof args.method !== 'string' || RESERVED.has(args.method)) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, `a session cannot send ${String(args.method)}: the pool owns the connection's lifecycle`);
    }
    const name = args.method === 'tools/call' ? args.params?.name : undefined;
    const tool = typeof name === 'string' ? name : undefined;
    // A call of a tool that asks waits while another session's such call is in flight, however
    // long its own timeout lets it (the total bound then counts from when it reaches the server).
    // One session's own such calls run together: its requests are its own whichever call made
    // them, and one of its calls may wait on its caller's answer while it makes another.
    if (tool !== undefined && this.#askers.has(tool) && (this.#queue.size > 0 || !this.#mayAsk(state))) {
      return this.#queue.enqueue(state, args.timeoutMs ?? this.#deps.callTimeoutMs, ctx.signal, () => this.#send(state, args, ctx, tool));
    }
    return this.#send(state, args, ctx, tool);
  }

  #send(state: ViewState, args: ViewRequestArgs, ctx: RpcHandlerContext, tool: string | undefined): Promise<unknown> {
    const { conn, generation } = this.#deps.live();
    state.inflight.add(ctx);
    if (tool !== undefined) {
      this.#tools.set(ctx, tool);
      if (this.#askers.has(tool)) this.#asked.set(ctx, { view: state, tool });
    }
    if (args.wantNotifications) this.#listening.add(ctx);
    if (args.asks !== undefined) this.#asking.set(ctx, args.asks);
    // Progress of one call coalesces under its own key; a call without progress builds none.
    const progressKey = args.wantProgress ? `progress:${++this.#calls}` : '';
    const options = {
      view: state.client,
      timeoutMs: args.timeoutMs ?? this.#deps.callTimeoutMs,
      maxTotalTimeoutMs: args.maxTotalTimeoutMs,
      // Only a call its caller can cancel carries a signal upstream (making one costs per call).
      signal: args.cancellable ? ctx.signal : undefined,
      onProgress: args.wantProgress ? (progress: ProgressPayload) => state.outbox.push(progressKey, () => ctx.progress({ kind: 'progress', ...progress } satisfies CallEvent)) : undefined,
    };
    const done = (): void => {
      // What the call produced (its last progress above all) goes out before its answer.
      state.outbox.flush();
      state.inflight.delete(ctx);
      if (this.#asked.delete(ctx)) this.#startWaiting();
    };
    // The answer is followed with `then`, and only a failure takes the async path that may send
    // the call again: on the call path each frame between the answer and its post costs.
    return conn.request(args.method, args.params, options).then(
      (result) => {
        done();
        return result;
      },
      (error: unknown) =>
        this.#recover(error, conn, generation, args, options, ctx).then(
          (result) => {
            done();
            return result;
          },
          (failure: unknown) => {
            done();
            throw this.#deps.mapError(failure, args.cancellable === true, ctx.signal, generation, conn);
          },
        ),
    );
  }

  /**
   * A call that failed, sent again where the failure says the server did not act on it:
   * - HTTP 401: once the supervisor has a fresh token (a refresh), the call goes out again, once;
   *   a second 401 goes to the caller.
   * - A modern HTTP server refuses a call whose mirrored `Mcp-Param-*` headers do not match the
   *   tool's current schema: its tools changed since they were listed. Re-list them once (the
   *   transport learns the new header declarations from the answer, and every view gets the new
   *   list) and retry once; a second refusal goes to the caller.
   */
  async #recover(
    error: unknown,
    conn: ServerConnection,
    generation: number,
    args: ViewRequestArgs,
    options: Parameters<ServerConnection['request']>[2],
    ctx: RpcHandlerContext,
  ): Promise<Record<string, unknown>> {
    const send = (): Promise<Record<string, unknown>> => conn.request(args.method, args.params, options);
    let last = error;
    try {
      return await this.#reauthorized(error, send, ctx);
    } catch (failure) {
      last = failure;
    }
    if (args.method !== 'tools/call' || !isHeaderMismatch(last) || ctx.signal.aborted) throw last;
    await this.#deps.relistTools(conn, generation);
    return await send().catch((failure: unknown) => this.#reauthorized(failure, send, ctx));
  }

  /**
   * After a refused token (HTTP 401, or 403 with a challenge), `send` again once the supervisor
   * gave a new token, else fail with what it said; any other failure is thrown as is.
   */
  async #reauthorized(error: unknown, send: () => Promise<Record<string, unknown>>, ctx: RpcHandlerContext): Promise<Record<string, unknown>> {
    if (!refusesToken(error) || ctx.signal.aborted) throw error;
    const answer = await this.#deps.reauthorize(error.wwwAuthenticate, error.status === 403 ? 403 : 401);
    if (answer instanceof PoolError) throw answer;
    if (!answer) throw error;
    return await send();
  }

  async #subscribe(viewId: string, state: ViewState, uri: string): Promise<void> {
    let subscribers = this.#subscribers.get(uri);
    if (subscribers?.has(viewId)) return;
    if (subscribers === undefined) {
      const { conn } = this.#deps.live();
      subscribers = new Set();
      if (conn.era === 'modern') {
        this.#subscribers.set(uri, subscribers);
        await conn.listen(this.listenFilter(conn));
      } else {
        await conn.request('resources/subscribe', { uri }, { timeoutMs: this.#deps.callTimeoutMs });
        subscribers = this.#subscribers.get(uri) ?? subscribers;
        this.#subscribers.set(uri, subscribers);
      }
    }
    subscribers.add(viewId);
    state.subscriptions.add(uri);
  }

  async #unsubscribe(viewId: string, state: ViewState, uri: string): Promise<void> {
    state.subscriptions.delete(uri);
    const subscribers = this.#subscribers.get(uri);
    if (subscribers === undefined || !subscribers.delete(viewId) || subscribers.size > 0) return;
    this.#subscribers.delete(uri);
    const { conn } = this.#deps.live();
    if (conn.era === 'modern') await conn.listen(this.listenFilter(conn));
    else await conn.request('resources/unsubscribe', { uri }, { timeoutMs: this.#deps.callTimeoutMs });
  }
}

/** Whether an upstream refused a request with the header-mismatch error (in a 400's body, or as a JSON-RPC error). */
function isHeaderMismatch(error: unknown): boolean {
  if (error instanceof UpstreamRpcError) return error.code === JsonRpcCode.HEADER_MISMATCH;
  return error instanceof UpstreamHttpError && jsonRpcErrorIn(error.body)?.code === JsonRpcCode.HEADER_MISMATCH;
}
