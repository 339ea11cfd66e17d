/**
 * The HTTP+SSE client transport of protocol revision 2024-11-05 (deprecated, still served by
 * older remote servers): a GET opens an SSE stream whose first `endpoint` event names the URL to
 * POST messages to; every server message, responses included, arrives on that stream.
 *
 * The endpoint is resolved against the stream's URL and must be on the same origin (a server
 * must not be able to send our configured headers, i.e. credentials, elsewhere). A POST is
 * answered 2xx without a message; a non-2xx answer rejects `send` with an `UpstreamHttpError`.
 * Cancellation cannot be carried by closing anything here: the actor sends
 * `notifications/cancelled`; a `send` signal only aborts the POST itself.
 */
import { mediaType, parseMessages, readBoundedText, readSse } from './httpBody.js';
import type { ReadGate } from '../sourceThrottle.js';
import { displayUrl, remoteTarget, fetchExchange, nodeHttpExchange, type HttpAnswer, type HttpExchange } from './httpExchange.js';
import { UpstreamHttpError, type JsonRpcMessage, type SendOptions, type UpstreamTransport } from './upstreamTransport.js';

export interface LegacySseTransportOptions {
  /** The SSE endpoint (GET). */
  url: URL;
  /** Sent on the GET and on every POST (e.g. `Authorization`). @default {} */
  headers?: Record<string, string> | undefined;
  /** Carry requests with this `fetch` instead of `node:http`. @default undefined (node:http) */
  fetch?: typeof fetch | undefined;
  /** Asked of each message read: what it refuses (a notification past the bound) is dropped; the stream is read on. */
  readGate?: ReadGate | undefined;
}

