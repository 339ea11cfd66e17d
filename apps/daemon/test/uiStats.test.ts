/**
 * The dashboard's call figures (`ui/src/stats.js`, plain JS bundled into the page): calls/s over
 * the interval between two readings of `GET /workspace/stats`, and p50/p95 from the difference of
 * their histogram buckets, interpolated within a bucket as Prometheus' histogram_quantile does.
 */
import { describe, expect, it } from 'vitest';

type Buckets = [number, number][];
interface Reading {
  at: number;
  servers: { server: string; calls: number; errors: number; seconds: number; buckets: Buckets; restarts: number }[];
}
interface Figures {
  calls: number;
  perSecond: number | undefined;
  p50Ms: number | undefined;
  p95Ms: number | undefined;
  sinceStart: boolean;
}
// The page's module is untyped JavaScript: a specifier that is not a literal keeps tsc from resolving it.
const STATS_MODULE: string = '../ui/src/stats.js';
const stats = (await import(STATS_MODULE)) as {
  quantile(buckets: Buckets, total: number, q: number): number | undefined;
  serverStats(previous: Reading | undefined, current: Reading): Map<string, Figures>;
};

const BOUNDS = [0.01, 0.1, 1];
const reading = (at: number, calls: number, perBucket: number[]): Reading => {
  let sum = 0;
  const buckets = BOUNDS.map((bound, i): [number, number] => [bound, (sum += perBucket[i] ?? 0)]);
  return { at, servers: [{ server: 'echo', calls, errors: 0, seconds: 0, buckets, restarts: 0 }] };
};

describe('dashboard call figures', () => {
  it('quantile interpolates within the bucket the rank falls in', () => {
    // 10 calls: 5 under 10 ms, 5 between 10 and 100 ms.
    const buckets: Buckets = [[0.01, 5], [0.1, 10], [1, 10]];
    expect(stats.quantile(buckets, 10, 0.5)).toBeCloseTo(0.01);
    expect(stats.quantile(buckets, 10, 0.95)).toBeCloseTo(0.01 + 0.09 * 0.9);
    expect(stats.quantile(buckets, 0, 0.5)).toBeUndefined();
    // Past the last finite bound, the bound is all a histogram can say.
    expect(stats.quantile([[0.01, 0]], 3, 0.5)).toBe(0.01);
  });

  it('rates and quantiles cover the interval between two readings, else every call so far', () => {
    const first = reading(0, 10, [10, 0, 0]);
    const second = reading(5000, 20, [10, 0, 10]);
    expect(stats.serverStats(undefined, first).get('echo')).toMatchObject({ calls: 10, perSecond: undefined, sinceStart: true });
    const figures = stats.serverStats(first, second).get('echo')!;
    expect(figures).toMatchObject({ calls: 20, perSecond: 2, sinceStart: false });
    // The 10 calls of the interval were all between 100 ms and 1 s: the earlier fast ones do not count.
    expect(figures.p50Ms).toBeCloseTo(550);
    expect(figures.p95Ms).toBeCloseTo(100 + 900 * 0.95);
    const idle = stats.serverStats(second, reading(10_000, 20, [10, 0, 10])).get('echo')!;
    expect(idle).toMatchObject({ perSecond: 0, sinceStart: true });
    expect(idle.p50Ms).toBeCloseTo(10);
  });
});
