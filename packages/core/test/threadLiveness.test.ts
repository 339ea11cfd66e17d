/**
 * The liveness rule that tells busy from dead (`ThreadLiveness`), on samples with times passed
 * in: progress is any sign the loop turned (idle time grew, a beat was handled); a thread is
 * blocked after `misses` samples without progress and a stall of `timeoutMs`, counted in its own
 * CPU time while the kernel shows it running and in wall time while it sleeps outside its loop.
 * Pure: no thread, no timer; the real threads are in `liveness.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { ThreadLiveness, type LivenessSample, type LivenessVerdict } from '../src/threadLiveness.js';

const POLICY = { misses: 3, timeoutMs: 5000 };
const INTERVAL = 500;

/** Feeds one sample per interval from `make(i)` and returns the verdicts (the first is the baseline). */
function run(make: (i: number) => LivenessSample, samples: number, policy = POLICY): LivenessVerdict[] {
  const liveness = new ThreadLiveness(policy);
  const verdicts: LivenessVerdict[] = [];
  for (let i = 0; i < samples; i++) verdicts.push(liveness.observe(make(i), i * INTERVAL));
  return verdicts;
}

describe('a thread whose loop turns is alive', () => {
  it('an idle thread (its idle time grows) is never blocked, however long', () => {
    expect(run((i) => ({ idleMs: i * 490, beats: 0 }), 1000).every((verdict) => verdict === 'progress')).toBe(true);
  });

  it('a busy thread that handles the beats it is sent is never blocked', () => {
    // Never idle (always work queued), but each beat is handled by the next sample.
    const verdicts = run((i) => ({ idleMs: 0, beats: Math.floor(i / 2), cpuMs: i * INTERVAL, running: true }), 1000);
    expect(verdicts).not.toContain('blocked');
    expect(verdicts).toContain('silent');
  });

  it('a thread the machine gives no CPU (running, but its CPU time flat) is not blocked: the wait is not its own', () => {
    const verdicts = run(() => ({ idleMs: 10, beats: 0, cpuMs: 100, running: true }), 1000);
    expect(verdicts).not.toContain('blocked');
  });

  it('a long parse on a saturated machine (1 s of CPU spread over 20 s) lives', () => {
    const verdicts = run((i) => ({ idleMs: 10, beats: 0, cpuMs: Math.min(1000, i * 25), running: true }), 40);
    expect(verdicts).not.toContain('blocked');
  });
});

describe('a blocked thread is found', () => {
  it('a spinning thread after timeoutMs of its own CPU time: at once on an idle machine…', () => {
    const verdicts = run((i) => ({ idleMs: 10, beats: 0, cpuMs: i * INTERVAL, running: true }), 40);
    // Stall counts from the second sample: 10 intervals of 500 ms of CPU reach 5 s.
    expect(verdicts.indexOf('blocked')).toBe(10);
  });

  it('…and after as much of its CPU time on a loaded one (a fifth of a CPU: five times the wall time)', () => {
    const verdicts = run((i) => ({ idleMs: 10, beats: 0, cpuMs: i * (INTERVAL / 5), running: true }), 100);
    expect(verdicts.indexOf('blocked')).toBe(50);
  });

  it('a thread asleep outside its loop (Atomics.wait, a blocking call) after timeoutMs of wall time', () => {
    const verdicts = run(() => ({ idleMs: 10, beats: 0, cpuMs: 100, running: false }), 40);
    expect(verdicts.indexOf('blocked')).toBe(10);
  });

  it('without the kernel\'s figures (not Linux), after timeoutMs of wall time', () => {
    const verdicts = run(() => ({ idleMs: 10, beats: 0 }), 40);
    expect(verdicts.indexOf('blocked')).toBe(10);
  });

  it('progress starts the count over', () => {
    const liveness = new ThreadLiveness(POLICY);
    liveness.observe({ idleMs: 0, beats: 0 }, 0);
    expect(liveness.observe({ idleMs: 0, beats: 0 }, 4000)).toBe('silent');
    expect(liveness.observe({ idleMs: 0, beats: 1 }, 4500)).toBe('progress');
    expect(liveness.stallMs).toBe(0);
    expect(liveness.observe({ idleMs: 0, beats: 1 }, 9000)).toBe('silent');
  });

  it('one late sample (a supervisor whose own loop stalled) is not enough: `misses` samples are', () => {
    const liveness = new ThreadLiveness(POLICY);
    liveness.observe({ idleMs: 0, beats: 0 }, 0);
    // Ten seconds passed in one sample: the stall is there, the misses are not.
    expect(liveness.observe({ idleMs: 0, beats: 0 }, 10_000)).toBe('silent');
    expect(liveness.observe({ idleMs: 0, beats: 0 }, 10_500)).toBe('silent');
    expect(liveness.observe({ idleMs: 0, beats: 0 }, 11_000)).toBe('blocked');
  });
});
