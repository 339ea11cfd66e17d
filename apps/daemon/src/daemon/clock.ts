/**
 * The daemon's clock, for the rules that are about time (how long a REST session may sit idle):
 * injectable, so a test moves time instead of waiting for it.
 */

export interface DaemonClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `tick` every `ms` until the returned function is called; never keeps the process alive. */
  every(ms: number, tick: () => void): () => void;
}

export const SYSTEM_CLOCK: DaemonClock = {
  now: () => Date.now(),
  every(ms, tick) {
    const timer = setInterval(tick, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};
