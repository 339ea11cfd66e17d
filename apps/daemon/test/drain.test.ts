/**
 * The drain before a stop, for a balancer: `/readyz` is 503 at once, new sessions (legacy `/mcp`,
 * REST) are refused with 503 while everything else is served, and the calls in flight finish
 * within `daemon.drainTimeoutMs`; past it the shutdown cancels what is left, as without a drain.
 * `/healthz` is unchanged throughout.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { ACCEPT_BOTH, connectClient, initializeBody, modernRequest, raw } from './gatewayHelpers.js';

let h: Harness | undefined;
let client: Client | undefined;
afterEach(async () => {
  await client?.close().catch(() => undefined);
  client = undefined;
  await h?.close();
  h = undefined;
});

async function started(drainTimeoutMs: number): Promise<{ h: Harness; base: string }> {
  const mark = marker('drain');
  h = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }) }, daemon: { drainTimeoutMs } }, { marks: [mark] });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  return { h, base: `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}` };
}

describe('drain before a stop', { timeout: 120_000 }, () => {
  it('is not ready at once, refuses new sessions, serves the rest, and lets the call in flight finish', async () => {
    const { h, base } = await started(60_000);
    ({ client } = await connectClient(`${base}/mcp`, h.token));
    const call = client.callTool({ name: 'echo__slow', arguments: { ms: 1500, steps: 3 } });
    await vi.waitFor(() => expect(h.daemon.callsInFlight).toBe(1), { timeout: 30_000, interval: 10 });

    const drained = h.daemon.drain();
    // 1. Not ready before anything else; alive all the same.
    const ready = await h.request({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ code: 'MCPOOL_SHUTTING_DOWN', ready: false, draining: true });
    expect((await h.request({ method: 'GET', url: '/healthz', token: null })).statusCode).toBe(200);
    // 2. No new legacy session and no new REST session.
    const auth = { authorization: `Bearer ${h.token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH };
    const init = await raw(base, { path: '/mcp', headers: auth, body: initializeBody() });
    expect(init.status).toBe(503);
    expect(JSON.parse(init.body)).toMatchObject({ error: { data: { code: 'MCPOOL_SHUTTING_DOWN' } } });
    expect((await h.request({ method: 'POST', url: '/sessions', payload: {} })).statusCode).toBe(503);
    // 3. The open session and modern requests are still served.
    expect(await client.callTool({ name: 'echo__echo', arguments: { text: 'still here' } })).toMatchObject({ content: [{ text: 'still here' }] });
    expect((await modernRequest({ base, token: h.token }, 'tools/list')).status).toBe(200);
    // 4. The call in flight finishes, and with it the drain.
    const result = await call;
    expect(result.isError).toBeUndefined();
    expect(result.content).toEqual([expect.objectContaining({ type: 'text' })]);
    expect(await drained).toEqual({ drained: true, left: 0 });
    expect(h.daemon.callsInFlight).toBe(0);
  });

  it('gives up at drainTimeoutMs and leaves the call to the shutdown, which cancels it', async () => {
    const { h } = await started(300);
    const session = (await h.request({ method: 'POST', url: '/sessions', payload: {} })).json<{ id: string }>();
    const call = h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name: 'slow', arguments: { ms: 60_000, steps: 60 } } });
    await vi.waitFor(() => expect(h.daemon.callsInFlight).toBe(1), { timeout: 30_000, interval: 10 });
    expect(await h.daemon.drain()).toEqual({ drained: false, left: 1 });
    await h.daemon.shutdown('test');
    const answer = await call;
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toMatchObject({ code: 'MCPOOL_SHUTTING_DOWN' });
  });
});
