/**
 * One connection thread, seen from the supervisor: a worker thread that hosts exactly one
 * connection actor, the actor's control channel (the worker's own port), the process groups the
 * actor reported starting, and what shows that the thread's event loop turns. The thread is the
 * connection's failure domain: whatever ends it (a crash, an out-of-memory, a blocked loop) ends
 * this connection and no other.
 *
 * A booted thread waits for its `start`, so the host can keep one as a warm spare; the pool binds
 * it to its entry's logger when it places a connection on it.
 *
 * Children belong to the process, not to the thread: the actor's stdio server is spawned here,
 * on the main thread, at the actor's request (`./childSpawner.ts`), so this loop reaps it whatever
 * becomes of the thread that talks to it; and whatever ends the thread, the supervisor kills the
 * child's group and sweeps its descendants (`killTree`).
 */
import type { Worker } from 'node:worker_threads';
import { setTimeout as delay } from 'node:timers/promises';
import { isSameProcess, processExists, signalTracked, snapshotTree, startTimeOf } from '@mcpool/protocol/processTree';
import { BEAT, LIVENESS_CELLS } from '@mcpool/protocol/threadLiveness';
import { ErrorCode, PoolError, RpcChannel, type LogRecord, type Logger, type RpcRequestOptions, type SupervisorOps } from '@mcpool/protocol';
import { SILENT_LOGGER, writeRecord } from './logging.js';
import { spawnChild } from './childSpawner.js';
import { withDeadline } from './deadline.js';
import { readThreadCpu } from './threadCpu.js';
import type { LivenessSample } from './threadLiveness.js';

/** How long a thread whose connection ended (or was disposed) may take to exit by itself before it is terminated. */
const THREAD_EXIT_MS = 2000;

export type ActorEventListener = (ev: string, data: unknown) => void;

export class ConnectionThread {
  readonly worker: Worker;
  /** The connection's control channel: requests to its actor, events from it. */
  readonly control: RpcChannel;
  /** The child's process group, once the actor reported it. */
  pgid: number | undefined;
  /** Resolves with the thread's exit code once it exited. */
  readonly exited: Promise<number>;
  readonly #cells: Int32Array;
  #log: Logger = SILENT_LOGGER;
  #exitCode: number | undefined;
  #lastError: Error | undefined;
  #listeners = new Set<ActorEventListener>();
  #exitListeners = new Set<(code: number, error: Error | undefined) => void>();
  /** Process groups this actor started and has not reported reaped, with their leader's start time. */
  readonly #groups = new Map<number, string | undefined>();
  /** Set once a shutdown or terminate began: the thread stays ref'd until it ended. */
  #ending = false;
  #held = true;

