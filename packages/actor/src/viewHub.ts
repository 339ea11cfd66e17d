/**
 * The sessions attached to one actor: a view channel each, the calls each has in flight, and the
 * resources each subscribed to. It serves the views' requests and routes what the server sends
 * on its own to the right view:
 * - a server→client request (sampling, elicitation, roots) or a notification (logging) goes to the
 *   one view that has calls in flight — the MCP wire does not say which call caused it, so when
 *   several views have calls in flight a request is refused rather than risk showing one
 *   session's prompt to another, and a notification goes to every view;
 * - `resources/updated` goes to the views subscribed to that URI (subscriptions are refcounted
 *   upstream and replayed after a reconnect).
 */
import type { MessagePort } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ErrorCode, PoolError, RpcChannel, type CallEvent, type CallToolArgs, type RpcHandlerContext, type ServerSnapshot, type UpstreamNotification, type ViewEvents } from '@mcpool/protocol';
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConnection } from './serverConnection.js';

export interface ViewHubDeps {
  /** The live connection and its generation; throws a typed error while there is none. */
  live(): { conn: ServerConnection; generation: number };
  callTimeoutMs: number;
  mapError(error: unknown, cancellable: boolean, signal: AbortSignal, generation: number, timeout: number, conn: ServerConnection): PoolError;
  logger: Logger;
}

interface ViewState {
  channel: RpcChannel;
  /** Calls in flight, oldest first: a notification is attributed to the newest. */
  inflight: Set<RpcHandlerContext>;
  subscriptions: Set<string>;
}

type ViewCallArgs = CallToolArgs & {
  uri?: string;
  wantNotifications?: boolean;
  method?: string;
  params?: Record<string, unknown>;
};

/** Methods a view may pass through with `request` (the others have their own operation). */
const PASS_THROUGH = new Set(['completion/complete', 'logging/setLevel', 'ping', 'resources/templates/list']);

export class ViewHub {
  readonly #views = new Map<string, ViewState>();
  readonly #subscribers = new Map<string, Set<string>>();
  /** Calls whose caller asked for the notifications attributed to them. */
  readonly #listening = new WeakSet<RpcHandlerContext>();
  readonly #deps: ViewHubDeps;

  constructor(deps: ViewHubDeps) {
    this.#deps = deps;
  }

  get size(): number {
    return this.#views.size;
  }

  attach(viewId: string, port: MessagePort, snapshot: ServerSnapshot): void {
    const state: ViewState = { channel: undefined!, inflight: new Set(), subscriptions: new Set() };
    state.channel = new RpcChannel(port, {
      handler: (op, opArgs, ctx) => this.#handle(viewId, state, op, opArgs as ViewCallArgs, ctx),
      onClose: () => this.#forget(viewId, state),
    });
    this.#views.set(viewId, state);
    // Snapshot replay on attach (seed §7.2).
    state.channel.emit('snapshot', snapshot);
  }

  detach(viewId: string): void {
    this.#views.get(viewId)?.channel.close('detached');
  }

