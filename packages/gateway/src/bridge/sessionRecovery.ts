/**
 * Session recovery. When the daemon answers 404 for a session-bearing message (an expired
 * session, a restarted daemon), the bridge drops the session id, replays `initialize` with the
 * client's params under its own request id (the client never sees a second answer to its
 * `initialize`) and `notifications/initialized`, restores what the client had set on the lost
 * session (its last `logging/setLevel`, its `resources/subscribe`s), and tells the client to
 * refresh its lists (`notifications/{tools,prompts,resources}/list_changed` for the capabilities
 * it was told about). Requests being answered on the lost session get errors (their outcome is
 * unknown). One re-init serves every message that hit the same 404; a failed one is an error for
 * those messages, never a loop, and the next message tries again.
 */
import type { OnMessage } from './answerReader.js';
import { discard, describeError, type DaemonHttp, type SessionHeaders } from './daemonHttp.js';
import type { GetStream } from './getStream.js';
import { BridgeErrorCode, httpFailure, isMessage, isResponse, type BridgeFailure, type JsonRpcMessage } from './jsonRpc.js';
import type { BridgeLogger } from './options.js';
import type { DaemonSession, InitState } from './session.js';

const LIST_CHANGED = [
  ['tools', 'notifications/tools/list_changed'],
  ['prompts', 'notifications/prompts/list_changed'],
  ['resources', 'notifications/resources/list_changed'],
] as const;

/** Who asked for a recovery: a request that got 404, or the GET stream. */
export type RecoveryCause = 'request' | 'stream';

export interface SessionRecoveryOptions {
  session: DaemonSession;
  http: DaemonHttp;
  stream: GetStream;
  log: BridgeLogger;
  /** Aborted when the bridge closes. */
  life: AbortSignal;
  /** Bound on one re-initialization, retries included. */
  reinitTimeoutMs: number;
  /** Reads a POST answer (see `answerReader.ts`). */
  readAnswer(response: Response, signal: AbortSignal, sessionId: string | undefined, onMessage: OnMessage, unanswered: () => boolean): Promise<BridgeFailure | undefined>;
  /** A message of the daemon that is not the recovery's own answer: for the client. */
  onMessage: OnMessage;
  /** Writes a message of the bridge's own to the client. */
  write(message: JsonRpcMessage): void;
  /** Cuts every answer still being read on a session older than `generation`, with `failure`. */
  cutOlderThan(generation: number, failure: BridgeFailure): void;
}

const withTimeout = (signal: AbortSignal, ms: number): AbortSignal => AbortSignal.any([signal, AbortSignal.timeout(ms)]);

export class SessionRecovery {
  readonly #o: SessionRecoveryOptions;
  #recovery: Promise<BridgeFailure | undefined> | undefined;
  #reinits = 0;
  #seq = 0;

  constructor(options: SessionRecoveryOptions) {
    this.#o = options;
  }

  /** Successful re-initializations. */
  get reinits(): number {
    return this.#reinits;
  }

  /** The bridge holds no live session any more (its stream stops); the next message recovers. */
  markLost(): void {
    this.#o.session.lost = true;
    this.#o.session.id = undefined;
    this.#o.stream.stop();
  }

