/**
 * Calls waiting for their turn, oldest first. The caller decides when a turn comes
 * ({@link CallQueue.startNext}); the queue only keeps each waiting call's own bounds: a call
 * waits no longer than its timeout (it then fails with the timeout error the upstream request
 * would have given it) and leaves at once when its signal aborts. A call that leaves keeps no
 * entry and no timer here.
 */
import { PoolError } from '@mcpool/protocol/rpc';
import { callCancelled, callTimedOut } from './upstreamClient.js';

/** A cancelled call fails with its signal's typed reason (the view's cancel or its close). */
function cancelledBy(signal: AbortSignal): PoolError {
  const reason: unknown = signal.reason;
  return reason instanceof PoolError ? reason : callCancelled();
}

class Waiter {
  readonly key: unknown;
  readonly #queue: CallQueue;
  readonly #start: () => Promise<unknown>;
  readonly #resolve: (value: unknown) => void;
  readonly #reject: (error: unknown) => void;
  readonly #signal: AbortSignal | undefined;
  readonly #timer: NodeJS.Timeout;

  constructor(key: unknown, queue: CallQueue, timeoutMs: number, signal: AbortSignal | undefined, start: () => Promise<unknown>, resolve: (value: unknown) => void, reject: (error: unknown) => void) {
    this.key = key;
    this.#queue = queue;
    this.#start = start;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#signal = signal;
    this.#timer = setTimeout(() => this.#leave(callTimedOut(timeoutMs)), timeoutMs);
    signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Its turn: the call starts now, and settles as its start settles. */
  start(): void {
    this.#done();
    try {
      this.#start().then(this.#resolve, this.#reject);
    } catch (error) {
      this.#reject(error);
    }
  }

  readonly #onAbort = (): void => this.#leave(cancelledBy(this.#signal!));

  #leave(error: PoolError): void {
    if (!this.#queue.remove(this)) return;
    this.#done();
    this.#reject(error);
  }

  #done(): void {
    clearTimeout(this.#timer);
    this.#signal?.removeEventListener('abort', this.#onAbort);
  }
}

export class CallQueue {
  readonly #waiting: Waiter[] = [];

  get size(): number {
    return this.#waiting.length;
  }

  /** The key the oldest waiting call was queued with (undefined when none waits). */
  get head(): unknown {
    return this.#waiting[0]?.key;
  }

  /**
   * Queues a call under `key` (whose it is): `start` runs on its turn, and the returned promise
   * settles as the started call does; or it fails when the call times out or is cancelled first.
   */
  enqueue<T>(key: unknown, timeoutMs: number, signal: AbortSignal | undefined, start: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) {
        reject(cancelledBy(signal));
        return;
      }
      this.#waiting.push(new Waiter(key, this, timeoutMs, signal, start, resolve as (value: unknown) => void, reject));
    });
  }

  /** Starts the oldest waiting call; false when none waits. */
  startNext(): boolean {
    const next = this.#waiting.shift();
    next?.start();
    return next !== undefined;
  }

  /** @internal A waiter leaving before its turn; false when it had already left. */
  remove(waiter: Waiter): boolean {
    const index = this.#waiting.indexOf(waiter);
    if (index === -1) return false;
    this.#waiting.splice(index, 1);
    return true;
  }
}
