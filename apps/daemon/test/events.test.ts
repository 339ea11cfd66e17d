/**
 * The event hub's replay for Last-Event-ID: exact when it can be, `events_lost` when it cannot;
 * the pool events the daemon's entry watcher consumes (real, growing generations); and the
 * watcher itself, which follows them instead of polling the pool's snapshot.
 */
import { describe, expect, it, vi } from 'vitest';
import type { DaemonEventPayload } from '@mcpool/client';
import { McpTransportPool, type PoolEvent } from '@mcpool/core';
import type { EntryEvent } from '@mcpool/protocol';
import { EventHub } from 'mcpool';
import { fixtureConfig, killMarked, marker } from '../../../test/helpers/processes.js';
import { harness } from './helpers.js';

const closed = (sessionId: string) => ({ type: 'session_closed' as const, sessionId });

describe('EventHub', () => {
  it('numbers events per daemon run and fans them out to subscribers', () => {
    const hub = new EventHub();
    const seen: string[] = [];
    const unsubscribe = hub.subscribe((event) => seen.push(event.id));
    const a = hub.publish(closed('a'));
    hub.publish(closed('b'));
    unsubscribe();
    hub.publish(closed('c'));
    expect(a.id).toBe(`${hub.epoch}-1`);
    expect(seen).toEqual([`${hub.epoch}-1`, `${hub.epoch}-2`]);
    expect(hub.subscribers).toBe(0);
  });

  it('replays exactly what came after a known id, and nothing for no id', () => {
    const hub = new EventHub();
    for (const id of ['a', 'b', 'c']) hub.publish(closed(id));
    expect(hub.since(undefined)).toEqual({ events: [] });
    const { events, lost } = hub.since(`${hub.epoch}-1`);
    expect(lost).toBeUndefined();
    expect(events.map((e) => (e.payload as { sessionId: string }).sessionId)).toEqual(['b', 'c']);
    expect(hub.since(`${hub.epoch}-3`)).toEqual({ events: [] });
  });

  it('a subscriber that throws is logged through the daemon’s logger, and the others still get the event', async () => {
    const h = await harness({ mcpServers: {} }, { start: false });
    try {
      const seen: string[] = [];
      h.daemon.events.subscribe(() => {
        throw new Error('the subscriber broke');
      });
      h.daemon.events.subscribe((event) => seen.push(event.payload.type));
      h.daemon.events.publish(closed('a'));
      expect(seen).toEqual(['session_closed']);
      const lines = h.logs.map((line) => JSON.parse(line) as { level: number; msg: string; event?: string; err?: { message: string } });
      expect(lines.find((line) => line.msg === 'an event subscriber threw')).toMatchObject({ level: 50, event: 'session_closed', err: { message: 'the subscriber broke' } });
    } finally {
      await h.close();
    }
  });

  it('says events were lost for another run’s id, a garbled id, a future id, or one out of the buffer', () => {
    const hub = new EventHub(2);
    for (const id of ['a', 'b', 'c', 'd']) hub.publish(closed(id));
    expect(hub.since('ffffffff-1').lost).toBe('daemon_restarted');
    expect(hub.since('garbage').lost).toBe('unknown_id');
    expect(hub.since(`${hub.epoch}-99`).lost).toBe('unknown_id');
    const overflow = hub.since(`${hub.epoch}-1`);
    expect(overflow.lost).toBe('buffer_overflow');
    expect(overflow.events.map((e) => e.seq)).toEqual([3, 4]);
    // The oldest buffered event is 3: an id of 2 missed nothing.
    expect(hub.since(`${hub.epoch}-2`).lost).toBeUndefined();
  });
});

describe('pool events (what the daemon consumes)', () => {
  it('carry the entry’s real generation: it never goes down, and a restart raises it', async () => {
    const mark = marker('generations');
    const events: PoolEvent[] = [];
    const pool = new McpTransportPool({ stateDir: false, drainDelayMs: 60_000, shutdownStepMs: 500, onEvent: (event) => events.push(event) });
    try {
      const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 's1');
      const [restart] = await pool.restartByName('echo');
      expect(restart).toMatchObject({ restarted: true });
      await view.release();
      await vi.waitFor(() => expect(events.filter((e) => e.type === 'statusChanged').map((e) => e.status)).toContain('draining'), { timeout: 10_000, interval: 20 });
      await pool.drainAll();
      const entry = events.filter((e): e is EntryEvent => 'entryIndex' in e && e.serverName === 'echo' && e.entryIndex === 0);
      expect(entry.map((e) => (e.type === 'statusChanged' ? e.status : e.type))).toEqual(['spawning', 'active', 'disconnected', 'reconnected', 'draining', 'closed']);
      const generations = entry.map((e) => e.generation);
      // A receiver that drops anything older than what it applied loses none of these.
      for (let i = 1; i < generations.length; i++) expect(generations[i]!).toBeGreaterThanOrEqual(generations[i - 1]!);
      const active = entry.find((e) => e.type === 'statusChanged' && e.status === 'active')!;
      expect(active.generation).toBeGreaterThan(0);
      expect(entry.find((e) => e.type === 'reconnected')!.generation).toBeGreaterThan(active.generation);
    } finally {
      await pool.drainAll();
      killMarked(mark);
    }
  }, 120_000);
});

