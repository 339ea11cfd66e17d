/**
 * The event hub's replay for Last-Event-ID: exact when it can be, `events_lost` when it cannot.
 */
import { describe, expect, it } from 'vitest';
import { EventHub } from 'mcpool';

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
