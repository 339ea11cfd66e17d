/**
 * Hosts connection actors on worker threads, one connection per thread (`./connectionThread.ts`):
 * the thread is the connection's failure domain. A warm spare thread that has already imported
 * the actor's code is kept booted, so an acquire does not wait for a thread's boot.
 *
 * Why raw workers and not piscina: piscina's task model (call → result, cancel = kill the thread,
 * FIFO queue that decides who waits) does not fit an addressable, long-lived actor, and its
 * only gain here — warm start — comes as well from one pre-booted spare (measured on Node 20).
 * The supervisor's budget decides who gets a thread; nothing ever queues.
 *
 * A guest in its host's process: an idle connection's thread (no session holds it) is `unref`'d,
 * like the spare, so it never keeps the host alive; and when the host exits without draining, the
 * process groups its actors still hold are SIGKILLed synchronously in `process.on('exit')`
 * (children run in their own group, so nothing else would end them). Only groups spawned for an
 * actor, by pgid, and only while the leader is still the process that was recorded.
 */
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { LIVENESS_CELLS } from '@mcpool/protocol/threadLiveness';
import { DEFAULT_MAX_LINE_BYTES } from '@mcpool/protocol/lineReader';
import { ErrorCode, PoolError, type Logger } from '@mcpool/protocol';
import { actorHeapMb } from './actorHeap.js';
import { ConnectionThread } from './connectionThread.js';

export interface ActorHostOptions {
  /** The actor's worker entry (compiled JS). @default the `@mcpool/actor/worker` module */
  workerUrl?: URL;
  /**
   * V8 limits per connection thread. The old generation holds one message of the largest size a
   * server may send (see `./actorHeap.ts`; a connection that needs more gets a thread with it,
   * see `create`); the young generation is kept at V8's smallest (two 1 MB semi-spaces): what a
   * relayed call leaves alive there is a few KB, and a larger one is RSS the thread keeps.
   * @default { maxOldGenerationSizeMb: 320, maxYoungGenerationSizeMb: 3 }; a pool sizes the old generation for its `maxMessageBytes`
   */
  resourceLimits?: ResourceLimits;
  /** Keep one booted spare thread, so a new connection does not wait for a thread to boot. @default true */
  warmSpare?: boolean;
}

/** The limits of a connection thread unless the host sets its own (see {@link ActorHostOptions.resourceLimits}). */
export const DEFAULT_RESOURCE_LIMITS: Readonly<ResourceLimits> = Object.freeze({ maxOldGenerationSizeMb: actorHeapMb(DEFAULT_MAX_LINE_BYTES), maxYoungGenerationSizeMb: 3 });

/** Hosts with threads that may still hold process groups; one `exit` listener serves them all. */
const openHosts = new Set<ActorHost>();

function killHeldGroupsAtExit(): void {
  for (const host of openHosts) host.killGroupsNow();
}

function trackOpen(host: ActorHost, open: boolean): void {
  if (open === openHosts.has(host)) return;
  if (open) {
    if (openHosts.size === 0) process.on('exit', killHeldGroupsAtExit);
    openHosts.add(host);
  } else {
    openHosts.delete(host);
    if (openHosts.size === 0) process.off('exit', killHeldGroupsAtExit);
  }
}

export class ActorHost {
  readonly #workerPath: string;
  readonly #resourceLimits: ResourceLimits;
  readonly #warmSpare: boolean;
  /** A booted thread hosting nothing yet. */
  #spare: ConnectionThread | undefined;
  #closed = false;
  /** Threads hosting a connection, until they exited (the spare is not one). */
  readonly #live = new Set<ConnectionThread>();

  constructor(options: ActorHostOptions = {}) {
    const url = options.workerUrl ?? new URL(import.meta.resolve('@mcpool/actor/worker'));
    this.#workerPath = fileURLToPath(url);
    this.#resourceLimits = options.resourceLimits ?? DEFAULT_RESOURCE_LIMITS;
    this.#warmSpare = options.warmSpare ?? true;
  }

  /** Live connection threads (one per pool entry; the spare is not counted). */
  get liveCount(): number {
    return this.#live.size;
  }

  /** Whether a spare thread is booted or booting. */
  get hasSpare(): boolean {
    return this.#spare?.alive === true;
  }

