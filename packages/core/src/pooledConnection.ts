/**
 * `PooledConnection`: one session's view of a pooled entry. It talks to the entry's actor over its
 * own MessagePort, so calls never pass through the supervisor's logic. It applies the session's
 * filter to every snapshot the actor pushes and enforces it on calls.
 */
import type { MessagePort } from 'node:worker_threads';
import type { Attributes } from '@opentelemetry/api';
import {
  ErrorCode,
  MCPCallInterruptedError,
  PoolError,
  RpcChannel,
  errorFromWire,
  serverRequestRefused,
  type BudgetEvent,
  type CallEvent,
  type ConnectionId,
  type EntryEvent,
  type Logger,
  type ProgressInfo,
  type PromptInfo,
  type ResourceInfo,
  type ResourceTemplateInfo,
  type ServerSnapshot,
  type SessionTool,
  type TransportKind,
  type UpstreamNotification,
  type ViewEvents,
  type ViewRequestArgs,
} from '@mcpool/protocol';
import { SILENT_LOGGER } from './logging.js';
import { SessionFilter, type SessionFields } from './sessionFilter.js';
import { peerAttributes, startClientCall } from './telemetry.js';

export interface CallOptions {
  /**
   * Aborting ends the request upstream (`notifications/cancelled` on stdio and websocket, the
   * request's stream closed on modern HTTP) and rejects with `MCPOOL_CALL_CANCELLED`.
   */
  signal?: AbortSignal;
  /**
   * Per-call timeout: how long the call may go without an answer. Progress from the server
   * (when `onProgress` is set) starts it again, up to `maxTotalTimeoutMs`.
   * @default the pool's `callTimeoutMs` (60000)
   */
  timeoutMs?: number;
  /** The most a call may take from its start, however much progress it reports. @default timeoutMs × 10 */
  maxTotalTimeoutMs?: number;
  /** Progress of this call only; asking for it sets a progress token upstream. */
  onProgress?: (progress: ProgressInfo) => void;
  /**
   * A modern server may answer `tools/call`, `prompts/get` or `resources/read` with
   * `resultType: "input_required"` (it needs elicitation, sampling or roots first). Without this
   * handler that result is returned as is (its `requestState` untouched), for the caller to
   * retry. With it, the handler answers the input requests and the call is retried with its
   * `inputResponses` and the server's `requestState`, byte for byte (at most 10 rounds).
   */
  onInputRequired?: (request: InputRequiredResult, signal: AbortSignal | undefined) => Promise<Record<string, unknown>>;
  /**
   * Notifications the server sent while this call was in flight and that can be blamed on it
   * (logging during a tool call): when no other session had a call in flight on the entry.
   */
  onNotification?: (notification: UpstreamNotification) => void;
  /**
   * Answers the requests a legacy server sends (sampling, elicitation, roots) that are
   * attributed to this call. A legacy server's request names no call, so the pool attributes it
   * by one rule: when every call in flight on the entry is this session's, to its newest call
   * that has this handler (else to the session's {@link PooledConnection.setServerRequestHandler});
   * when calls of several sessions are in flight, or none, the server is refused with
   * `MCPOOL_SERVER_REQUEST_REFUSED` (-32601). The result goes back upstream as is; a thrown error
   * becomes a JSON-RPC error (a PoolError's `data.mcpCode`, else its code's).
   */
  onServerRequest?: ServerRequestHandler;
  /**
   * Sent upstream as the request's `_meta` (the pool sets the progress token itself, and
   * `traceparent`/`tracestate` of its own span when the host registered an OpenTelemetry SDK).
   */
  _meta?: Record<string, unknown>;
}

/**
 * Answers a request the server sent while this session's call was in flight: `sampling/createMessage`,
 * `elicitation/create`, `roots/list`. The result goes back upstream as is; a thrown error becomes
 * a JSON-RPC error (a PoolError's `data.mcpCode` sets its code, else its code's own).
 */
export type ServerRequestHandler = (request: { method: string; params: Record<string, unknown> }, signal: AbortSignal) => Promise<Record<string, unknown>>;

/** An `input_required` result of a modern server. */
export interface InputRequiredResult {
  resultType: 'input_required';
  inputRequests: Record<string, { method: string; params?: Record<string, unknown> }>;
  requestState?: string;
  [field: string]: unknown;
}

