/**
 * Back-pressure at the source: how fast the actor reads what a server sends on its own. A server
 * that floods notifications costs the actor's thread a parse per message, whoever listens; past
 * a bound the transport stops reading (stdio: the child's stdout is paused, the pipe fills and
 * the server's own writes block; HTTP: the SSE body is not read, TCP's window closes), so the
 * flood costs neither thread nor memory, and the machine's cores stay with the other servers.
 *
 * Rule: every message the server sends that is not a response (a notification or a request)
 * takes a token from a bucket refilled at {@link SOURCE_MESSAGES_PER_SECOND}, holding at most
 * {@link SOURCE_MESSAGE_BURST}. When the bucket is empty, reading waits until it holds a token
 * again; while the views' queues are full (`backedUp`), it waits one view drain tick at a time.
 * A run of such waits is one episode: it is reported when it begins and when no wait happened
 * for {@link EPISODE_QUIET_MS}.
 */

/** Server-initiated messages read per second, sustained: twice what one view is given. */
export const SOURCE_MESSAGES_PER_SECOND = 2000;
/** ... and this many at once after a calm spell: a burst of startup logs is read in one go. */
export const SOURCE_MESSAGE_BURST = 2000;
/** How long reading waits while the views' queues are full: one view drain tick. */
export const BACKED_UP_WAIT_MS = 50;
/** An episode ends after this long without a wait. */
export const EPISODE_QUIET_MS = 1000;

export interface ThrottleEpisode {
  /** Why reading first waited in this episode. */
  reason: 'rate' | 'views_backed_up';
  /** At the end: how many times reading waited, and for how long in all. */
  pauses?: number;
  pausedMs?: number;
}

export interface SourceThrottleOptions {
  perSecond?: number;
  burst?: number;
  /** True while what the server sends cannot be passed on (every view's queue is full). */
  backedUp?: () => boolean;
  onEpisodeStart?: (episode: ThrottleEpisode) => void;
  onEpisodeEnd?: (episode: Required<ThrottleEpisode>) => void;
}

/** What a transport asks before it reads on: how long to wait first (0: read on). */
export interface ReadGate {
  /** Counts one server-initiated message just read; returns the ms to stop reading for. */
  take(): number;
}

export class SourceThrottle implements ReadGate {
  readonly #perSecond: number;
  readonly #burst: number;
  readonly #options: SourceThrottleOptions;
  #tokens: number;
  #refilledAt = performance.now();
  #episode: Required<ThrottleEpisode> | undefined;
  #lastWaitAt = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: SourceThrottleOptions = {}) {
    this.#options = options;
    this.#perSecond = options.perSecond ?? SOURCE_MESSAGES_PER_SECOND;
    this.#burst = options.burst ?? SOURCE_MESSAGE_BURST;
    this.#tokens = this.#burst;
  }

  /** Whether reading is being held back now (an episode is under way). */
  get throttled(): boolean {
    return this.#episode !== undefined;
  }

  take(): number {
    const now = performance.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#refilledAt) * this.#perSecond) / 1000) - 1;
    this.#refilledAt = now;
    let wait = 0;
    let reason: ThrottleEpisode['reason'] = 'rate';
    // Below zero: wait until the bucket holds one token again.
    if (this.#tokens < 0) wait = Math.max(1, Math.ceil(((1 - this.#tokens) * 1000) / this.#perSecond));
    else if (this.#options.backedUp?.() === true) {
      wait = BACKED_UP_WAIT_MS;
      reason = 'views_backed_up';
    }
    if (wait > 0) this.#noteWait(now, wait, reason);
    return wait;
  }

  /** Ends the episode timer; the throttle can be used again afterwards. */
  dispose(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#episode = undefined;
  }

  #noteWait(now: number, wait: number, reason: ThrottleEpisode['reason']): void {
    // Messages read in one chunk may each ask for a wait: one pause is counted per wait that began after the last ended.
    const fresh = now >= this.#lastWaitAt;
    this.#lastWaitAt = Math.max(this.#lastWaitAt, now + wait);
    if (this.#episode === undefined) {
      this.#episode = { reason, pauses: 0, pausedMs: 0 };
      this.#options.onEpisodeStart?.({ reason });
      this.#timer = setInterval(() => this.#checkQuiet(), EPISODE_QUIET_MS);
      this.#timer.unref?.();
    }
    if (!fresh) return;
    this.#episode.pauses += 1;
    this.#episode.pausedMs += wait;
  }

  #checkQuiet(): void {
    if (this.#episode === undefined || performance.now() - this.#lastWaitAt < EPISODE_QUIET_MS) return;
    const episode = this.#episode;
    this.dispose();
    this.#options.onEpisodeEnd?.({ ...episode, pausedMs: Math.round(episode.pausedMs) });
  }
}