  closeAll(reason: string): void {
    for (const state of [...this.#views.values()]) state.channel.close(reason);
  }

  broadcast<K extends keyof ViewEvents>(ev: K, data: ViewEvents[K]): void {
    for (const state of this.#views.values()) state.channel.emit(ev, data);
  }

  /** A request the server sent (sampling, elicitation, roots): to the one view whose call is in flight. */
  async serverRequest(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>> {
    const busy = [...this.#views.values()].filter((state) => state.inflight.size > 0);
    if (busy.length !== 1) {
      const why = busy.length === 0 ? 'no session has a call in flight' : `${busy.length} sessions have calls in flight, and the request names none`;
      throw new McpError(McpErrorCode.InternalError, `mcpool cannot route ${method}: ${why}`);
    }
    try {
      return await busy[0]!.channel.request<Record<string, unknown>>('serverRequest', { method, params }, { signal, timeoutMs: this.#deps.callTimeoutMs });
    } catch (error) {
      if (error instanceof PoolError && typeof error.data?.mcpCode === 'number') throw new McpError(error.data.mcpCode, error.message, error.data.mcpData);
      throw new McpError(McpErrorCode.InternalError, (error as Error).message);
    }
  }

  /** A notification the server sent: to the newest call of the one busy view, else to every view. */
  notification(notification: UpstreamNotification): void {
    const busy = [...this.#views.values()].filter((state) => state.inflight.size > 0);
    if (busy.length === 1) {
      // The newest call that listens for notifications gets it; else the view as a whole.
      const listening = [...busy[0]!.inflight.entries()].map(([ctx]) => ctx).filter((ctx) => this.#listening.has(ctx));
      const newest = listening.at(-1);
      if (newest !== undefined) newest.progress({ kind: 'notification', notification } satisfies CallEvent);
      else busy[0]!.channel.emit('notification', notification);
      return;
    }
    this.broadcast('notification', notification);
  }

  resourceUpdated(uri: string): void {
    for (const viewId of this.#subscribers.get(uri) ?? []) this.#views.get(viewId)?.channel.emit('resourceUpdated', { uri });
  }

  /** After a reconnect: the new connection gets every subscription the views hold. */
  async resubscribe(conn: ServerConnection): Promise<void> {
    for (const uri of this.#subscribers.keys()) {
      await conn.request('resources/subscribe', { uri }, { timeout: this.#deps.callTimeoutMs }).catch((error: unknown) => {
        this.#deps.logger.warn({ uri, err: error }, 'resubscribe failed');
      });
    }
  }

  #forget(viewId: string, state: ViewState): void {
    if (this.#views.get(viewId) === state) this.#views.delete(viewId);
    for (const uri of state.subscriptions) void this.#unsubscribe(viewId, state, uri).catch(() => undefined);
  }

  async #handle(viewId: string, state: ViewState, op: string, opArgs: ViewCallArgs, ctx: RpcHandlerContext): Promise<unknown> {
    if (op === 'subscribe') return this.#subscribe(viewId, state, opArgs.uri!);
    if (op === 'unsubscribe') return this.#unsubscribe(viewId, state, opArgs.uri!);
    const { method, params } = requestOf(op, opArgs);
    const { conn, generation } = this.#deps.live();
    const timeout = opArgs.timeoutMs ?? this.#deps.callTimeoutMs;
    state.inflight.add(ctx);
    if (opArgs.wantNotifications) this.#listening.add(ctx);
    try {
      return await conn.request(method, params, {
        // Only a call its caller can cancel carries a signal upstream (it costs per call); the
        // SDK's own timeout still sends `notifications/cancelled` for every call.
        ...(opArgs.cancellable ? { signal: ctx.signal } : {}),
        timeout,
        ...(opArgs.wantProgress ? { onprogress: (progress) => ctx.progress({ kind: 'progress', ...progress } satisfies CallEvent) } : {}),
      });
    } catch (error) {
      throw this.#deps.mapError(error, opArgs.cancellable === true, ctx.signal, generation, timeout, conn);
    } finally {
      state.inflight.delete(ctx);
    }
  }

  async #subscribe(viewId: string, state: ViewState, uri: string): Promise<void> {
    let subscribers = this.#subscribers.get(uri);
    if (subscribers?.has(viewId)) return;
    if (subscribers === undefined) {
      const { conn } = this.#deps.live();
      await conn.request('resources/subscribe', { uri }, { timeout: this.#deps.callTimeoutMs });
      subscribers = this.#subscribers.get(uri) ?? new Set();
      this.#subscribers.set(uri, subscribers);
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
    await conn.request('resources/unsubscribe', { uri }, { timeout: this.#deps.callTimeoutMs });
  }
}

function requestOf(op: string, a: ViewCallArgs): { method: string; params: Record<string, unknown> } {
  const meta = a._meta ? { _meta: a._meta } : {};
  switch (op) {
    case 'callTool':
      return { method: 'tools/call', params: { name: a.name, ...(a.arguments ? { arguments: a.arguments } : {}), ...meta } };
    case 'getPrompt':
      return { method: 'prompts/get', params: { name: a.name, ...(a.arguments ? { arguments: a.arguments } : {}), ...meta } };
    case 'readResource':
      return { method: 'resources/read', params: { uri: a.uri, ...meta } };
    case 'request':
      if (a.method === undefined || !PASS_THROUGH.has(a.method)) {
        throw new PoolError(ErrorCode.INVALID_ARGUMENT, `request passes through only ${[...PASS_THROUGH].join(', ')}; got ${String(a.method)}`);
      }
      return { method: a.method, params: { ...(a.params ?? {}), ...meta } };
    default:
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, `unknown view operation ${op}`);
  }
}
