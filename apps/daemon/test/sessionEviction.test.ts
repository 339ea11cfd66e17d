/**
 * Sessions never lock a user out: clients that never DELETE their `/mcp` session (SDK v2
 * `close()`, inspector-cli) fill their token's share, and the next initialize ends the least
 * recently used idle one (its client gets 404 and initializes again) instead of being refused.
 * A session still in use — a GET stream open — is never ended for another. Ending idle sessions
 * in bulk: `POST /workspace/sessions/close-idle` and `mcpool sessions --close-idle`. A real daemon
 * on a socket, a real fixture server, raw requests and an SDK client.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { main } from 'mcpool';
import { fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { ACCEPT_BOTH, connectClient, openRawSession, raw } from './gatewayHelpers.js';

let h: Harness | undefined;
const streams: ClientRequest[] = [];

afterEach(async () => {
  for (const stream of streams.splice(0)) stream.destroy();
  await h?.close();
  h = undefined;
});

async function listening(daemon: Record<string, unknown>, mark: string): Promise<{ h: Harness; base: string }> {
  h = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }) }, daemon }, { marks: [mark] });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  return { h, base: `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}` };
}

/** A request on an existing session; its status (404: the session is gone). */
async function ping(base: string, token: string, id: string): Promise<number> {
  const answer = await raw(base, {
    path: '/mcp',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': id, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION },
    body: { jsonrpc: '2.0', id: 7, method: 'ping' },
  });
  return answer.status;
}

/** Opens the session's GET stream and keeps it open (a client that is still there); resolves once the daemon answered 200. */
function openStream(base: string, token: string, id: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/mcp`, { method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION } }, (res) => {
      if (res.statusCode === 200) resolve();
      else reject(new Error(`GET stream answered ${res.statusCode}`));
      res.resume();
    });
    req.on('error', () => undefined);
    req.end();
    streams.push(req);
  });
}

describe('a client at its session cap', () => {
  it('300 abandoned sessions on one token, then a new one opens: the least recently used idle ones were ended, and their clients get 404', { timeout: 300_000 }, async () => {
    const mark = marker('evict-300');
    const { h, base } = await listening({}, mark);
    const abandoned: string[] = [];
    for (let i = 0; i < 300; i++) abandoned.push(await openRawSession(base, '/mcp', h.token));

    const limits = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<{ limits: { mcpSessions: { open: number; perClient: number } } }>();
    expect(limits.limits.mcpSessions).toMatchObject({ open: 250, perClient: 250 });
    // The user's IDE connects: it opens, lists and calls.
    const { client } = await connectClient(`${base}/mcp`, h.token, {}, 'the-users-ide');
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('echo__echo');
    } finally {
      await client.close();
    }
    // The oldest 51 are gone (51: the IDE's session took one more place), the newest still answer.
    expect(await ping(base, h.token, abandoned[0]!)).toBe(404);
    expect(await ping(base, h.token, abandoned[50]!)).toBe(404);
    expect(await ping(base, h.token, abandoned[51]!)).toBe(200);
    expect(await ping(base, h.token, abandoned[299]!)).toBe(200);
    const metrics = (await h.request({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^mcpool_mcp_session_evictions_total 51$/m);
    expect(metrics).not.toMatch(/mcpool_admission_refusals_total\{limit="mcp_sessions_per_client"\}/);
    // One server process behind all of them.
    expect(pidsWithMarker(mark)).toHaveLength(1);
  });

  it('a session whose client is still there (its GET stream open) is never ended for a new one: with none idle, the new one is refused, typed', { timeout: 120_000 }, async () => {
    const mark = marker('evict-busy');
    const { h, base } = await listening({ mcpMaxSessionsPerClient: 2 }, mark);
    const [a, b] = [await openRawSession(base, '/mcp', h.token), await openRawSession(base, '/mcp', h.token)];
    await openStream(base, h.token, a);
    await openStream(base, h.token, b);
    const refused = await raw(base, { path: '/mcp', headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } } } });
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { data: { code: 'MCPOOL_CLIENT_LIMIT_REACHED' }, message: expect.stringContaining('none is idle') } });
    expect(await ping(base, h.token, a)).toBe(200);
    // Its client goes away (the stream closes): that session is idle now, and makes room.
    streams.shift()!.destroy();
    await expect.poll(async () => (await openRawSession(base, '/mcp', h.token).then(() => 'opened', (error: Error) => error.message)), { timeout: 30_000 }).toBe('opened');
    expect(await ping(base, h.token, a)).toBe(404);
    expect(await ping(base, h.token, b)).toBe(200);
  });
});

describe('ending idle sessions in bulk', () => {
  it('mcpool sessions --close-idle ends every idle session (REST and /mcp) and leaves those in use; --idle-for spares recent ones', { timeout: 120_000 }, async () => {
    const mark = marker('close-idle');
    const { h, base } = await listening({}, mark);
    const idle = [await openRawSession(base, '/mcp', h.token), await openRawSession(base, '/mcp', h.token)];
    const inUse = await openRawSession(base, '/mcp', h.token);
    await openStream(base, h.token, inUse);
    const rest = (await h.request({ method: 'POST', url: '/sessions', payload: { label: 'idle rest' } })).json<{ id: string }>();
    const env = { MCPOOL_URL: base, MCPOOL_TOKEN: h.token };
    const run = async (...args: string[]): Promise<{ code: number; out: string }> => {
      const out: string[] = [];
      const code = await main(['node', 'mcpool', 'sessions', ...args], { stdout: (t) => out.push(t), stderr: (t) => out.push(t), env, cwd: h.dir });
      return { code, out: out.join('\n') };
    };

    // Nothing has been idle for an hour: nothing ends.
    expect(await run('--close-idle', '--idle-for', '1h')).toEqual({ code: 0, out: 'no idle session' });
    expect(await run('--idle-for', '1h')).toMatchObject({ code: 2 });
    const closed = await run('--close-idle', '--json');
    expect(closed.code).toBe(0);
    expect((JSON.parse(closed.out) as { closed: { kind: string; id: string }[] }).closed).toEqual(
      expect.arrayContaining([{ kind: 'rest', id: rest.id }, ...idle.map((id) => ({ kind: 'mcp', id }))]),
    );
    expect((JSON.parse(closed.out) as { closed: unknown[] }).closed).toHaveLength(3);
    for (const id of idle) expect(await ping(base, h.token, id)).toBe(404);
    expect(await ping(base, h.token, inUse)).toBe(200);
    expect((await h.request({ method: 'GET', url: `/sessions/${rest.id}` })).statusCode).toBe(404);
    // The session list names the MCP client beside the token's client id.
    const listed = await run();
    expect(listed.out).toMatch(new RegExp(`${inUse}\\s+legacy\\s+operator\\s+gateway-test 1\\.0\\.0`));
    // A read-only token may not end sessions.
    expect((await h.request({ method: 'POST', url: '/workspace/sessions/close-idle', payload: {}, token: null })).statusCode).toBe(401);
  });
});
