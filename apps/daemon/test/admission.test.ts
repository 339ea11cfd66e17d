/**
 * Admission control: per-client and daemon-wide caps on `/mcp` sessions (JSON-RPC refusals), on
 * REST sessions and injected servers (REST refusals), all typed from the one code table and
 * visible in `GET /workspace/mcp` and `/metrics`. A refused injection starts nothing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, HTTP_STATUS, JSON_RPC_CODE } from '@mcpool/protocol';
import type { WorkspaceMcpStatus } from '@mcpool/client';
import { harness, type Harness } from './helpers.js';
import { ACCEPT_BOTH, initializeBody } from './gatewayHelpers.js';

const TOKENS = { ALPHA_TOKEN: `alpha-${randomUUID()}`, BETA_TOKEN: `beta-${randomUUID()}` };
const alpha = { token: TOKENS.ALPHA_TOKEN };
const beta = { token: TOKENS.BETA_TOKEN };

/** `n` http servers on a port nothing listens on (a start would fail fast; none should be tried). */
function injected(n: number, prefix = 's'): Record<string, { url: string }> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, { url: `http://127.0.0.1:9/mcp${i}` }]));
}

let h: Harness;
beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {},
      daemon: {
        clients: [
          { id: 'alpha', tokenEnv: 'ALPHA_TOKEN', rights: ['read', 'write'] },
          { id: 'beta', tokenEnv: 'BETA_TOKEN', rights: ['read', 'write'] },
        ],
        mcpMaxSessionsPerClient: 3,
        mcpMaxSessions: 5,
        maxSessionsPerClient: 2,
        maxInjectedServersPerRequest: 2,
        maxInjectedServersPerClient: 3,
        maxActors: 40,
        maxParallelSpawns: 3,
        actorHeartbeat: { intervalMs: 250, misses: 5 },
      },
    },
    { env: TOKENS },
  );
});
afterAll(async () => {
  await h?.close();
});

const status = async (): Promise<WorkspaceMcpStatus> => (await h.request({ method: 'GET', url: '/workspace/mcp' })).json();

describe('/mcp session caps', () => {
  const init = (as: { token: string }) =>
    h.request({ method: 'POST', url: '/mcp', ...as, headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH }, payload: initializeBody() });

  it('a client at its share makes room by ending its own least recently used idle session; another client is untouched; the global cap still holds', async () => {
    // 1. alpha opens its share (3); a 4th ends alpha's least recently used idle session instead of being refused.
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const answer = await init(alpha);
      expect(answer.statusCode).toBe(200);
      ids.push(String(answer.headers['mcp-session-id']));
    }
    const listed = (await h.request({ method: 'GET', url: '/workspace/sessions' })).json<{ sessions: { id: string }[] }>();
    expect(listed.sessions.map((session) => session.id).sort()).toEqual(ids.slice(1).sort());
    // The evicted session's client gets 404 and initializes again, as the MCP spec says.
    const gone = await h.request({ method: 'POST', url: '/mcp', ...alpha, headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': ids[0]! }, payload: { jsonrpc: '2.0', id: 2, method: 'ping' } });
    expect(gone.statusCode).toBe(404);

    // 2. beta is not affected: its initialize works.
    expect((await init(beta)).statusCode).toBe(200);
    // 3. 4 open: the daemon-wide cap, less the operator's headroom (1 of 5), refuses beta (still
    //    under its own share) with 503: no client's session is ended for another's.
    const global = await init(beta);
    expect(global.statusCode).toBe(HTTP_STATUS[ErrorCode.SESSION_CAP_REACHED]);
    expect(global.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: JSON_RPC_CODE[ErrorCode.SESSION_CAP_REACHED], data: { code: ErrorCode.SESSION_CAP_REACHED }, message: expect.stringContaining('mcpMaxSessions 5, the last 1 of which are kept for the operator') } });
    // 4. The operator takes its headroom; then the cap holds for it too.
    expect((await init({ token: h.token })).statusCode).toBe(200);
    expect((await init({ token: h.token })).statusCode).toBe(HTTP_STATUS[ErrorCode.SESSION_CAP_REACHED]);

    const limits = (await status()).limits;
    expect(limits.mcpSessions).toEqual({ open: 5, max: 5, perClient: 3 });
    const metrics = (await h.request({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^mcpool_mcp_sessions 5$/m);
    expect(metrics).toMatch(/^mcpool_admission_limit\{limit="mcp_sessions_per_client"\} 3$/m);
    expect(metrics).toMatch(/^mcpool_mcp_session_evictions_total 1$/m);
    expect(metrics).not.toMatch(/^mcpool_admission_refusals_total\{limit="mcp_sessions_per_client"\}/m);
    expect(metrics).toMatch(/^mcpool_admission_refusals_total\{limit="mcp_sessions"\} 2$/m);
  });
});

