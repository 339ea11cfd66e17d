/**
 * Restart intensity per pool key (`RestartIntensity`), on a clock the test moves: a key trips past
 * `maxRestarts` failures within `periodMs`, and every record says where it shrinks — failure times
 * leave with the window, an unpooled key with its entry, a per-session key with its session. The
 * churn: 1,000 per-session acquire/release cycles, each failing its key (some past the limit),
 * leave the maps at the size they started at.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode, connectionIdOf, fingerprint, normalizeServerConfig } from '@mcpool/protocol';
import { PoolKeys, type KeyRequest } from '../src/poolKey.js';
import { RestartIntensity, type FailedEntry } from '../src/restartIntensity.js';

const config = normalizeServerConfig({ command: 'node', args: ['server.mjs'] }).config;
const fp = fingerprint(config);
const LOST = { code: ErrorCode.ENTRY_LOST, message: 'the transport was lost' };

function entryOf(keys: PoolKeys, request: Partial<KeyRequest> & { sessionId: string }, entryIndex = 0): FailedEntry {
  const full: KeyRequest = { name: 'flappy', fingerprint: fp, pooled: true, sharing: 'per-session', principal: undefined, ...request };
  return { key: keys.keyOf(full), serverName: full.name, entryIndex, config, pooled: full.pooled };
}

describe('RestartIntensity', () => {
  it('trips a key past maxRestarts failures within the period, and only that key', () => {
    let now = 0;
    const intensity = new RestartIntensity({ maxRestarts: 5, periodMs: 30_000 }, () => now);
    const keys = new PoolKeys();
    const victim = entryOf(keys, { sessionId: 's', sharing: 'shared' });
    const neighbour = entryOf(keys, { sessionId: 's', sharing: 'shared', name: 'neighbour' });
    intensity.record(neighbour, LOST);
    for (let i = 0; i < 5; i++) expect(intensity.record(victim, LOST)).toBeUndefined();
    expect(intensity.record(victim, LOST)).toMatchObject({ serverName: 'flappy', lastError: LOST });
    expect(intensity.tripped(victim.key.id)).toBeDefined();
    expect(intensity.tripped(neighbour.key.id)).toBeUndefined();
    // Failures spread wider than the period never trip.
    const slow = entryOf(keys, { sessionId: 's', sharing: 'shared', name: 'slow' });
    for (let i = 0; i < 20; i++) {
      now += 10_000;
      expect(intensity.record(slow, LOST)).toBeUndefined();
    }
  });

  it('failure times leave with the window; a tripped shared key stays until reset', () => {
    let now = 0;
    const intensity = new RestartIntensity({ maxRestarts: 1, periodMs: 1000 }, () => now);
    const keys = new PoolKeys();
    const shared = entryOf(keys, { sessionId: 's', sharing: 'shared' });
    const once = entryOf(keys, { sessionId: 's', sharing: 'shared', name: 'once' });
    intensity.record(shared, LOST);
    intensity.record(shared, LOST);
    intensity.record(once, LOST);
    expect(intensity.size).toEqual({ failing: 2, tripped: 1 });
    now += 1000;
    intensity.sweep();
    expect(intensity.size).toEqual({ failing: 0, tripped: 1 });
    intensity.reset(shared.key.id);
    expect(intensity.size).toEqual({ failing: 0, tripped: 0 });
  });

  it('an unpooled key is forgotten with its entry', () => {
    const intensity = new RestartIntensity({ maxRestarts: 0, periodMs: 30_000 }, () => 0);
    const keys = new PoolKeys();
    const unpooled = entryOf(keys, { sessionId: 's', pooled: false });
    expect(intensity.record(unpooled, LOST)).toBeDefined();
    intensity.forget(unpooled.key.id);
    expect(intensity.size).toEqual({ failing: 0, tripped: 0 });
  });

  it('1,000 per-session acquire/release cycles, each failing its key (every tenth past the limit), leave the maps as they started', () => {
    let now = 0;
    const intensity = new RestartIntensity({ maxRestarts: 2, periodMs: 30_000 }, () => now);
    const keys = new PoolKeys();
    const shared = entryOf(keys, { sessionId: 'x', sharing: 'shared' });
    intensity.record(shared, LOST);
    const start = intensity.size;
    let trips = 0;
    for (let cycle = 0; cycle < 1000; cycle++) {
      const sessionId = `session-${cycle}`;
      // 1. The session acquires its own entry, which loses its transport (and, every tenth cycle,
      // often enough to trip its key: shown as a failed entry while the session lives).
      const entry = entryOf(keys, { sessionId }, cycle);
      const losses = cycle % 10 === 0 ? 3 : 1;
      for (let i = 0; i < losses; i++) if (intensity.record(entry, LOST) !== undefined) trips += 1;
      if (cycle % 10 === 0) expect(intensity.tripped(entry.key.id)).toBeDefined();
      // An unpooled acquire of the same session: its key is forgotten with its entry.
      const unpooled = entryOf(keys, { sessionId, pooled: false }, cycle);
      intensity.record(unpooled, LOST);
      intensity.forget(unpooled.key.id);
      // 2. The session lets go of everything.
      intensity.forgetOwner(sessionId);
      now += 5;
    }
    expect(trips).toBe(100);
    expect(intensity.size).toEqual(start);
    // The shared key's record was left alone.
    expect(intensity.failuresOf(connectionIdOf('flappy', fp))).toBe(1);
  });
});
