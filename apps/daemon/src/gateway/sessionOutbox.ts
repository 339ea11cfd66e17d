/**
 * The notifications one downstream `/mcp` session has not taken yet. The SDK transport writes to
 * the session's HTTP responses without looking at `write()`'s answer, so a client that stops
 * reading would make the daemon buffer without bound; this holds them instead.
 *
 * Rule: while every open response of the session can take more (`writableNeedDrain` false), a
 * notification is written at once. While one cannot, notifications wait here: one with a key
 * (progress per token, list_changed per list, updates per resource) replaces the waiting one with
 * the same key (latest wins); the others wait in a queue of at most {@link SESSION_QUEUE_BOUND},
 * the oldest dropped past it, and one warning per burst reports the drops when the queue empties.
 * A session whose responses see no `drain` for {@link SESSION_STALL_MS} while one is full and
 * notifications wait ends (`onStall`); a client that reads, however slowly, is never cut.
 */
import type { ServerResponse } from 'node:http';

/** Notifications without a key a session may have waiting; the oldest is dropped past it. */
export const SESSION_QUEUE_BOUND = 1000;
/** A client that has not read for this long while the daemon had more for it is disconnected. */
export const SESSION_STALL_MS = 10_000;

export interface SessionOutboxDeps {
  onStall(stalledMs: number): void;
  onBurstEnd(report: { dropped: number; coalesced: number }): void;
}

export class SessionOutbox {
  readonly #responses = new Set<ServerResponse>();
  readonly #keyed = new Map<string, () => void>();
  readonly #queue: (() => void)[] = [];
  #dropped = 0;
  #coalesced = 0;
  #stallTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  readonly #deps: SessionOutboxDeps;

  constructor(deps: SessionOutboxDeps) {
    this.#deps = deps;
  }

  /** An HTTP response of the session (GET stream or POST answer): watched until it closes. */
  track(res: ServerResponse): void {
    this.#responses.add(res);
    // A drain is progress: the client reads, so its 10 s start again.
    const pump = (): void => {
      this.#disarm();
      this.#pump();
    };
    res.on('drain', pump);
    res.once('close', () => {
      this.#responses.delete(res);
      res.off('drain', pump);
      this.#pump();
    });
  }

  get backlog(): number {
    return this.#keyed.size + this.#queue.length;
  }

  push(key: string | undefined, send: () => void): void {
    if (this.#closed) return;
    if (this.backlog === 0 && !this.#blocked()) {
      send();
      return;
    }
    if (key !== undefined) {
      if (this.#keyed.has(key)) this.#coalesced += 1;
      this.#keyed.set(key, send);
    } else {
      this.#queue.push(send);
      if (this.#queue.length > SESSION_QUEUE_BOUND) {
        this.#queue.shift();
        this.#dropped += 1;
      }
    }
    this.#pump();
  }

  close(): void {
    this.#closed = true;
    this.#keyed.clear();
    this.#queue.length = 0;
    this.#disarm();
  }

  #blocked(): boolean {
    for (const res of this.#responses) if (res.writableNeedDrain) return true;
    return false;
  }

  #pump(): void {
    if (this.#closed) return;
    while (this.backlog > 0 && !this.#blocked()) {
      const first = this.#keyed.entries().next();
      if (!first.done) {
        this.#keyed.delete(first.value[0]);
        first.value[1]();
      } else {
        this.#queue.shift()!();
      }
    }
    if (this.backlog > 0) {
      // Full, with more to write: the client has this long to read again.
      if (this.#stallTimer === undefined) {
        const since = Date.now();
        this.#stallTimer = setTimeout(() => {
          this.#stallTimer = undefined;
          if (this.#blocked() && !this.#closed) {
            // Ending a full response would wait for the client to read: its socket is cut instead.
            for (const res of this.#responses) res.destroy();
            this.#deps.onStall(Date.now() - since);
          }
          else this.#pump();
        }, SESSION_STALL_MS);
        this.#stallTimer.unref();
      }
      return;
    }
    this.#disarm();
    if (this.#dropped > 0 || this.#coalesced > 0) {
      const report = { dropped: this.#dropped, coalesced: this.#coalesced };
      this.#dropped = 0;
      this.#coalesced = 0;
      this.#deps.onBurstEnd(report);
    }
  }

  #disarm(): void {
    if (this.#stallTimer !== undefined) clearTimeout(this.#stallTimer);
    this.#stallTimer = undefined;
  }
}
