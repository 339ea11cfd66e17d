/**
 * Tenants who share a daemon stay apart: a real daemon, real fixture servers, and principals that
 * are client tokens.
 * - What a shared server sends on its own reaches one principal only: two principals' calls log
 *   at the same time on one shared server (the fixture holds both calls in flight while they log),
 *   and neither sees the other's lines; what cannot be attributed is dropped and counted.
 * - One access rule on every surface: a client limited by `servers` / `excludeTools` is refused on
 *   REST exactly as on `/mcp` (a session naming a server it may not use, a call of an excluded
 *   tool), with the one refusal of each.
 * - `write` (sessions) is not `admin` (restart, reload, shutdown); the operator token has every right.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, HTTP_STATUS } from '@mcpool/protocol';
import type { SessionInfo } from '@mcpool/client';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';

const mark = marker('tenancy');
const ALICE = `alice-${randomUUID()}`;
const BOB = `bob-${randomUUID()}`;
const LIMITED = `limited-${randomUUID()}`;
const ADMIN = `admin-${randomUUID()}`;
const LINES = 20;

let h: Harness;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {
        echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }),
        other: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }),
        logs: fixtureConfig('logTogether.mjs', mark, { sharing: 'shared' }),
      },
      daemon: {
        clients: [
          { id: 'alice', tokenEnv: 'TN_ALICE', rights: ['write'] },
          { id: 'bob', tokenEnv: 'TN_BOB', rights: ['write'] },
          { id: 'limited', tokenEnv: 'TN_LIMITED', rights: ['write'], servers: ['echo'], excludeTools: ['echo__env'] },
          { id: 'admin', tokenEnv: 'TN_ADMIN', rights: ['admin'] },
        ],
      },
    },
    { env: { TN_ALICE: ALICE, TN_BOB: BOB, TN_LIMITED: LIMITED, TN_ADMIN: ADMIN }, marks: [mark] },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await h?.close();
});

/** A `/mcp` session of `token` on the `logs` server at level debug, and the log lines it receives. */
async function listener(token: string): Promise<{ client: Client; lines: string[] }> {
  const { client } = await connectClient(`${base}/mcp/logs`, token);
  clients.push(client);
  const lines: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void lines.push(String(n.params.data)));
  await client.setLoggingLevel('debug');
  return { client, lines };
}

