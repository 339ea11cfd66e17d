/**
 * A server that floods its views with notifications: the actor passes on at most its source rate
 * (and nothing while a view's queue is full); the rest are read and dropped at the source and
 * counted, never waited for, so the server's answers to other callers are not stuck behind the
 * burst in its stdout pipe. What crosses to each view is throttled again (progress coalesced);
 * logs outside any call go to the views at a slower rate and the rest are dropped and counted.
 * Upstream is the notifyFlood fixture, a real child; the other server is a real echo child.
 */
import { describe, expect, it } from 'vitest';
import type { Logger, ProgressInfo, UpstreamNotification } from '@mcpool/core';
import { SOURCE_MESSAGES_PER_SECOND, UNASKED_LOGS_PER_SECOND, VIEW_NOTIFICATIONS_PER_SECOND } from '@mcpool/actor';
import { setTimeout as delay } from 'node:timers/promises';
import { fixtureConfig, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, stateDir: false });
const FLOOD = 10_000;

/** A logger that keeps the fields of each warning. */
function warnLogger(warnings: Record<string, unknown>[]): Logger {
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (fields: object | string) => void (typeof fields === 'object' && warnings.push(fields as Record<string, unknown>)),
    error: () => undefined,
    child: () => logger,
  };
  return logger;
}

/** The count the source's end-of-burst warning gives (polled: it comes a second after the last drop). */
async function droppedAtSource(warnings: Record<string, unknown>[]): Promise<number> {
  const episodeEnds = (): Record<string, unknown>[] => warnings.filter((w) => typeof w.reason === 'string' && typeof w.dropped === 'number');
  for (let i = 0; i < 300 && episodeEnds().length === 0; i++) await delay(50);
  return episodeEnds().reduce((n, w) => n + Number(w.dropped), 0);
}

describe('notification flood', () => {
  it('a call that floods progress and logs: its result arrives; what passes is bounded by the source rate, in order, and the rest is dropped and counted', async () => {
    const warnings: Record<string, unknown>[] = [];
    const pool = newPool({ logger: warnLogger(warnings), logLevel: 'info' });
    const view = await pool.acquire('flood', fixtureConfig('notifyFlood.mjs', newMark('burst')), 'A');
    const progress: ProgressInfo[] = [];
    const logs: UpstreamNotification[] = [];

    const started = performance.now();
    const result = await view.callTool('burst', { progress: FLOOD, logs: FLOOD }, { timeoutMs: 60_000, onProgress: (p) => progress.push(p), onNotification: (n) => logs.push(n) });
    const seconds = (performance.now() - started) / 1000;
    console.info(`${2 * FLOOD} notifications of one call took ${seconds.toFixed(1)} s (passed on at ${SOURCE_MESSAGES_PER_SECOND}/s, the rest dropped)`);

    expect(textOf(result)).toBe('burst done');
    // The view took no more than the source passed on (its burst, then its rate).
    expect(progress.length + logs.length).toBeGreaterThan(0);
    expect(progress.length + logs.length).toBeLessThanOrEqual(SOURCE_MESSAGES_PER_SECOND * (seconds + 1));
    expect(progress.length).toBeLessThanOrEqual(VIEW_NOTIFICATIONS_PER_SECOND * (seconds + 1) + 50);
    // What passed is in the order sent.
    const numbers = logs.map((log) => Number(String(log.params?.data).slice('log '.length)));
    expect(numbers).toEqual([...numbers].sort((x, y) => x - y));
    // A second after the last drop, one warning counts the rest (bounded poll).
    const dropped = await droppedAtSource(warnings);
    expect(dropped).toBeGreaterThanOrEqual(2 * FLOOD - SOURCE_MESSAGES_PER_SECOND * (seconds + 1));
    expect(dropped).toBeLessThanOrEqual(2 * FLOOD - progress.length - logs.length);
  });

  it("one caller's burst of 50,000 notifications on a shared server: another caller's call answers meanwhile, not behind the burst, and the drop is counted", async () => {
    const warnings: Record<string, unknown>[] = [];
    const pool = newPool({ logger: warnLogger(warnings), logLevel: 'info' });
    const config = fixtureConfig('notifyFlood.mjs', newMark('shared'));
    const alice = await pool.acquire('flood', config, 'alice');
    const bob = await pool.acquire('flood', config, 'bob');
    expect(pool.getSnapshot().servers.flood?.entryCount).toBe(1);
    let heard = 0;

    const throttled = (): boolean => pool.getSnapshot().servers.flood?.entrySummary[0]?.throttled === true;

    const burst = alice.callTool('burst', { progress: 0, logs: 50_000 }, { timeoutMs: 120_000, onNotification: () => void heard++ });
    // Bounded poll: bob asks once the burst is past the source's rate, when a paused read would
    // leave his answer behind the rest of the burst in the pipe.
    for (let i = 0; i < 600 && !throttled(); i++) await delay(20);
    expect(throttled()).toBe(true);
    const asked = performance.now();
    const answer = await bob.callTool('echo', { text: 'bob' }, { timeoutMs: 60_000 });
    const waitedMs = performance.now() - asked;
    console.info(`bob's call answered in ${Math.round(waitedMs)} ms during alice's burst`);

    expect(textOf(answer)).toBe('bob');
    // Generous for a loaded machine: held behind the burst in the pipe it took 11–45 s.
    expect(waitedMs).toBeLessThan(5_000);
    expect(textOf(await burst)).toBe('burst done');
    const dropped = await droppedAtSource(warnings);
    expect(dropped).toBeGreaterThan(0);
    expect(dropped + heard).toBeLessThanOrEqual(50_000);
  });

  it('a background log flood is dropped past its rate at the source and reaches its view through the slow lane: a hundred a second, the rest dropped and counted; another server answers meanwhile', async () => {
    const warnings: Record<string, unknown>[] = [];
    const pool = newPool({ logger: warnLogger(warnings), logLevel: 'info' });
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
    // The source passed on no more than its rate (its burst, then its rate); the rest of what was
    // sent before the stop's answer was read and dropped there, counted when the episode ends.
    const droppedAtTheSource = await droppedAtSource(warnings);
    expect(droppedAtTheSource).toBeLessThanOrEqual(sent);
    expect(sent - droppedAtTheSource).toBeLessThanOrEqual(SOURCE_MESSAGES_PER_SECOND * (seconds + 1));
    // The view got the slow lane's burst and rate, not the 1000/s every other message may use.
    expect(heardBeforeStop).toBeGreaterThan(0);
    expect(heardBeforeStop).toBeLessThanOrEqual(UNASKED_LOGS_PER_SECOND * (seconds + 1) + 50);
    // A second after the last drop, one warning counts what the view did not get (bounded poll).
    for (let i = 0; i < 100 && !warnings.some((w) => w.viewId !== undefined && Number(w.dropped) > 0); i++) await delay(50);
    const dropped = warnings.filter((w) => w.viewId !== undefined && Number(w.dropped) > 0).reduce((n, w) => n + Number(w.dropped), 0);
    expect(dropped).toBeGreaterThan(heardBeforeStop);
    // The episode ends a second after the flood does (bounded poll).
    for (let i = 0; i < 300 && throttled(); i++) await delay(50);
    expect(throttled()).toBe(false);
  });
});
