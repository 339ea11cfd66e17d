/**
 * A server that floods its views with notifications: the actor throttles what crosses to each
 * view (progress coalesced, the last value kept; logs bounded, the newest kept), so a view gets
 * a bounded share whatever the server sends. Upstream is the notifyFlood fixture, a real child.
 */
import { describe, expect, it } from 'vitest';
import type { ProgressInfo, UpstreamNotification } from '@mcpool/core';
import { fixtureConfig, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, stateDir: false });
const FLOOD = 10_000;

describe('notification flood', () => {
  it('a call that floods progress and logs: its last progress and its newest log arrive, far fewer than were sent', async () => {
    const pool = newPool();
    const view = await pool.acquire('flood', fixtureConfig('notifyFlood.mjs', newMark('burst')), 'A');
    const progress: ProgressInfo[] = [];
    const logs: UpstreamNotification[] = [];

    const result = await view.callTool('burst', { progress: FLOOD, logs: FLOOD }, { timeoutMs: 60_000, onProgress: (p) => progress.push(p), onNotification: (n) => logs.push(n) });

    expect(textOf(result)).toBe('burst done');
    // Coalesced: the last value arrives before the result, the values in between mostly do not.
    expect(progress.at(-1)?.progress).toBe(FLOOD);
    expect(progress.length).toBeLessThan(FLOOD / 2);
    // Bounded: the oldest waiting logs were dropped, the newest kept.
    expect(logs.at(-1)?.params?.data).toBe(`log ${FLOOD}`);
    expect(logs.length).toBeLessThan(FLOOD / 2);
  });

  it('a background flood reaches a listening view at a bounded rate', async () => {
    const pool = newPool();
    const cfg = fixtureConfig('notifyFlood.mjs', newMark('background'));
    const view = await pool.acquire('flood', cfg, 'A');
    let heard = 0;
    let reached!: () => void;
    const enough = new Promise<void>((resolve) => (reached = resolve));
    view.on('notification', () => {
      if (++heard === 3000) reached();
    });

    await view.callTool('start', { perSecond: 40_000 });
    await enough;
    const sent = Number(textOf(await view.callTool('stop', {})));

    // The server sent several times what the view got while it rose to 3000 (1000 at once, then 1000/s).
    expect(sent).toBeGreaterThan(heard * 2);
  });
});