export class LegacySseTransport implements UpstreamTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  readonly #url: URL;
  readonly #display: string;
  readonly #headers: Record<string, string>;
  readonly #options: LegacySseTransportOptions;
  #exchange: HttpExchange | undefined;
  #endpoint: URL | undefined;
  /** The GET stream and the POSTs in flight; aborted by `close()`. */
  readonly #inflight = new Set<AbortController>();
  #stream: Promise<void> | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #closeNotified = false;

  constructor(options: LegacySseTransportOptions) {
    const target = remoteTarget(options.url, options.headers);
    this.#options = options;
    this.#url = target.url;
    this.#display = target.display;
    this.#headers = target.headers;
  }

  /** Replaces one header for every later request (the `Authorization` of a refreshed token). */
  setHeader(name: string, value: string): void {
    this.#headers[name.toLowerCase()] = value;
  }

  /** The POST endpoint the server named, once `start()` resolved. */
  get endpoint(): URL | undefined {
    return this.#endpoint;
  }

  /** Opens the stream; resolves once the `endpoint` event has arrived. `close()` makes it reject. */
  async start(): Promise<void> {
    if (this.#exchange !== undefined || this.#closed) throw new Error(`HTTP+SSE ${this.#display}: already started or closed`);
    const exchange = this.#options.fetch !== undefined ? fetchExchange(this.#options.fetch, undefined) : await nodeHttpExchange(this.#url);
    this.#exchange = exchange;
    const controller = new AbortController();
    this.#inflight.add(controller);
    if (this.#closed) controller.abort();

    let answer: HttpAnswer;
    try {
      answer = await exchange.request({ method: 'GET', url: this.#url, headers: { ...this.#headers, accept: 'text/event-stream' }, signal: controller.signal });
    } catch (error) {
      const closedByCaller = this.#closed;
      await this.close();
      throw closedByCaller ? new Error(`HTTP+SSE ${this.#display}: closed while connecting`, { cause: error }) : error;
    }
    if (answer.status < 200 || answer.status >= 300) {
      const body = await readBoundedText(answer.body);
      const auth = answer.status === 401 || answer.status === 403 ? answer.header('www-authenticate') : undefined;
      await this.close();
      throw new UpstreamHttpError(`HTTP+SSE ${this.#display}: GET answered HTTP ${answer.status}`, answer.status, body, auth);
    }
    if (mediaType(answer.header('content-type')) !== 'text/event-stream') {
      const body = await readBoundedText(answer.body);
      await this.close();
      throw new UpstreamHttpError(`HTTP+SSE ${this.#display}: GET answered ${answer.header('content-type') ?? 'no content type'}, not an SSE stream`, answer.status, body);
    }

    try {
      await this.#awaitEndpoint(answer, controller);
    } catch (error) {
      // A failed start leaves nothing open, and `onclose` has fired when it rejects.
      await this.close();
      throw error;
    }
  }

  #awaitEndpoint(answer: HttpAnswer, controller: AbortController): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (error?: Error): void => {
        if (settled) return;
        settled = true;
        if (error === undefined) resolve();
        else reject(error);
      };
      this.#stream = this.#readStream(answer, controller.signal, (endpoint) => {
        if (settled) return;
        let url: URL;
        try {
          url = new URL(endpoint, this.#url);
        } catch {
          settle(new Error(`HTTP+SSE ${this.#display}: the endpoint event is not a URL: ${endpoint.slice(0, 200)}`));
          controller.abort();
          return;
        }
        if (url.origin !== this.#url.origin) {
          settle(new Error(`HTTP+SSE ${this.#display}: refused the endpoint ${displayUrl(url)}, which is not on the stream's origin`));
          controller.abort();
          return;
        }
        this.#endpoint = url;
        settle();
      }).then((ending) => {
        settle(ending ?? new Error(`HTTP+SSE ${this.#display}: the stream ended before an endpoint event`));
        this.#fail(this.#endpoint !== undefined ? ending : undefined);
      });
    });
  }

  /** Reads the stream to its end; resolves with the reason it ended unexpectedly, if it did. */
  async #readStream(answer: HttpAnswer, signal: AbortSignal, onEndpoint: (endpoint: string) => void): Promise<Error | undefined> {
    try {
      await readSse(answer.body, {
        onEvent: (event) => {
          if (event.event === 'endpoint') {
            onEndpoint(event.data.trim());
            return;
          }
          if ((event.event !== undefined && event.event !== 'message') || event.data.length === 0) return;
          let messages: JsonRpcMessage[];
          try {
            messages = parseMessages(event.data);
          } catch (error) {
            this.onerror?.(new Error(`HTTP+SSE ${this.#display}: skipped an SSE event that is not JSON-RPC: ${event.data.slice(0, 200)}`, { cause: error }));
            return;
          }
          for (const message of messages) {
            if (this.#options.readGate?.admit(message) === false) continue;
            try {
              this.onmessage?.(message);
            } catch (error) {
              this.onerror?.(error instanceof Error ? error : new Error(String(error)));
            }
          }
        },
      });
    } catch (error) {
      if (signal.aborted || this.#closed) return undefined;
      return new Error(`HTTP+SSE ${this.#display}: the stream broke: ${(error as Error).message}`, { cause: error });
    }
    if (signal.aborted || this.#closed) return undefined;
    return new Error(`HTTP+SSE ${this.#display}: the server ended the stream`);
  }

  async send(message: JsonRpcMessage, options?: SendOptions): Promise<void> {
    const exchange = this.#exchange;
    const endpoint = this.#endpoint;
    if (exchange === undefined || endpoint === undefined) throw new Error(`HTTP+SSE ${this.#display}: send before start`);
    if (this.#closed) throw new Error(`HTTP+SSE ${this.#display}: the transport is closed`);
    const signal = options?.signal;
    signal?.throwIfAborted();
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.#inflight.add(controller);
    try {
      const answer = await exchange.request({
        method: 'POST',
        url: endpoint,
        headers: { ...this.#headers, 'content-type': 'application/json' },
        body: JSON.stringify(message),
        signal: controller.signal,
      });
      if (answer.status < 200 || answer.status >= 300) {
        const body = await readBoundedText(answer.body);
        const auth = answer.status === 401 || answer.status === 403 ? answer.header('www-authenticate') : undefined;
        throw new UpstreamHttpError(`HTTP+SSE ${this.#display}: POST ${message.method ?? 'response'} answered HTTP ${answer.status}`, answer.status, body, auth);
      }
      // "Accepted": the answer itself comes on the stream.
      await readBoundedText(answer.body, 1024);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.#inflight.delete(controller);
    }
  }

  /** Aborts the stream and every POST, closes every socket. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  /** The stream is gone (or never came): report why, once, and close. */
  #fail(reason?: Error): void {
    if (reason !== undefined && !this.#closed) this.onerror?.(reason);
    void this.close();
  }

  async #shutdown(): Promise<void> {
    this.#closed = true;
    for (const controller of this.#inflight) controller.abort(new Error(`HTTP+SSE ${this.#display}: the transport is closed`));
    this.#inflight.clear();
    try {
      await this.#stream;
    } finally {
      this.#exchange?.close();
      if (!this.#closeNotified) {
        this.#closeNotified = true;
        this.onclose?.();
      }
    }
  }
}
