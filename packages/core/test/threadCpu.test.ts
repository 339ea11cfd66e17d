/**
 * A thread's CPU time and state from `/proc/self/task/<tid>`: the stat line parsed after the
 * command name (which may hold spaces and parentheses), and a real read of this thread.
 */
import { readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseTaskStat, readThreadCpu } from '../src/threadCpu.js';

describe('parseTaskStat', () => {
  it('reads the state and utime + stime after the last parenthesis', () => {
    const line = '4321 (a (weird) name) S 1 2 3 4 5 6 7 8 9 10 120 30 0 0 20 0 1 0 100 0 0\n';
    expect(parseTaskStat(line)).toEqual({ state: 'S', ticks: 150 });
  });

  it('gives undefined for a line it cannot read', () => {
    expect(parseTaskStat('garbage')).toBeUndefined();
    expect(parseTaskStat('1 (x) R 1')).toBeUndefined();
  });
});

describe.runIf(process.platform === 'linux')('readThreadCpu', () => {
  it('reads this thread: running, with the CPU time it spent', () => {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    const before = readThreadCpu(tid)!;
    const until = Date.now() + 50;
    while (Date.now() < until) {
      // spend CPU
    }
    const after = readThreadCpu(tid)!;
    expect(after.running).toBe(true);
    expect(after.cpuMs).toBeGreaterThan(before.cpuMs);
  });

  it('gives undefined for an unknown thread', () => {
    expect(readThreadCpu(0)).toBeUndefined();
    expect(readThreadCpu(2 ** 30)).toBeUndefined();
  });
});