describe('REST sessions and injected servers', () => {
  it('refuses 2,500 injected http servers in one request with a typed 400, starting nothing', async () => {
    const before = h.daemon.pool.getSnapshot();
    const answer = await h.request({ method: 'POST', url: '/sessions', ...alpha, payload: { mcpServers: injected(2500) } });
    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toMatchObject({ statusCode: 400, code: ErrorCode.REQUEST_TOO_LARGE, message: expect.stringContaining('at most 2 (daemon.maxInjectedServersPerRequest)') });
    const after = h.daemon.pool.getSnapshot();
    expect(after.liveActors).toBe(before.liveActors);
    expect(Object.keys(after.servers)).toEqual(Object.keys(before.servers));
    expect((await status()).sessions).toBe(0);
  });

  it('caps injected servers per client and REST sessions per client, for that client only', async () => {
    // 1. alpha injects 2, then 2 more would pass its 3: 429. One more fits.
    const first = await h.request({ method: 'POST', url: '/sessions', ...alpha, payload: { mcpServers: injected(2, 'a') } });
    expect(first.statusCode).toBe(201);
    const over = await h.request({ method: 'POST', url: '/sessions', ...alpha, payload: { mcpServers: injected(2, 'b') } });
    expect(over.statusCode).toBe(429);
    expect(over.json()).toMatchObject({ code: ErrorCode.CLIENT_LIMIT_REACHED, message: expect.stringContaining('maxInjectedServersPerClient 3') });
    // 2. beta is not affected.
    const other = await h.request({ method: 'POST', url: '/sessions', ...beta, payload: { mcpServers: injected(2, 'c') } });
    expect(other.statusCode).toBe(201);
    expect((await status()).limits.injectedServers).toEqual({ live: 4, perRequest: 2, perClient: 3 });
    // 3. alpha has 1 session; a second (no injection) fits its 2, a third does not.
    expect((await h.request({ method: 'POST', url: '/sessions', ...alpha, payload: {} })).statusCode).toBe(201);
    const third = await h.request({ method: 'POST', url: '/sessions', ...alpha, payload: {} });
    expect(third.statusCode).toBe(429);
    expect(third.json()).toMatchObject({ code: ErrorCode.CLIENT_LIMIT_REACHED, message: expect.stringContaining('maxSessionsPerClient 2') });
    // 4. Deleting the injecting session gives the share back.
    const id = first.json<{ id: string }>().id;
    expect((await h.request({ method: 'DELETE', url: `/sessions/${id}`, ...alpha })).statusCode).toBe(204);
    expect((await h.request({ method: 'POST', url: '/sessions', ...alpha, payload: { mcpServers: injected(2, 'd') } })).statusCode).toBe(201);

    const limits = (await status()).limits;
    expect(limits.sessions).toEqual({ open: 3, perClient: 2 });
    expect(limits.actors.max).toBe(40);
    // The pool runs with the daemon section's spawn bound and heartbeat (unset fields take their defaults).
    expect(limits.parallelSpawns).toEqual({ perSession: 3 });
    expect(limits.actorHeartbeat).toEqual({ intervalMs: 250, timeoutMs: 5000, misses: 5 });
    const metrics = (await h.request({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^mcpool_actor_cap 40$/m);
    expect(metrics).toMatch(/^mcpool_admission_refusals_total\{limit="injected_per_request"\} 1$/m);
    expect(metrics).toMatch(/^mcpool_admission_refusals_total\{limit="injected_per_client"\} 1$/m);
    expect(metrics).toMatch(/^mcpool_admission_refusals_total\{limit="sessions_per_client"\} 1$/m);
  });
});
