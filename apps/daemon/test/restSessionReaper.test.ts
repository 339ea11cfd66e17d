/**
 * REST sessions are reaped by the idle TTL `/mcp` sessions have (`mcpSessionTtlMs`): a session
 * with no call for longer than that, and none under way, is closed — its pool references
 * released, so the server it injected ends — as a crashed IDE's sessions must be. The daemon's
 * clock is moved by the test (no wall-clock wait for the TTL); the servers are real processes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonEventPayload, SessionInfo } from '@mcpool/client';
import { fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { ManualClock } from './manualClock.js';

const TTL_MS = 60_000;

const configuredMark = marker('reaper-configured');
const injectedMark = marker('reaper-injected');
const clock = new ManualClock();
let h: Harness;
const events: DaemonEventPayload[] = [];

beforeAll(async () => {
  h = await harness(
    { mcpServers: { echo: fixtureConfig('echo.mjs', configuredMark, { sharing: 'shared' }) }, daemon: { mcpSessionTtlMs: TTL_MS } },
    // A released entry drains at once, so the injected server's end follows its session's.
    { clock, poolOptions: { drainDelayMs: 50 }, marks: [configuredMark, injectedMark] },
  );
  h.daemon.events.subscribe((event) => events.push(event.payload));
});
afterAll(async () => {
  await h?.close();
});

async function openSession(): Promise<SessionInfo> {
  const created = await h.request({ method: 'POST', url: '/sessions', payload: { label: 'crashed-ide', mcpServers: { injected: fixtureConfig('echo.mjs', injectedMark) } } });
  expect(created.statusCode).toBe(201);
  return created.json<SessionInfo>();
}

const refsOf = (server: string): number => h.daemon.pool.getSnapshot().servers[server]?.entrySummary.reduce((sum, entry) => sum + entry.refs, 0) ?? 0;

describe('REST sessions idle past mcpSessionTtlMs', () => {
  it('the daemon reaps them on its clock from start', () => {
    expect(clock.timers).toBe(1);
  });

  it('a session idle past the TTL is closed: listed no more, its references released, its injected server ended', async () => {
    const session = await openSession();
    expect(pidsWithMarker(injectedMark)).toHaveLength(1);
    expect(refsOf('echo')).toBe(1); // the session's (servers start on first use: no warm hold)
    expect(refsOf('injected')).toBe(1);

    // 1. At the TTL it is not idle for longer than the TTL yet.
    clock.advance(TTL_MS);
    expect((await h.request({ method: 'GET', url: `/sessions/${session.id}` })).statusCode).toBe(200);

    // 2. Past it, the next check closes it.
    clock.advance(TTL_MS / 2);
    await expect.poll(() => events).toContainEqual({ type: 'session_closed', sessionId: session.id });
    expect((await h.request({ method: 'GET', url: `/sessions/${session.id}` })).statusCode).toBe(404);
    expect(h.daemon.status().sessions).toBe(0);

    // 3. Its pool session is released: nothing holds the configured server any more, and both it
    // and the server the session injected drain and their processes end.
    await expect.poll(() => refsOf('echo')).toBe(0);
    await expect.poll(() => pidsWithMarker(injectedMark), { timeout: 30_000 }).toEqual([]);
    await expect.poll(() => pidsWithMarker(configuredMark), { timeout: 30_000 }).toEqual([]);
  });

  it('a call keeps its session alive: not reaped while it runs, and its end counts as activity', async () => {
    const session = await openSession();
    const call = h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'injected', name: 'slow', arguments: { ms: 1500, steps: 1 } } });
    await expect.poll(() => h.daemon.sessions.inFlightCalls).toBe(1);
    clock.advance(3 * TTL_MS);
    expect((await call).statusCode).toBe(200);
    expect((await h.request({ method: 'GET', url: `/sessions/${session.id}` })).statusCode).toBe(200);

    // Idle from the call's end on.
    clock.advance(TTL_MS);
    expect((await h.request({ method: 'GET', url: `/sessions/${session.id}` })).statusCode).toBe(200);
    clock.advance(TTL_MS / 2);
    await expect.poll(async () => (await h.request({ method: 'GET', url: `/sessions/${session.id}` })).statusCode).toBe(404);
    await expect.poll(() => pidsWithMarker(injectedMark), { timeout: 30_000 }).toEqual([]);
  });

  it('a deleted session is not reaped again, and shutdown stops the reaper', async () => {
    const session = await openSession();
    expect((await h.request({ method: 'DELETE', url: `/sessions/${session.id}` })).statusCode).toBe(204);
    const closed = events.filter((event) => event.type === 'session_closed' && event.sessionId === session.id);
    clock.advance(2 * TTL_MS);
    expect(events.filter((event) => event.type === 'session_closed' && event.sessionId === session.id)).toEqual(closed);
    await h.daemon.shutdown('test');
    expect(clock.timers).toBe(0);
  });
});
