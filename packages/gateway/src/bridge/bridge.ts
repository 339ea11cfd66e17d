/**
 * The bridge: a stdio MCP client ↔ a Streamable HTTP MCP endpoint (the daemon's `/mcp`, or one
 * of its per-server paths). `mcpool bridge` runs it on its own stdin and stdout; a host may run
 * it on any pair of streams (an IDE extension, a test).
 *
 * A raw JSON-RPC relay, not an SDK Client + Server pair: each line the client writes is POSTed
 * as written, and every message the daemon sends (JSON or SSE answers, the GET stream) is written
 * to stdout as sent, so nothing the SDK would drop or re-validate is lost.
 *
 * This file is the relay itself: the client's lines become units (one POST each) whose requests
 * wait for their answers, and each request gets exactly one answer or one error, never a hang.
 * - **Order.** Messages a client sends before its `initialize` is answered wait for that answer
 *   (they need its session id); everything else is sent at once, concurrently, in input order.
 * - **Cancellation.** A `notifications/cancelled` closes the cancelled request's stream, and no
 *   error is made up for it.
 * - **Exit with the client.** On stdin EOF or `close()`: a short grace for answers in flight, DELETE
 *   of the daemon session, done — within a second.
 * Beside it, each in its own file: the HTTP to the daemon with its retries (`daemonHttp.ts`),
 * reading answers and resuming them (`answerReader.ts`), the GET stream (`getStream.ts`), session
 * recovery after a 404 (`sessionRecovery.ts`) and the 2026-07-28 face (`modern.ts`).
 *
 * It never writes anything but JSON-RPC lines to its output (stdout is MCP): logs go to the logger.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Readable, Writable } from 'node:stream';
import { readAnswer, type AnswerContext, type OnMessage } from './answerReader.js';
import { DaemonHttp, discard } from './daemonHttp.js';
import { GetStream } from './getStream.js';
import { BridgeErrorCode, errorResponse, httpFailure, idKey, isMessage, isNotification, isRequest, isResponse, type BridgeFailure, type JsonRpcMessage, type RequestId } from './jsonRpc.js';
import { LineReader } from '@mcpool/protocol/lineReader';
import { ModernFront } from './modern.js';
import type { BridgeLogger, BridgeOptions, BridgeStats } from './options.js';
import { DaemonSession } from './session.js';
import { SessionRecovery } from './sessionRecovery.js';

type UnitKind = 'initialize' | 'initialized' | 'response' | 'message';

/** The longest line a stdio client may send: 32 MiB, far above any body the daemon accepts. */
const MAX_CLIENT_LINE_BYTES = 32 * 1024 * 1024;

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

type Exchange = { kind: 'done' } | { kind: 'gone'; sessionId: string } | { kind: 'failed'; failure: BridgeFailure } | { kind: 'aborted' };

/**
 * Relays one stdio MCP client to a Streamable HTTP endpoint until the client closes its input
 * or {@link Bridge.close} is called: `new Bridge(options)` does nothing until {@link Bridge.run}.
 */
export class Bridge {
  readonly #url: string;
  readonly #input: Readable;
  readonly #output: Writable;
  readonly #log: BridgeLogger;
  readonly #closeGraceMs: number;
  readonly #deleteTimeoutMs: number;
  readonly #ready: Promise<unknown>;
  /** Serves a 2026-07-28 client over the legacy session; passes a legacy client through. */
  readonly #front: ModernFront;

  /** Aborted at close: every fetch and wait hangs off it. */
  readonly #life = new AbortController();
  readonly #http: DaemonHttp;
  readonly #session = new DaemonSession();
  readonly #stream: GetStream;
  readonly #recovery: SessionRecovery;
  readonly #answers: AnswerContext;
  readonly #pending = new Map<string, Pending>();
  readonly #units = new Set<Unit>();
  /** Called when the last pending request is answered (close waits for it). */
  #onIdle: (() => void) | undefined;

  /** The client's initialize is under way: other messages wait for it. */
  #initializing: Promise<void> | undefined;
  #initializingDone: (() => void) | undefined;

  #closing: Promise<void> | undefined;
  #resolveDone!: () => void;
  readonly #done = new Promise<void>((resolve) => (this.#resolveDone = resolve));

