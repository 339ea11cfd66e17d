/**
 * Reading what the daemon answers: a POST's JSON (one message or a batch) or its SSE stream, and
 * the GET stream's events. Every message is handed on as the daemon sent it (the raw text with it,
 * when it was one message), so nothing the bridge does not understand is lost.
 *
 * SSE resumption: a POST stream that ends before its answers, after the daemon gave event ids, is
 * resumed with GET + `Last-Event-ID` after the stream's `retry:` (else the reconnect backoff),
 * at most 5 times in a row without an event, and only while its session is still the bridge's.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { discard, describeError, mediaType, type DaemonHttp, type SessionHeaders } from './daemonHttp.js';
import { BridgeErrorCode, isMessage, type BridgeFailure, type JsonRpcMessage } from './jsonRpc.js';
import type { BridgeLogger } from './options.js';

/** Receives each message of an answer, with its raw text when the daemon sent it alone. */
export type OnMessage = (message: JsonRpcMessage, raw: string | undefined) => void;

/** What one SSE body carried besides its messages: where to resume, and how soon. */
export interface SseRead {
  lastEventId: string | undefined;
  retryMs: number | undefined;
  events: number;
}

/** The pause before reconnect `failures` (1, 2, …) of a stream: doubling from `initialMs`, at most `maxMs`. */
export function reconnectDelay(backoff: { initialMs: number; maxMs: number }, failures: number): number {
  return Math.min(backoff.initialMs * 2 ** Math.max(0, failures - 1), backoff.maxMs);
}

/** Reads an SSE body to its end (or until `signal`); a broken connection just ends it. */
export async function readSse(body: ReadableStream<Uint8Array>, signal: AbortSignal, onMessage: OnMessage, log: BridgeLogger): Promise<SseRead> {
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
        log.warn('an SSE event that is not JSON was skipped');
        continue;
      }
      const list = Array.isArray(parsed) ? parsed : [parsed];
      for (const message of list) if (isMessage(message)) onMessage(message, Array.isArray(parsed) ? undefined : event.data);
    }
  } catch (error) {
    if (!signal.aborted) log.debug({ error: describeError(error) }, 'an SSE stream broke');
  } finally {
    signal.removeEventListener('abort', cancel);
  }
  return { lastEventId, retryMs, events };
}

/** What reading a POST answer needs of the bridge. */
export interface AnswerContext {
  http: DaemonHttp;
  log: BridgeLogger;
  backoff: { initialMs: number; maxMs: number };
  /** The session the bridge holds now (a stream is resumed only on the session it was sent on). */
  current(): SessionHeaders;
}

/**
 * Reads a POST answer: JSON (one message or a batch) or SSE, resumed as this file says.
 * `unanswered` tells whether requests of the POST still wait for their answer.
 * Returns a failure only for an answer the bridge cannot read.
 */
export async function readAnswer(
  response: Response,
  signal: AbortSignal,
  sessionId: string | undefined,
  onMessage: OnMessage,
  unanswered: () => boolean,
  context: AnswerContext,
): Promise<BridgeFailure | undefined> {
  const type = mediaType(response);
  if (response.status === 202 || response.body === null) {
    await discard(response);
    return undefined;
  }
  if (type === 'application/json') {
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (signal.aborted) return undefined;
      return { code: BridgeErrorCode.STREAM_ENDED, message: `mcpool bridge: the daemon's answer broke off (${describeError(error)})` };
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
    let read = await readSse(response.body, signal, onMessage, context.log);
    // Resume a stream cut before its answer, if the daemon gave event ids (GET with `Last-Event-ID`, after `retry:`).
    let attempts = 0;
    while (unanswered() && read.lastEventId !== undefined && !signal.aborted && attempts < 5 && sessionId !== undefined && sessionId === context.current().sessionId) {
      attempts++;
      try {
        await delay(read.retryMs ?? reconnectDelay(context.backoff, attempts), undefined, { signal });
      } catch {
        return undefined;
      }
      const lastEventId = read.lastEventId;
      const sent = await context.http.send((token) => ({ method: 'GET', headers: context.http.headers(token, { sessionId, protocolVersion: context.current().protocolVersion }, { accept: 'text/event-stream', 'last-event-id': lastEventId }) }), signal);
      if (sent.kind !== 'response') break;
      if (!sent.response.ok || mediaType(sent.response) !== 'text/event-stream' || sent.response.body === null) {
        await discard(sent.response);
        break;
      }
      context.log.debug({ lastEventId }, 'resumed a response stream');
      const next = await readSse(sent.response.body, signal, onMessage, context.log);
      if (next.events > 0) attempts = 0;
      read = { ...next, lastEventId: next.lastEventId ?? lastEventId, retryMs: next.retryMs ?? read.retryMs };
    }
    return undefined;
  }
  await response.body.cancel().catch(() => undefined);
  return unanswered() ? { code: BridgeErrorCode.BAD_RESPONSE, message: `mcpool bridge: the daemon answered with content type "${type}"` } : undefined;
}
