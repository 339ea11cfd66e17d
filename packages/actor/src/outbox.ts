/**
 * What the actor sends one view on the server's behalf (notifications, progress, resource
 * updates), throttled before it crosses the view's port: a server that floods cannot fill the
 * main thread's queue, so the pool's other servers keep their share of it.
 *
 * Rule: a message goes out at once while the view's token bucket has a token (refilled at
 * {@link VIEW_NOTIFICATIONS_PER_SECOND}); past it, messages wait. A waiting message with a key
 * (progress of one call, updates of one resource) is replaced by a newer one with the same key
 * (latest wins, in the first one's place); one without a key waits in a queue that is `full` at
 * {@link VIEW_QUEUE_BOUND} (the source then drops notifications as it reads them), the oldest dropped past twice that. When the backlog has drained, one warning
 * reports how many were dropped and coalesced during that burst.
 *
 * Logs no caller asked for (a `notifications/message` outside any call) take a slower lane first:
 * a bucket of {@link UNASKED_LOGS_PER_SECOND} holding {@link UNASKED_LOG_BURST}; past it they are dropped at once and counted, never
 * queued, so a server that logs in a loop costs a view a hundred messages a second and no memory,
 * and the queue stays free for what calls produce. A second without such a drop ends the episode:
 * one warning gives the count.
 */

/** A view gets this many server messages a second, sustained: far beyond what a person reads. */
export const VIEW_NOTIFICATIONS_PER_SECOND = 1000;
/** ... and this many at once after a calm spell (a burst of logs at startup passes untouched). */
export const VIEW_NOTIFICATION_BURST = 1000;
/** Messages without a key waiting for the view before the source drops notifications; the oldest is dropped past twice this. */
export const VIEW_QUEUE_BOUND = 500;
/** Logs outside any call a view gets a second, sustained; the rest are dropped. */
export const UNASKED_LOGS_PER_SECOND = 100;
/**
 * ... and this many at once after a calm spell. Every view of a server that starts flooding gets
 * its burst in the same instant, and each session's client parses it in the same instant too: a
 * second's worth at once stalled a client that also made calls to other servers by up to 670 ms
 * right at the flood's start. A tenth of a second's worth makes that moment like the ones after
 * it. A server's burst of logs outside any call loses what is past it (counted and reported).
 */
export const UNASKED_LOG_BURST = 10;
/** The unasked-log drops of one episode are reported after this long without one. */
const UNASKED_QUIET_MS = 1000;
/** How often a backlog is sent on (at the bucket's rate). */
const DRAIN_TICK_MS = 50;

export interface BurstReport {
  dropped: number;
  coalesced: number;
}

export class ViewOutbox {
  #tokens = VIEW_NOTIFICATION_BURST;
  #refilledAt = performance.now();
  readonly #keyed = new Map<string, () => void>();
  readonly #queue: (() => void)[] = [];
  #dropped = 0;
  #coalesced = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #unaskedTokens = UNASKED_LOG_BURST;
  #unaskedRefilledAt = performance.now();
  #unaskedDropped = 0;
  #unaskedDroppedAt = 0;
  #unaskedTimer: ReturnType<typeof setInterval> | undefined;
  readonly #onBurstEnd: (report: BurstReport) => void;

  constructor(onBurstEnd: (report: BurstReport) => void) {
    this.#onBurstEnd = onBurstEnd;
  }

  /** The queue of messages without a key is at its bound: more of them drop the oldest. */
  get full(): boolean {
    return this.#queue.length >= VIEW_QUEUE_BOUND;
  }

  /** Messages waiting now (keyed and not). */
  get backlog(): number {
    return this.#keyed.size + this.#queue.length;
  }

  /** Sends `deliver` now if the rate allows and nothing waits, else keeps it (coalesced by `key`, or bounded). */
  push(key: string | undefined, deliver: () => void): void {
    this.#refill();
    if (this.backlog === 0 && this.#tokens >= 1) {
      this.#tokens -= 1;
      deliver();
      return;
    }
    if (key !== undefined) {
      if (this.#keyed.has(key)) this.#coalesced += 1;
      this.#keyed.set(key, deliver);
    } else {
      this.#queue.push(deliver);
      // Past the bound the source drops notifications as it reads them, but what was read in the
      // same tick and a late drain tick on a loaded machine let a few more in: they are kept up to
      // twice the bound, so what a call produces is not dropped here for that.
      if (this.#queue.length > 2 * VIEW_QUEUE_BOUND) {
        this.#queue.shift();
        this.#dropped += 1;
      }
    }
    this.#timer ??= setInterval(() => this.#drain(), DRAIN_TICK_MS);
    this.#timer.unref?.();
  }

  /** A log no caller asked for: through the slow lane into {@link push}, or dropped and counted. */
  pushUnasked(deliver: () => void): void {
    const now = performance.now();
    this.#unaskedTokens = Math.min(UNASKED_LOG_BURST, this.#unaskedTokens + ((now - this.#unaskedRefilledAt) * UNASKED_LOGS_PER_SECOND) / 1000);
    this.#unaskedRefilledAt = now;
    if (this.#unaskedTokens >= 1) {
      this.#unaskedTokens -= 1;
      this.push(undefined, deliver);
      return;
    }
    this.#unaskedDropped += 1;
    this.#unaskedDroppedAt = now;
    this.#unaskedTimer ??= setInterval(() => this.#checkUnaskedQuiet(), UNASKED_QUIET_MS);
    this.#unaskedTimer.unref?.();
  }

  /**
   * Sends everything waiting now, whatever the rate: before a call's result goes out, so what the
   * call produced (its last progress above all) reaches the view first. Bounded by the queue.
   */
  flush(): void {
    if (this.backlog === 0) return;
    this.#tokens = 0;
    this.#send(Number.POSITIVE_INFINITY);
  }

  dispose(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#unaskedTimer !== undefined) clearInterval(this.#unaskedTimer);
    this.#unaskedTimer = undefined;
    this.#keyed.clear();
    this.#queue.length = 0;
  }

  #checkUnaskedQuiet(): void {
    if (performance.now() - this.#unaskedDroppedAt < UNASKED_QUIET_MS) return;
    clearInterval(this.#unaskedTimer);
    this.#unaskedTimer = undefined;
    const dropped = this.#unaskedDropped;
    this.#unaskedDropped = 0;
    this.#onBurstEnd({ dropped, coalesced: 0 });
  }

  #refill(): void {
    const now = performance.now();
    this.#tokens = Math.min(VIEW_NOTIFICATION_BURST, this.#tokens + ((now - this.#refilledAt) * VIEW_NOTIFICATIONS_PER_SECOND) / 1000);
    this.#refilledAt = now;
  }

  #drain(): void {
    this.#refill();
    const n = Math.floor(this.#tokens);
    this.#tokens -= this.#send(n);
  }

  /** Sends up to `n` waiting messages (keyed first: they are few and the freshest); returns how many. */
  #send(n: number): number {
    let sent = 0;
    for (const [key, deliver] of this.#keyed) {
      if (sent >= n) break;
      this.#keyed.delete(key);
      deliver();
      sent++;
    }
    while (sent < n && this.#queue.length > 0) {
      this.#queue.shift()!();
      sent++;
    }
    if (this.backlog === 0) {
      if (this.#timer !== undefined) clearInterval(this.#timer);
      this.#timer = undefined;
      if (this.#dropped > 0 || this.#coalesced > 0) {
        const report = { dropped: this.#dropped, coalesced: this.#coalesced };
        this.#dropped = 0;
        this.#coalesced = 0;
        this.#onBurstEnd(report);
      }
    }
    return sent;
  }
}