  constructor(options: BridgeOptions) {
    const url = new URL(options.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`options.url must be an http(s) URL, got ${url.protocol}`);
    this.#url = url.href;
    this.#input = options.input;
    this.#output = options.output;
    this.#log = options.logger;
    this.#closeGraceMs = options.closeGraceMs ?? 300;
    this.#deleteTimeoutMs = options.deleteTimeoutMs ?? 400;
    this.#ready = (options.ready ?? Promise.resolve()).catch(() => undefined);
    this.#http = new DaemonHttp({
      url: this.#url,
      token: options.token,
      fetch: options.fetch ?? globalThis.fetch,
      logger: this.#log,
      retryDelaysMs: options.retryDelaysMs ?? [100, 200, 400, 800, 1600],
      onUnreachable: options.onUnreachable,
      life: this.#life.signal,
    });
    const backoff = options.streamBackoff ?? { initialMs: 100, maxMs: 2000 };
    const fromDaemon: OnMessage = (message, raw) => this.#fromDaemon(message, raw);
    this.#answers = { http: this.#http, log: this.#log, backoff, current: () => this.#session.headers };
    this.#stream = new GetStream({
      http: this.#http,
      session: this.#session,
      log: this.#log,
      backoff,
      life: this.#life.signal,
      onMessage: fromDaemon,
      onGone: (sessionId) => void this.#recovery.recover(sessionId, 'stream'),
    });
    this.#recovery = new SessionRecovery({
      session: this.#session,
      http: this.#http,
      stream: this.#stream,
      log: this.#log,
      life: this.#life.signal,
      reinitTimeoutMs: options.reinitTimeoutMs ?? 30_000,
      readAnswer: (response, signal, sessionId, onMessage, unanswered) => readAnswer(response, signal, sessionId, onMessage, unanswered, this.#answers),
      onMessage: fromDaemon,
      write: (message) => this.#write(message),
      cutOlderThan: (generation, failure) => {
        for (const unit of this.#units) {
          if (unit.phase === 'streaming' && unit.generation < generation) {
            unit.cut = failure;
            unit.controller.abort();
          }
        }
      },
    });
    this.#front = new ModernFront({
      submit: (message) => this.#accept(JSON.stringify(message), true),
      emit: (message) => this.#emit(message),
      logger: this.#log,
      clientVersion: options.version ?? '0.0.0',
    });
  }

  /** What the bridge has done so far (a fresh snapshot each read). */
  get stats(): BridgeStats {
    return { sessionId: this.#session.id, protocolVersion: this.#session.protocolVersion, reinits: this.#recovery.reinits, pending: this.#pending.size, era: this.#front.era };
  }

  /** Relays until the input ends or `close()` is called; resolves when the bridge is done (session deleted). */
  run(): Promise<void> {
    const reader = new LineReader({ maxLineBytes: MAX_CLIENT_LINE_BYTES });
    const accept = (): void => {
      for (let line = reader.next(); line !== undefined; line = reader.next()) {
        if (typeof line === 'string') this.#accept(line);
        else this.#log.warn({ bytes: line.bytes }, 'a client line over the size cap was dropped');
      }
    };
    const onData = (chunk: Buffer | string): void => {
      reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      accept();
    };
    const onEnd = (): void => {
      reader.end();
      accept();
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
      this.#stream.stop();
      const session = this.#session.headers;
      this.#session.id = undefined;
      this.#life.abort(new Error('bridge closed'));
      for (const unit of this.#units) unit.controller.abort();
      if (session.sessionId !== undefined) await this.#http.deleteSession({ ...session, sessionId: session.sessionId }, this.#deleteTimeoutMs);
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
    const unit: Unit = { text: line, kind, ids: [], controller: new AbortController(), phase: 'queued', generation: this.#session.generation, cancels: [] };
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
    if (kind === 'initialized' && this.#session.init) this.#session.init.initializedSent = true;
    this.#session.remember(list);
    for (const id of unit.cancels) {
      const pending = this.#pending.get(idKey(id));
      if (pending) pending.cancelled = true;
    }
    this.#units.add(unit);
    void this.#deliver(unit)
      .finally(() => {
        if (kind === 'initialize' && this.#session.init?.requestKey === idKey(unit.ids[0]!)) {
          this.#initializingDone?.();
          this.#initializing = undefined;
        }
        unit.phase = 'done';
        this.#units.delete(unit);
        this.#settle(unit);
        this.#afterCancel(unit);
      })
      .catch((error: unknown) => this.#log.error({ err: error }, 'bridge error (a bug): the message was not relayed'));
  }

  /** The client's own initialize starts a new session (a second one replaces the first). */
  #beginSession(message: JsonRpcMessage & { id: RequestId }): void {
    this.#stream.stop();
    const previous = this.#session.begin(message);
    // Messages a client sends before its initialize is answered (it should not) wait for the answer.
    let opened!: () => void;
    this.#initializing = new Promise<void>((resolve) => (opened = resolve));
    this.#initializingDone = opened;
    if (previous !== undefined) void this.#http.deleteSession({ sessionId: previous, protocolVersion: this.#session.protocolVersion }, this.#deleteTimeoutMs);
  }

  async #deliver(unit: Unit): Promise<void> {
    await this.#ready;
    if (this.#closed) return;
    if (unit.kind !== 'initialize') {
      // A response (to a ping the daemon sent during initialize) never waits for the initialize.
      if (unit.kind !== 'response' && this.#initializing) await this.#initializing;
      const failure = await this.#recovery.gate();
      if (failure) return this.#fail(unit, failure);
    }
    let outcome = await this.#exchange(unit);
    if (outcome.kind === 'gone' && unit.kind !== 'message' && unit.generation !== this.#session.generation) {
      // An `initialized` or a response for a session the client's own initialize has replaced: it
      // belongs to that session alone, so it is dropped (no recovery: the new session is on its way).
      this.#log.debug({ kind: unit.kind }, 'a message for a replaced session was dropped');
      return;
    }
    if (outcome.kind === 'gone') {
      // A 404 for a session-bearing message: the session is gone. Re-initialize (once for everyone who hit it) and retry once.
      const failure = await this.#recovery.recover(outcome.sessionId, 'request');
      if (failure) return this.#fail(unit, failure);
      if (unit.kind === 'response') {
        // It answered a request of the lost session: the new one never asked.
        this.#log.info('a client response for the lost session was dropped');
        return;
      }
      outcome = await this.#exchange(unit);
      if (outcome.kind === 'gone') {
        if (this.#session.id === outcome.sessionId) this.#recovery.markLost();
        return this.#fail(unit, { code: BridgeErrorCode.SESSION_NOT_FOUND, message: 'mcpool bridge: the daemon answered 404 (session not found) again right after re-initializing', httpStatus: 404 });
      }
    }
    if (outcome.kind === 'failed') this.#fail(unit, outcome.failure);
  }

  /** One POST of `unit` and the reading of its answer. */
  async #exchange(unit: Unit): Promise<Exchange> {
    const initialize = unit.kind === 'initialize';
    const session = initialize ? { sessionId: undefined, protocolVersion: undefined } : this.#session.headers;
    const generation = this.#session.generation;
    unit.generation = generation;
    unit.phase = 'sending';
    const sent = await this.#http.post(unit.text, session, unit.controller.signal);
    if (sent.kind !== 'response') return sent;
    const { response } = sent;
    if (response.status === 404 && session.sessionId !== undefined) {
      await discard(response);
      return { kind: 'gone', sessionId: session.sessionId };
    }
    if (!response.ok) {
      const body = await response.text().catch(() => '');
      return { kind: 'failed', failure: httpFailure(response.status, response.statusText, body) };
    }
    if (initialize && generation === this.#session.generation) {
      // Before the answer reaches the client, which may send the next message at once.
      this.#session.id = response.headers.get('mcp-session-id') ?? undefined;
    }
    if (unit.kind === 'initialized' && generation === this.#session.generation) this.#stream.open();
    unit.phase = 'streaming';
    const failure = await readAnswer(response, unit.controller.signal, session.sessionId, (message, raw) => this.#fromDaemon(message, raw), () => this.#unanswered(unit), this.#answers);
    if (unit.controller.signal.aborted) return { kind: 'aborted' };
    return failure ? { kind: 'failed', failure } : { kind: 'done' };
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

  // ---- to the client ----

  #fromDaemon(message: JsonRpcMessage, raw: string | undefined): void {
    if (isResponse(message)) {
      const key = idKey(message.id);
      this.#take(key);
      if (key === this.#session.init?.requestKey) this.#session.initialized(message.result);
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
}
