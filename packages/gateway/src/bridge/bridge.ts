/**
 * The bridge: a stdio MCP client ↔ a Streamable HTTP MCP endpoint (the daemon's `/mcp`, or one
 * of its per-server paths). `mcpool bridge` runs it on its own stdin and stdout; a host may run
 * it on any pair of streams (an IDE extension, a test).
 *
 * A raw JSON-RPC relay, not an SDK Client + Server pair: each line the client writes is POSTed
 * as written, and every message the daemon sends (JSON or SSE answers, the GET stream) is written
 * to stdout as sent, so nothing the SDK would drop or re-validate is lost.
 *
 * What it adds to a plain relay:
 * - **Session recovery.** The client's `initialize` params are kept. When the daemon
 *   answers 404 for a session-bearing message (expired session, restarted daemon), the bridge
 *   drops the session id, replays `initialize` (its own request id: the client never sees a
 *   second answer to its `initialize`) and `notifications/initialized`, retries the message once,
 *   and tells the client to refresh its lists (`notifications/{tools,prompts,resources}/list_changed`
 *   for the capabilities the client was told about). A second 404 or a failed re-init is a
 *   JSON-RPC error for that message, never a loop. Requests in flight on the lost session get
 *   errors (their outcome is unknown). One re-init serves every message that hit the same 404.
 *   The re-init also restores what the client had set on the lost session: its last
 *   `logging/setLevel` and its `resources/subscribe`s.
 * - **A daemon that does not answer.** Connection-refused is retried with a bounded backoff
 *   (and, with `--autostart`, the daemon is started); then each request gets an error. Only
 *   failures to connect are retried: a request that may have reached the daemon is never sent twice.
 * - **The GET stream** for server-initiated messages, opened after `notifications/initialized`
 *   (405 tolerated), reconnected with backoff and `Last-Event-ID`, honouring `retry:`. A 404 on
 *   it starts the same recovery, so an idle client learns of a restarted daemon by itself.
 * - **SSE resumption** of a POST stream that ends before its answer, when the daemon gave event ids.
 * - **Order.** Messages a client sends before its `initialize` is answered wait for that answer
 *   (they need its session id); everything else is sent at once, concurrently, in input order.
 * - **Exit with the client.** On stdin EOF or `close()`: a short grace for answers in flight, DELETE
 *   of the daemon session, done — within a second.
 *
 * It never writes anything but JSON-RPC lines to its output (stdout is MCP): logs go to the logger.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Readable, Writable } from 'node:stream';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { Logger } from '@mcpool/core';
import { BridgeErrorCode, errorResponse, httpFailure, idKey, isMessage, isNotification, isRequest, isResponse, type BridgeFailure, type JsonRpcMessage, type RequestId } from './jsonRpc.js';
import { LineReader } from './lineReader.js';
import { ModernFront, type Era } from './modern.js';

/**
 * The logger a bridge writes to: the pool's logger interface (pino satisfies it), and pino's
 * `isLevelEnabled` when it has one, so per-message debug lines are not even built below debug.
 */
export interface BridgeLogger extends Logger {
  isLevelEnabled?(level: string): boolean;
}

/** Where the bearer token comes from; `refresh` re-reads it after a 401 (a restarted daemon may have written a new one). */
export interface TokenSource {
  get(): Promise<string | undefined>;
  refresh(): Promise<string | undefined>;
}

export interface BridgeOptions {
  /** The daemon's MCP endpoint, e.g. `http://127.0.0.1:7070/mcp`. */
  url: string;
  token: TokenSource;
  /** What the client writes (stdin). */
  input: Readable;
  /** What the client reads (stdout): JSON-RPC lines only. */
  output: Writable;
  /** Where the bridge logs; never its output, which carries MCP only. */
  logger: BridgeLogger;
  /** Delays between attempts to reach a daemon that refuses connections; then the request fails. @default [100, 200, 400, 800, 1600] */
  retryDelaysMs?: readonly number[];
  /** Backoff of the GET stream's reconnects (doubling from `initialMs`), unless the daemon sent `retry:`. @default { initialMs: 100, maxMs: 2000 } */
  streamBackoff?: { initialMs: number; maxMs: number };
  /** Bound on one re-initialization (initialize + initialized), retries included. @default 30000 */
  reinitTimeoutMs?: number;
  /** On close: how long answers still in flight may arrive before the session is deleted. @default 300 */
  closeGraceMs?: number;
  /** Bound on the DELETE sent at close. @default 400 */
  deleteTimeoutMs?: number;
  /** Nothing is sent before this settles (the autostart's first check). */
  ready?: Promise<unknown>;
  /** Called when the daemon refuses a connection; resolves true when it answers now (autostart). */
  onUnreachable?: () => Promise<boolean>;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** The version the bridge names in the `initialize` it sends for a 2026-07-28 client that gave no client info. @default '0.0.0' */
  version?: string;
}

/** A fresh snapshot of what the bridge has done. */
export interface BridgeStats {
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  /** Successful re-initializations. */
  reinits: number;
  /** Client requests waiting for their answer. */
  pending: number;
  /** How the stdio client opened: `initialize` (legacy), a 2026-07-28 request (modern), or not yet. */
  era: Era;
}

type UnitKind = 'initialize' | 'initialized' | 'response' | 'message';

