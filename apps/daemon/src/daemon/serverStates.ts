/**
 * Where each server stands in its life, as status, dashboard, metrics and events show it:
 * `cold` (listed from its catalog, never started by this daemon), `starting`, `running`, or
 * `stopped` (it ran, and nobody used it for its idle time, or at all, so it was let go; it is
 * listed from its catalog and the next call starts it again) — with the cost of its last start
 * (spawn to ready, ms). Fed by the pool's entry events as they happen, never by polling.
 *
 * A server's record lives while it has a live entry or is configured: an injected server's goes
 * with its last entry ({@link ServerStates.configured} says which names stay).
 */
import type { PoolEvent } from '@mcpool/core';
import type { ServerLifeState } from '@mcpool/client';

interface Life {
  /** Live entries, by index: when each began to spawn, and whether it is ready. */
  readonly entries: Map<number, { since: number; ready: boolean }>;
  ran: boolean;
  lastStartMs: number | undefined;
  /** The state last told (so a change is told once). */
  told: ServerLifeState | undefined;
}

export interface ServerStatesOptions {
  /** Tells a server's new state (the daemon's event stream). */
  publish: (change: { serverName: string; state: ServerLifeState; lastStartMs?: number }) => void;
  /** Whether `name` is configured now (its record outlives its entries). */
  configured: (name: string) => boolean;
  /** A monotonic clock in ms. @default performance.now */
  now?: () => number;
}

export class ServerStates {
  readonly #options: ServerStatesOptions;
  readonly #now: () => number;
  readonly #lives = new Map<string, Life>();

  constructor(options: ServerStatesOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** The pool's events (after the entry watcher's). */
  onPoolEvent(event: PoolEvent): void {
    if (event.type !== 'statusChanged') return;
    const { serverName, entryIndex, status } = event;
    let life = this.#lives.get(serverName);
    if (status === 'spawning') {
      if (life === undefined) this.#lives.set(serverName, (life = { entries: new Map(), ran: false, lastStartMs: undefined, told: undefined }));
      life.entries.set(entryIndex, { since: this.#now(), ready: false });
    } else if (life === undefined) {
      return;
    } else if (status === 'active') {
      const entry = life.entries.get(entryIndex);
      if (entry === undefined || entry.ready) return;
      entry.ready = true;
      life.ran = true;
      life.lastStartMs = Math.round(this.#now() - entry.since);
    } else if (status === 'closed' || status === 'failed') {
      if (!life.entries.delete(entryIndex)) return;
    } else {
      return;
    }
    this.#tell(serverName, life);
    if (life.entries.size === 0 && !this.#options.configured(serverName)) this.#lives.delete(serverName);
  }

  /** The state of `name` (`cold` when it never ran here and `cold` says it is listed from its catalog); undefined: none of these. */
  stateOf(name: string, cold: boolean): ServerLifeState | undefined {
    const life = this.#lives.get(name);
    const state = life === undefined ? undefined : this.#derive(life);
    return state ?? (cold ? 'cold' : undefined);
  }

  /** How long the last start of `name` took, spawn to ready (ms). */
  lastStartMs(name: string): number | undefined {
    return this.#lives.get(name)?.lastStartMs;
  }

  /** Drops the records of servers no longer configured and not running (after a reload). */
  prune(): void {
    for (const [name, life] of this.#lives) if (life.entries.size === 0 && !this.#options.configured(name)) this.#lives.delete(name);
  }

  #derive(life: Life): ServerLifeState | undefined {
    if (life.entries.size > 0) return [...life.entries.values()].some((entry) => entry.ready) ? 'running' : 'starting';
    return life.ran ? 'stopped' : undefined;
  }

  #tell(serverName: string, life: Life): void {
    const state = this.#derive(life);
    if (state === undefined || state === life.told) return;
    life.told = state;
    this.#options.publish({ serverName, state, ...(life.lastStartMs === undefined ? {} : { lastStartMs: life.lastStartMs }) });
  }
}
