/**
 * The notifications one legacy session has not taken yet. Node buffers whatever is
 * written to an HTTP response its client does not read, without bound; so a session's
 * notifications go through here, which holds them (bounded) while a response cannot take more.
 *
 * Rule: while every open response of the session can take more (`writableNeedDrain` false), a
 * notification is written at once. While one cannot, notifications wait here: one with a key
 * (progress per token, list_changed per list, updates per resource) replaces the waiting one with
 * the same key (latest wins); the others wait in a queue of at most {@link SESSION_QUEUE_BOUND},
 * and of at most {@link SESSION_QUEUE_BYTES} of JSON, the oldest dropped past either; when the queue
 * empties after drops, one warning per burst reports them and the client gets one
 * {@link droppedMarker} (a `notifications/message` from logger `mcpool`) saying how many it missed.
 * A session whose responses see no `drain` for {@link SESSION_STALL_MS} while one is full and
 * notifications wait ends (`onStall`); a client that reads, however slowly, is never cut.
 */
import type { ServerResponse } from 'node:http';

/** Notifications without a key a session may have waiting; the oldest is dropped past it. */
export const SESSION_QUEUE_BOUND = 1000;
/** ... and bytes of their JSON: a server's large logs cost a stalled session at most this much. */
export const SESSION_QUEUE_BYTES = 1024 * 1024;
/** A client that has not read for this long while the daemon had more for it is disconnected. */
export const SESSION_STALL_MS = 10_000;

export interface SessionOutboxDeps {
  onStall(stalledMs: number): void;
  onBurstEnd(report: { dropped: number; coalesced: number }): void;
}

/** What a client is told when notifications meant for it were dropped. */
export function droppedMarker(dropped: number): { method: 'notifications/message'; params: { level: 'warning'; logger: 'mcpool'; data: string } } {
  return { method: 'notifications/message', params: { level: 'warning', logger: 'mcpool', data: `mcpool dropped ${dropped} notifications this client did not read in time` } };
}

interface Waiting {
  send: () => void;
  bytes: number;
}

export class SessionOutbox {
  readonly #responses = new Set<ServerResponse>();
  readonly #keyed = new Map<string, () => void>();
  readonly #queue: Waiting[] = [];
  #queuedBytes = 0;
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

  /** `message` is what `send` writes: its JSON size counts against the byte bound while it waits. */
  push(key: string | undefined, send: () => void, message?: unknown): void {
    if (this.#closed) return;
    if (this.backlog === 0 && !this.#blocked()) {
      send();
      return;
    }
    if (key !== undefined) {
      if (this.#keyed.has(key)) this.#coalesced += 1;
      this.#keyed.set(key, send);
    } else {
      const bytes = message === undefined ? 0 : (JSON.stringify(message)?.length ?? 0);
      this.#queue.push({ send, bytes });
      this.#queuedBytes += bytes;
      // The newest always stays: one message larger than the bound is still delivered alone.
      while (this.#queue.length > 1 && (this.#queue.length > SESSION_QUEUE_BOUND || this.#queuedBytes > SESSION_QUEUE_BYTES)) {
        this.#queuedBytes -= this.#queue.shift()!.bytes;
        this.#dropped += 1;
      }
    }
    this.#pump();
  }

  close(): void {
    this.#closed = true;
    this.#keyed.clear();
    this.#queue.length = 0;
    this.#queuedBytes = 0;
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
        const next = this.#queue.shift()!;
        this.#queuedBytes -= next.bytes;
        next.send();
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
