/**
 * Hosts connection actors on worker threads: one raw `Worker` per pool entry, plus one warm spare
 * that has already imported the SDK (~150 ms per isolate), so a cold acquire does not pay it.
 *
 * Why raw workers and not piscina: piscina's task model (call → result, cancel = kill the thread,
 * FIFO queue that decides who waits) does not fit an addressable, long-lived actor, and its
 * only gain here — warm start — comes as well from one pre-booted spare (measured on Node 20).
 * The supervisor's budget decides who gets a thread; nothing ever queues.
 *
 * A worker's exit is watched: every pending control call rejects with `MCPOOL_ACTOR_DIED`, and
 * the child's process group is killed, because children belong to the process, not the thread.
 *
 * A guest in its host's process: an idle actor (no session holds it) is `unref`'d, like the spare,
 * so it never keeps the host alive; and when the host exits without draining, the process groups
 * its actors still hold are SIGKILLed synchronously in `process.on('exit')` (children run in
 * their own group, so nothing else would end them). Only groups an actor reported starting, by
 * pgid, and only while the leader is still the process that was recorded.
 */
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { isSameProcess, processExists, signalTracked, snapshotTree, startTimeOf } from '@mcpool/protocol/processTree';
import { ErrorCode, PoolError, RpcChannel, type LogRecord, type Logger, type RpcRequestOptions } from '@mcpool/protocol';
import { SILENT_LOGGER, writeRecord } from './logging.js';

export interface ActorHostOptions {
  /** The actor's worker entry (compiled JS). @default the `@mcpool/actor/worker` module */
  workerUrl?: URL;
  /** V8 limits per actor thread. @default { maxOldGenerationSizeMb: 128 } */
  resourceLimits?: ResourceLimits;
  /** Keep one booted spare thread. @default true */
  warmSpare?: boolean;
}

export type ActorEventListener = (ev: string, data: unknown) => void;

/** One actor thread, seen from the supervisor. */
export class ActorHandle {
  readonly worker: Worker;
  readonly control: RpcChannel;
  /** The child's pid and process group, once the actor reported them. */
  pgid: number | undefined;
  readonly exited: Promise<number>;
  #exitCode: number | undefined;
  #listeners = new Set<ActorEventListener>();
  #exitListeners = new Set<(code: number, error: Error | undefined) => void>();
  #lastError: Error | undefined;
  /** Process groups this actor started and has not reported reaped, with their leader's start time. */
  readonly #groups = new Map<number, string | undefined>();
  /** Set once a shutdown or terminate began: the worker stays ref'd until it has exited. */
  #ending = false;

