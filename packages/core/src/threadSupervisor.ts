/**
 * The supervision of connection threads: for each entry's thread, its liveness, its death, its
 * restart intensity and its replacement. A thread hosts one connection, so whatever ends it
 * (a crash, an out-of-memory, a blocked loop ended here) is that connection's death, counted once
 * against that entry's key and no other.
 *
 * - **Liveness** (`./threadLiveness.ts`): each interval every live thread is sampled without being
 *   asked anything; a thread whose event loop turns, however slowly, is alive; one that showed no
 *   progress for the stall bound is terminated, and its exit is its death.
 * - **Death**: the child's tree is killed (it belongs to the process, not the thread), the entry
 *   fails and leaves routing, its key counts one failure; an entry sessions hold is replaced
 *   (OTP's permanent child) unless the key tripped or the pool drains, and its views move to the
 *   replacement.
 * - **Transport losses** (the actor reconnects by itself) count against the key too; past the
 *   intensity the entry fails and closes, and the key is refused until an operator restarts it.
 *
 * What it does to entries (status, routing, events, views) goes through {@link SupervisedPool}:
 * the pool owns them. Time comes from an injectable clock.
 */
import { ErrorCode, PoolError, type EntryStatus, type Logger, type PoolEvent, type WireError } from '@mcpool/protocol';
import type { PoolEntry } from './entry.js';
import { RestartIntensity, type IntensityLimit } from './restartIntensity.js';
import { ThreadLiveness, type LivenessPolicy } from './threadLiveness.js';

