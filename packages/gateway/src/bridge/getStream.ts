/**
 * The GET stream of the current daemon session, for server-initiated messages: opened after
 * `notifications/initialized` (405: the daemon offers none, tolerated), reconnected with backoff and
 * `Last-Event-ID`, honouring `retry:`. A 404 on it starts the session's recovery, so an idle client
 * learns of a restarted daemon by itself — once: a session born of a GET 404 whose own first GET
 * 404s too is left to the next request, which would otherwise loop.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { reconnectDelay, readSse, type OnMessage } from './answerReader.js';
import { discard, describeError, mediaType, type DaemonHttp } from './daemonHttp.js';
import type { BridgeLogger } from './options.js';
import type { DaemonSession } from './session.js';

export interface GetStreamOptions {
  http: DaemonHttp;
  session: DaemonSession;
  log: BridgeLogger;
  backoff: { initialMs: number; maxMs: number };
  /** Aborted when the bridge closes. */
  life: AbortSignal;
  onMessage: OnMessage;
  /** The session `sessionId` answered 404 on its stream: recover it. */
  onGone: (sessionId: string) => void;
}

interface Stream {
  controller: AbortController;
  generation: number;
  opened: boolean;
}

export class GetStream {
  readonly #options: GetStreamOptions;
  #stream: Stream | undefined;

  constructor(options: GetStreamOptions) {
    this.#options = options;
  }

  /** Opens the stream of the current session, ending the previous one. */
  open(): void {
    this.stop();
    const sessionId = this.#options.session.id;
    if (sessionId === undefined || this.#options.life.aborted) return;
    const stream: Stream = { controller: new AbortController(), generation: this.#options.session.generation, opened: false };
    this.#stream = stream;
    void this.#loop(stream, sessionId).catch((error: unknown) => this.#options.log.error({ err: error }, 'bridge error (a bug): the GET stream stopped'));
  }

  stop(): void {
    this.#stream?.controller.abort();
    this.#stream = undefined;
  }

  async #loop(stream: Stream, sessionId: string): Promise<void> {
    const { http, session, log } = this.#options;
    const signal = AbortSignal.any([stream.controller.signal, this.#options.life]);
    let failures = 0;
    let lastEventId: string | undefined;
    let retryMs: number | undefined;
    const live = (): boolean => !signal.aborted && stream.generation === session.generation;
    while (live()) {
      let response: Response | undefined;
      try {
        response = await http.openEvents({ sessionId, protocolVersion: session.protocolVersion }, lastEventId, signal);
      } catch (error) {
        if (!live()) return;
        if (failures === 0) log.debug({ error: describeError(error) }, 'the GET stream cannot connect: retrying');
      }
      if (response?.status === 405) {
        await discard(response);
        log.debug('the daemon offers no GET stream (405)');
        return;
      }
      if (response?.status === 404) {
        await discard(response);
        if (!live() || session.id !== sessionId) return;
        // A fresh session whose first GET 404s, born of a GET 404 itself, would loop: leave it to the next request.
        if (session.streamBorn && !stream.opened) {
          log.warn('the GET stream of the new session answers 404 too: waiting for the next request to recover');
          return;
        }
        this.#options.onGone(sessionId);
        return;
      }
      if (response?.ok && mediaType(response) === 'text/event-stream' && response.body !== null) {
        if (!stream.opened) log.debug('GET stream open');
        stream.opened = true;
        const read = await readSse(response.body, signal, this.#options.onMessage, log);
        lastEventId = read.lastEventId ?? lastEventId;
        retryMs = read.retryMs ?? retryMs;
        failures = read.events > 0 ? 1 : failures + 1;
      } else {
        if (response) {
          await discard(response);
          if (failures === 0) log.debug({ status: response.status }, 'the GET stream was refused: retrying');
        }
        failures++;
      }
      if (!live()) return;
      try {
        await delay(retryMs ?? reconnectDelay(this.#options.backoff, failures), undefined, { signal });
      } catch {
        return;
      }
    }
  }
}
