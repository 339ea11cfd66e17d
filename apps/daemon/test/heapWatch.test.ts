/**
 * The serve process's heap watch: garbage piling up in the old generation past the slack is
 * collected within a check or two, not left for V8's first full collection at its initial limit.
 */
import { describe, expect, it } from 'vitest';
import { getHeapStatistics } from 'node:v8';
import { setTimeout as delay } from 'node:timers/promises';
import { HEAP_CHECK_MS, HEAP_SLACK_MB, startHeapWatch } from '../src/heapWatch.js';

const usedMb = (): number => getHeapStatistics().used_heap_size / 1048576;

describe('heap watch', () => {
  it('collects once the heap has grown past its slack with garbage, and stops when told', async () => {
    const collected: { beforeMb: number; afterMb: number }[] = [];
    const watch = startHeapWatch((info) => collected.push(info));
    try {
      // Objects held across young-generation collections (so they reach the old generation), then
      // dropped; allocated in one go, so no check runs while they are still held.
      let held: string[][] | undefined = [];
      for (let i = 0; i < 40; i++) held.push(Array.from({ length: 20_000 }, (_, j) => `garbage ${i} ${j}`));
      const grown = usedMb();
      expect(held.length).toBe(40);
      held = undefined;
      for (let i = 0; i < 5 && collected.length === 0; i++) await delay(HEAP_CHECK_MS);
      expect(collected.length).toBeGreaterThan(0);
      expect(watch.collections).toBe(collected.length);
      expect(collected[0]!.afterMb).toBeLessThan(collected[0]!.beforeMb - HEAP_SLACK_MB / 2);
      expect(usedMb()).toBeLessThan(grown - HEAP_SLACK_MB / 2);
    } finally {
      watch.stop();
    }
    // Stopped: more garbage is left to V8.
    const count = watch.collections;
    await delay(2 * HEAP_CHECK_MS);
    expect(watch.collections).toBe(count);
  });
});
