/**
 * A server that floods its views with notifications: the actor throttles what crosses to each
 * view (progress coalesced, the last value kept), and while a view's queue is full it stops
 * reading the server, so the server itself is slowed (its stdout pipe fills and its writes
 * block) and nothing a call produces is lost or held in memory; logs outside any call go to the
 * views at a slower rate and the rest are dropped and counted. Upstream is the notifyFlood fixture, a
 * real child; the other server is a real echo child.
 */
import { describe, expect, it } from 'vitest';
import type { Logger, ProgressInfo, UpstreamNotification } from '@mcpool/core';
import { SOURCE_MESSAGES_PER_SECOND, UNASKED_LOGS_PER_SECOND, VIEW_NOTIFICATIONS_PER_SECOND } from '@mcpool/actor';
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

    const started = performance.now();
    const result = await view.callTool('burst', { progress: FLOOD, logs: FLOOD }, { timeoutMs: 60_000, onProgress: (p) => progress.push(p), onNotification: (n) => logs.push(n) });
    const seconds = (performance.now() - started) / 1000;
    console.info(`${2 * FLOOD} notifications of one call took ${seconds.toFixed(1)} s (read at ${SOURCE_MESSAGES_PER_SECOND}/s)`);

    expect(textOf(result)).toBe('burst done');
    // Coalesced: the last value arrives before the result; the view took no more than its rate
    // allowed (its burst, then its rate), the server being read twice as fast.
    expect(progress.at(-1)?.progress).toBe(FLOOD);
    expect(progress.length).toBeLessThan(FLOOD);
    expect(progress.length).toBeLessThanOrEqual(VIEW_NOTIFICATIONS_PER_SECOND * (seconds + 1) + 50);
    // Held back at the source instead of dropped: every log, the last one last.
    expect(logs.at(-1)?.params?.data).toBe(`log ${FLOOD}`);
    expect(logs.length).toBe(FLOOD);
  });

  it('a background log flood is throttled at its source and reaches its view through the slow lane: a hundred a second, the rest dropped and counted; another server answers meanwhile', async () => {
    const warnings: Record<string, unknown>[] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (fields: object | string) => void (typeof fields === 'object' && warnings.push(fields as Record<string, unknown>)),
      error: () => undefined,
      child: () => logger,
    };
    const pool = newPool({ logger, logLevel: 'info' });
    const view = await pool.acquire('flood', fixtureConfig('notifyFlood.mjs', newMark('background')), 'A');
    const echo = await pool.acquire('echo', fixtureConfig('echo.mjs', newMark('neighbour')), 'A');
    let heard = 0;
    view.on('notification', () => void heard++);
    const throttled = (): boolean => pool.getSnapshot().servers.flood?.entrySummary[0]?.throttled === true;

    await view.callTool('start', { perSecond: 40_000 });
    const started = performance.now();
    let seenThrottled = false;
    for (let i = 0; i < 100 && !(seenThrottled ||= throttled()); i++) await delay(50);
    await delay(3000);
    expect(textOf(await echo.callTool('echo', { text: 'still here' }))).toBe('still here');
    const sent = Number(textOf(await view.callTool('stop', {})));
    const seconds = (performance.now() - started) / 1000;
    const heardBeforeStop = heard;

    expect(seenThrottled).toBe(true);
    // Read at the source's rate (its burst, then its rate), plus what a pipe and a chunk hold:
    // without the throttle the server sends tens of thousands a second.
    expect(sent).toBeLessThan(SOURCE_MESSAGES_PER_SECOND * (seconds + 1) + 10_000);
    // The view got the slow lane's burst and rate, not the 1000/s every other message may use.
    expect(heardBeforeStop).toBeGreaterThan(0);
    expect(heardBeforeStop).toBeLessThanOrEqual(UNASKED_LOGS_PER_SECOND * (seconds + 1) + 50);
    // A second after the last drop, one warning counts what the view did not get (bounded poll).
    for (let i = 0; i < 100 && !warnings.some((w) => Number(w.dropped) > 0); i++) await delay(50);
    const dropped = warnings.filter((w) => Number(w.dropped) > 0).reduce((n, w) => n + Number(w.dropped), 0);
    expect(dropped).toBeGreaterThan(heardBeforeStop);
    // The episode ends a second after the flood does (bounded poll).
    for (let i = 0; i < 300 && throttled(); i++) await delay(50);
    expect(throttled()).toBe(false);
  });
});
