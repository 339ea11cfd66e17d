/**
 * A server that floods its views with notifications: the actor throttles what crosses to each
 * view (progress coalesced, the last value kept), and while a view's queue is full it stops
 * reading the server, so the server itself is slowed (its stdout pipe fills and its writes
 * block) and nothing it sends is lost or held in memory. Upstream is the notifyFlood fixture, a
 * real child; the other server is a real echo child.
 */
import { describe, expect, it } from 'vitest';
import type { ProgressInfo, UpstreamNotification } from '@mcpool/core';
import { setTimeout as delay } from 'node:timers/promises';
import { fixtureConfig, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, stateDir: false });
const FLOOD = 10_000;

describe('notification flood', () => {
  it('a call that floods progress and logs: its last progress arrives, progress coalesced, and every log in order (the server waits, nothing drops)', async () => {
    const pool = newPool();
    const view = await pool.acquire('flood', fixtureConfig('notifyFlood.mjs', newMark('burst')), 'A');
    const progress: ProgressInfo[] = [];
    const logs: UpstreamNotification[] = [];

    const result = await view.callTool('burst', { progress: FLOOD, logs: FLOOD }, { timeoutMs: 60_000, onProgress: (p) => progress.push(p), onNotification: (n) => logs.push(n) });

    expect(textOf(result)).toBe('burst done');
    // Coalesced: the last value arrives before the result, the values in between mostly do not.
    expect(progress.at(-1)?.progress).toBe(FLOOD);
    expect(progress.length).toBeLessThan(FLOOD / 2);
    // Held back at the source instead of dropped: every log, the last one last.
    expect(logs.at(-1)?.params?.data).toBe(`log ${FLOOD}`);
    expect(logs.length).toBe(FLOOD);
  });

  it('a background flood is throttled at its source: the server is slowed to what its view takes, shows as throttled, and another server answers meanwhile', async () => {
    const pool = newPool();
    const view = await pool.acquire('flood', fixtureConfig('notifyFlood.mjs', newMark('background')), 'A');
    const echo = await pool.acquire('echo', fixtureConfig('echo.mjs', newMark('neighbour')), 'A');
    let heard = 0;
    let reached!: () => void;
    const enough = new Promise<void>((resolve) => (reached = resolve));
    view.on('notification', () => {
      if (++heard === 3000) reached();
    });
    const throttled = (): boolean => pool.getSnapshot().servers.flood?.entrySummary[0]?.throttled === true;

    await view.callTool('start', { perSecond: 40_000 });
    await enough;
    const seenThrottled = throttled();
    expect(textOf(await echo.callTool('echo', { text: 'still here' }))).toBe('still here');
    const sent = Number(textOf(await view.callTool('stop', {})));

    expect(seenThrottled).toBe(true);
    // Unthrottled, the server sends tens of thousands while the view rises to 3000 (1000 at
    // once, then 1000/s); held back, it gets only a pipe's and a queue's worth ahead of it.
    expect(sent).toBeLessThan(heard * 3);
    // The episode ends a second after the flood does (bounded poll).
    for (let i = 0; i < 300 && throttled(); i++) await delay(50);
    expect(throttled()).toBe(false);
  });
});
