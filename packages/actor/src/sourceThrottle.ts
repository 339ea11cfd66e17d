/**
 * Back-pressure at the source: how many of the messages a server sends on its own the actor
 * passes on. A server that floods notifications costs the actor's thread a parse per message,
 * whoever listens, and its views' queues whatever is passed on; past a bound the rest are read
 * and dropped there, never waited for. Reading is never paused: a pipe (stdio) or a stream
 * (legacy SSE) carries the server's answers behind its notifications, so a read held back for
 * one caller's burst would hold every other caller's answer of that server behind it.
 *
 * Rule: every message the server sends that is not a response takes a token from a bucket
 * refilled at {@link SOURCE_MESSAGES_PER_SECOND}, holding at most {@link SOURCE_MESSAGE_BURST}.
 * A notification read while the bucket is empty, or while the views' queues are full
 * (`backedUp`: passing it on would only drop it there), is dropped and counted; a request from
 * the server is always passed on (it is owed an answer), and responses are never counted.
 * A run of drops is one episode: it is reported when it begins and, with its count, when no
 * drop happened for {@link EPISODE_QUIET_MS}.
 */
import type { JsonRpcMessage } from './transports/upstreamTransport.js';

/** Server-initiated messages passed on per second, sustained: twice what one view is given. */
export const SOURCE_MESSAGES_PER_SECOND = 2000;
/** ... and this many at once after a calm spell: a burst of startup logs passes in one go. */
export const SOURCE_MESSAGE_BURST = 2000;
/** An episode ends after this long without a drop. */
export const EPISODE_QUIET_MS = 1000;

export interface ThrottleEpisode {
  /** Why the first notification of this episode was dropped. */
  reason: 'rate' | 'views_backed_up';
  /** At the end: how many notifications were dropped at the source in all. */
  dropped?: number;
}

export interface SourceThrottleOptions {
  perSecond?: number;
  burst?: number;
  /** True while what the server sends cannot be passed on (every view's queue is full). */
  backedUp?: () => boolean;
  onEpisodeStart?: (episode: ThrottleEpisode) => void;
  onEpisodeEnd?: (episode: Required<ThrottleEpisode>) => void;
}

/** What a transport asks of each message the server sent on its own, as it reads it. */
export interface ReadGate {
  /** Counts `message` if the server sent it on its own (a method; responses pass uncounted); false: drop it, a notification past the bound. */
  admit(message: JsonRpcMessage): boolean;
}

export class SourceThrottle implements ReadGate {
  readonly #perSecond: number;
  readonly #burst: number;
  readonly #options: SourceThrottleOptions;
  #tokens: number;
  #refilledAt = performance.now();
  #episode: Required<ThrottleEpisode> | undefined;
  #lastDropAt = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: SourceThrottleOptions = {}) {
    this.#options = options;
    this.#perSecond = options.perSecond ?? SOURCE_MESSAGES_PER_SECOND;
    this.#burst = options.burst ?? SOURCE_MESSAGE_BURST;
    this.#tokens = this.#burst;
  }

  /** Whether notifications are being dropped now (an episode is under way). */
  get throttled(): boolean {
    return this.#episode !== undefined;
  }

  admit(message: JsonRpcMessage): boolean {
    if (message.method === undefined) return true;
    const now = performance.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#refilledAt) * this.#perSecond) / 1000);
    this.#refilledAt = now;
    // A request from the server is owed an answer: it takes a token if there is one and always passes.
    if (message.id !== undefined) {
      this.#tokens = Math.max(0, this.#tokens - 1);
      return true;
    }
    let reason: ThrottleEpisode['reason'] | undefined;
    if (this.#tokens < 1) reason = 'rate';
    else if (this.#options.backedUp?.() === true) reason = 'views_backed_up';
    if (reason === undefined) {
      this.#tokens -= 1;
      return true;
    }
    this.#noteDrop(now, reason);
    return false;
  }

  /** Ends the episode timer; the throttle can be used again afterwards. */
  dispose(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#episode = undefined;
  }

  #noteDrop(now: number, reason: ThrottleEpisode['reason']): void {
    this.#lastDropAt = now;
    if (this.#episode === undefined) {
      this.#episode = { reason, dropped: 0 };
      this.#options.onEpisodeStart?.({ reason });
      this.#timer = setInterval(() => this.#checkQuiet(), EPISODE_QUIET_MS);
      this.#timer.unref?.();
    }
    this.#episode.dropped += 1;
  }

  #checkQuiet(): void {
    if (this.#episode === undefined || performance.now() - this.#lastDropAt < EPISODE_QUIET_MS) return;
    const episode = this.#episode;
    this.dispose();
    this.#options.onEpisodeEnd?.(episode);
  }
}