/** Channel options of a call with no signal and no listener (shared: never written). */
const NO_REQUEST_OPTIONS = Object.freeze({});

/** How many input rounds one call may take before it fails (a server that keeps asking). */
const MAX_INPUT_ROUNDS = 10;

export type ConnectionStatus = 'connected' | 'disconnected' | 'failed' | 'released';

/** Events a session can listen to, by name. */
export interface PooledConnectionEvents {
  toolsChanged: Extract<EntryEvent, { type: 'toolsChanged' }>;
  promptsChanged: Extract<EntryEvent, { type: 'promptsChanged' }>;
  resourcesChanged: Extract<EntryEvent, { type: 'resourcesChanged' }>;
  disconnected: Extract<EntryEvent, { type: 'disconnected' }>;
  reconnected: Extract<EntryEvent, { type: 'reconnected' }>;
  failed: Extract<EntryEvent, { type: 'failed' }>;
  budget: BudgetEvent;
  /** A notification from the server that no call of this session can be blamed for. */
  notification: UpstreamNotification;
  /** A resource this session subscribed to changed. */
  resourceUpdated: { uri: string };
  /** The last request of this session in flight on the server got its outcome: none is in flight now. */
  callsSettled: { serverName: string };
}

export type PooledConnectionEvent = keyof PooledConnectionEvents;

export interface PooledConnectionInit {
  id: ConnectionId;
  serverName: string;
  entryIndex: number;
  sessionId: string;
  port: MessagePort;
  fields: SessionFields;
  callTimeoutMs: number;
  /** How the server is reached, for telemetry attributes (`network.transport`, `server.address`). */
  transport?: TransportKind | undefined;
  url?: string | undefined;
  /** Called by {@link PooledConnection.release}; the pool does the bookkeeping. */
  onRelease: (view: PooledConnection) => Promise<void>;
  /** Told when a request got an answer from the server (a result or its error) or hit its deadline: the pool's view of the entry's health. */
  onCallOutcome?: (outcome: 'answered' | 'timeout') => void;
  /**
   * Asked when the actor's end of the port closed while this view was live (its thread died):
   * true when the pool will attach the view to the entry's replacement (the view waits,
   * `disconnected`), false when the entry is gone for good (the view fails).
   */
  onPortLost?: (view: PooledConnection) => boolean;
  /** Where a listener that throws is reported (the host's logger). @default silent */
  logger?: Logger | undefined;
}

export class PooledConnection {
  readonly id: ConnectionId;
  readonly serverName: string;
  readonly sessionId: string;
  #entryIndex: number;
  #filter: SessionFilter;
  #snapshot: ServerSnapshot | undefined;
  #tools: SessionTool[] = [];
  #prompts: PromptInfo[] = [];
  #status: ConnectionStatus = 'connected';
  #releaseError: PoolError | undefined;
  #channel: RpcChannel;
  /** Set from the loss of the actor's port until the replacement's snapshot arrived. */
  #reattaching = false;
  readonly #onPortLost: PooledConnectionInit['onPortLost'];
  readonly #callTimeoutMs: number;
  /** The attributes of this view's spans and points that never change. */
  readonly #peer: Attributes;
  readonly #onRelease: PooledConnectionInit['onRelease'];
  readonly #onCallOutcome: PooledConnectionInit['onCallOutcome'];
  readonly #logger: Logger;
  readonly #listeners = new Map<PooledConnectionEvent, Set<(event: never) => void>>();
  readonly #ready: Promise<void>;
  #resolveReady!: () => void;
  #rejectReady!: (error: PoolError) => void;
  #releasing: Promise<void> | undefined;
  #serverRequestHandler: ServerRequestHandler | undefined;
  /** Calls in flight that answer the server requests attributed to them, by the number the actor names them with. */
  readonly #asking = new Map<number, ServerRequestHandler>();
  #asks = 0;
  /** Requests of this view sent and not yet settled. */
  #inFlight = 0;
  /** Resources this view subscribed to and has not unsubscribed from. */
  readonly #subscribed = new Set<string>();

