/**
 * A caller that keeps a view busy: `echo` calls one after another, without pause, until stopped
 * (bounded in count), counting the answers and keeping every error. For tests that prove a
 * neighbour kept answering while something else happened.
 */
import type { PooledConnection } from '@mcpool/core';

export interface ContinuousCaller {
  /** Calls answered so far. */
  readonly answered: number;
  /** Every error a call rejected with. */
  readonly errors: unknown[];
  /** Stops after the call in flight. */
  stop(): Promise<void>;
}

export function callContinuously(view: PooledConnection, maxCalls = 100_000): ContinuousCaller {
  let stopped = false;
  let answered = 0;
  const errors: unknown[] = [];
  const loop = (async () => {
    for (let i = 0; i < maxCalls && !stopped; i++) {
      try {
        await view.callTool('echo', { text: String(i) });
        answered += 1;
      } catch (error) {
        errors.push(error);
      }
    }
  })();
  return {
    get answered() {
      return answered;
    },
    errors,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
