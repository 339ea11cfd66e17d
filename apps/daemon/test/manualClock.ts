/** A daemon clock for tests of rules about time: it moves only when the test says so. */
import type { DaemonClock } from 'mcpool';

/** A clock that moves only when told, firing the intervals that come due on the way. */
export class ManualClock implements DaemonClock {
  #now = Date.parse('2026-12-05T12:00:00Z');
  readonly #timers = new Set<{ every: number; due: number; tick: () => void }>();

  now(): number {
    return this.#now;
  }

  every(ms: number, tick: () => void): () => void {
    const timer = { every: ms, due: this.#now + ms, tick };
    this.#timers.add(timer);
    return () => this.#timers.delete(timer);
  }

  get timers(): number {
    return this.#timers.size;
  }

  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      let next: { every: number; due: number; tick: () => void } | undefined;
      for (const timer of this.#timers) if (timer.due <= until && (next === undefined || timer.due < next.due)) next = timer;
      if (next === undefined) break;
      this.#now = next.due;
      next.due += next.every;
      next.tick();
    }
    this.#now = until;
  }
}
