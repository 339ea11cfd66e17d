/**
 * Per-file pool bookkeeping for tests that run real children: every pool a test makes is drained
 * after it, and every marker it used must have no process left — whatever a failed assertion
 * left behind is caught here, not by the next test.
 */
import { afterEach } from 'vitest';
import { McpTransportPool, type McpTransportPoolOptions } from '@mcpool/core';
import { expectNoSurvivors, marker } from './processes.js';

/**
 * The spawn timeout of a test pool unless it sets its own: a server behind bash took more than
 * the default 30 s to start on a two-core machine running eight suites and stress-ng.
 */
export const SPAWN_TIMEOUT_MS = 120_000;

export interface PoolsForTests {
  /** A pool drained (forced) after the test; `defaults` then `options` apply. */
  newPool: (options?: McpTransportPoolOptions) => McpTransportPool;
  /** A marker argument unique to the test, checked for survivors after it. */
  newMark: (label: string) => string;
}

/** Registers the `afterEach` cleanup of the calling test file. */
export function usePools(defaults: McpTransportPoolOptions = {}): PoolsForTests {
  const pools: McpTransportPool[] = [];
  const marks: string[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.drainAll({ force: true })));
    for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
  });
  return {
    newPool(options = {}) {
      const pool = new McpTransportPool({ spawnTimeoutMs: SPAWN_TIMEOUT_MS, ...defaults, ...options });
      pools.push(pool);
      return pool;
    },
    newMark(label) {
      const mark = marker(label);
      marks.push(mark);
      return mark;
    },
  };
}