  /** `liveness` is the buffer the worker was created with (`workerData.liveness`). */
  constructor(worker: Worker, liveness: SharedArrayBuffer) {
    this.worker = worker;
    this.#cells = new Int32Array(liveness);
    this.control = new RpcChannel(worker, {
      ownsPort: false,
      // The actor asks its supervisor to spawn its stdio server (see `./childSpawner.ts`).
      handler: (op, args, ctx) => {
        if (op !== 'spawnChild') throw new PoolError(ErrorCode.INVALID_ARGUMENT, `unknown supervisor operation ${op}`);
        return spawnChild(args as SupervisorOps['spawnChild']['args'], ctx, (pgid) => this.#groups.set(pgid, startTimeOf(pgid)));
      },
      onEvent: (ev, data) => this.#onEvent(ev, data),
    });
    worker.on('error', (error) => {
      this.#lastError = error;
    });
    this.exited = new Promise((resolve) => {
      worker.once('exit', (code) => {
        this.#exitCode = code;
        const error = this.#lastError;
        // Calls still pending reject with the thread's death.
        this.control.fail(
          new PoolError(ErrorCode.ACTOR_DIED, error ? `the actor thread died: ${error.message}` : `the actor thread exited with code ${code}`, {
            data: { exitCode: code },
            ...(error ? { cause: error } : {}),
          }),
        );
        for (const listener of this.#exitListeners) listener(code, error);
        resolve(code);
      });
    });
  }

  /** The thread's id in this process (`worker.threadId`). */
  get threadId(): number {
    return this.worker.threadId;
  }

  get alive(): boolean {
    return this.#exitCode === undefined;
  }

  /** Its connection's actor log records go to `log` from now on (a child logger bound to its entry). */
  bind(log: Logger): void {
    this.#log = log;
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

  /** A held connection keeps the host process alive (its sessions use it). */
  ref(): void {
    this.#held = true;
    this.#updateRef();
  }

  /**
   * An idle connection does not keep the host alive: a host that exits meanwhile kills its group
   * (see {@link killGroupsNow}). Ignored once a shutdown began, which must be allowed to finish.
   */
  unref(): void {
    this.#held = false;
    this.#updateRef();
  }

  /**
   * What shows that the thread's event loop turns, read without asking the thread: its loop's
   * idle time (it grows while the loop waits for work), the beats it handled, and where the
   * kernel tells (Linux), its CPU time and whether it is running.
   */
  sample(): LivenessSample {
    const sample: LivenessSample = { idleMs: this.worker.performance.eventLoopUtilization().idle, beats: Atomics.load(this.#cells, LIVENESS_CELLS.beats) };
    const cpu = readThreadCpu(Atomics.load(this.#cells, LIVENESS_CELLS.threadId));
    if (cpu !== undefined) {
      sample.cpuMs = cpu.cpuMs;
      sample.running = cpu.running;
    }
    return sample;
  }

  /** Asks the thread to show its loop turns (it bumps its beat count when it handles this). */
  beat(): void {
    if (this.alive) this.worker.postMessage(BEAT);
  }

  /**
   * Asks the actor to close (child tree ended gracefully) and waits for the thread to end; past
   * `timeoutMs` the thread is terminated and the group killed.
   */
  async shutdown(reason: string, timeoutMs: number): Promise<void> {
    if (!this.alive) return;
    this.#ending = true;
    this.#updateRef();
    const closed = this.control.request('close', { reason }, { timeoutMs }).catch(() => undefined);
    if ((await withDeadline(closed.then(() => this.exited), timeoutMs + 500)) === 'timeout') await this.terminate();
  }

  /**
   * Force-ends the child's tree, then the connection: disposed on its thread, or the thread
   * terminated at once when it is blocked (nothing on it can answer). The tree goes first.
   * Whatever becomes of the thread, the child is reaped: the supervisor's loop spawned it.
   *
   * The connection is disposed rather than its thread terminated: to its actor the kill is a
   * loss, and a reconnect may spawn a child before a terminated thread stops, a child nobody
   * would hear of. Disposing stops the actor's machine and kills such a child; its `spawned`
   * reaches this thread's channel before the thread exits, so the second kill below covers it.
   */
  async terminate(options: { blocked?: boolean } = {}): Promise<void> {
    this.#ending = true;
    this.#updateRef();
    await this.killTree();
    if (!this.alive) return;
    if (options.blocked) {
      await this.worker.terminate();
      await this.exited;
      return;
    }
    await this.control.request('dispose', { reason: 'terminated' }, { timeoutMs: THREAD_EXIT_MS }).catch(() => undefined);
    await this.#exitOrTerminate();
    await this.killTree();
  }

  /**
   * SIGKILLs the child's process group and every descendant found in one `ps` snapshot (a
   * `setsid` grandchild has left the group), then waits, bounded, for the root to be reaped (by
   * the main thread's loop, which spawned it).
   */
  async killTree(): Promise<void> {
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
    // Done when every killed process is gone (a zombie counts as gone) and the roots are reaped.
    // Bounded: a loaded machine can take a while to reap.
    const done = (): boolean => !trees.some((tree) => tree?.processes.some(isSameProcess) ?? false) && !groups.some(([pgid]) => processExists(pgid));
    for (let i = 0; i < 300 && !done(); i++) await delay(10);
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

  /** Ends a thread whose connection ended: it exits by itself, or is terminated past a bound. */
  async #exitOrTerminate(): Promise<void> {
    if ((await withDeadline(this.exited, THREAD_EXIT_MS, { unref: true })) === 'timeout' && this.alive) {
      await this.worker.terminate();
      await this.exited;
    }
  }

  #onEvent(ev: string, data: unknown): void {
    if (ev === 'log') {
      writeRecord(this.#log, data as LogRecord);
      return;
    }
    if (ev === 'spawned') {
      const { pgid } = data as { pgid: number };
      this.pgid = pgid;
      this.#groups.set(pgid, startTimeOf(pgid));
    } else if (ev === 'reaped') {
      this.#groups.delete((data as { pgid: number }).pgid);
    } else if (ev === 'closed') {
      // The actor closed its channel: the thread ends by itself, or is ended.
      void this.#exitOrTerminate();
    }
    for (const listener of this.#listeners) {
      try {
        listener(ev, data);
      } catch (error) {
        // One listener's failure must not stop the others, and is never silent: it is a bug.
        this.#log.error({ err: error, event: ev }, 'an actor event listener threw');
      }
    }
  }

  /** The thread keeps the host alive while its connection is held or ending. */
  #updateRef(): void {
    if (!this.alive) return;
    if (this.#held || this.#ending) this.worker.ref();
    else this.worker.unref();
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