/** One line of the client: one POST. */
interface Unit {
  text: string;
  kind: UnitKind;
  /** Request ids in the line (a 2025-03-26 batch may hold several). */
  ids: RequestId[];
  controller: AbortController;
  /** `streaming` once the daemon accepted it and its answer is being read. */
  phase: 'queued' | 'sending' | 'streaming' | 'done';
  /** The session generation it was sent on. */
  generation: number;
  /** Why its stream was cut by the bridge, when it was. */
  cut?: BridgeFailure;
  /** Request ids a `notifications/cancelled` in this line names. */
  cancels: RequestId[];
}

interface Pending {
  id: RequestId;
  unit: Unit;
  cancelled: boolean;
}

/** What the client initialized with, replayed when the session must be re-initialized. */
interface InitState {
  params: unknown;
  /** `idKey` of the client's initialize request. */
  requestKey: string;
  initializedSent: boolean;
  /** The server capabilities the client was told about. */
  capabilities: Record<string, unknown> | undefined;
  /** Session state a re-init restores: the last `logging/setLevel` params, the subscribed resource URIs. */
  logLevel: unknown;
  subscriptions: Set<string>;
}

type Exchange = { kind: 'done' } | { kind: 'gone'; sessionId: string } | { kind: 'failed'; failure: BridgeFailure } | { kind: 'aborted' };

type Sent = { kind: 'response'; response: Response } | { kind: 'failed'; failure: BridgeFailure } | { kind: 'aborted' };

/** Connect-phase errors: the request never reached anyone, so sending it again is safe. */
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ENOENT', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  const visit = (value: unknown, depth: number): void => {
    if (depth > 4 || typeof value !== 'object' || value === null) return;
    const { code, cause, errors } = value as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string') codes.push(code);
    visit(cause, depth + 1);
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1);
  };
  visit(error, 0);
  return codes;
}

/** Whether `error` (or a cause inside it) failed to connect: nothing was sent, so a retry cannot repeat it. */
export const isConnectError = (error: unknown): boolean => errorCodes(error).some((code) => CONNECT_ERRORS.has(code));

const describe = (error: unknown): string => errorCodes(error)[0] ?? (error instanceof Error ? error.message : String(error));

const mediaType = (response: Response): string => (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();

/** Aborted by `signal`, or by the timeout: whichever comes first. */
function withTimeout(signal: AbortSignal, ms: number): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(ms)]);
}

const LIST_CHANGED = [
  ['tools', 'notifications/tools/list_changed'],
  ['prompts', 'notifications/prompts/list_changed'],
  ['resources', 'notifications/resources/list_changed'],
] as const;

/**
 * Relays one stdio MCP client to a Streamable HTTP endpoint until the client closes its input
 * or {@link Bridge.close} is called: `new Bridge(options)` does nothing until {@link Bridge.run}.
 */
export class Bridge {
  readonly #url: string;
  readonly #token: TokenSource;
  readonly #input: Readable;
  readonly #output: Writable;
  readonly #log: BridgeLogger;
  readonly #retryDelays: readonly number[];
  readonly #streamBackoff: { initialMs: number; maxMs: number };
  readonly #reinitTimeoutMs: number;
  readonly #closeGraceMs: number;
  readonly #deleteTimeoutMs: number;
  readonly #ready: Promise<unknown>;
  readonly #onUnreachable: (() => Promise<boolean>) | undefined;
  readonly #fetch: typeof fetch;
  /** Serves a 2026-07-28 client over the legacy session; passes a legacy client through. */
  readonly #front: ModernFront;

  /** Aborted at close: every fetch and wait hangs off it. */
  readonly #life = new AbortController();
  readonly #pending = new Map<string, Pending>();
  readonly #units = new Set<Unit>();
  /** Called when the last pending request is answered (close waits for it). */
  #onIdle: (() => void) | undefined;

  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  /** Bumped by every new session (the client's initialize, each re-init). */
  #generation = 0;
  #init: InitState | undefined;
  /** The client is initialized but the bridge holds no live session (a re-init failed): the next message tries again. */
  #lost = false;
  #recovery: Promise<BridgeFailure | undefined> | undefined;
  /** The client's initialize is under way: other messages wait for it. */
  #initializing: Promise<void> | undefined;
  #initializingDone: (() => void) | undefined;
  #reinits = 0;
  #reinitSeq = 0;
  /** The GET stream of the current session. */
  #stream: { controller: AbortController; generation: number; opened: boolean } | undefined;
  /** The current session came from a recovery the GET stream started (guards against a 404 loop on GET). */
  #streamBorn = false;

  #closing: Promise<void> | undefined;
  #resolveDone!: () => void;
  readonly #done = new Promise<void>((resolve) => (this.#resolveDone = resolve));