  /** @internal Views are made by the pool: `McpTransportPool.acquire` is the way to get one. */
  constructor(init: PooledConnectionInit) {
    this.id = init.id;
    this.serverName = init.serverName;
    this.#entryIndex = init.entryIndex;
    this.#onPortLost = init.onPortLost;
    this.sessionId = init.sessionId;
    this.#filter = new SessionFilter(init.fields);
    this.#callTimeoutMs = init.callTimeoutMs;
    this.#peer = peerAttributes(init.serverName, init.transport, init.url);
    this.#onRelease = init.onRelease;
    this.#onCallOutcome = init.onCallOutcome;
    this.#logger = init.logger ?? SILENT_LOGGER;
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    // Nobody may be awaiting readiness (a release during acquire): never an unhandled rejection.
    this.#ready.catch(() => undefined);
    this.#channel = this.#open(init.port);
  }

  #open(port: MessagePort): RpcChannel {
    const channel: RpcChannel = new RpcChannel(port, {
      handler: (op, opArgs, ctx) => this.#onServerRequest(op, opArgs, ctx.signal),
      batch: true,
      onEvent: (ev, data) => this.#onActorEvent(ev as keyof ViewEvents, data),
      // A late close of a port this view has left behind says nothing about the current one.
      onClose: (reason) => {
        if (this.#channel === channel) this.#onChannelClose(reason);
      },
    });
    return channel;
  }

  /** The entry this view is attached to; a replacement after its actor died has a new index. */
  get entryIndex(): number {
    return this.#entryIndex;
  }

  /**
   * @internal The pool attaches this view to the replacement of an entry whose actor died: the
   * new actor's snapshot is applied as it comes (whatever its generation) and `reconnected` follows.
   */
  reattach(port: MessagePort, entryIndex: number): void {
    if (!this.#reattaching) {
      // The pool saw the death before this view's port closed: the view learns it now.
      this.#reattaching = true;
      this.#status = 'disconnected';
      this.#emit('disconnected', { type: 'disconnected', serverName: this.serverName, entryIndex: this.entryIndex, generation: this.generation, reason: 'actor_died' });
    }
    const old = this.#channel;
    this.#entryIndex = entryIndex;
    this.#channel = this.#open(port);
    // Calls still waiting on the dead actor end now, as interrupted: their result is unknown.
    old.fail(new PoolError(ErrorCode.ACTOR_DIED, `the actor of ${this.serverName} died`));
  }