const unattributed = async (): Promise<number> => {
  const metrics = (await h.request({ method: 'GET', url: '/metrics' })).body;
  return Number(/^mcpool_notifications_unattributed_total\{server="logs"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);
};

describe('notifications of a shared server reach one principal only', () => {
  it('two principals log at once on one shared server: neither sees the other’s lines; the unattributable ones are dropped and counted', async () => {
    const alice = await listener(ALICE);
    const bob = await listener(BOB);
    const before = await unattributed();

    await Promise.all([
      alice.client.callTool({ name: 'say', arguments: { text: 'ALICE-PRIVATE', n: LINES, together: 2 } }),
      bob.client.callTool({ name: 'say', arguments: { text: 'BOB-PRIVATE', n: LINES, together: 2 } }),
    ]);

    expect(alice.lines.filter((line) => line.startsWith('BOB-PRIVATE'))).toEqual([]);
    expect(bob.lines.filter((line) => line.startsWith('ALICE-PRIVATE'))).toEqual([]);
    // Both calls were in flight for every line: none can be said to be one principal's.
    await expect.poll(unattributed, { timeout: 10_000 }).toBe(before + 2 * LINES);

    // Alone, a principal's call gets its own lines (attributed: its calls are the only ones in flight).
    await alice.client.callTool({ name: 'say', arguments: { text: 'ALICE-ALONE', n: 3 } });
    expect(alice.lines.filter((line) => line.startsWith('ALICE-ALONE'))).toEqual(['ALICE-ALONE #0', 'ALICE-ALONE #1', 'ALICE-ALONE #2']);
    expect(bob.lines.filter((line) => line.startsWith('ALICE'))).toEqual([]);
  }, 60_000);
});

describe('one access rule on /mcp and on REST', () => {
  const post = (url: string, token: string, payload: unknown = {}) => h.request({ method: 'POST', url, token, headers: { 'content-type': 'application/json' }, payload: payload as Record<string, unknown> });

  it('a REST session of the limited client holds only the servers it may use, and lists no excluded tool', async () => {
    const created = await post('/sessions', LIMITED);
    expect(created.statusCode).toBe(201);
    const session = created.json<SessionInfo>();
    expect(session.servers.map((s) => s.name)).toEqual(['echo']);
    expect(session.servers[0]!.tools).toContain('echo');
    expect(session.servers[0]!.tools).not.toContain('env');
    await h.request({ method: 'DELETE', url: `/sessions/${session.id}`, token: LIMITED });
  }, 60_000);

  it('POST /sessions naming a server the client may not use is refused with serverForbidden, as on /mcp/<server>', async () => {
    const refused = await post('/sessions', LIMITED, { servers: ['echo', 'other'] });
    expect(refused.statusCode).toBe(HTTP_STATUS[ErrorCode.FORBIDDEN]);
    expect(refused.json()).toMatchObject({ code: ErrorCode.FORBIDDEN, message: 'this client may not use server "other"' });
    const onMcp = await h.request({ method: 'POST', url: '/mcp/other', token: LIMITED, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, payload: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } } });
    expect(onMcp.statusCode).toBe(HTTP_STATUS[ErrorCode.FORBIDDEN]);
    expect(onMcp.body).toContain('this client may not use server \\"other\\"');
    // Injecting a server under that name is no way around it.
    const injected = await post('/sessions', LIMITED, { servers: [], mcpServers: { other: fixtureConfig('echo.mjs', mark) } });
    expect(injected.statusCode).toBe(HTTP_STATUS[ErrorCode.FORBIDDEN]);
    expect(injected.json()).toMatchObject({ code: ErrorCode.FORBIDDEN, message: 'this client may not use server "other"' });
  }, 60_000);

  it('a REST call of an excluded tool is refused with unknownName, as on /mcp; an allowed one runs', async () => {
    const session = (await post('/sessions', LIMITED, { servers: ['echo'] })).json<SessionInfo>();
    const refused = await post(`/sessions/${session.id}/tools/call`, LIMITED, { server: 'echo', name: 'env', arguments: { name: 'HOME' } });
    expect(refused.statusCode).toBe(HTTP_STATUS[ErrorCode.TOOL_NOT_ALLOWED]);
    expect(refused.json()).toMatchObject({ code: ErrorCode.TOOL_NOT_ALLOWED, message: 'Unknown tool: env' });
    const allowed = await post(`/sessions/${session.id}/tools/call`, LIMITED, { server: 'echo', name: 'echo', arguments: { text: 'hi' } });
    expect(allowed.statusCode).toBe(200);
    // The operator acting on the client's session is held to the client's access: the session's rule, not the caller's.
    const byOperator = await post(`/sessions/${session.id}/tools/call`, h.token, { server: 'echo', name: 'env', arguments: { name: 'HOME' } });
    expect(byOperator.statusCode).toBe(HTTP_STATUS[ErrorCode.TOOL_NOT_ALLOWED]);

    const { client } = await connectClient(`${base}/mcp`, LIMITED);
    clients.push(client);
    const onMcp = await client.callTool({ name: 'echo__env', arguments: { name: 'HOME' } }).catch((error: unknown) => error);
    expect(String(onMcp)).toContain('Unknown tool: echo__env');
    await h.request({ method: 'DELETE', url: `/sessions/${session.id}`, token: LIMITED });
  }, 60_000);
});

describe('write is not admin', () => {
  const admin = [
    ['restart', '/workspace/mcp/other/restart'],
    ['reload', '/workspace/mcp/reload-all'],
    ['shutdown', '/workspace/shutdown'],
  ] as const;

  it.each(admin)('a write client is refused %s with the missing right', async (_name, url) => {
    const refused = await h.request({ method: 'POST', url, token: ALICE });
    expect(refused.statusCode).toBe(HTTP_STATUS[ErrorCode.FORBIDDEN]);
    expect(refused.json()).toMatchObject({ code: ErrorCode.FORBIDDEN, message: 'this token lacks the admin right' });
  });

  it('a write client still opens sessions; an admin client restarts and reloads (admin includes write)', async () => {
    const session = await h.request({ method: 'POST', url: '/sessions', token: ALICE, headers: { 'content-type': 'application/json' }, payload: { servers: ['other'] } });
    expect(session.statusCode).toBe(201);
    await h.request({ method: 'DELETE', url: `/sessions/${session.json<SessionInfo>().id}`, token: ALICE });
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/other/restart', token: ADMIN })).statusCode).toBe(200);
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all', token: ADMIN })).statusCode).toBe(200);
    expect((await h.request({ method: 'POST', url: '/sessions', token: ADMIN, headers: { 'content-type': 'application/json' }, payload: { servers: [] } })).statusCode).toBe(201);
  }, 60_000);

  it('an admin client may shut the daemon down', async () => {
    expect((await h.request({ method: 'POST', url: '/workspace/shutdown', token: ADMIN })).statusCode).toBe(202);
  });
});
