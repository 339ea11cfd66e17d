/**
 * The bridge's HTTP to the daemon: every request carries the bearer token, the session id and the
 * negotiated protocol version it is sent on, and never follows a redirect.
 *
 * A daemon that does not answer: connection-refused (and the other failures to connect) is retried
 * with a bounded backoff, and with autostart the daemon is started once; then the request fails.
 * Only failures to connect are retried: a request that may have reached the daemon is never sent
 * twice. A 401 is retried once with a re-read token (a restarted daemon may have written a new one).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { BridgeErrorCode, type BridgeFailure } from './jsonRpc.js';
import type { BridgeLogger, TokenSource } from './options.js';

/** What a send came to: the daemon's response, a failure to reach it, or the caller's abort. */
export type Sent = { kind: 'response'; response: Response } | { kind: 'failed'; failure: BridgeFailure } | { kind: 'aborted' };

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

/** A network error in a few words: its code when it has one. */
export const describeError = (error: unknown): string => errorCodes(error)[0] ?? (error instanceof Error ? error.message : String(error));

/** The media type of a response, without its parameters. */
export const mediaType = (response: Response): string => (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();

/** Drops a response body the bridge does not read. */
export const discard = (response: Response): Promise<void> => response.body?.cancel().catch(() => undefined) ?? Promise.resolve();

/** The session a request is sent on: its id and protocol version, each absent before the session has one. */
export interface SessionHeaders {
  sessionId: string | undefined;
  protocolVersion: string | undefined;
}

export interface DaemonHttpOptions {
  url: string;
  token: TokenSource;
  fetch: typeof fetch;
  logger: BridgeLogger;
  /** Delays between attempts to reach a daemon that refuses connections. */
  retryDelaysMs: readonly number[];
  /** Called when the daemon refuses a connection; resolves true when it answers now (autostart). */
  onUnreachable: (() => Promise<boolean>) | undefined;
  /** Aborted when the bridge closes: every request hangs off it. */
  life: AbortSignal;
}

export class DaemonHttp {
  readonly url: string;
  readonly #token: TokenSource;
  readonly #fetch: typeof fetch;
  readonly #log: BridgeLogger;
  readonly #retryDelays: readonly number[];
  readonly #onUnreachable: (() => Promise<boolean>) | undefined;
  readonly #life: AbortSignal;

  constructor(options: DaemonHttpOptions) {
    this.url = options.url;
    this.#token = options.token;
    this.#fetch = options.fetch;
    this.#log = options.logger;
    this.#retryDelays = options.retryDelaysMs;
    this.#onUnreachable = options.onUnreachable;
    this.#life = options.life;
  }

  /** POSTs one JSON-RPC line (as written) on `session`. */
  post(body: string, session: SessionHeaders, signal: AbortSignal): Promise<Sent> {
    return this.send((token) => ({ method: 'POST', headers: this.headers(token, session, { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }), body }), signal);
  }

  /**
   * A fetch with bounded connection retries for a daemon that is down (and the autostart hook), and one retry
   * with a re-read token after a 401.
   */
  async send(init: (token: string | undefined) => RequestInit, signal: AbortSignal): Promise<Sent> {
    const combined = AbortSignal.any([signal, this.#life]);
    let token = await this.#token.get();
    let refreshed = false;
    let started = false;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.#fetch(this.url, { ...init(token), signal: combined, redirect: 'manual' });
      } catch (error) {
        if (combined.aborted) return { kind: 'aborted' };
        if (!isConnectError(error)) return { kind: 'failed', failure: { code: BridgeErrorCode.UNREACHABLE, message: `mcpool bridge: the request to ${this.url} failed: ${describeError(error)}` } };
        if (this.#onUnreachable && !started) {
          started = true;
          if (await this.#onUnreachable()) {
            token = await this.#token.refresh();
            continue;
          }
        }
        if (attempt >= this.#retryDelays.length) {
          return { kind: 'failed', failure: { code: BridgeErrorCode.UNREACHABLE, message: `mcpool bridge: the daemon at ${this.url} does not answer (${describeError(error)}, ${attempt + 1} attempts); is \`mcpool serve\` running?` } };
        }
        this.#log.debug({ attempt: attempt + 1, error: describeError(error) }, 'the daemon does not answer: retrying');
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
          await discard(response);
          token = fresh;
          this.#log.info('401: retrying with the re-read token');
          continue;
        }
      }
      return { kind: 'response', response };
    }
  }

  /**
   * One GET of the session's server-sent events, without the retries of {@link send} (the stream
   * reconnects on its own schedule); throws what fetch throws.
   */
  async openEvents(session: SessionHeaders, lastEventId: string | undefined, signal: AbortSignal): Promise<Response> {
    const headers = this.headers(await this.#token.get(), session, { accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) });
    return this.#fetch(this.url, { method: 'GET', headers, signal, redirect: 'manual' });
  }

  /** DELETEs the daemon session, bounded by `timeoutMs`; a failure is logged, never thrown. */
  async deleteSession(session: SessionHeaders & { sessionId: string }, timeoutMs: number): Promise<void> {
    try {
      const token = await this.#token.get();
      const response = await this.#fetch(this.url, { method: 'DELETE', headers: this.headers(token, session, {}), signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
      await discard(response);
      this.#log.debug({ status: response.status }, 'DELETE of the daemon session');
    } catch (error) {
      this.#log.debug({ error: describeError(error) }, 'DELETE of the daemon session failed');
    }
  }

  headers(token: string | undefined, session: SessionHeaders, extra: Record<string, string>): Record<string, string> {
    return {
      ...extra,
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(session.sessionId === undefined ? {} : { 'mcp-session-id': session.sessionId }),
      ...(session.protocolVersion === undefined ? {} : { 'mcp-protocol-version': session.protocolVersion }),
    };
  }
}