  constructor(options: BridgeOptions) {
    const url = new URL(options.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`options.url must be an http(s) URL, got ${url.protocol}`);
    this.#url = url.href;
    this.#token = options.token;
    this.#input = options.input;
    this.#output = options.output;
    this.#log = options.logger;
    this.#retryDelays = options.retryDelaysMs ?? [100, 200, 400, 800, 1600];
    this.#streamBackoff = options.streamBackoff ?? { initialMs: 100, maxMs: 2000 };
    this.#reinitTimeoutMs = options.reinitTimeoutMs ?? 30_000;
    this.#closeGraceMs = options.closeGraceMs ?? 300;
    this.#deleteTimeoutMs = options.deleteTimeoutMs ?? 400;
    this.#ready = (options.ready ?? Promise.resolve()).catch(() => undefined);
    this.#onUnreachable = options.onUnreachable;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#front = new ModernFront({
      submit: (message) => this.#accept(JSON.stringify(message), true),
      emit: (message) => this.#emit(message),
      logger: this.#log,
      clientVersion: options.version ?? '0.0.0',
    });
  }

  /** What the bridge has done so far (a fresh snapshot each read). */
  get stats(): BridgeStats {
    return { sessionId: this.#sessionId, protocolVersion: this.#protocolVersion, reinits: this.#reinits, pending: this.#pending.size, era: this.#front.era };
  }

  /** Relays until the input ends or `close()` is called; resolves when the bridge is done (session deleted). */
  run(): Promise<void> {
    const reader = new LineReader(
      (line) => this.#accept(line),
      (bytes) => this.#log.warn({ bytes }, 'a client line over the size cap was dropped'),
    );
    const onData = (chunk: Buffer | string): void => reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    const onEnd = (): void => {
      reader.end();
      void this.close('stdin closed');
    };
    this.#input.on('data', onData);
    this.#input.once('end', onEnd);
    this.#input.once('close', onEnd);
    this.#input.once('error', (error: Error) => {
      this.#log.warn({ err: error }, 'stdin error');
      void this.close('stdin error');
    });
    this.#output.on('error', (error: Error) => {
      this.#log.warn({ err: error }, 'stdout error: the client is gone');
      void this.close('stdout closed');
    });
    this.#log.info({ url: this.#url }, `bridging stdio to ${this.#url}`);
    return this.#done.finally(() => {
      this.#input.off('data', onData);
      this.#input.off('end', onEnd);
      this.#input.off('close', onEnd);
    });
  }

  /**
   * Ends the bridge: waits up to `closeGraceMs` for answers in flight, stops the GET stream,
   * DELETEs the daemon session (bounded), aborts what is left. Idempotent.
   */
  close(reason: string): Promise<void> {
    this.#closing ??= (async () => {
      this.#log.info({ reason }, `closing: ${reason}`);
      this.#input.pause();
      if (this.#pending.size > 0) {
        const grace = new AbortController();
        const idle = new Promise<void>((resolve) => (this.#onIdle = resolve));
        await Promise.race([idle, delay(this.#closeGraceMs, undefined, { signal: grace.signal }).catch(() => undefined)]);
        grace.abort();
        this.#onIdle = undefined;
      }
      this.#stopStream();
      const sessionId = this.#sessionId;
      this.#sessionId = undefined;
      this.#life.abort(new Error('bridge closed'));
      for (const unit of this.#units) unit.controller.abort();
      if (sessionId !== undefined) await this.#deleteSession(sessionId);
      this.#resolveDone();
    })();
    return this.#closing;
  }

  get #closed(): boolean {
    return this.#life.signal.aborted;
  }

  // ---- from the client ----

  /** A client line; `own` when the modern front relays it (it has seen it already). */
  #accept(line: string, own = false): void {
    if (this.#closing !== undefined || line.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      this.#log.warn({ bytes: line.length }, 'a client line that is not JSON was skipped');
      return;
    }
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    if (messages.length === 0 || !messages.every(isMessage)) {
      this.#log.warn('a client line that is not a JSON-RPC message was skipped');
      return;
    }
    const list = messages;
    if (!own && this.#front.intercept(list)) return;
    const single = list.length === 1 ? list[0]! : undefined;
    const kind: UnitKind =
      single && isRequest(single) && single.method === 'initialize'
        ? 'initialize'
        : single?.method === 'notifications/initialized'
          ? 'initialized'
          : list.every(isResponse)
            ? 'response'
            : 'message';
    const unit: Unit = { text: line, kind, ids: [], controller: new AbortController(), phase: 'queued', generation: this.#generation, cancels: [] };
    for (const message of list) {
      if (isRequest(message)) {
        unit.ids.push(message.id);
        this.#pending.set(idKey(message.id), { id: message.id, unit, cancelled: false });
      } else if (isNotification(message) && message.method === 'notifications/cancelled') {
        const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
        if (typeof requestId === 'string' || typeof requestId === 'number') unit.cancels.push(requestId);
      }
      if (this.#log.isLevelEnabled?.('debug') !== false) this.#log.debug({ method: message.method, id: message.id }, 'client → daemon');
    }
    if (kind === 'initialize') this.#beginSession(single as JsonRpcMessage & { id: RequestId });
    if (kind === 'initialized' && this.#init) this.#init.initializedSent = true;
    if (this.#init) this.#remember(this.#init, list);
    for (const id of unit.cancels) {
      const pending = this.#pending.get(idKey(id));
      if (pending) pending.cancelled = true;
    }
    this.#units.add(unit);
    void this.#deliver(unit).finally(() => {
      if (kind === 'initialize' && this.#init?.requestKey === idKey(unit.ids[0]!)) {
        this.#initializingDone?.();
        this.#initializing = undefined;
      }
      unit.phase = 'done';
      this.#units.delete(unit);
      this.#settle(unit);
      this.#afterCancel(unit);
    }).catch((error: unknown) => this.#log.error({ err: error }, 'bridge error (a bug): the message was not relayed'));
  }

  /** Session state beyond initialize that a re-init must restore (the B-rules stop at initialize). */
  #remember(init: InitState, messages: readonly JsonRpcMessage[]): void {
    for (const message of messages) {
      if (!isRequest(message)) continue;
      const uri = (message.params as { uri?: unknown } | undefined)?.uri;
      if (message.method === 'logging/setLevel') init.logLevel = message.params;
      else if (message.method === 'resources/subscribe' && typeof uri === 'string') init.subscriptions.add(uri);
      else if (message.method === 'resources/unsubscribe' && typeof uri === 'string') init.subscriptions.delete(uri);
    }
  }

  /** The client's own initialize starts a new session (a second one replaces the first). */
  #beginSession(message: JsonRpcMessage & { id: RequestId }): void {
    const previous = this.#sessionId;
    this.#stopStream();
    this.#generation++;
    this.#sessionId = undefined;
    this.#protocolVersion = undefined;
    this.#lost = false;
    this.#streamBorn = false;
    this.#init = { params: message.params, requestKey: idKey(message.id), initializedSent: false, capabilities: undefined, logLevel: undefined, subscriptions: new Set() };
    // Messages a client sends before its initialize is answered (it should not) wait for the answer.
    let opened!: () => void;
    this.#initializing = new Promise<void>((resolve) => (opened = resolve));
    this.#initializingDone = opened;
    if (previous !== undefined) void this.#deleteSession(previous);
  }

  async #deliver(unit: Unit): Promise<void> {
    await this.#ready;
    if (this.#closed) return;
    if (unit.kind !== 'initialize') {
      // A response (to a ping the daemon sent during initialize) never waits for the initialize.
      if (unit.kind !== 'response' && this.#initializing) await this.#initializing;
      const failure = await this.#sessionGate();
      if (failure) return this.#fail(unit, failure);
    }
    let outcome = await this.#exchange(unit);
    if (outcome.kind === 'gone' && unit.kind !== 'message' && unit.generation !== this.#generation) {
      // An `initialized` or a response for a session the client's own initialize has replaced: it
      // belongs to that session alone, so it is dropped (no recovery: the new session is on its way).
      this.#log.debug({ kind: unit.kind }, 'a message for a replaced session was dropped');
      return;
    }
    if (outcome.kind === 'gone') {
      // A 404 for a session-bearing message: the session is gone. Re-initialize (once for everyone who hit it) and retry once.
      const failure = await this.#recover(outcome.sessionId, 'request');
      if (failure) return this.#fail(unit, failure);
      if (unit.kind === 'response') {
        // It answered a request of the lost session: the new one never asked.
        this.#log.info('a client response for the lost session was dropped');
        return;
      }
      outcome = await this.#exchange(unit);
      if (outcome.kind === 'gone') {
        if (this.#sessionId === outcome.sessionId) this.#markLost();
        return this.#fail(unit, { code: BridgeErrorCode.SESSION_NOT_FOUND, message: 'mcpool bridge: the daemon answered 404 (session not found) again right after re-initializing', httpStatus: 404 });
      }
    }
    if (outcome.kind === 'failed') this.#fail(unit, outcome.failure);
  }

  /** Waits for a recovery in progress; starts one when the session was lost earlier. */
  async #sessionGate(): Promise<BridgeFailure | undefined> {
    if (this.#recovery) return this.#recovery;
    if (this.#lost) return this.#recover(undefined, 'request');
    return undefined;
  }

  /** One POST of `unit` and the reading of its answer. */
  async #exchange(unit: Unit): Promise<Exchange> {
    const initialize = unit.kind === 'initialize';
    const sessionId = initialize ? undefined : this.#sessionId;
    const protocolVersion = initialize ? undefined : this.#protocolVersion;
    const generation = this.#generation;
    unit.generation = generation;
    unit.phase = 'sending';
    const sent = await this.#send(
      (token) => ({
        method: 'POST',
        headers: this.#headers(token, sessionId, protocolVersion, { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }),
        body: unit.text,
      }),
      unit.controller.signal,
    );
    if (sent.kind !== 'response') return sent;
    const { response } = sent;
    if (response.status === 404 && sessionId !== undefined) {
      await response.body?.cancel().catch(() => undefined);
      return { kind: 'gone', sessionId };
    }
    if (!response.ok) {
      const body = await response.text().catch(() => '');
      return { kind: 'failed', failure: httpFailure(response.status, response.statusText, body) };
    }
    if (initialize && generation === this.#generation) {
      // Before the answer reaches the client, which may send the next message at once.
      this.#sessionId = response.headers.get('mcp-session-id') ?? undefined;
    }
    if (unit.kind === 'initialized' && generation === this.#generation) this.#openStream();
    unit.phase = 'streaming';
    const failure = await this.#readAnswer(response, unit.controller.signal, sessionId, (message, raw) => this.#fromDaemon(message, raw), () => this.#unanswered(unit));
    if (unit.controller.signal.aborted) return { kind: 'aborted' };
    return failure ? { kind: 'failed', failure } : { kind: 'done' };
  }

  /**
   * A fetch with bounded connection retries for a daemon that is down (and the autostart hook), and one retry
   * with a re-read token after a 401.
   */
  async #send(init: (token: string | undefined) => RequestInit, signal: AbortSignal): Promise<Sent> {
    const combined = AbortSignal.any([signal, this.#life.signal]);
    let token = await this.#token.get();
    let refreshed = false;
    let started = false;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.#fetch(this.#url, { ...init(token), signal: combined, redirect: 'manual' });
      } catch (error) {
        if (combined.aborted) return { kind: 'aborted' };
        if (!isConnectError(error)) return { kind: 'failed', failure: { code: BridgeErrorCode.UNREACHABLE, message: `mcpool bridge: the request to ${this.#url} failed: ${describe(error)}` } };
        if (this.#onUnreachable && !started) {
          started = true;
          if (await this.#onUnreachable()) {
            token = await this.#token.refresh();
            continue;
          }
        }
        if (attempt >= this.#retryDelays.length) {
          return { kind: 'failed', failure: { code: BridgeErrorCode.UNREACHABLE, message: `mcpool bridge: the daemon at ${this.#url} does not answer (${describe(error)}, ${attempt + 1} attempts); is \`mcpool serve\` running?` } };
        }
        this.#log.debug({ attempt: attempt + 1, error: describe(error) }, 'the daemon does not answer: retrying');
        try {
          await delay(this.#retryDelays[attempt], undefined, { signal: combined });
        } catch {
          return { kind: 'aborted' };
        }
        continue;
      }
      if (response.status === 401 && !refreshed) {
        refreshed = true;
        const fresh = await this.#token.refresh();
        if (fresh !== undefined && fresh !== token) {
          await response.body?.cancel().catch(() => undefined);
          token = fresh;
          this.#log.info('401: retrying with the re-read token');
          continue;
        }
      }
      return { kind: 'response', response };
    }
  }

  #headers(token: string | undefined, sessionId: string | undefined, protocolVersion: string | undefined, extra: Record<string, string>): Record<string, string> {
    return {
      ...extra,
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }),
      ...(protocolVersion === undefined ? {} : { 'mcp-protocol-version': protocolVersion }),
    };
  }

  /** Removes a pending request (answered, failed or dropped). */
  #take(key: string): Pending | undefined {
    const pending = this.#pending.get(key);
    this.#pending.delete(key);
    if (this.#pending.size === 0) this.#onIdle?.();
    return pending;
  }

  #unanswered(unit: Unit): boolean {
    return unit.ids.some((id) => this.#pending.get(idKey(id))?.unit === unit);
  }

  /**
   * Reads a POST answer: JSON (one message or a batch) or SSE. An SSE stream that ends before
   * its answers, after the daemon gave event ids, is resumed with GET + `Last-Event-ID`.
   * Returns a failure only for an answer the bridge cannot read.
   */
  async #readAnswer(
    response: Response,
    signal: AbortSignal,
    sessionId: string | undefined,
    onMessage: (message: JsonRpcMessage, raw: string | undefined) => void,
    unanswered: () => boolean,
  ): Promise<BridgeFailure | undefined> {
    const type = mediaType(response);
    if (response.status === 202 || response.body === null) {
      await response.body?.cancel().catch(() => undefined);
      return undefined;
    }
    if (type === 'application/json') {
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        if (signal.aborted) return undefined;
        return { code: BridgeErrorCode.STREAM_ENDED, message: `mcpool bridge: the daemon's answer broke off (${describe(error)})` };
      }
      if (text.trim() === '') return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return { code: BridgeErrorCode.BAD_RESPONSE, message: 'mcpool bridge: the daemon answered with invalid JSON' };
      }
      const list = Array.isArray(parsed) ? parsed : [parsed];
      for (const message of list) {
        if (isMessage(message)) onMessage(message, Array.isArray(parsed) ? undefined : text);
      }
      return undefined;
    }
    if (type === 'text/event-stream') {
      let read = await this.#readSse(response.body, signal, onMessage);
      // Resume a stream cut before its answer, if the daemon gave event ids (GET with `Last-Event-ID`, after `retry:`).
      let attempts = 0;
      while (unanswered() && read.lastEventId !== undefined && !signal.aborted && attempts < 5 && sessionId !== undefined && sessionId === this.#sessionId) {
        attempts++;
        try {
          await delay(read.retryMs ?? this.#backoff(attempts), undefined, { signal });
        } catch {
          return undefined;
        }
        const lastEventId = read.lastEventId;
        const sent = await this.#send((token) => ({ method: 'GET', headers: this.#headers(token, sessionId, this.#protocolVersion, { accept: 'text/event-stream', 'last-event-id': lastEventId }) }), signal);
        if (sent.kind !== 'response') break;
        if (!sent.response.ok || mediaType(sent.response) !== 'text/event-stream' || sent.response.body === null) {
          await sent.response.body?.cancel().catch(() => undefined);
          break;
        }
        this.#log.debug({ lastEventId }, 'resumed a response stream');
        const next = await this.#readSse(sent.response.body, signal, onMessage);
        if (next.events > 0) attempts = 0;
        read = { ...next, lastEventId: next.lastEventId ?? lastEventId, retryMs: next.retryMs ?? read.retryMs };
      }
      return undefined;
    }
    await response.body.cancel().catch(() => undefined);
    return unanswered() ? { code: BridgeErrorCode.BAD_RESPONSE, message: `mcpool bridge: the daemon answered with content type "${type}"` } : undefined;
  }

  /** Reads an SSE body to its end (or until `signal`); a broken connection just ends it. */
  async #readSse(
    body: ReadableStream<Uint8Array>,
    signal: AbortSignal,
    onMessage: (message: JsonRpcMessage, raw: string | undefined) => void,
  ): Promise<{ lastEventId: string | undefined; retryMs: number | undefined; events: number }> {
    let lastEventId: string | undefined;
    let retryMs: number | undefined;
    let events = 0;
    const reader = body
      .pipeThrough(new TextDecoderStream())
      .pipeThrough(new EventSourceParserStream({ onRetry: (ms) => (retryMs = ms) }))
      .getReader();
    const cancel = (): void => void reader.cancel().catch(() => undefined);
    signal.addEventListener('abort', cancel, { once: true });
    try {
      for (;;) {
        const { value: event, done } = await reader.read();
        if (done) break;
        events++;
        if (event.id) lastEventId = event.id;
        if (!event.data || (event.event !== undefined && event.event !== 'message')) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(event.data);
        } catch {
          this.#log.warn('an SSE event that is not JSON was skipped');
          continue;
        }
        const list = Array.isArray(parsed) ? parsed : [parsed];
        for (const message of list) if (isMessage(message)) onMessage(message, Array.isArray(parsed) ? undefined : event.data);
      }
    } catch (error) {
      if (!signal.aborted) this.#log.debug({ error: describe(error) }, 'an SSE stream broke');
    } finally {
      signal.removeEventListener('abort', cancel);
    }
    return { lastEventId, retryMs, events };
  }

  // ---- to the client ----

  #fromDaemon(message: JsonRpcMessage, raw: string | undefined): void {
    if (isResponse(message)) {
      const key = idKey(message.id);
      this.#take(key);
      if (this.#init && key === this.#init.requestKey && isMessage(message.result)) {
        const result = message.result as { protocolVersion?: unknown; capabilities?: unknown };
        if (typeof result.protocolVersion === 'string') this.#protocolVersion = result.protocolVersion;
        this.#init.capabilities = isMessage(result.capabilities) ? (result.capabilities as Record<string, unknown>) : {};
      }
    }
    if (this.#log.isLevelEnabled?.('debug') !== false) this.#log.debug({ method: message.method, id: message.id }, 'daemon → client');
    this.#write(message, raw);
  }

  /** A message for the client, through the modern front (which may reshape, route or keep it). */
  #write(message: JsonRpcMessage, raw?: string): void {
    const out = this.#front.toClient(message);
    if (out === undefined) return;
    this.#emit(out, out === message ? raw : undefined);
  }

  /** One line on stdout. Raw text is written as the daemon sent it, unless it spans lines (stdio allows no embedded newline). */
  #emit(message: unknown, raw?: string): void {
    if (this.#output.destroyed || this.#output.writableEnded) return;
    const line = raw !== undefined && !/[\r\n]/.test(raw) ? raw.trim() : JSON.stringify(message);
    this.#output.write(`${line}\n`);
  }

  #fail(unit: Unit, failure: BridgeFailure): void {
    let answered = false;
    for (const id of unit.ids) {
      const key = idKey(id);
      const pending = this.#pending.get(key);
      if (pending?.unit !== unit) continue;
      this.#take(key);
      if (pending.cancelled) continue;
      answered = true;
      this.#write(errorResponse(id, failure));
    }
    const level = failure.code === BridgeErrorCode.SESSION_LOST || failure.code === BridgeErrorCode.STREAM_ENDED ? 'info' : 'warn';
    this.#log[level]({ code: failure.code, httpStatus: failure.httpStatus, kind: unit.kind, answered }, failure.message);
  }

  /** After a unit is done, a request still without an answer gets an error (never a hang). */
  #settle(unit: Unit): void {
    if (!this.#unanswered(unit)) return;
    if (this.#closed) {
      for (const id of unit.ids) if (this.#pending.get(idKey(id))?.unit === unit) this.#take(idKey(id));
      return;
    }
    this.#fail(unit, unit.cut ?? { code: BridgeErrorCode.STREAM_ENDED, message: 'mcpool bridge: the daemon ended the response stream without answering (the connection broke or the session ended)' });
  }

  /** A `notifications/cancelled` went out: the cancelled request's stream is closed, and no error is made up for it. */
  #afterCancel(unit: Unit): void {
    for (const id of unit.cancels) {
      const pending = this.#pending.get(idKey(id));
      if (!pending?.cancelled) continue;
      const target = pending.unit;
      if (target.ids.every((other) => this.#pending.get(idKey(other))?.cancelled !== false)) target.controller.abort();
    }
  }

  // ---- the session ----

  #markLost(): void {
    this.#lost = true;
    this.#sessionId = undefined;
    this.#stopStream();
  }

  /**
   * Re-initializes after a 404. Everyone who hit a 404 for the same session shares one
   * re-init; a 404 for an old session after a new one exists just retries on the new one.
   */
  #recover(deadSessionId: string | undefined, cause: 'request' | 'stream'): Promise<BridgeFailure | undefined> {
    if (this.#recovery) return this.#recovery;
    if (!this.#lost && this.#sessionId !== undefined && this.#sessionId !== deadSessionId) return Promise.resolve(undefined);
    if (!this.#init) return Promise.resolve({ code: BridgeErrorCode.REINIT_FAILED, message: 'mcpool bridge: the daemon lost the session before the client initialized' });
    const recovery = this.#reinitialize(this.#init, cause)
      .catch((error: unknown): BridgeFailure => {
        this.#log.error({ err: error }, 'bridge error (a bug) while re-initializing');
        return { code: BridgeErrorCode.REINIT_FAILED, message: `mcpool bridge: re-initializing failed: ${describe(error)}` };
      })
      .finally(() => {
        if (this.#recovery === recovery) this.#recovery = undefined;
      });
    this.#recovery = recovery;
    return recovery;
  }

  async #reinitialize(init: InitState, cause: 'request' | 'stream'): Promise<BridgeFailure | undefined> {
    const lostSession = this.#sessionId;
    this.#markLost();
    this.#generation++;
    const generation = this.#generation;
    // Requests being answered on the lost session will never get their answer.
    const cut: BridgeFailure = { code: BridgeErrorCode.SESSION_LOST, message: 'mcpool bridge: the daemon session was lost while this request was in flight (its outcome is unknown); the bridge re-initialized, retry if needed' };
    for (const unit of this.#units) {
      if (unit.phase === 'streaming' && unit.generation < generation) {
        unit.cut = cut;
        unit.controller.abort();
      }
    }
    this.#log.info({ cause, lostSession: lostSession !== undefined }, 'the daemon session is gone (404): re-initializing');
    const signal = withTimeout(this.#life.signal, this.#reinitTimeoutMs);
    const failed = (message: string, httpStatus?: number): BridgeFailure => {
      const failure: BridgeFailure = { code: BridgeErrorCode.REINIT_FAILED, message: `mcpool bridge: the daemon session expired and re-initializing failed: ${message}`, ...(httpStatus === undefined ? {} : { httpStatus }) };
      if (!this.#closed) this.#log.warn({ httpStatus }, failure.message);
      return failure;
    };

    // 1. initialize, with the client's params and the bridge's own id (the client's initialize is never answered twice).
    const id = `mcpool-bridge-reinit-${++this.#reinitSeq}`;
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: init.params });
    const sent = await this.#send((token) => ({ method: 'POST', headers: this.#headers(token, undefined, undefined, { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }), body }), signal);
    if (sent.kind === 'aborted') return failed(this.#closed ? 'the bridge is closing' : `no answer within ${this.#reinitTimeoutMs} ms`);
    if (sent.kind === 'failed') return { ...sent.failure, message: `mcpool bridge: the daemon session expired and re-initializing failed: ${sent.failure.message.replace(/^mcpool bridge: /, '')}` };
    if (!sent.response.ok) {
      const text = await sent.response.text().catch(() => '');
      return failed(httpFailure(sent.response.status, sent.response.statusText, text).message.replace(/^mcpool bridge: /, ''), sent.response.status);
    }
    const sessionId = sent.response.headers.get('mcp-session-id') ?? undefined;
    let answer: JsonRpcMessage | undefined;
    const unreadable = await this.#readAnswer(
      sent.response,
      signal,
      undefined,
      (message, raw) => {
        if (isResponse(message) && message.id === id) answer = message;
        else this.#fromDaemon(message, raw);
      },
      () => answer === undefined,
    );
    if (unreadable) return failed(unreadable.message);
    if (!answer || !isMessage(answer.result)) return failed(answer ? `initialize returned an error: ${JSON.stringify(answer.error)}` : 'initialize got no answer');
    if (generation !== this.#generation || this.#closed) return failed('superseded');
    const result = answer.result as { protocolVersion?: unknown };
    // The MCP-Protocol-Version header goes on every request after the re-init too (the MCP spec (2025-11-25) requires it).
    const protocolVersion = typeof result.protocolVersion === 'string' ? result.protocolVersion : this.#protocolVersion;

    // 2. notifications/initialized, if the client had sent it.
    if (init.initializedSent) {
      const notified = await this.#send(
        (token) => ({
          method: 'POST',
          headers: this.#headers(token, sessionId, protocolVersion, { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }),
          body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
        }),
        signal,
      );
      if (notified.kind !== 'response') return failed(notified.kind === 'failed' ? notified.failure.message : 'aborted');
      await notified.response.body?.cancel().catch(() => undefined);
      if (!notified.response.ok) return failed(`notifications/initialized answered ${notified.response.status}`, notified.response.status);
    }
    if (generation !== this.#generation || this.#closed) return failed('superseded');

    // 3. What the client had set on the lost session: its log level, its resource subscriptions.
    if (init.initializedSent) await this.#replayState(init, sessionId, protocolVersion, signal);
    if (generation !== this.#generation || this.#closed) return failed('superseded');

    // 4. The new session is live.
    this.#sessionId = sessionId;
    this.#protocolVersion = protocolVersion;
    this.#lost = false;
    this.#streamBorn = cause === 'stream';
    this.#reinits++;
    this.#log.info({ reinits: this.#reinits, cause }, 're-initialized: a new daemon session');
    if (init.initializedSent) {
      this.#openStream();
      // The lists may differ now; tell the client for what it was told it could list.
      for (const [capability, method] of LIST_CHANGED) {
        if (init.capabilities?.[capability] !== undefined) this.#write({ jsonrpc: '2.0', method });
      }
    }
    return undefined;
  }

  /** Re-sends `logging/setLevel` and `resources/subscribe` on a new session; a failure is logged, not fatal. */
  async #replayState(init: InitState, sessionId: string | undefined, protocolVersion: string | undefined, signal: AbortSignal): Promise<void> {
    const requests: { method: string; params: unknown }[] = [];
    if (init.logLevel !== undefined) requests.push({ method: 'logging/setLevel', params: init.logLevel });
    for (const uri of init.subscriptions) requests.push({ method: 'resources/subscribe', params: { uri } });
    for (const { method, params } of requests) {
      const id = `mcpool-bridge-replay-${++this.#reinitSeq}`;
      const sent = await this.#send(
        (token) => ({
          method: 'POST',
          headers: this.#headers(token, sessionId, protocolVersion, { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }),
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        }),
        signal,
      );
      if (sent.kind !== 'response') return;
      if (!sent.response.ok) {
        await sent.response.body?.cancel().catch(() => undefined);
        this.#log.warn({ method, httpStatus: sent.response.status }, `re-init: replaying ${method} failed`);
        continue;
      }
      let answer: JsonRpcMessage | undefined;
      await this.#readAnswer(
        sent.response,
        signal,
        sessionId,
        (message, raw) => {
          if (isResponse(message) && message.id === id) answer = message;
          else this.#fromDaemon(message, raw);
        },
        () => answer === undefined,
      );
      if (answer?.error !== undefined) this.#log.warn({ method }, `re-init: replaying ${method} failed`);
    }
  }

  // ---- the GET stream ----

  #openStream(): void {
    this.#stopStream();
    const sessionId = this.#sessionId;
    if (sessionId === undefined || this.#closed) return;
    const stream = { controller: new AbortController(), generation: this.#generation, opened: false };
    this.#stream = stream;
    void this.#streamLoop(stream, sessionId).catch((error: unknown) => this.#log.error({ err: error }, 'bridge error (a bug): the GET stream stopped'));
  }

  #stopStream(): void {
    this.#stream?.controller.abort();
    this.#stream = undefined;
  }

  #backoff(failures: number): number {
    const { initialMs, maxMs } = this.#streamBackoff;
    return Math.min(initialMs * 2 ** Math.max(0, failures - 1), maxMs);
  }

  async #streamLoop(stream: { controller: AbortController; generation: number; opened: boolean }, sessionId: string): Promise<void> {
    const signal = AbortSignal.any([stream.controller.signal, this.#life.signal]);
    let failures = 0;
    let lastEventId: string | undefined;
    let retryMs: number | undefined;
    const live = (): boolean => !signal.aborted && stream.generation === this.#generation;
    while (live()) {
      let response: Response | undefined;
      try {
        const headers = this.#headers(await this.#token.get(), sessionId, this.#protocolVersion, { accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) });
        response = await this.#fetch(this.#url, { method: 'GET', headers, signal, redirect: 'manual' });
      } catch (error) {
        if (!live()) return;
        if (failures === 0) this.#log.debug({ error: describe(error) }, 'the GET stream cannot connect: retrying');
      }
      if (response?.status === 405) {
        await response.body?.cancel().catch(() => undefined);
        this.#log.debug('the daemon offers no GET stream (405)');
        return;
      }
      if (response?.status === 404) {
        await response.body?.cancel().catch(() => undefined);
        if (!live() || this.#sessionId !== sessionId) return;
        // A fresh session whose first GET 404s, born of a GET 404 itself, would loop: leave it to the next request.
        if (this.#streamBorn && !stream.opened) {
          this.#log.warn('the GET stream of the new session answers 404 too: waiting for the next request to recover');
          return;
        }
        void this.#recover(sessionId, 'stream');
        return;
      }
      if (response?.ok && mediaType(response) === 'text/event-stream' && response.body !== null) {
        if (!stream.opened) this.#log.debug('GET stream open');
        stream.opened = true;
        const read = await this.#readSse(response.body, signal, (message, raw) => this.#fromDaemon(message, raw));
        lastEventId = read.lastEventId ?? lastEventId;
        retryMs = read.retryMs ?? retryMs;
        failures = read.events > 0 ? 1 : failures + 1;
      } else {
        if (response) {
          await response.body?.cancel().catch(() => undefined);
          if (failures === 0) this.#log.debug({ status: response.status }, 'the GET stream was refused: retrying');
        }
        failures++;
      }
      if (!live()) return;
      try {
        await delay(retryMs ?? this.#backoff(failures), undefined, { signal });
      } catch {
        return;
      }
    }
  }

  async #deleteSession(sessionId: string): Promise<void> {
    try {
      const token = await this.#token.get();
      const response = await this.#fetch(this.#url, {
        method: 'DELETE',
        headers: this.#headers(token, sessionId, this.#protocolVersion, {}),
        signal: AbortSignal.timeout(this.#deleteTimeoutMs),
        redirect: 'manual',
      });
      await response.body?.cancel().catch(() => undefined);
      this.#log.debug({ status: response.status }, 'DELETE of the daemon session');
    } catch (error) {
      this.#log.debug({ error: describe(error) }, 'DELETE of the daemon session failed');
    }
  }
}