  /** @internal The view fails with `error` (its attach was refused, or its replacement did not come). Idempotent. */
  fail(error: PoolError): void {
    if (this.#status === 'released' || this.#status === 'failed') return;
    this.#reattaching = false;
    this.#status = 'failed';
    this.#releaseError ??= error;
    this.#channel.fail(error);
    this.#emit('failed', { type: 'failed', serverName: this.serverName, entryIndex: this.entryIndex, generation: this.generation, lastError: error.toWire() });
  }

  /** Resolves once the first snapshot arrived (snapshot replay on attach, or the seed of a sibling view). */
  get ready(): Promise<void> {
    return this.#ready;
  }

  /**
   * @internal The entry's lists as this view last applied them, for a new view of the same entry
   * to start from; undefined while it has none or is not connected (it may be behind the actor).
   */
  get seedSnapshot(): ServerSnapshot | undefined {
    return this.#status === 'connected' && !this.#reattaching ? this.#snapshot : undefined;
  }

  /**
   * @internal Starts a view that has no snapshot yet from `snapshot` (a sibling view's, of the
   * same entry): it is ready at once. The actor's replay on attach comes later on the port and
   * goes through the generation guard like any snapshot: the same generation is the same lists,
   * a newer one replaces them with the usual change events. The view gets its own copy, as a
   * snapshot off its port is: its session's tool objects share nothing with the sibling's.
   */
  seed(snapshot: ServerSnapshot): void {
    if (this.#snapshot === undefined) this.#apply(structuredClone(snapshot), false);
  }

  /** This session's tools: filtered, with its own trust. */
  get tools(): SessionTool[] {
    return this.#tools;
  }

  get prompts(): PromptInfo[] {
    return this.#prompts;
  }

  get resources(): ResourceInfo[] {
    return this.#snapshot?.resources ?? [];
  }

  get resourceTemplates(): ResourceTemplateInfo[] {
    return this.#snapshot?.resourceTemplates ?? [];
  }

  /** The snapshot generation last applied. */
  get generation(): number {
    return this.#snapshot?.generation ?? 0;
  }

  /** The transport incarnation the snapshot came from. */
  get clientGeneration(): number {
    return this.#snapshot?.clientGeneration ?? 0;
  }

  get serverInfo(): ServerSnapshot['serverInfo'] {
    return this.#snapshot?.serverInfo;
  }

  get capabilities(): Record<string, unknown> {
    return this.#snapshot?.capabilities ?? {};
  }

  get instructions(): string | undefined {
    return this.#snapshot?.instructions;
  }

  /** The protocol era the server speaks: a legacy server sends requests of its own, a modern one answers `input_required`. */
  get era(): 'legacy' | 'modern' | undefined {
    return this.#snapshot?.era;
  }

  get status(): ConnectionStatus {
    return this.#status;
  }

  /** Whether this session's filter lets `name` (a tool or prompt) through. */
  allows(name: string): boolean {
    return this.#filter.allows(name);
  }

  /**
   * Calls a tool. The result is the server's, as received. Rejects with `MCPOOL_TOOL_NOT_ALLOWED`
   * when the session's filter hides the tool (without reaching the server),
   * `MCPCallInterruptedError` when the transport dies mid-call (never replayed),
   * `MCPOOL_CALL_TIMEOUT`, `MCPOOL_CALL_CANCELLED`, or `MCPOOL_UPSTREAM_ERROR` for a JSON-RPC error.
   *
   * @example
   * ```ts
   * const controller = new AbortController();
   * const result = await github.callTool('search_repositories', { query: 'mcp' }, {
   *   timeoutMs: 10_000,
   *   signal: controller.signal, // aborting cancels the call on the server too
   *   onProgress: (progress) => console.log(progress.progress, progress.total),
   * });
   * console.log(result.content);
   * ```
   */
  callTool(name: string, args?: Record<string, unknown>, options: CallOptions = {}): Promise<Record<string, unknown>> {
    if (!this.#filter.allows(name)) {
      return Promise.reject(new PoolError(ErrorCode.TOOL_NOT_ALLOWED, `tool '${name}' of ${this.serverName} is not allowed for this session`, { data: { serverName: this.serverName, tool: name } }));
    }
    return this.#call('tools/call', { name, ...(args ? { arguments: args } : {}) }, options);
  }

  /** Gets a prompt; the same filter as tools applies. */
  getPrompt(name: string, args?: Record<string, string>, options: CallOptions = {}): Promise<Record<string, unknown>> {
    if (!this.#filter.allows(name)) {
      return Promise.reject(new PoolError(ErrorCode.TOOL_NOT_ALLOWED, `prompt '${name}' of ${this.serverName} is not allowed for this session`, { data: { serverName: this.serverName, prompt: name } }));
    }
    return this.#call('prompts/get', { name, ...(args ? { arguments: args } : {}) }, options);
  }

  readResource(uri: string, options: CallOptions = {}): Promise<Record<string, unknown>> {
    return this.#call('resources/read', { uri }, options);
  }

  /**
   * Sends any request to the server as the JSON-RPC method it names, result as received:
   * `completion/complete` (refused for a prompt this session's filter hides), `logging/setLevel`
   * (shared by every session of the entry), `ping`, `resources/templates/list`, and the ones
   * with their own method here (the same filter applies). The pool's own lifecycle methods
   * (`initialize`, `server/discover`, `subscriptions/listen`) are refused.
   */
  request(method: string, params: Record<string, unknown> = {}, options: CallOptions = {}): Promise<Record<string, unknown>> {
    const ref = params.ref as { type?: unknown; name?: unknown } | undefined;
    const name = method === 'completion/complete' && ref?.type === 'ref/prompt' ? ref.name : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
    if (typeof name === 'string' && !this.#filter.allows(name)) {
      const what = method === 'tools/call' ? 'tool' : 'prompt';
      return Promise.reject(new PoolError(ErrorCode.TOOL_NOT_ALLOWED, `${what} '${name}' of ${this.serverName} is not allowed for this session`, { data: { serverName: this.serverName, [what]: name } }));
    }
    return this.#call(method, params, options);
  }

  /** Subscribes this session to `resources/updated` for `uri` (refcounted upstream per entry). */
  async subscribeResource(uri: string): Promise<void> {
    if (this.#releaseError) throw this.#releaseError;
    await this.#channel.request('subscribe', { uri });
    this.#subscribed.add(uri);
  }

  async unsubscribeResource(uri: string): Promise<void> {
    if (this.#releaseError) throw this.#releaseError;
    this.#subscribed.delete(uri);
    await this.#channel.request('unsubscribe', { uri });
  }

  /** How many requests of this session are in flight on the server now (`callsSettled` says when none is left). */
  get callsInFlight(): number {
    return this.#inFlight;
  }

  /** The resources this session is subscribed to (its server must run to tell their updates). */
  get subscribedResources(): string[] {
    return [...this.#subscribed];
  }

  /** Sets (or clears) who answers the server's sampling/elicitation/roots requests for this session. */
  setServerRequestHandler(handler: ServerRequestHandler | undefined): void {
    this.#serverRequestHandler = handler;
  }

  /** A server request the actor attributed to this view, and to its call `call` when one takes them. */
  async #onServerRequest(op: string, opArgs: unknown, signal: AbortSignal): Promise<unknown> {
    const { call, ...request } = opArgs as { method: string; params: Record<string, unknown>; call?: number };
    const handler = op !== 'serverRequest' ? undefined : call === undefined ? this.#serverRequestHandler : (this.#asking.get(call) ?? this.#serverRequestHandler);
    if (handler === undefined) throw serverRequestRefused(request.method ?? op, 'this session takes no server requests');
    return handler(request, signal);
  }

  #call(method: string, params: Record<string, unknown>, options: CallOptions): Promise<Record<string, unknown>> {
    // Without an input handler the answer is the caller's as is: no async frame on the call path.
    if (options.onInputRequired === undefined) return this.#send(method, params, options);
    return this.#callWithInput(method, params, options, options.onInputRequired);
  }

  async #callWithInput(method: string, params: Record<string, unknown>, options: CallOptions, onInputRequired: NonNullable<CallOptions['onInputRequired']>): Promise<Record<string, unknown>> {
    let result = await this.#send(method, params, options);
    // Each round is a new request (a new JSON-RPC id upstream) with the answers and the state.
    for (let round = 0; round < MAX_INPUT_ROUNDS && result.resultType === 'input_required'; round++) {
      const inputResponses = await onInputRequired(result as InputRequiredResult, options.signal);
      const retry: Record<string, unknown> = { ...params, inputResponses };
      if (result.requestState !== undefined) retry.requestState = result.requestState;
      result = await this.#send(method, retry, options);
    }
    if (result.resultType === 'input_required') {
      throw new PoolError(ErrorCode.UPSTREAM_ERROR, `${this.serverName} still asked for input after ${MAX_INPUT_ROUNDS} rounds`, { data: { serverName: this.serverName } });
    }
    return result;
  }

  /**
   * One request through the actor. The call's deadline is owned here and enforced once, by the
   * actor (where progress arrives and the upstream cancel is sent): this side arms no second
   * timer. A dead or stuck actor thread still ends the call (its port closes, or the
   * supervisor's heartbeat ends the thread).
   */
  #send(method: string, params: Record<string, unknown>, options: CallOptions): Promise<Record<string, unknown>> {
    if (this.#releaseError) return Promise.reject(this.#releaseError);
    // Refused only while the dead actor's port is all the view has. Once the pool handed it the
    // replacement's, a call waits in that port behind the attach (a port queues what is posted
    // before its other end listens), so it reaches the replacement.
    if (this.#reattaching && this.#channel.closed) {
      return Promise.reject(new PoolError(ErrorCode.NOT_CONNECTED, `the actor of ${this.serverName} died; its replacement is starting, try again shortly`, { data: { serverName: this.serverName } }));
    }
    const timeoutMs = options.timeoutMs ?? this.#callTimeoutMs;
    const clientGeneration = this.clientGeneration;
    const telemetry = startClientCall(method, params, this.#peer);
    // The pool's own span is the upstream's parent: its trace context wins over a caller's.
    const traceMeta = telemetry.traceMeta;
    const extraMeta = traceMeta === undefined ? options._meta : options._meta === undefined ? traceMeta : { ...options._meta, ...traceMeta };
    const body = extraMeta ? { ...params, _meta: { ...(params._meta as Record<string, unknown> | undefined), ...extraMeta } } : params;
    // Built by assignment, not spreads of conditional objects: this runs once per call.
    const args: ViewRequestArgs = { method, params: body, timeoutMs };
    if (options.maxTotalTimeoutMs !== undefined) args.maxTotalTimeoutMs = options.maxTotalTimeoutMs;
    if (options.onProgress) args.wantProgress = true;
    if (options.signal) args.cancellable = true;
    if (options.onNotification) args.wantNotifications = true;
    let asks: number | undefined;
    if (options.onServerRequest) {
      args.asks = asks = ++this.#asks;
      this.#asking.set(asks, options.onServerRequest);
    }
    const listens = options.onProgress !== undefined || options.onNotification !== undefined;
    this.#inFlight += 1;
    return this.#channel
      .request<Record<string, unknown>>(
        'request',
        args,
        listens || options.signal !== undefined
          ? { signal: options.signal, onProgress: listens ? (data) => deliverCallEvent(data as CallEvent, options) : undefined }
          : NO_REQUEST_OPTIONS,
      )
      .then(
        (result) => {
          if (asks !== undefined) this.#asking.delete(asks);
          this.#settled();
          this.#onCallOutcome?.('answered');
          telemetry.end(result, undefined);
          return result;
        },
        (error: unknown) => {
          if (asks !== undefined) this.#asking.delete(asks);
          this.#settled();
          // A deadline says the server did not answer; its own error says it did.
          if (error instanceof PoolError && (error.code === ErrorCode.CALL_TIMEOUT || error.code === ErrorCode.UPSTREAM_ERROR)) {
            this.#onCallOutcome?.(error.code === ErrorCode.CALL_TIMEOUT ? 'timeout' : 'answered');
          }
          const failure = this.#interrupted(error, clientGeneration);
          telemetry.end(undefined, failure);
          throw failure;
        },
      );
  }

  /** A request got its outcome: when it was the last in flight, `callsSettled`. */
  #settled(): void {
    this.#inFlight -= 1;
    if (this.#inFlight === 0) this.#emit('callsSettled', { serverName: this.serverName });
  }

  /** The actor's end vanished mid-call (its thread died): the call's result is unknown. */
  #interrupted(error: unknown, clientGeneration: number): unknown {
    if (!(error instanceof PoolError) || this.#status === 'released') return error;
    if (error.code !== ErrorCode.PORT_CLOSED && error.code !== ErrorCode.ACTOR_DIED) return error;
    return new MCPCallInterruptedError(`the actor of ${this.serverName} died during the call; its result is unknown`, {
      serverName: this.serverName,
      entryIndex: this.entryIndex,
      clientGeneration,
    }, error);
  }

  /** Listens to an event; returns a function that removes the listener. */
  on<E extends PooledConnectionEvent>(event: E, listener: (payload: PooledConnectionEvents[E]) => void): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => this.off(event, listener);
  }

  off<E extends PooledConnectionEvent>(event: E, listener: (payload: PooledConnectionEvents[E]) => void): void {
    this.#listeners.get(event)?.delete(listener);
  }

  /** Gives this session's reference back to the pool. Idempotent. */
  release(): Promise<void> {
    this.#releasing ??= this.#onRelease(this);
    return this.#releasing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Re-applies new per-session fields to the current snapshot (no reconnect). */
  updateSessionFields(fields: SessionFields): void {
    this.#filter = new SessionFilter(fields);
    if (this.#snapshot) this.#apply(this.#snapshot, true);
  }

  /** @internal Closes the port; the pool calls it on release and when the entry ends. */
  dispose(reason: PoolError): void {
    this.#releaseError ??= reason;
    if (this.#status !== 'failed') this.#status = 'released';
    this.#channel.fail(reason);
    this.#rejectReady(reason);
  }

  /** @internal Budget events go to every session. */
  deliverBudgetEvent(event: BudgetEvent): void {
    this.#emit('budget', event);
  }

  #emit<E extends PooledConnectionEvent>(event: E, payload: PooledConnectionEvents[E]): void {
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        (listener as (payload: PooledConnectionEvents[E]) => void)(payload);
      } catch (error) {
        // One listener's failure must not stop the others, and is never silent: it is the host's bug to see.
        this.#logger.error({ err: error, server: this.serverName, event }, 'a view event listener threw');
      }
    }
  }

  #onActorEvent(ev: keyof ViewEvents, data: unknown): void {
    if (ev === 'snapshot') {
      if (this.#reattaching) {
        // The replacement's first snapshot: its generations start again, so it is taken as is.
        this.#reattaching = false;
        const snapshot = data as ServerSnapshot;
        this.#apply(snapshot, true);
        this.#status = 'connected';
        this.#emit('reconnected', { type: 'reconnected', serverName: this.serverName, entryIndex: this.entryIndex, generation: snapshot.generation, clientGeneration: snapshot.clientGeneration });
        return;
      }
      this.#apply(data as ServerSnapshot, false);
      return;
    }
    if (ev === 'notification') {
      this.#emit('notification', data as UpstreamNotification);
      return;
    }
    if (ev === 'resourceUpdated') {
      this.#emit('resourceUpdated', data as { uri: string });
      return;
    }
    if (ev === 'status') {
      const status = data as ViewEvents['status'];
      const base = { serverName: this.serverName, entryIndex: this.entryIndex, generation: status.generation };
      if (status.status === 'disconnected') {
        this.#status = 'disconnected';
        this.#emit('disconnected', { ...base, type: 'disconnected', reason: status.reason ?? 'transport_closed' });
      } else if (status.status === 'reconnected') {
        this.#status = 'connected';
        this.#emit('reconnected', { ...base, type: 'reconnected', clientGeneration: status.clientGeneration });
      } else {
        this.#status = 'failed';
        const lastError = status.error ?? { code: ErrorCode.SERVER_FAILED, message: 'the server failed' };
        // Waiting for authorization is not a failure of the server: the caller gets what to run.
        this.#releaseError = lastError.code === ErrorCode.AUTH_REQUIRED ? errorFromWire(lastError) : errorFromWire({ code: ErrorCode.SERVER_FAILED, message: `${this.serverName} failed: ${lastError.message}`, data: { lastError } });
        this.#emit('failed', { ...base, type: 'failed', lastError });
      }
    }
  }

  #apply(snapshot: ServerSnapshot, force: boolean): void {
    const previous = this.#snapshot;
    // A stale snapshot never overwrites a newer one: generations only grow.
    if (!force && previous !== undefined && snapshot.generation <= previous.generation) return;
    this.#snapshot = snapshot;
    const tools = this.#filter.tools(snapshot.tools);
    const prompts = this.#filter.prompts(snapshot.prompts);
    const base = { serverName: this.serverName, entryIndex: this.entryIndex, generation: snapshot.generation };
    const toolsChanged = previous === undefined || force || !sameList(previous.tools, snapshot.tools);
    const promptsChanged = previous === undefined || force || !sameList(previous.prompts, snapshot.prompts);
    const resourcesChanged =
      previous === undefined || !sameList(previous.resources, snapshot.resources) || !sameList(previous.resourceTemplates, snapshot.resourceTemplates);
    this.#tools = tools;
    this.#prompts = prompts;
    if (previous === undefined) {
      this.#resolveReady();
      return;
    }
    if (toolsChanged) this.#emit('toolsChanged', { ...base, type: 'toolsChanged', tools });
    if (promptsChanged) this.#emit('promptsChanged', { ...base, type: 'promptsChanged', prompts });
    if (resourcesChanged) this.#emit('resourcesChanged', { ...base, type: 'resourcesChanged', resources: snapshot.resources, resourceTemplates: snapshot.resourceTemplates });
  }

