/**
 * OTP-style restart intensity per pool key: more than `maxRestarts` failures (transport losses,
 * actor thread deaths) within `periodMs` trip the key, and a tripped key is refused until an
 * operator restarts it. A failure is recorded for the key of the entry it happened to, once.
 *
 * Where each record shrinks (a map keyed by sessions must say it):
 * - failure times leave with the window (`sweep`, on the supervisor's tick), and a key with none
 *   left is forgotten;
 * - a tripped key stays until `reset` (an operator's restart), unless no one can acquire it any
 *   more: an unpooled key (one entry ever) is forgotten with its entry, a `per-session` key once
 *   its session holds nothing (`forgetOwner`).
 */
import type { ConnectionId, ServerConfig, WireError } from '@mcpool/protocol';
import type { EntryKey } from './entry.js';

/** What a failure is recorded from: the entry it happened to. */
export interface FailedEntry {
  readonly key: EntryKey;
  readonly serverName: string;
  readonly entryIndex: number;
  readonly config: ServerConfig;
  readonly pooled: boolean;
}

/** A key whose restarts exceeded the intensity: refused until a manual restart, shown as a failed entry. */
export interface TrippedKey extends FailedEntry {
  readonly lastError: WireError;
}

export interface IntensityLimit {
  maxRestarts: number;
  periodMs: number;
}

export class RestartIntensity {
  readonly limit: IntensityLimit;
  readonly #now: () => number;
  /** Failure times per key within the window, oldest first. */
  readonly #failures = new Map<ConnectionId, { times: number[]; ownerSession: string | undefined }>();
  readonly #tripped = new Map<ConnectionId, TrippedKey>();

  constructor(limit: IntensityLimit, now: () => number = Date.now) {
    this.limit = limit;
    this.#now = now;
  }

  /** Records one failure of `entry`'s key. Returns the key's new trip when this one exceeds the intensity. */
  record(entry: FailedEntry, lastError: WireError): TrippedKey | undefined {
    const id = entry.key.id;
    const now = this.#now();
    const record = this.#failures.get(id) ?? { times: [], ownerSession: entry.key.ownerSession };
    record.times = record.times.filter((t) => now - t < this.limit.periodMs);
    record.times.push(now);
    this.#failures.set(id, record);
    if (record.times.length <= this.limit.maxRestarts || this.#tripped.has(id)) return undefined;
    const tripped: TrippedKey = { key: entry.key, serverName: entry.serverName, entryIndex: entry.entryIndex, config: entry.config, pooled: entry.pooled, lastError };
    this.#tripped.set(id, tripped);
    return tripped;
  }

  /** How many failures `key` has in the window now. */
  failuresOf(key: ConnectionId): number {
    const now = this.#now();
    return this.#failures.get(key)?.times.filter((t) => now - t < this.limit.periodMs).length ?? 0;
  }

  tripped(key: ConnectionId): TrippedKey | undefined {
    return this.#tripped.get(key);
  }

  /** Every tripped key, for the snapshot and `restartByName`. */
  trippedKeys(): IterableIterator<TrippedKey> {
    return this.#tripped.values();
  }

  /** An operator's restart: the key starts over. */
  reset(key: ConnectionId): void {
    this.#tripped.delete(key);
    this.#failures.delete(key);
  }

  /** No one can acquire `key` again (an unpooled entry ended): its record goes. */
  forget(key: ConnectionId): void {
    this.reset(key);
  }

  /** `sessionId` holds nothing any more: the keys kept for it go. */
  forgetOwner(sessionId: string): void {
    for (const [key, record] of this.#failures) if (record.ownerSession === sessionId) this.#failures.delete(key);
    for (const [key, tripped] of this.#tripped) if (tripped.key.ownerSession === sessionId) this.#tripped.delete(key);
  }

  /** Drops failure times older than the window, and keys with none left (tripped keys stay). */
  sweep(): void {
    const now = this.#now();
    for (const [key, record] of this.#failures) {
      record.times = record.times.filter((t) => now - t < this.limit.periodMs);
      if (record.times.length === 0) this.#failures.delete(key);
    }
  }

  /** Keys with failures in the window, and tripped keys (health figures, leak tests). */
  get size(): { failing: number; tripped: number } {
    return { failing: this.#failures.size, tripped: this.#tripped.size };
  }
}
