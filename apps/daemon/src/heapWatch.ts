/**
 * Keeps the `mcpool serve` process's main-thread heap near what it holds. V8 runs its first full
 * collection only once the old generation reaches its initial limit (about 128 MB of heap on a
 * 64-bit machine) and raises the limit after each one, so short-lived objects that outlive two
 * young-generation collections — a notification flood's, on a loaded machine — sit in RSS by the
 * tens of MB while the heap retains a fraction of them (measured: 30 MB retained, 110 MB used).
 *
 * Rule: every {@link HEAP_CHECK_MS}, when the heap's used size is more than {@link HEAP_SLACK_MB}
 * above what it was after the last full collection this watch ran, one runs now (a few tens of ms
 * on a heap this size; a flood's garbage asks for one every ten seconds or so, a calm daemon
 * almost never). The daemon's process only: a library embedding the pool keeps its host's GC.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How often the heap's used size is read (cheap: no walk of the heap). */
export const HEAP_CHECK_MS = 1000;
/** Garbage allowed above the last collection's result before the next full collection. */
export const HEAP_SLACK_MB = 24;

export interface HeapWatch {
  /** Full collections this watch ran. */
  readonly collections: number;
  stop(): void;
}

/** The engine's collector, without `--expose-gc` on the command line: the flag is set for one new context, then cleared. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as () => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

export function startHeapWatch(onCollect?: (info: { beforeMb: number; afterMb: number; ms: number }) => void): HeapWatch {
  const gc = collector();
  const used = (): number => getHeapStatistics().used_heap_size / 1048576;
  let baseline = used();
  let collections = 0;
  const timer = setInterval(() => {
    const before = used();
    // A collection V8 ran itself lowers the mark as well.
    if (before < baseline) baseline = before;
    if (before - baseline <= HEAP_SLACK_MB) return;
    const started = performance.now();
    gc();
    collections += 1;
    baseline = used();
    onCollect?.({ beforeMb: Math.round(before), afterMb: Math.round(baseline), ms: Math.round(performance.now() - started) });
  }, HEAP_CHECK_MS);
  timer.unref();
  return {
    get collections() {
      return collections;
    },
    stop: () => clearInterval(timer),
  };
}