  /** Starts the warm spare if none is booted or booting. */
  prewarm(): void {
    if (this.#closed || !this.#warmSpare || this.#spare !== undefined) return;
    let spare: ConnectionThread;
    try {
      spare = this.#newThread();
    } catch {
      // A spare is a head start, never a failure of its own: the next create() tries again and reports it.
      return;
    }
    // An idle spare must not keep the process alive, and a spare that fails to boot (a bad
    // workerUrl) must not crash the host: the next create() boots a fresh thread and fails there.
    spare.unref();
    void spare.exited.then(() => {
      if (this.#spare === spare) this.#spare = undefined;
    });
    this.#spare = spare;
  }

  /**
   * A connection thread (ref'd until the pool calls `unref` on it): the warm spare, else a new
   * one; then a new spare is booted. `log` receives its actor's log records and listener errors.
   * `needs.heapMb` is the old-generation limit its messages need: above the threads' own, it gets
   * a new thread with that limit (the spare stays for the next). Throws `MCPOOL_ACTOR_DIED` when
   * Node refuses the thread.
   */
  create(log?: Logger, needs: { heapMb?: number | undefined } = {}): ConnectionThread {
    if (this.#closed) throw new PoolError(ErrorCode.POOL_DRAINING, 'the actor host is closed');
    const heapMb = needs.heapMb !== undefined && needs.heapMb > (this.#resourceLimits.maxOldGenerationSizeMb ?? Infinity) ? needs.heapMb : undefined;
    const spare = heapMb === undefined && this.#spare?.alive === true ? this.#spare : undefined;
    if (heapMb === undefined) this.#spare = undefined;
    const thread = spare ?? this.#newThread(heapMb);
    if (log !== undefined) thread.bind(log);
    thread.ref();
    this.#live.add(thread);
    trackOpen(this, true);
    void thread.exited.then(() => this.#live.delete(thread));
    this.prewarm();
    return thread;
  }

  /** Ends the spare and force-ends every thread still alive (callers shut connections down first). */
  async close(): Promise<void> {
    this.#closed = true;
    const spare = this.#spare;
    this.#spare = undefined;
    await Promise.all([spare?.terminate({ blocked: true }), ...[...this.#live].map((thread) => thread.terminate())]);
    trackOpen(this, false);
  }

  /** Synchronously SIGKILLs the process groups every live connection holds (the host is exiting). */
  killGroupsNow(): void {
    for (const thread of this.#live) thread.killGroupsNow();
  }

  /** A new connection thread (with `heapMb` as its old-generation limit); one Node refuses to create fails as `MCPOOL_ACTOR_DIED`. */
  #newThread(heapMb?: number): ConnectionThread {
    const liveness = new SharedArrayBuffer(LIVENESS_CELLS.length * Int32Array.BYTES_PER_ELEMENT);
    const resourceLimits = heapMb === undefined ? this.#resourceLimits : { ...this.#resourceLimits, maxOldGenerationSizeMb: heapMb };
    const create = (): Worker => new Worker(this.#workerPath, { resourceLimits, stderr: false, stdout: false, execArgv: workerExecArgv(), workerData: { liveness } });
    try {
      try {
        return new ConnectionThread(create(), liveness);
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw error;
        // Some of the host's flags are not allowed in a worker on this Node: left out from now on.
        refuseHostFlags((error as Error).message);
        return new ConnectionThread(create(), liveness);
      }
    } catch (error) {
      throw new PoolError(ErrorCode.ACTOR_DIED, `an actor thread could not be started: ${(error as Error).message}`, { cause: error as Error });
    }
  }
}

/**
 * Host flags a worker was refused with on this Node. Which flags a worker takes depends on the
 * Node version (V8 options such as `--trace-gc` or `--stack-trace-limit` never;
 * `--experimental-strip-types` from Node 22.6), so they are learned from the first refusal
 * rather than listed.
 */
const refusedHostFlags = new Set<string>();

/**
 * Records what a worker's `ERR_WORKER_INVALID_EXEC_ARGV` names ("…flags: --a, --b=1"); a refusal
 * that names none of the host's flags refuses them all.
 */
function refuseHostFlags(message: string): void {
  const named = new Set(message.slice(message.lastIndexOf(': ') + 2).split(', '));
  const flags = hostFlags();
  const refused = flags.filter((flag) => named.has(flag));
  for (const flag of refused.length > 0 ? refused : flags) refusedHostFlags.add(flag);
}

/** The host's node flags that make sense in an actor thread (see {@link workerExecArgv}). */
function hostFlags(): string[] {
  const kept: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!/^--(enable-source-maps|conditions|experimental-|no-warnings|no-deprecation|trace-|stack-trace-limit)/.test(arg)) continue;
    // `--conditions node` comes as two arguments: passed as one, `--conditions=node`, the form a refusal names.
    kept.push(arg === '--conditions' && i + 1 < args.length ? `${arg}=${args[++i]!}` : arg);
  }
  return kept;
}

/**
 * The host's node flags that make sense in an actor thread, less those a worker was refused
 * with. Workers inherit `execArgv` by default, and flags like `--input-type` or `--eval` make
 * every worker fail to start.
 *
 * `MCPOOL_WORKER_CPU_PROF=<dir>` runs every actor thread created from then on under V8's CPU
 * profiler (`--cpu-prof --cpu-prof-dir=<dir>`), for finding where a call's time goes on the
 * actor's side. It is read each time a thread is created (never at construction), and a thread
 * writes its profile only when it exits by itself: one ended by `terminate()` writes none.
 */
function workerExecArgv(): string[] {
  const kept: string[] = [];
  const profileDir = process.env['MCPOOL_WORKER_CPU_PROF'];
  if (profileDir !== undefined && profileDir !== '') kept.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval=100');
  for (const flag of hostFlags()) if (!refusedHostFlags.has(flag)) kept.push(flag);
  return kept;
}