  #onChannelClose(reason: PoolError): void {
    this.#rejectReady(reason);
    if (this.#status === 'released' || this.#status === 'failed' || this.#reattaching) return;
    if (this.#snapshot !== undefined && this.#onPortLost?.(this) === true) {
      // The pool brings the entry back and attaches this view to it.
      this.#reattaching = true;
      this.#status = 'disconnected';
      this.#emit('disconnected', { type: 'disconnected', serverName: this.serverName, entryIndex: this.entryIndex, generation: this.generation, reason: 'actor_died' });
      return;
    }
    // The actor's end closed without a release: the entry ended under us.
    this.#status = 'failed';
    this.#releaseError ??=
      reason.code === ErrorCode.PORT_CLOSED ? new PoolError(ErrorCode.SERVER_FAILED, `the connection to ${this.serverName} ended`, { cause: reason }) : reason;
    this.#emit('failed', {
      type: 'failed',
      serverName: this.serverName,
      entryIndex: this.entryIndex,
      generation: this.generation,
      lastError: this.#releaseError.toWire(),
    });
  }
}

function deliverCallEvent(event: CallEvent, options: CallOptions): void {
  if (event.kind === 'notification') options.onNotification?.(event.notification);
  else {
    const { kind: _kind, ...progress } = event;
    options.onProgress?.(progress);
  }
}

function sameList(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && JSON.stringify(a) === JSON.stringify(b);
}
