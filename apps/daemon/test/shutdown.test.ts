/**
 * Shutdown in the seed's order (§17): stop accepting → cancel in-flight calls → release every
 * session → drainAll({force: true}); nothing of the servers survives.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SessionInfo } from '@mcpool/client';
import { WARM_SESSION_ID } from 'mcpool';
import { fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('Daemon.shutdown', () => {
  it('stops accepting, cancels the call in flight, releases sessions, then drains with force', async () => {
    const mark = marker('shutdown');
    const started = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) } }, { marks: [mark] });
    h = started;
    const order: string[] = [];
    const pool = started.daemon.pool;
    const release = pool.releaseSession.bind(pool);
    const drain = pool.drainAll.bind(pool);
    vi.spyOn(pool, 'releaseSession').mockImplementation((id) => {
      // The call must have ended before any session is released.
      order.push(`release ${id === WARM_SESSION_ID ? 'warm' : 'session'} (calls in flight: ${started.daemon.inFlightCalls})`);
      return release(id);
    });
    vi.spyOn(pool, 'drainAll').mockImplementation((options) => {
      order.push(`drainAll force=${String(options?.force)}`);
      return drain(options);
    });

    const session = (await started.request({ method: 'POST', url: '/sessions', payload: {} })).json<SessionInfo>();
    // 1. A slow call is in flight.
    const call = started.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name: 'slow', arguments: { ms: 20_000 } } });
    await vi.waitFor(() => expect(started.daemon.inFlightCalls).toBe(1), { timeout: 5000, interval: 10 });

    // 2. Shut down.
    const result = await started.daemon.shutdown('test');
    expect(result).toMatchObject({ forced: 1, errors: [] });
    const answer = await call;
    expect(answer.json()).toMatchObject({ statusCode: 503, code: 'MCPOOL_SHUTTING_DOWN' });
    expect(order).toEqual(['release session (calls in flight: 0)', 'release warm (calls in flight: 0)', 'drainAll force=true']);

    // 3. Nothing new is accepted; nothing of the servers is left.
    expect((await started.request({ method: 'POST', url: '/sessions', payload: {} })).json()).toMatchObject({ statusCode: 503, code: 'MCPOOL_SHUTTING_DOWN' });
    expect((await started.request({ method: 'POST', url: '/workspace/mcp/echo/restart' })).statusCode).toBe(503);
    expect((await started.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).statusCode).toBe(503);
    expect(started.daemon.listSessions()).toEqual([]);
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 5000, interval: 50 });
    // Idempotent.
    expect(await started.daemon.shutdown('again')).toBe(result);
  });
});
