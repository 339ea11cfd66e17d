/**
 * Hosts connection actors on worker threads: up to `connectionsPerThread` pool entries share one
 * raw `Worker`, each on its own control port; a warm spare thread that has already imported the
 * actor's code (~150 ms per isolate) is kept while no thread has room, so a cold acquire does not pay it.
 *
 * Why raw workers and not piscina: piscina's task model (call → result, cancel = kill the thread,
 * FIFO queue that decides who waits) does not fit an addressable, long-lived actor, and its
 * only gain here — warm start — comes as well from one pre-booted spare (measured on Node 20).
 * The supervisor's budget decides who gets a thread; nothing ever queues.
 *
 * A worker's exit is watched: every connection on it ends, every pending control call rejects
 * with `MCPOOL_ACTOR_DIED`, and the children's process groups are killed, because children belong
 * to the process, not the thread. Connections sharing a thread die together. The children are
 * spawned here, on the main thread, at their actor's request (`./childSpawner.ts`): this loop
 * reaps them whatever becomes of the thread that talks to them.
 *
 * A guest in its host's process: an idle actor (no session holds it) is `unref`'d, like the spare,
 * so it never keeps the host alive; and when the host exits without draining, the process groups
 * its actors still hold are SIGKILLed synchronously in `process.on('exit')` (children run in
 * their own group, so nothing else would end them). Only groups spawned for an actor, by pgid,
 * and only while the leader is still the process that was recorded.
 */
import { MessageChannel, Worker, type ResourceLimits } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { isSameProcess, processExists, signalTracked, snapshotTree, startTimeOf } from '@mcpool/protocol/processTree';
import { ErrorCode, PoolError, RpcChannel, type LogRecord, type Logger, type RpcRequestOptions, type SupervisorOps } from '@mcpool/protocol';
import { SILENT_LOGGER, writeRecord } from './logging.js';
import { spawnChild } from './childSpawner.js';

export interface ActorHostOptions {
  /** The actor's worker entry (compiled JS). @default the `@mcpool/actor/worker` module */
  workerUrl?: URL;
  /**
   * V8 limits per actor thread. A connection that needs a larger heap than these give (see
   * `create`) gets a thread of its own with it.
   * @default { maxOldGenerationSizeMb: 128 }; a pool sizes it for its `maxMessageBytes` (320 for 64 MiB)
   */
  resourceLimits?: ResourceLimits;
  /** Keep one booted spare thread while no thread has room for another connection. @default true */
  warmSpare?: boolean;
  /**
   * Pool entries (upstream connections) one actor thread hosts. A thread costs several MB of RSS
   * whatever it hosts, so sharing it is what keeps many entries cheap; the price is isolation:
   * the connections of one thread die together (a crash, an out-of-memory, a busy loop in any of
   * them) and come back together, each of their views seeing `disconnected` then `reconnected`.
   * `1` gives every entry its own thread (full fault isolation). @default 16
   */
  connectionsPerThread?: number;
}

/** How long an emptied thread may take to end by itself before it is terminated. */
const THREAD_EXIT_MS = 2000;

/** One worker thread and the connections it hosts. */
class ActorThread {
  readonly worker: Worker;
  /** The thread's own channel (`open`, `dispose`, `exit`); each connection has its own port. */
  readonly channel: RpcChannel;
  readonly connections = new Set<ActorHandle>();
  readonly exited: Promise<number>;
  #exitCode: number | undefined;
  #lastError: Error | undefined;
  /** Set once the thread was asked to end: no connection is placed on it any more. */
  ending = false;

  constructor(worker: Worker) {
    this.worker = worker;
    this.channel = new RpcChannel(worker, { ownsPort: false });
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
        this.channel.fail(reason);
        for (const handle of [...this.connections]) handle.threadExited(code, reason);
        resolve(code);
      });
    });
  }

  get alive(): boolean {
    return this.#exitCode === undefined;
  }

  /** The thread keeps the host alive while any of its connections is held or ending. */
  updateRef(): void {
    if (!this.alive) return;
    if ([...this.connections].some((handle) => handle.holdsHost)) this.worker.ref();
    else this.worker.unref();
  }

  /** Ends an empty thread: it is asked to exit, and terminated if it has not within a bound. */
  async end(): Promise<void> {
    this.ending = true;
    if (!this.alive) return;
    const asked = await this.channel.request<{ exiting: boolean }>('exit', null, { timeoutMs: THREAD_EXIT_MS }).catch(() => ({ exiting: false }));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), asked.exiting ? THREAD_EXIT_MS : 0);
      timer.unref();
    });
    const outcome = await Promise.race([this.exited, deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout' && this.alive) await this.worker.terminate();
  }

  async terminate(): Promise<void> {
    this.ending = true;
    if (!this.alive) return;
    await this.worker.terminate();
    await this.exited;
  }
}

