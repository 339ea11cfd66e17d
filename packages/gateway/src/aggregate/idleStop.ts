/**
 * Idle stop: a caller's view of a server that has had no request of the caller in flight and
 * none for the server's `idleStopMs` is given back, and the caller is shown the server's catalog
 * instead (as a server started on first use is); its next request needing the server acquires
 * it again. When every caller of an entry has let go this way, the pool ends the entry after its
 * drain grace: the process is stopped while no caller loses its session.
 *
 * Rules:
 * - Time comes from an injectable clock (`now` and an unref'd `every`); one sweep per caller,
 *   running only while it watches a view with a positive `idleStopMs`, every quarter of the
 *   shortest one (so a view is given back between 1× and 1.25× its `idleStopMs` after its last
 *   use).
 * - A view is in use while a request of the caller is in flight on it (`callsInFlight`), or it
 *   holds a resource subscription (its server must run to tell the updates); its last use is the
 *   latest of: acquired, handed to a request ({@link IdleStops.touch}), its last request settled.
 * - Which servers stop and after how long is the host's ({@link IdleStopsOptions.idleStopMs},
 *   asked at each sweep with the view's era): undefined or 0 never stops a server.
 */
import type { PooledConnection } from '@mcpool/core';

/** The clock of the idle rule (the daemon's `DaemonClock` is one). */
export interface IdleClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `tick` every `ms` until the returned function is called; never keeps the process alive. */
  every(ms: number, tick: () => void): () => void;
}

/** `Date.now()` and an unref'd interval. */
export const SYSTEM_IDLE_CLOCK: IdleClock = {
  now: () => Date.now(),
  every(ms, tick) {
    const timer = setInterval(tick, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};

export interface IdleStopsOptions {
  /** After how long without use the view of `name` is given back; undefined or 0: never. */
  idleStopMs(name: string, era: 'legacy' | 'modern' | undefined): number | undefined;
  clock: IdleClock;
  /** Gives the idle view of `name` back (the caller is shown its catalog from now on). */
  stop(name: string, view: PooledConnection): void;
}

interface Watched {
  readonly view: PooledConnection;
  lastUsed: number;
  readonly off: () => void;
}

/** The shortest sweep period, and the longest: a day-long `idleStopMs` is still swept hourly at worst. */
const MIN_SWEEP_MS = 20;
const MAX_SWEEP_MS = 60_000;

export class IdleStops {
  readonly #options: IdleStopsOptions;
  /** One per server the caller holds a view of; it leaves with the view ({@link unwatch}). */
  readonly #watched = new Map<string, Watched>();
  #stopSweep: (() => void) | undefined;
  #sweepMs = 0;

  constructor(options: IdleStopsOptions) {
    this.#options = options;
  }

  /** The caller holds a view of `name` now: its idle time starts. */
  watch(name: string, view: PooledConnection): void {
    this.unwatch(name);
    const watched: Watched = { view, lastUsed: this.#options.clock.now(), off: view.on('callsSettled', () => this.touch(name)) };
    this.#watched.set(name, watched);
    this.#schedule();
  }

  /** A request of the caller needs `name` now. */
  touch(name: string): void {
    const watched = this.#watched.get(name);
    if (watched !== undefined) watched.lastUsed = this.#options.clock.now();
  }

  /** The caller's view of `name` is gone (failed, moved, given back). */
  unwatch(name: string): void {
    const watched = this.#watched.get(name);
    if (watched === undefined) return;
    watched.off();
    this.#watched.delete(name);
    this.#schedule();
  }

  /** Stops watching everything (the caller went away). */
  close(): void {
    for (const name of [...this.#watched.keys()]) this.unwatch(name);
  }

  /** Gives back every view past its idle time. */
  sweep(): void {
    const now = this.#options.clock.now();
    for (const [name, watched] of [...this.#watched]) {
      const ms = this.#msOf(name, watched.view);
      if (ms === undefined) continue;
      const { view } = watched;
      if (view.callsInFlight > 0 || view.subscribedResources.length > 0) {
        watched.lastUsed = now;
        continue;
      }
      if (now - watched.lastUsed < ms) continue;
      this.unwatch(name);
      this.#options.stop(name, view);
    }
  }

  #msOf(name: string, view: PooledConnection): number | undefined {
    const ms = this.#options.idleStopMs(name, view.era);
    return ms === undefined || !(ms > 0) ? undefined : ms;
  }

  /** Runs the sweep while a watched view may stop, every quarter of the shortest idle time. */
  #schedule(): void {
    let shortest: number | undefined;
    for (const [name, watched] of this.#watched) {
      const ms = this.#msOf(name, watched.view);
      if (ms !== undefined && (shortest === undefined || ms < shortest)) shortest = ms;
    }
    const period = shortest === undefined ? 0 : Math.max(MIN_SWEEP_MS, Math.min(MAX_SWEEP_MS, Math.floor(shortest / 4)));
    if (period === this.#sweepMs) return;
    this.#stopSweep?.();
    this.#stopSweep = undefined;
    this.#sweepMs = period;
    if (period > 0) this.#stopSweep = this.#options.clock.every(period, () => this.sweep());
  }
}
