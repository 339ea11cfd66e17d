/**
 * What the pool keeps per session: the entries it holds views on (the reverse index, so a
 * `releaseSession` costs O(its refs)), its acquires under way (a release cancels them), and its
 * spawn slots (a session starts at most `maxParallel` entries at once; the rest wait their turn).
 *
 * Every map here is keyed by session and shrinks with it: a session's set goes when it empties.
 */
import type { PoolEntry } from './entry.js';

/** An acquire under way; `releaseSession` marks it cancelled. */
export interface AcquireToken {
  cancelled: boolean;
}

export class SessionIndex {
  readonly #maxParallel: number;
  /** Session → the entries it holds views on (and acquires under way). */
  readonly #held = new Map<string, Set<PoolEntry>>();
  /** Session → its acquires under way. */
  readonly #pending = new Map<string, Set<AcquireToken>>();
  /** Session → spawns under way and the acquires waiting for one of them to settle. */
  readonly #slots = new Map<string, { running: number; waiting: (() => void)[] }>();

  constructor(maxParallel: number) {
    this.#maxParallel = maxParallel;
  }

  /** Whether `sessionId` holds no view and has no acquire under way. */
  holdsNothing(sessionId: string): boolean {
    return !this.#held.has(sessionId) && !this.#pending.has(sessionId);
  }

  /** The entries `sessionId` holds (a copy). */
  heldBy(sessionId: string): PoolEntry[] {
    return [...(this.#held.get(sessionId) ?? [])];
  }

  index(sessionId: string, entry: PoolEntry): void {
    let set = this.#held.get(sessionId);
    if (set === undefined) this.#held.set(sessionId, (set = new Set()));
    set.add(entry);
  }

  unindex(sessionId: string, entry: PoolEntry): void {
    const set = this.#held.get(sessionId);
    if (set === undefined) return;
    set.delete(entry);
    if (set.size === 0) this.#held.delete(sessionId);
  }

  /** Registers an acquire of `sessionId` under way; `done` must run when it settles. */
  begin(sessionId: string): { token: AcquireToken; done: () => void } {
    const token: AcquireToken = { cancelled: false };
    let tokens = this.#pending.get(sessionId);
    if (tokens === undefined) this.#pending.set(sessionId, (tokens = new Set()));
    tokens.add(token);
    const own = tokens;
    return {
      token,
      done: () => {
        own.delete(token);
        if (own.size === 0 && this.#pending.get(sessionId) === own) this.#pending.delete(sessionId);
      },
    };
  }

  /** Cancels the acquires under way of `sessionId` (or of every session). */
  cancel(sessionId?: string): void {
    const sets = sessionId === undefined ? [...this.#pending.values()] : [this.#pending.get(sessionId) ?? new Set<AcquireToken>()];
    for (const tokens of sets) for (const token of tokens) token.cancelled = true;
  }

  /** Forgets every session (the pool drained). */
  clear(): void {
    this.#held.clear();
  }

  /**
   * Waits for one of `sessionId`'s spawn slots; resolves with the function that gives it back
   * (idempotent), which wakes the next waiter in arrival order.
   */
  async spawnSlot(sessionId: string): Promise<() => void> {
    let slots = this.#slots.get(sessionId);
    if (slots === undefined) this.#slots.set(sessionId, (slots = { running: 0, waiting: [] }));
    if (slots.running >= this.#maxParallel) {
      const own = slots;
      await new Promise<void>((resolve) => own.waiting.push(resolve));
    } else slots.running += 1;
    const held = slots;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      // The slot passes straight to the next waiter (`running` unchanged), or is freed.
      const next = held.waiting.shift();
      if (next !== undefined) next();
      else if (--held.running === 0 && this.#slots.get(sessionId) === held) this.#slots.delete(sessionId);
    };
  }

  /** Sessions with a view, an acquire under way or a spawn slot (leak tests). */
  get size(): { held: number; pending: number; slots: number } {
    return { held: this.#held.size, pending: this.#pending.size, slots: this.#slots.size };
  }
}
