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
 *
 * The young generation is held at its initial size as well ({@link holdYoungGeneration}).
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Worker } from 'node:worker_threads';

/** How often the heap's used size is read (cheap: no walk of the heap). */
export const HEAP_CHECK_MS = 1000;
/** Garbage allowed above the last collection's result before the next full collection. */
export const HEAP_SLACK_MB = 24;

/** The V8 flag that keeps a thread's young generation at its initial two 1 MB semi-spaces. */
export const HOLD_YOUNG_FLAG = '--semi-space-growth-factor=1';

/**
 * V8 grows a thread's young generation (two semi-spaces, 1 MB each at first) up to 16 MB each
 * while its scavenges keep finding survivors, and does not give the pages back: under a burst of
 * calls the daemon's main thread sat at 32 MB of new space holding 1–3 MB of live objects. A
 * semi-space size given on the node command line cannot be set once the process runs (the main
 * thread's heap is configured before any code), but the growth factor is read at each growth,
 * so 1 stops it. V8 raises that flag back to 2 whenever it configures a new heap — every worker
 * thread's start (the pool's spare thread starts whenever one is taken, at any time) — so the
 * serve process sets it again as each worker comes online, and at each heap check. Worker threads get the
 * flag only after their own heap is configured: their young generation is bounded by their
 * `resourceLimits` instead.
 *
 * Rule: only in the `mcpool serve` process, and not when the user chose a semi-space size
 * (`--max-semi-space-size`, `--min-semi-space-size` on the command line or in NODE_OPTIONS).
 * Returns whether the flag was set.
 */
export function holdYoungGeneration(execArgv: readonly string[] = process.execArgv, nodeOptions: string | undefined = process.env.NODE_OPTIONS): boolean {
  if ([...execArgv, nodeOptions ?? ''].some((arg) => /semi[-_]space/.test(arg))) return false;
  setFlagsFromString(HOLD_YOUNG_FLAG);
  return true;
}

export interface HeapWatchOptions {
  /** Set {@link holdYoungGeneration}'s flag again at every check. @default false */
  holdYoung?: boolean;
}

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

export function startHeapWatch(onCollect?: (info: { beforeMb: number; afterMb: number; ms: number }) => void, options: HeapWatchOptions = {}): HeapWatch {
  const gc = collector();
  // One answer for the process's life: the command line and NODE_OPTIONS do not change.
  const holdYoung = options.holdYoung === true && holdYoungGeneration();
  const used = (): number => getHeapStatistics().used_heap_size / 1048576;
  let baseline = used();
  let collections = 0;
  // Node announces every new worker on `process` ('worker'); its heap is configured once it is online.
  const rehold = (worker: Worker): void => {
    worker.once('online', () => setFlagsFromString(HOLD_YOUNG_FLAG));
  };
  if (holdYoung) process.on('worker', rehold);
  const timer = setInterval(() => {
    if (holdYoung) setFlagsFromString(HOLD_YOUNG_FLAG);
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
    stop: () => {
      clearInterval(timer);
      process.off('worker', rehold);
    },
  };
}
