/**
 * `text/event-stream` parsing on any `ReadableStream` of bytes, so the event stream works where
 * `EventSource` cannot send an `Authorization` header: Node, browsers, IDE webviews. The parsing
 * itself is `eventsource-parser`'s (the WHATWG rules, no dependencies, browser-safe); this adds
 * what the event stream needs on top: the last event id kept across messages, and the
 * `message` default of the event name.
 */
import { createParser, type EventSourceParser } from 'eventsource-parser';

/** One dispatched SSE message. */
export interface SseMessage {
  /** `event:` field, `message` when absent. */
  event: string;
  data: string;
  /** The last `id:` seen so far on this stream (ids persist across messages, per the spec). */
  lastEventId: string | undefined;
  /** True when this message itself carried an `id:` field. */
  hasId: boolean;
}

/** Feeds text chunks in, gets messages, `retry:` values and comments out. */
export class SseParser {
  #lastEventId: string | undefined;
  readonly #parser: EventSourceParser;

  constructor(handlers: { onMessage: (message: SseMessage) => void; onRetry?: (ms: number) => void; onComment?: (text: string) => void }, lastEventId?: string) {
    this.#lastEventId = lastEventId;
    this.#parser = createParser({
      onEvent: (event) => {
        const hasId = event.id !== undefined;
        if (hasId) this.#lastEventId = event.id;
        handlers.onMessage({ event: event.event ?? 'message', data: event.data, lastEventId: this.#lastEventId, hasId });
      },
      ...(handlers.onRetry ? { onRetry: handlers.onRetry } : {}),
      ...(handlers.onComment ? { onComment: (text: string) => handlers.onComment!(text.trimStart()) } : {}),
    });
  }

  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  /** Parses a chunk; a line split across chunks is kept until its end arrives. */
  push(chunk: string): void {
    this.#parser.feed(chunk);
  }
}
