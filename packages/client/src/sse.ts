/**
 * A `text/event-stream` parser (the WHATWG "server-sent events" rules) that runs on any
 * `ReadableStream` of bytes, so the event stream works where `EventSource` cannot send an
 * `Authorization` header: Node, browsers, IDE webviews.
 */

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
  #buffer = '';
  #data: string[] = [];
  #event = '';
  #hasId = false;
  #lastEventId: string | undefined;
  #sawCr = false;
  readonly #onMessage: (message: SseMessage) => void;
  readonly #onRetry: (ms: number) => void;
  readonly #onComment: (text: string) => void;

  constructor(handlers: { onMessage: (message: SseMessage) => void; onRetry?: (ms: number) => void; onComment?: (text: string) => void }, lastEventId?: string) {
    this.#onMessage = handlers.onMessage;
    this.#onRetry = handlers.onRetry ?? (() => undefined);
    this.#onComment = handlers.onComment ?? (() => undefined);
    this.#lastEventId = lastEventId;
  }

  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  /** Parses a chunk; a line split across chunks is kept until its end arrives. */
  push(chunk: string): void {
    let text = chunk;
    // A CRLF split across two chunks: the LF belongs to the line the CR already ended.
    if (this.#sawCr && text.startsWith('\n')) text = text.slice(1);
    this.#sawCr = false;
    this.#buffer += text;
    let start = 0;
    for (;;) {
      const cr = this.#buffer.indexOf('\r', start);
      const lf = this.#buffer.indexOf('\n', start);
      if (cr === -1 && lf === -1) break;
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        end = cr;
        if (cr + 1 === this.#buffer.length) {
          this.#sawCr = true;
          next = cr + 1;
        } else next = this.#buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
      } else {
        end = lf;
        next = lf + 1;
      }
      this.#line(this.#buffer.slice(start, end));
      start = next;
    }
    this.#buffer = this.#buffer.slice(start);
  }

  #line(line: string): void {
    if (line === '') {
      this.#dispatch();
      return;
    }
    if (line.startsWith(':')) {
      this.#onComment(line.slice(1).trimStart());
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.#data.push(value);
        break;
      case 'event':
        this.#event = value;
        break;
      case 'id':
        if (!value.includes('\0')) {
          this.#lastEventId = value;
          this.#hasId = true;
        }
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.#onRetry(Number(value));
        break;
      default:
      // unknown fields are ignored
    }
  }

  #dispatch(): void {
    const hasId = this.#hasId;
    this.#hasId = false;
    if (this.#data.length === 0) {
      this.#event = '';
      return;
    }
    const message: SseMessage = { event: this.#event || 'message', data: this.#data.join('\n'), lastEventId: this.#lastEventId, hasId };
    this.#data = [];
    this.#event = '';
    this.#onMessage(message);
  }
}
