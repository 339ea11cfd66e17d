/**
 * A thread's CPU time and scheduling state, from the kernel (Linux `/proc/self/task/<tid>`), for
 * telling a thread that cannot turn its loop from one the machine gives no CPU to. Elsewhere, or
 * when the files cannot be read, `undefined`: the caller then goes by wall-clock time.
 */
import { readFileSync } from 'node:fs';

export interface ThreadCpu {
  /** CPU time the thread has used since it started, in ms. */
  cpuMs: number;
  /** Running or waiting for a CPU (`R`); false when it sleeps or waits on I/O (`S`, `D`, …). */
  running: boolean;
}

/** The CPU time and state of kernel thread `tid` of this process; `undefined` when unknown (tid 0, not Linux). */
export function readThreadCpu(tid: number): ThreadCpu | undefined {
  if (!(tid > 0) || process.platform !== 'linux') return undefined;
  try {
    const stat = parseTaskStat(readFileSync(`/proc/self/task/${tid}/stat`, 'latin1'));
    if (stat === undefined) return undefined;
    // schedstat's first field is the time on a CPU in ns; stat's utime + stime count in clock ticks
    // (USER_HZ, 100 on Linux's architectures) and are the fallback where schedstat is off.
    let cpuMs = stat.ticks * 10;
    try {
      const ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
      if (Number.isFinite(ns)) cpuMs = ns / 1e6;
    } catch {
      // no schedstat: the ticks above
    }
    return { cpuMs, running: stat.state === 'R' };
  } catch {
    return undefined;
  }
}

/**
 * The state letter and utime + stime (clock ticks) of a `/proc/…/task/<tid>/stat` line. The
 * command name (field 2) may hold spaces and parentheses: fields are counted after its last `)`.
 */
export function parseTaskStat(text: string): { state: string; ticks: number } | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(' ');
  // After the name: state (3), ppid (4) … utime (14), stime (15).
  const state = fields[0];
  const ticks = Number(fields[11]) + Number(fields[12]);
  if (state === undefined || !Number.isFinite(ticks)) return undefined;
  return { state, ticks };
}
