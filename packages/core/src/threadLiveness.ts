/**
 * Liveness that tells busy from dead, for one connection thread. The supervisor samples the
 * thread every interval without asking it anything (`ConnectionThread.sample`):
 *
 * - **Progress** is any sign that the thread's event loop turned since the last sample: its idle
 *   time grew (the loop waited for work, which a blocked loop never does) or it handled a beat
 *   (the supervisor posts one when it saw nothing else). A thread that makes progress, however
 *   slowly, is alive: a saturated machine delays its loop, it does not stop it.
 * - **Stall** is time without progress that counts against the thread: while the kernel shows it
 *   running, the CPU time it used (a thread the machine gives no CPU to is not blamed for the wait);
 *   while it sleeps outside its loop (`Atomics.wait`, a blocking system call), the wall time. Where
 *   the kernel does not tell (not Linux), wall time.
 * - **Blocked**: `misses` samples in a row without progress and a stall of `timeoutMs`. The miss
 *   count keeps a supervisor whose own loop stalled from judging on one late sample.
 *
 * So a thread that spins is ended after `timeoutMs` of its own CPU time, one that waits forever
 * after `timeoutMs` of wall time, and a thread parsing a large message on a saturated machine
 * lives as long as the parse takes less than `timeoutMs` of CPU.
 * Pure: time is what the caller passes in.
 */

export interface LivenessSample {
  /** The thread's event loop idle time, in ms (`worker.performance.eventLoopUtilization().idle`). */
  idleMs: number;
  /** Beats the thread handled. */
  beats: number;
  /** CPU time the thread used, in ms, where the kernel tells. */
  cpuMs?: number | undefined;
  /** Whether the kernel shows it running or waiting for a CPU, where it tells. */
  running?: boolean | undefined;
}

export interface LivenessPolicy {
  /** Samples without progress in a row, at least, before a thread is blocked. */
  misses: number;
  /** Stall (see above) before a thread is blocked, in ms. */
  timeoutMs: number;
}

/** `progress`: the loop turned. `silent`: no sign yet (post a beat). `blocked`: end the thread. */
export type LivenessVerdict = 'progress' | 'silent' | 'blocked';

export class ThreadLiveness {
  readonly #policy: LivenessPolicy;
  #last: LivenessSample | undefined;
  #lastAt = 0;
  #misses = 0;
  #stallMs = 0;

  constructor(policy: LivenessPolicy) {
    this.#policy = policy;
  }

  /** Consecutive samples without progress. */
  get misses(): number {
    return this.#misses;
  }

  /** The stall counted so far (ms). */
  get stallMs(): number {
    return this.#stallMs;
  }

  /** Judges `sample`, taken at `now` (ms, any monotonic clock). */
  observe(sample: LivenessSample, now: number): LivenessVerdict {
    const last = this.#last;
    const wallMs = now - this.#lastAt;
    this.#last = sample;
    this.#lastAt = now;
    if (last === undefined || sample.idleMs > last.idleMs || sample.beats !== last.beats) {
      this.#misses = 0;
      this.#stallMs = 0;
      return 'progress';
    }
    this.#misses += 1;
    const cpuMs = sample.cpuMs !== undefined && last.cpuMs !== undefined ? Math.max(0, sample.cpuMs - last.cpuMs) : undefined;
    this.#stallMs += cpuMs !== undefined && sample.running === true ? cpuMs : Math.max(0, wallMs);
    return this.#misses >= this.#policy.misses && this.#stallMs >= this.#policy.timeoutMs ? 'blocked' : 'silent';
  }
}