  /** `log` receives the actor's log records (a child logger bound to its entry). */
  constructor(worker: Worker, log: Logger = SILENT_LOGGER) {
    this.worker = worker;
    this.control = new RpcChannel(worker, {
      ownsPort: false,
      onEvent: (ev, data) => {
        if (ev === 'log') {
          writeRecord(log, data as LogRecord);
          return;
        }
        if (ev === 'spawned') {
          const { pgid } = data as { pgid: number };
          this.pgid = pgid;
          this.#groups.set(pgid, startTimeOf(pgid));
        } else if (ev === 'reaped') {
          this.#groups.delete((data as { pgid: number }).pgid);
        }
        for (const listener of this.#listeners) {
          try {
            listener(ev, data);
          } catch {
            // one listener's failure must not stop the others
          }
        }
      },
    });
    worker.on('error', (error) => {
      this.#lastError = error;
    });
    this.exited = new Promise((resolve) => {
      worker.once('exit', (code) => {
        this.#exitCode = code;
        const reason = new PoolError(ErrorCode.ACTOR_DIED, this.#lastError ? `the actor thread died: ${this.#lastError.message}` : `the actor thread exited with code ${code}`, {
          data: { exitCode: code },
          ...(this.#lastError ? { cause: this.#lastError } : {}),
        });
        this.control.fail(reason);
        for (const listener of this.#exitListeners) listener(code, this.#lastError);
        resolve(code);
      });
    });
  }

  get alive(): boolean {
    return this.#exitCode === undefined;
  }

  request<T>(op: string, args: unknown, options?: RpcRequestOptions): Promise<T> {
    return this.control.request<T>(op, args, options);
  }

  onEvent(listener: ActorEventListener): void {
    this.#listeners.add(listener);
  }

  onExit(listener: (code: number, error: Error | undefined) => void): void {
    this.#exitListeners.add(listener);
  }

  /** A held actor keeps the host process alive (its sessions are using it). */
  ref(): void {
    if (this.alive) this.worker.ref();
  }

  /**
   * An idle actor does not keep the host alive: a host that exits meanwhile kills its group (see
   * {@link killGroupsNow}). Ignored once a shutdown began, which must be allowed to finish.
   */
  unref(): void {
    if (this.alive && !this.#ending) this.worker.unref();
  }

  /**
   * Synchronously SIGKILLs every process group this actor started and still holds, when the
   * leader is the recorded process. For the host's exit: nothing can be awaited there.
   */
  killGroupsNow(): void {
    for (const [pgid, startTime] of this.#groups) {
      if (pgid <= 1 || !leaderUnchanged(pgid, startTime)) continue;
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }
  }

  /**
   * Asks the actor to close (child tree ended gracefully), waits for the thread to exit, and
   * falls back to `terminate()` plus a group SIGKILL past `timeoutMs`.
   */
  async shutdown(reason: string, timeoutMs: number): Promise<void> {
    if (!this.alive) return;
    this.#ending = true;
    this.worker.ref();
    const closed = this.control.request('close', { reason }, { timeoutMs }).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs + 500);
    });
    const outcome = await Promise.race([closed.then(() => this.exited), deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') await this.terminate();
  }

  /**
   * Force-ends the child's tree, then the thread. The tree goes first, while the thread still
   * lives: its event loop reaps the child. A child killed after its thread died stays a zombie
   * under the supervisor, because Node cannot reap a pid it has no handle for.
   */
  async terminate(options: { blocked?: boolean } = {}): Promise<void> {
    this.#ending = true;
    if (this.alive) this.worker.ref();
    await this.killTree({ reap: !options.blocked });
    if (!this.alive) return;
    await this.worker.terminate();
    await this.exited;
  }

  /**
   * SIGKILLs the child's process group and every descendant found in one `ps` snapshot (a
   * `setsid` grandchild has left the group), then waits, bounded, for the root to be reaped.
   * Children belong to the process, not the thread: this runs on every actor death.
   */
  async killTree(options: { reap?: boolean } = {}): Promise<void> {
    // A blocked thread (busy loop) cannot reap: waiting for it would only delay its end.
    const reap = options.reap ?? true;
    // Every group this actor started and has not reported reaped: the current server, and one
    // still being retired after a restart or a transport loss.
    const groups = [...this.#groups].filter(([pgid, startTime]) => pgid > 1 && leaderUnchanged(pgid, startTime));
    const trees = await Promise.all(groups.map(([pgid]) => snapshotTree(pgid, pgid).catch(() => undefined)));
    for (const [pgid] of groups) {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }
    for (const tree of trees) if (tree !== undefined) signalTracked(tree.processes, 'SIGKILL');
    // Done when every killed process is gone (a zombie counts as gone) and, while the thread
    // lives, its loop has reaped the roots. Bounded: a loaded machine can take a while to reap.
    const done = (): boolean =>
      !trees.some((tree) => tree?.processes.some(isSameProcess) ?? false) && !(reap && this.alive && groups.some(([pgid]) => processExists(pgid)));
    for (let i = 0; i < 300 && !done(); i++) await delay(10);
  }
}

/**
 * A group id cannot be reused while any member lives, so the group is still ours unless a
 * process with the leader's pid exists and started at another time (the pid was recycled).
 */
function leaderUnchanged(pgid: number, startTime: string | undefined): boolean {
  if (!processExists(pgid)) return true;
  const now = startTimeOf(pgid);
  return startTime === undefined || now === undefined || now === startTime;
}


/** Hosts with actors that may still hold process groups; one `exit` listener serves them all. */
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
  #spare: Worker | undefined;
  #closed = false;
  readonly #live = new Set<ActorHandle>();

  constructor(options: ActorHostOptions = {}) {
    const url = options.workerUrl ?? new URL(import.meta.resolve('@mcpool/actor/worker'));
    this.#workerPath = fileURLToPath(url);
    this.#resourceLimits = options.resourceLimits ?? { maxOldGenerationSizeMb: 128 };
    this.#warmSpare = options.warmSpare ?? true;
  }

  /** Live actor threads (not counting the spare). */
  get liveCount(): number {
    return this.#live.size;
  }

  /** Starts the warm spare if none is ready. */
  prewarm(): void {
    if (this.#closed || !this.#warmSpare || this.#spare !== undefined) return;
    const spare = this.#newWorker();
    // An idle spare must not keep the process alive, and a spare that fails to boot (a bad
    // workerUrl) must not crash the host: the next create() boots a fresh worker and fails there.
    spare.unref();
    spare.on('error', () => undefined);
    spare.once('exit', () => {
      if (this.#spare === spare) this.#spare = undefined;
    });
    this.#spare = spare;
  }

  /**
   * A worker for a new actor (ref'd until the pool calls `unref` on it): the warm spare when
   * there is one, then a new spare is booted. `log` receives the actor's log records.
   */
  create(log?: Logger): ActorHandle {
    if (this.#closed) throw new PoolError(ErrorCode.POOL_DRAINING, 'the actor host is closed');
    let worker = this.#spare;
    this.#spare = undefined;
    if (worker === undefined) worker = this.#newWorker();
    worker.ref();
    const handle = new ActorHandle(worker, log);
    this.#live.add(handle);
    trackOpen(this, true);
    void handle.exited.then(() => this.#live.delete(handle));
    this.prewarm();
    return handle;
  }

  /** Ends the spare and force-ends any actor still alive (callers shut actors down first). */
  async close(): Promise<void> {
    this.#closed = true;
    const spare = this.#spare;
    this.#spare = undefined;
    await Promise.all([spare?.terminate(), ...[...this.#live].map((handle) => handle.terminate())]);
    trackOpen(this, false);
  }

  /** Synchronously SIGKILLs the process groups every live actor holds (the host is exiting). */
  killGroupsNow(): void {
    for (const handle of this.#live) handle.killGroupsNow();
  }

  #newWorker(): Worker {
    return new Worker(this.#workerPath, { resourceLimits: this.#resourceLimits, stderr: false, stdout: false, execArgv: workerExecArgv() });
  }
}

/**
 * The host's node flags that make sense in an actor thread. Workers inherit `execArgv` by
 * default, and flags like `--input-type` or `--eval` make every worker fail to start.
 */
function workerExecArgv(): string[] {
  const kept: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!/^--(enable-source-maps|conditions|experimental-|no-warnings|no-deprecation|trace-|stack-trace-limit)/.test(arg)) continue;
    kept.push(arg);
    // `--conditions node` comes as two arguments: keep its value with it.
    if (arg === '--conditions' && i + 1 < args.length) kept.push(args[++i]!);
  }
  return kept;
}