  /** Before a message is sent: waits for a recovery in progress, and starts one when the session was lost earlier. */
  gate(): Promise<BridgeFailure | undefined> | undefined {
    if (this.#recovery) return this.#recovery;
    if (this.#o.session.lost) return this.recover(undefined, 'request');
    return undefined;
  }

  /**
   * Re-initializes after a 404. Everyone who hit a 404 for the same session shares one
   * re-init; a 404 for an old session after a new one exists just retries on the new one.
   */
  recover(deadSessionId: string | undefined, cause: RecoveryCause): Promise<BridgeFailure | undefined> {
    if (this.#recovery) return this.#recovery;
    const { session } = this.#o;
    if (!session.lost && session.id !== undefined && session.id !== deadSessionId) return Promise.resolve(undefined);
    if (!session.init) return Promise.resolve({ code: BridgeErrorCode.REINIT_FAILED, message: 'mcpool bridge: the daemon lost the session before the client initialized' });
    const recovery = this.#reinitialize(session.init, cause)
      .catch((error: unknown): BridgeFailure => {
        this.#o.log.error({ err: error }, 'bridge error (a bug) while re-initializing');
        return { code: BridgeErrorCode.REINIT_FAILED, message: `mcpool bridge: re-initializing failed: ${describeError(error)}` };
      })
      .finally(() => {
        if (this.#recovery === recovery) this.#recovery = undefined;
      });
    this.#recovery = recovery;
    return recovery;
  }

  async #reinitialize(init: InitState, cause: RecoveryCause): Promise<BridgeFailure | undefined> {
    const { session, http, log, life } = this.#o;
    const lostSession = session.id;
    this.markLost();
    session.generation++;
    const generation = session.generation;
    // Requests being answered on the lost session will never get their answer.
    this.#o.cutOlderThan(generation, {
      code: BridgeErrorCode.SESSION_LOST,
      message: 'mcpool bridge: the daemon session was lost while this request was in flight (its outcome is unknown); the bridge re-initialized, retry if needed',
    });
    log.info({ cause, lostSession: lostSession !== undefined }, 'the daemon session is gone (404): re-initializing');
    const signal = withTimeout(life, this.#o.reinitTimeoutMs);
    const failed = (message: string, httpStatus?: number): BridgeFailure => {
      const failure: BridgeFailure = { code: BridgeErrorCode.REINIT_FAILED, message: `mcpool bridge: the daemon session expired and re-initializing failed: ${message}`, ...(httpStatus === undefined ? {} : { httpStatus }) };
      if (!life.aborted) log.warn({ httpStatus }, failure.message);
      return failure;
    };
    const superseded = (): boolean => generation !== session.generation || life.aborted;

    // 1. initialize, with the client's params and the bridge's own id (the client's initialize is never answered twice).
    const id = `mcpool-bridge-reinit-${++this.#seq}`;
    const sent = await http.post(JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: init.params }), { sessionId: undefined, protocolVersion: undefined }, signal);
    if (sent.kind === 'aborted') return failed(life.aborted ? 'the bridge is closing' : `no answer within ${this.#o.reinitTimeoutMs} ms`);
    if (sent.kind === 'failed') return { ...sent.failure, message: `mcpool bridge: the daemon session expired and re-initializing failed: ${sent.failure.message.replace(/^mcpool bridge: /, '')}` };
    if (!sent.response.ok) {
      const text = await sent.response.text().catch(() => '');
      return failed(httpFailure(sent.response.status, sent.response.statusText, text).message.replace(/^mcpool bridge: /, ''), sent.response.status);
    }
    const sessionId = sent.response.headers.get('mcp-session-id') ?? undefined;
    const answer = await this.#ask(sent.response, signal, undefined, id);
    if (answer.unreadable) return failed(answer.unreadable.message);
    if (!answer.message || !isMessage(answer.message.result)) return failed(answer.message ? `initialize returned an error: ${JSON.stringify(answer.message.error)}` : 'initialize got no answer');
    if (superseded()) return failed('superseded');
    const result = answer.message.result as { protocolVersion?: unknown };
    // The MCP-Protocol-Version header goes on every request after the re-init too (the MCP spec (2025-11-25) requires it).
    const on: SessionHeaders = { sessionId, protocolVersion: typeof result.protocolVersion === 'string' ? result.protocolVersion : session.protocolVersion };

    // 2. notifications/initialized, if the client had sent it.
    if (init.initializedSent) {
      const notified = await http.post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), on, signal);
      if (notified.kind !== 'response') return failed(notified.kind === 'failed' ? notified.failure.message : 'aborted');
      await discard(notified.response);
      if (!notified.response.ok) return failed(`notifications/initialized answered ${notified.response.status}`, notified.response.status);
    }
    if (superseded()) return failed('superseded');

    // 3. What the client had set on the lost session: its log level, its resource subscriptions.
    if (init.initializedSent) await this.#replayState(init, on, signal);
    if (superseded()) return failed('superseded');

    // 4. The new session is live.
    session.id = on.sessionId;
    session.protocolVersion = on.protocolVersion;
    session.lost = false;
    session.streamBorn = cause === 'stream';
    this.#reinits++;
    log.info({ reinits: this.#reinits, cause }, 're-initialized: a new daemon session');
    if (init.initializedSent) {
      this.#o.stream.open();
      // The lists may differ now; tell the client for what it was told it could list.
      for (const [capability, method] of LIST_CHANGED) {
        if (init.capabilities?.[capability] !== undefined) this.#o.write({ jsonrpc: '2.0', method });
      }
    }
    return undefined;
  }

  /** Re-sends `logging/setLevel` and `resources/subscribe` on a new session; a failure is logged, not fatal. */
  async #replayState(init: InitState, on: SessionHeaders, signal: AbortSignal): Promise<void> {
    const requests: { method: string; params: unknown }[] = [];
    if (init.logLevel !== undefined) requests.push({ method: 'logging/setLevel', params: init.logLevel });
    for (const uri of init.subscriptions) requests.push({ method: 'resources/subscribe', params: { uri } });
    for (const { method, params } of requests) {
      const id = `mcpool-bridge-replay-${++this.#seq}`;
      const sent = await this.#o.http.post(JSON.stringify({ jsonrpc: '2.0', id, method, params }), on, signal);
      if (sent.kind !== 'response') return;
      if (!sent.response.ok) {
        await discard(sent.response);
        this.#o.log.warn({ method, httpStatus: sent.response.status }, `re-init: replaying ${method} failed`);
        continue;
      }
      const answer = await this.#ask(sent.response, signal, on.sessionId, id);
      if (answer.message?.error !== undefined) this.#o.log.warn({ method }, `re-init: replaying ${method} failed`);
    }
  }

  /** Reads the answer to the bridge's own request `id`; every other message goes to the client. */
  async #ask(response: Response, signal: AbortSignal, sessionId: string | undefined, id: string): Promise<{ message: JsonRpcMessage | undefined; unreadable: BridgeFailure | undefined }> {
    let message: JsonRpcMessage | undefined;
    const unreadable = await this.#o.readAnswer(
      response,
      signal,
      sessionId,
      (received, raw) => {
        if (isResponse(received) && received.id === id) message = received;
        else this.#o.onMessage(received, raw);
      },
      () => message === undefined,
    );
    return { message, unreadable };
  }
}
