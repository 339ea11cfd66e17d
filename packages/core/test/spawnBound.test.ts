/**
 * A session that acquires many servers at once starts at most `maxParallelSpawnsPerSession` of
 * them together; the others wait their turn, and another session does not wait behind it.
 * Counted on the pool's own lifecycle events, with real children slow to initialize.
 */
import { describe, expect, it } from 'vitest';
import type { PoolEvent } from '@mcpool/core';
import { fixtureConfig } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, stateDir: false });

/** Tracks which entries are spawning now and the most there ever were at once. */
function spawnCounter(): { onEvent: (event: PoolEvent) => void; max: () => number; order: string[] } {
  const spawning = new Set<string>();
  const order: string[] = [];
  let max = 0;
  return {
    onEvent: (event) => {
      if (event.type !== 'statusChanged') return;
      const key = `${event.serverName}#${event.entryIndex}`;
      if (event.status === 'spawning') {
        spawning.add(key);
        order.push(event.serverName);
        max = Math.max(max, spawning.size);
      } else spawning.delete(key);
    },
    max: () => max,
    order,
  };
}

describe('parallel spawns per session', () => {
  it('six servers named by one session start two at a time; a second session starts its own at once', async () => {
    const counter = spawnCounter();
    const pool = newPool({ maxParallelSpawnsPerSession: 2, onEvent: counter.onEvent });
    const mark = newMark('bound');
    const slow = fixtureConfig('slowInit.mjs', mark, { env: { FIXTURE_INIT_DELAY_MS: '400' } });
    let settledA = 0;
    const many = Array.from({ length: 6 }, (_, i) => pool.acquire(`s${i}`, slow, 'A').finally(() => settledA++));
    // Session B names one more server while A's are queued: it is not behind them.
    const other = pool.acquire('other', fixtureConfig('echo.mjs', mark), 'B');
    await other;
    const settledWhenBReady = settledA;

    const views = await Promise.all(many);

    expect(views).toHaveLength(6);
    // Two of A's at once at most, plus B's own: never more than three entries spawning.
    expect(counter.max()).toBeLessThanOrEqual(3);
    expect(counter.max()).toBeGreaterThanOrEqual(2);
    expect(settledWhenBReady).toBeLessThan(6);
    // B's spawn began before A's last ones did.
    expect(counter.order.indexOf('other')).toBeLessThan(counter.order.indexOf('s5'));
  });

  it('with one slot the spawns of a session run strictly one after another, and attaching to a live entry never waits', async () => {
    const counter = spawnCounter();
    const pool = newPool({ maxParallelSpawnsPerSession: 1, onEvent: counter.onEvent });
    const mark = newMark('serial');
    const slow = fixtureConfig('slowInit.mjs', mark, { env: { FIXTURE_INIT_DELAY_MS: '300' } });
    await pool.acquire('warm', slow, 'A');
    const views = await Promise.all([pool.acquire('a', slow, 'A'), pool.acquire('b', slow, 'A'), pool.acquire('warm', slow, 'B'), pool.acquire('c', slow, 'A')]);

    expect(views).toHaveLength(4);
    expect(counter.max()).toBe(1);
    expect(pool.getSnapshot().maxParallelSpawnsPerSession).toBe(1);
  });

  it('refuses a bound that is not a positive integer', () => {
    expect(() => newPool({ maxParallelSpawnsPerSession: 0 })).toThrow(/maxParallelSpawnsPerSession/);
  });
});