describe('the daemon’s entry watcher', () => {
  it('follows the pool’s events, without polling its snapshot', async () => {
    const mark = marker('watcher');
    const h = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) } }, { marks: [mark] });
    try {
      // A session holds the entry (servers start on first use; the one start the daemon made to
      // learn echo's catalog released it), so nothing changes while the watcher is watched idle.
      expect((await h.request({ method: 'POST', url: '/sessions', payload: { servers: ['echo'] } })).statusCode).toBe(201);
      const seen: DaemonEventPayload[] = [];
      h.daemon.events.subscribe((event) => seen.push(event.payload));
      const snapshots = vi.spyOn(h.daemon.pool, 'getSnapshot');
      // 1. Idle: nothing asks the pool for its snapshot (the old watcher did every 250 ms).
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(snapshots).not.toHaveBeenCalled();
      // 2. A lifecycle change is an event at once, with the entry's refs.
      await h.daemon.pool.restartByName('echo');
      await vi.waitFor(() => expect(seen).toContainEqual({ type: 'disconnected', serverName: 'echo', entryIndex: 0, generation: expect.any(Number), reason: 'restart' }), { timeout: 10_000, interval: 20 });
      await vi.waitFor(() => expect(seen.map((e) => e.type)).toContain('reconnected'), { timeout: 30_000, interval: 20 });
      const [disconnected, reconnected] = [seen.find((e) => e.type === 'disconnected'), seen.find((e) => e.type === 'reconnected')] as { generation: number }[];
      expect(reconnected!.generation).toBeGreaterThan(disconnected!.generation);
      // 3. An entry that closes is `gone`, once.
      await h.daemon.shutdown('test');
      const statuses = seen.filter((e) => e.type === 'entry_status');
      expect(statuses.filter((e) => e.status === 'gone')).toHaveLength(1);
      // (it may have been seen draining first, when the session's release reached the actor in time)
      expect(statuses.at(-1)).toEqual({ type: 'entry_status', serverName: 'echo', entryIndex: 0, status: 'gone', previous: expect.stringMatching(/^(active|draining)$/), refs: 0 });
    } finally {
      await h.close();
    }
  }, 120_000);
});

describe('entry status lines', () => {
  it('an entry going draining and active again as sessions come and go is logged at debug; its birth and end at info', async () => {
    const mark = marker('status-churn');
    // Per-principal: the client's sessions have an entry of their own, which drains when they leave.
    // No warm hold: it follows whoever uses a per-client server alone, so it would keep that entry active.
    const h = await harness({ mcpServers: { echo: { ...fixtureConfig('echo.mjs', mark), sharing: 'per-principal' } }, daemon: { keepWarm: false, clients: [{ id: 'ci', tokenEnv: 'CI_TOKEN', rights: ['read', 'write'] }] } }, { env: { CI_TOKEN: 'ci-token-0123456789abcdef' }, logLevel: 'debug', marks: [mark] });
    try {
      for (let round = 0; round < 3; round++) {
        const created = await h.request({ method: 'POST', url: '/sessions', token: 'ci-token-0123456789abcdef', payload: { servers: ['echo'] } });
        expect(created.statusCode).toBe(201);
        expect((await h.request({ method: 'DELETE', url: `/sessions/${created.json<{ id: string }>().id}`, token: 'ci-token-0123456789abcdef' })).statusCode).toBe(204);
      }
      const statusLines = (): { level: number; msg: string; previous?: string }[] =>
        h.logs.map((line) => JSON.parse(line) as { level: number; msg: string; previous?: string }).filter((line) => /^echo#\d+ (active|draining|spawning|gone)$/.test(line.msg));
      await vi.waitFor(() => expect(statusLines().filter((line) => line.msg.endsWith(' draining')).length).toBeGreaterThanOrEqual(3), { timeout: 30_000, interval: 50 });
      const churn = statusLines().filter((line) => (line.msg.endsWith(' draining') && line.previous === 'active') || (line.msg.endsWith(' active') && line.previous === 'draining'));
      expect(churn.length).toBeGreaterThanOrEqual(5);
      expect(churn.filter((line) => line.level !== 20)).toEqual([]);
      // The entry's first `active` (from spawning) stays a lifecycle line.
      expect(statusLines().filter((line) => line.msg.endsWith(' active') && line.previous === 'spawning').every((line) => line.level === 30)).toBe(true);
      expect(statusLines().some((line) => line.msg.endsWith(' active') && line.previous === 'spawning')).toBe(true);
    } finally {
      await h.close();
    }
  });
});
