/**
 * The messages of one answer that streams (a call whose progress came before its result, a
 * `subscriptions/listen`): pushed by the router, read once by the host's writer (SSE on HTTP).
 * Bounded: a reader that stops taking messages loses the oldest ones past `limit`, never the
 * router's memory.
 */
export class MessageStream implements AsyncIterable<Record<string, unknown>> {
  readonly #queue: Record<string, unknown>[] = [];
  readonly #limit: number;
  #waiter: (() => void) | undefined;
  #ended = false;
  #dropped = 0;

  constructor(limit = 1000) {
    this.#limit = limit;
  }

  /** True once {@link end} ran: nothing more will come. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Messages lost to a reader that fell more than `limit` behind. */
  get dropped(): number {
    return this.#dropped;
  }

  push(message: Record<string, unknown>): void {
    if (this.#ended) return;
    if (this.#queue.length >= this.#limit) {
      this.#queue.shift();
      this.#dropped += 1;
    }
    this.#queue.push(message);
    this.#wake();
  }

  /** No more messages; a reader gets the queued ones, then its loop ends. Idempotent. */
  end(): void {
    this.#ended = true;
    this.#wake();
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Record<string, unknown>> {
    for (;;) {
      const next = this.#queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => (this.#waiter = resolve));
    }
  }
}