/** Time for the supervisor: a monotonic `now` (ms) and a repeating timer. */
export interface SupervisorClock {
  now(): number;
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/** The real clock: `performance.now()` and an unref'd interval (a pool never keeps its host alive by it). */
export const REAL_CLOCK: SupervisorClock = {
  now: () => performance.now(),
  setInterval: (callback, ms) => setInterval(callback, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

/** What the supervisor does to entries, done by the pool that owns them. */
export interface SupervisedPool {
  /** The entries routing knows (their threads are the ones watched). */
  entries(): Iterable<PoolEntry>;
  draining(): boolean;
  setStatus(entry: PoolEntry, status: EntryStatus): void;
  /** Removes the entry from routing (by identity) and gives back its budget slot. */
  evict(entry: PoolEntry): void;
  /** Tracks the entry's teardown, so a replacement under its key waits for the old tree to be gone. */
  retire(entry: PoolEntry, teardown: Promise<void>): void;
  closeEntry(entry: PoolEntry, reason: string): Promise<void>;
  /** The entry's views leave the session index (they fail on their own: their port closed). */
  dropViews(entry: PoolEntry): void;
  /** Starts a replacement of a held entry that died and moves its views there; they fail with `lost` if it cannot. */
  replace(dead: PoolEntry, lost: PoolError): void;
  /** Fails the views of an entry that is not replaced. */
  orphan(dead: PoolEntry, error: PoolError): void;
  emit(event: PoolEvent): void;
}

export interface ThreadSupervisorOptions {
  intervalMs: number;
  liveness: LivenessPolicy;
  intensity: IntensityLimit;
  logger: Logger;
  clock?: SupervisorClock;
}

export class ThreadSupervisor {
  readonly intensity: RestartIntensity;
  readonly #pool: SupervisedPool;
  readonly #options: ThreadSupervisorOptions;
  readonly #clock: SupervisorClock;
  readonly #logger: Logger;
  /** Each watched thread's liveness, with its entry (no entry outlives what the pool keeps). */
  readonly #liveness = new WeakMap<PoolEntry, ThreadLiveness>();
  #timer: unknown;

  constructor(options: ThreadSupervisorOptions, pool: SupervisedPool) {
    this.#options = options;
    this.#pool = pool;
    this.#clock = options.clock ?? REAL_CLOCK;
    this.#logger = options.logger;
    this.intensity = new RestartIntensity(options.intensity, () => this.#clock.now());
  }

  /** Starts sampling every live thread each interval. Idempotent. */
  start(): void {
    this.#timer ??= this.#clock.setInterval(() => this.tick(), this.#options.intervalMs);
  }

  stop(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Supervises `entry`'s thread from its spawn on: its exit is handled here. */
  watch(entry: PoolEntry): void {
    entry.thread.onExit((code) => this.#died(entry, code));
  }

  /**
   * One round: stale failure times leave the intensity window, and every live thread of an active
   * or draining entry is sampled (a spawning actor may still be loading its code; its start has its
   * own deadline). A silent thread is sent a beat; a blocked one is terminated.
   */
  tick(): void {
    const now = this.#clock.now();
    this.intensity.sweep();
    for (const entry of this.#pool.entries()) {
      const thread = entry.thread;
      if (!thread.alive || (entry.status !== 'active' && entry.status !== 'draining')) continue;
      let liveness = this.#liveness.get(entry);
      if (liveness === undefined) this.#liveness.set(entry, (liveness = new ThreadLiveness(this.#options.liveness)));
      const verdict = liveness.observe(thread.sample(), now);
      if (verdict === 'progress') continue;
      const fields = { server: entry.serverName, entryIndex: entry.entryIndex, misses: liveness.misses, stallMs: Math.round(liveness.stallMs) };
      if (verdict === 'silent') {
        thread.beat();
        if (liveness.misses > 1) this.#logger.debug(fields, 'actor thread shows no progress yet');
        continue;
      }
      // Blocked (a busy loop, a wait that never ends): it cannot serve its views. End it; its exit is its death.
      this.#logger.error(fields, 'actor thread blocked: its event loop has not turned');
      entry.unresponsive = true;
      this.#liveness.delete(entry);
      void thread.terminate({ blocked: true });
    }
  }

  /** A transport loss of `entry` (its actor reconnects by itself): counted against its key; past the intensity, the entry fails and closes. */
  lost(entry: PoolEntry, lastError: WireError): void {
    // An unpooled key ends with its entry: a late loss of an ended one is nobody's to count.
    if (!entry.pooled && entry.terminal) return;
    if (this.#count(entry, lastError) && !entry.terminal) {
      entry.lastError = lastError;
      this.#pool.emit({ type: 'failed', serverName: entry.serverName, entryIndex: entry.entryIndex, generation: entry.generation, lastError });
      void this.#pool.closeEntry(entry, 'restart intensity exceeded');
    }
  }

  /** Counts one failure against `entry`'s key; true when it trips the key. */
  #count(entry: PoolEntry, lastError: WireError): boolean {
    const tripped = this.intensity.record(entry, lastError);
    if (tripped === undefined) return false;
    const { maxRestarts, periodMs } = this.intensity.limit;
    this.#logger.error({ server: entry.serverName, entryIndex: entry.entryIndex, failures: maxRestarts + 1, periodMs }, 'restart intensity exceeded: the server stays failed until restarted');
    return true;
  }

  #died(entry: PoolEntry, code: number): void {
    const pool = this.#pool;
    // Whatever the exit, the child outlives its thread: end its tree (a no-op once it is gone).
    const teardown = entry.thread.killTree();
    if (!entry.unresponsive && (entry.status === 'closed' || (entry.status === 'failed' && entry.views.size === 0))) {
      pool.evict(entry);
      pool.retire(entry, teardown);
      return;
    }
    // The thread died under a live entry: its views' ports closed with it, so their in-flight
    // calls reject as interrupted. A held entry is brought back.
    const held = entry.views.size > 0 && entry.pooled;
    const lastError: WireError = {
      code: ErrorCode.ACTOR_DIED,
      message: entry.unresponsive ? `the actor of ${entry.serverName} stopped answering and was ended` : `the actor of ${entry.serverName} died (exit code ${code})`,
      data: { exitCode: code },
    };
    entry.lastError = lastError;
    pool.setStatus(entry, 'failed');
    // Counted before the entry leaves routing: an unpooled key is forgotten when it does.
    this.#count(entry, lastError);
    pool.evict(entry);
    pool.retire(entry, teardown);
    // A held entry keeps its views until its replacement takes them.
    if (!held) pool.dropViews(entry);
    this.#logger.error({ server: entry.serverName, entryIndex: entry.entryIndex, exitCode: code }, 'actor died');
    pool.emit({ type: 'disconnected', serverName: entry.serverName, entryIndex: entry.entryIndex, generation: entry.generation, reason: 'actor_died' });
    pool.emit({ type: 'failed', serverName: entry.serverName, entryIndex: entry.entryIndex, generation: entry.generation, lastError });
    if (!held) return;
    const lost = new PoolError(ErrorCode.ACTOR_DIED, lastError.message, { data: { serverName: entry.serverName, entryIndex: entry.entryIndex } });
    if (pool.draining() || this.intensity.tripped(entry.id) !== undefined) pool.orphan(entry, lost);
    else pool.replace(entry, lost);
  }
}