export type ActorEventListener = (ev: string, data: unknown) => void;

/** One connection actor (a pool entry) on its thread, seen from the supervisor. */
export class ActorHandle {
  /** The thread hosting this connection (shared with the others placed on it). */
  readonly worker: Worker;
  /** This connection's own control channel. */
  readonly control: RpcChannel;
  /** The child's pid and process group, once the actor reported them. */
  pgid: number | undefined;
  /** Resolves once the connection ended: its port closed (0) or its thread exited (the thread's code). */
  readonly exited: Promise<number>;
  readonly #thread: ActorThread;
  /** The thread's id for this connection, once `open` answered. */
  readonly #opened: Promise<number | undefined>;
  #exitCode: number | undefined;
  #resolveExited!: (code: number) => void;
  #listeners = new Set<ActorEventListener>();
  #exitListeners = new Set<(code: number, error: Error | undefined) => void>();
  /** Process groups this actor started and has not reported reaped, with their leader's start time. */
  readonly #groups = new Map<number, string | undefined>();
  /** Set once a shutdown or terminate began: the thread stays ref'd until this connection ended. */
  #ending = false;
  #held = true;
  /** The actor said it closed: its port closing next is a clean end, not its thread dying. */
  #announced = false;

  /** `log` receives the actor's log records (a child logger bound to its entry). */
  constructor(thread: ActorThread, log: Logger = SILENT_LOGGER) {
    this.#thread = thread;
    this.worker = thread.worker;
    const { port1, port2 } = new MessageChannel();
    this.exited = new Promise((resolve) => {
      this.#resolveExited = resolve;
    });
    this.control = new RpcChannel(port1, {
      // The actor asks its supervisor to spawn its stdio server (see `./childSpawner.ts`).
      handler: (op, args, ctx) => {
        if (op !== 'spawnChild') throw new PoolError(ErrorCode.INVALID_ARGUMENT, `unknown supervisor operation ${op}`);
        return spawnChild(args as SupervisorOps['spawnChild']['args'], ctx, (pgid) => this.#groups.set(pgid, startTimeOf(pgid)));
      },
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
        } else if (ev === 'closed') {
          this.#announced = true;
        }
        for (const listener of this.#listeners) {
          try {
            listener(ev, data);
          } catch (error) {
            // One listener's failure must not stop the others, and is never silent: it is a bug.
            log.error({ err: error, event: ev }, 'an actor event listener threw');
          }
        }
      },
      onClose: () => this.#portClosed(),
    });
    // Only the thread keeps the host alive (ref'd while a connection on it is held): the port,
    // ref'd by its `message` listener, would keep it alive even for an idle entry.
    port1.unref();
    thread.connections.add(this);
    thread.updateRef();
    // Requests on `control` queue in the port until the thread listens on it.
    this.#opened = thread.channel
      .request<{ id: number }>('open', { port: port2 }, { transfer: [port2] })
      .then(({ id }) => id)
      .catch(() => undefined);
  }

  /** The hosting thread's id (connections on one thread share it). */
  get threadId(): number {
    return this.worker.threadId;
  }

  /** Held by a session, or ending: its thread must keep the host alive. */
  get holdsHost(): boolean {
    return this.alive && (this.#held || this.#ending);
  }

  /** The thread exited under this connection. */
  threadExited(code: number, reason: PoolError): void {
    this.#end(code, reason.cause instanceof Error ? reason.cause : undefined, reason);
  }

  /**
   * A clean end when the actor announced it. Otherwise the thread is dying (a worker's ports close
   * before its `exit` is seen): nothing more is placed on it, and the connection ends with the
   * thread's exit code; a thread that does not exit within a bound is ended, being broken.
   */
  #portClosed(): void {
    if (this.#announced) {
      this.#end(0, undefined);
      return;
    }
    const thread = this.#thread;
    thread.ending = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), THREAD_EXIT_MS);
    });
    void Promise.race([thread.exited, deadline]).then((outcome) => {
      clearTimeout(timer);
      if (outcome === 'timeout') void thread.terminate();
    });
  }

  #end(code: number, error: Error | undefined, reason?: PoolError): void {
    if (this.#exitCode !== undefined) return;
    this.#exitCode = code;
    // Calls still pending reject with the thread's death, or as closed.
    this.control.fail(reason ?? new PoolError(ErrorCode.PORT_CLOSED, 'the actor closed its channel'));
    this.#thread.connections.delete(this);
    this.#thread.updateRef();
    // Its last connection gone, a thread ends: nothing of a past connection lingers in a new one.
    // Marked before the listeners run, since a replacement they create must not land on it.
    if (this.#thread.connections.size === 0 && !this.#thread.ending) void this.#thread.end();
    for (const listener of this.#exitListeners) listener(code, error);
    this.#resolveExited(code);
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

  /** A held actor keeps the host process alive (its sessions are using it): its thread is ref'd. */
  ref(): void {
    this.#held = true;
    this.#thread.updateRef();
  }

  /**
   * An idle actor does not keep the host alive: a host that exits meanwhile kills its group (see
   * {@link killGroupsNow}). Ignored once a shutdown began, which must be allowed to finish.
   */
  unref(): void {
    this.#held = false;
    this.#thread.updateRef();
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
   * Asks the actor to close (child tree ended gracefully), waits for the connection to end, and
   * falls back to `terminate()` plus a group SIGKILL past `timeoutMs`.
   */
  async shutdown(reason: string, timeoutMs: number): Promise<void> {
    if (!this.alive) return;
    this.#ending = true;
    this.#thread.updateRef();
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
   * Force-ends the child's tree, then the connection: disposed on its thread, or the thread
   * terminated when it is blocked (nothing on it can answer; its other connections die with it).
   * The tree goes first. Whatever becomes of the thread, the child is reaped: the supervisor's
   * loop spawned it (see `./childSpawner.ts`).
   *
   * The connection is disposed even when it is its thread's last: to its actor the kill is a loss,
   * and a reconnect may spawn a child before a terminated thread stops, a child nobody would hear
   * of. Disposing stops the actor's machine and kills such a child; its `spawned` reaches this
   * handle before the port closes, so the second kill below covers it too.
   */
  async terminate(options: { blocked?: boolean } = {}): Promise<void> {
    this.#ending = true;
    this.#thread.updateRef();
    await this.killTree();
    if (!this.alive) return;
    const id = options.blocked ? undefined : await this.#opened;
    if (id === undefined) {
      await this.#thread.terminate();
      await this.exited;
      return;
    }
    await this.#thread.channel.request('dispose', { id, reason: 'terminated' }, { timeoutMs: THREAD_EXIT_MS }).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), THREAD_EXIT_MS);
    });
    const outcome = await Promise.race([this.exited, deadline]);
    clearTimeout(timer);
    await this.killTree();
    // A thread that cannot dispose one connection in time is not healthy: it goes, with the rest.
    if (outcome === 'timeout') await this.#thread.terminate();
  }

  /**
   * SIGKILLs the child's process group and every descendant found in one `ps` snapshot (a
   * `setsid` grandchild has left the group), then waits, bounded, for the root to be reaped (by
   * the main thread's loop, which spawned it). Children belong to the process, not the thread: this
   * runs on every actor death.
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
  readonly #perThread: number;
  /** A booted thread hosting nothing yet. */
  #spare: ActorThread | undefined;
  #closed = false;
  readonly #live = new Set<ActorHandle>();
  /** Threads hosting connections (or emptied and ending), not the spare. */
  readonly #threads = new Set<ActorThread>();

  constructor(options: ActorHostOptions = {}) {
    const url = options.workerUrl ?? new URL(import.meta.resolve('@mcpool/actor/worker'));
    this.#workerPath = fileURLToPath(url);
    this.#resourceLimits = options.resourceLimits ?? { maxOldGenerationSizeMb: 128 };
    this.#warmSpare = options.warmSpare ?? true;
    const perThread = options.connectionsPerThread ?? 16;
    if (!Number.isInteger(perThread) || perThread < 1) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `connectionsPerThread must be a positive integer, got ${perThread}`);
    this.#perThread = perThread;
  }

  /** Live connection actors (pool entries). */
  get liveCount(): number {
    return this.#live.size;
  }

  /** Live threads hosting connections (not counting the spare). */
  get threadCount(): number {
    let count = 0;
    for (const thread of this.#threads) if (thread.alive) count += 1;
    return count;
  }

  /** Whether a spare thread is booted or booting. */
  get hasSpare(): boolean {
    return this.#spare?.alive === true;
  }

  /** Starts the warm spare if none is ready and no thread has room for another connection. */
  prewarm(): void {
    if (this.#closed || !this.#warmSpare || this.#spare !== undefined || this.#withRoom() !== undefined) return;
    let spare: ActorThread;
    try {
      spare = new ActorThread(this.#newWorker());
    } catch {
      // A spare is a head start, never a failure of its own: the next create() tries again and reports it.
      return;
    }
    // An idle spare must not keep the process alive, and a spare that fails to boot (a bad
    // workerUrl) must not crash the host: the next create() boots a fresh worker and fails there.
    spare.worker.unref();
    void spare.exited.then(() => {
      if (this.#spare === spare) this.#spare = undefined;
    });
    this.#spare = spare;
  }

  /**
   * A connection actor (ref'd until the pool calls `unref` on it), placed on a thread with room,
   * else the warm spare, else a new thread; then a new spare is booted if no thread has room.
   * `log` receives the actor's log records; `needs.heapMb` is the old-generation limit its
   * messages need: above the threads' own, it gets a new thread with that limit.
   */
  create(log?: Logger, needs: { heapMb?: number | undefined } = {}): ActorHandle {
    if (this.#closed) throw new PoolError(ErrorCode.POOL_DRAINING, 'the actor host is closed');
    // A connection whose messages need more heap than the threads have gets a new thread with it.
    const heapMb = needs.heapMb !== undefined && needs.heapMb > (this.#resourceLimits.maxOldGenerationSizeMb ?? Infinity) ? needs.heapMb : undefined;
    let thread = heapMb === undefined ? this.#withRoom() : undefined;
    if (thread === undefined && heapMb === undefined && this.#spare?.alive) thread = this.#spare;
    if (thread === this.#spare) this.#spare = undefined;
    if (thread === undefined) thread = new ActorThread(this.#newWorker(heapMb));
    this.#threads.add(thread);
    void thread.exited.then(() => this.#threads.delete(thread));
    const handle = new ActorHandle(thread, log);
    this.#live.add(handle);
    trackOpen(this, true);
    void handle.exited.then(() => this.#live.delete(handle));
    this.prewarm();
    return handle;
  }

  /** Ends the spare and force-ends any actor and thread still alive (callers shut actors down first). */
  async close(): Promise<void> {
    this.#closed = true;
    const spare = this.#spare;
    this.#spare = undefined;
    await Promise.all([spare?.terminate(), ...[...this.#live].map((handle) => handle.terminate())]);
    await Promise.all([...this.#threads].map((thread) => thread.terminate()));
    trackOpen(this, false);
  }

  /** Synchronously SIGKILLs the process groups every live actor holds (the host is exiting). */
  killGroupsNow(): void {
    for (const handle of this.#live) handle.killGroupsNow();
  }

  /** The fullest live thread that can take one more connection (packing keeps threads few). */
  #withRoom(): ActorThread | undefined {
    let best: ActorThread | undefined;
    for (const thread of this.#threads) {
      if (!thread.alive || thread.ending || thread.connections.size >= this.#perThread) continue;
      if (best === undefined || thread.connections.size > best.connections.size) best = thread;
    }
    return best;
  }

  /** A new actor thread; a thread Node refuses to create fails as `MCPOOL_ACTOR_DIED`. */
  #newWorker(heapMb?: number): Worker {
    const resourceLimits = heapMb === undefined ? this.#resourceLimits : { ...this.#resourceLimits, maxOldGenerationSizeMb: heapMb };
    const create = (): Worker => new Worker(this.#workerPath, { resourceLimits, stderr: false, stdout: false, execArgv: workerExecArgv() });
    try {
      try {
        return create();
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw error;
        // Some of the host's flags are not allowed in a worker on this Node: left out from now on.
        refuseHostFlags((error as Error).message);
        return create();
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
