/**
 * Shutdown in its order: stop accepting → cancel in-flight calls → release every
 * session → drainAll (graceful: stdin EOF → SIGTERM → SIGKILL per server, forced only past the
 * deadline); nothing of the servers survives.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionInfo } from '@mcpool/client';
import { WARM_SESSION_ID, shutdownStepFor } from 'mcpool';
import { fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('Daemon.shutdown', () => {
  it('stops accepting, cancels the call in flight, releases sessions, then drains gracefully', async () => {
    const mark = marker('shutdown');
    const started = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) } }, { marks: [mark] });
    h = started;
    const order: string[] = [];
    const pool = started.daemon.pool;
    const release = pool.releaseSession.bind(pool);
    const drain = pool.drainAll.bind(pool);
    vi.spyOn(pool, 'releaseSession').mockImplementation((id) => {
      // The call must have ended before any session is released.
      order.push(`release ${id === WARM_SESSION_ID ? 'warm' : 'session'} (calls in flight: ${started.daemon.sessions.inFlightCalls})`);
      return release(id);
    });
    vi.spyOn(pool, 'drainAll').mockImplementation((options) => {
      order.push(`drainAll force=${String(options?.force)}`);
      return drain(options);
    });

    const session = (await started.request({ method: 'POST', url: '/sessions', payload: {} })).json<SessionInfo>();
    // 1. A slow call is in flight.
    const call = started.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name: 'slow', arguments: { ms: 20_000 } } });
    await vi.waitFor(() => expect(started.daemon.sessions.inFlightCalls).toBe(1), { timeout: 5000, interval: 10 });

    // 2. Shut down.
    const result = await started.daemon.shutdown('test');
    expect(result).toEqual({ drained: 1, forced: 0, errors: [] });
    const answer = await call;
    expect(answer.json()).toMatchObject({ statusCode: 503, code: 'MCPOOL_SHUTTING_DOWN' });
    expect(order).toEqual(['release session (calls in flight: 0)', 'release warm (calls in flight: 0)', 'drainAll force=undefined']);

    // 3. Nothing new is accepted; nothing of the servers is left.
    expect((await started.request({ method: 'POST', url: '/sessions', payload: {} })).json()).toMatchObject({ statusCode: 503, code: 'MCPOOL_SHUTTING_DOWN' });
    expect((await started.request({ method: 'POST', url: '/workspace/mcp/echo/restart' })).statusCode).toBe(503);
    expect((await started.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).statusCode).toBe(503);
    expect(started.daemon.sessions.list()).toEqual([]);
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 5000, interval: 50 });
    // Idempotent.
    expect(await started.daemon.shutdown('again')).toBe(result);
  }, 120_000);
});

describe('graceful stop of each server', () => {
  it('gives stdin EOF first, SIGTERM to who ignores it, SIGKILL to who ignores both, and forces nothing', async () => {
    const mark = marker('graceful');
    const markers = mkdtempSync(join(tmpdir(), 'mcpool-markers-'));
    // Marker names shorter than a secret: env values of 8+ characters are scrubbed from logs.
    const server = (name: string, stopOn: string) => fixtureConfig('shutdownMarkers.mjs', mark, { env: { FIXTURE_MARKER_DIR: markers, FIXTURE_NAME: name, FIXTURE_STOP_ON: stopOn } });
    const started = await harness({ mcpServers: { polite: server('p', 'eof'), stubborn: server('s', 'sigterm'), deaf: server('d', 'never') } }, { marks: [mark] });
    h = started;
    try {
      expect(pidsWithMarker(mark)).toHaveLength(3);
      const result = await started.daemon.shutdown('test');
      expect(result).toEqual({ drained: 3, forced: 0, errors: [] });
      const seen = (name: string): string[] => ['eof', 'sigterm'].filter((what) => existsSync(join(markers, `${name}.${what}`)));
      expect(seen('p')).toEqual(['eof']);
      expect(seen('s')).toEqual(['eof', 'sigterm']);
      expect(seen('d')).toEqual(['eof', 'sigterm']);
      // The deaf one got past both steps: only SIGKILL ended it, and it is gone.
      expect(pidsWithMarker(mark)).toEqual([]);
    } finally {
      rmSync(markers, { recursive: true, force: true });
    }
  }, 120_000);

  it('fits both graceful steps and the kill in the shutdown deadline', () => {
    expect(shutdownStepFor(10_000)).toBe(2000);
    expect(shutdownStepFor(5000)).toBe(1000);
    expect(shutdownStepFor(100)).toBe(50);
    for (const timeout of [100, 3000, 4000, 7000, 10_000, 60_000]) expect(2 * shutdownStepFor(timeout) + 1000).toBeLessThanOrEqual(Math.max(timeout, 1100));
  });
});
