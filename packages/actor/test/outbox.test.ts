/**
 * A view's slow lane for logs no caller asked for: what reaches the view when a server starts
 * logging in a loop, in its first instant and afterwards.
 */
import { describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { UNASKED_LOG_BURST, UNASKED_LOGS_PER_SECOND, ViewOutbox } from '../src/outbox.js';

describe('view outbox, unasked logs', () => {
  it("a flood's first instant passes a tenth of a second's worth, then the lane's rate; the rest is dropped and counted once", async () => {
    const reports: { dropped: number }[] = [];
    const outbox = new ViewOutbox((report) => reports.push(report));
    try {
      let delivered = 0;
      // A thousand at once: what a server's first flood chunk hands every view.
      // The lane refills while the loop runs, and a loaded machine may take several ms over it:
      // what that time earns at the lane's rate is allowed on top.
      const refilledDuring = (run: () => void): number => {
        const started = performance.now();
        run();
        return Math.ceil(((performance.now() - started) * UNASKED_LOGS_PER_SECOND) / 1000);
      };
      const slack = refilledDuring(() => {
        for (let i = 0; i < 1000; i++) outbox.pushUnasked(() => void delivered++);
      });
      expect(delivered).toBeGreaterThanOrEqual(UNASKED_LOG_BURST);
      expect(delivered).toBeLessThanOrEqual(UNASKED_LOG_BURST + slack);
      expect(UNASKED_LOG_BURST).toBeLessThanOrEqual(UNASKED_LOGS_PER_SECOND / 10);

      // Half a second on, the lane has refilled at its rate (bounded by its burst), not more.
      await delay(500);
      const first = delivered;
      const slack2 = refilledDuring(() => {
        for (let i = 0; i < 1000; i++) outbox.pushUnasked(() => void delivered++);
      });
      expect(delivered).toBeGreaterThan(first);
      expect(delivered - first).toBeLessThanOrEqual(UNASKED_LOG_BURST + slack2);

      // A second without a drop ends the episode with one report of what was dropped (bounded poll).
      for (let i = 0; i < 100 && reports.length === 0; i++) await delay(50);
      expect(reports).toEqual([{ dropped: 2000 - delivered, coalesced: 0 }]);
    } finally {
      outbox.dispose();
    }
  });
});
