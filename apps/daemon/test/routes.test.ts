/**
 * The REST routes through `app.inject()`, over a real daemon whose pool runs fixture servers:
 * shapes, the security checks on every route (token, Host allow-list, Origin, rights), the
 * error body and its statuses (400/401/403/404/409/413/415), sessions with injected servers,
 * restart shapes, metrics and the OpenAPI description.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprint, normalizeServerConfig } from '@mcpool/protocol';
import {
  CAPABILITIES,
  errorBodySchema,
  healthSchema,
  readySchema,
  restartResponseSchema,
  routeTable,
  sessionInfoSchema,
  sessionListSchema,
  toolCallResponseSchema,
  workspaceMcpSchema,
  workspaceSessionsSchema,
  workspaceStatsSchema,
  stderrTailSchema,
  SecretRedactor,
} from 'mcpool';
import type { SessionInfo, WorkspaceMcpStatus } from '@mcpool/client';
import { fixtureConfig, marker, pidFromResult, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

const VIEWER = 'viewer-token-0123456789';
const IDE = 'ide-token-0123456789abc';
const OTHER = 'other-token-0123456789ab';
const mark = marker('routes');

function config(): Record<string, unknown> {
  return {
    // Shared by every client (these tests are about the routes; sharing.test.ts covers the default).
    mcpServers: {
      echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }),
      prompts: fixtureConfig('promptsOnly.mjs', mark, { sharing: 'shared' }),
    },
    daemon: {
      // The routes are read over servers that run from the daemon's start, held by its warm hold
      // (the refs, entry numbers and restarts below count on it); the default, lazy start, has
      // its states in serverStates.test.ts.
      start: 'eager',
      drainDelayMs: 200,
      bodyLimitBytes: 4096,
      allowedOrigins: ['http://localhost:3000'],
      clients: [
        { id: 'viewer', tokenEnv: 'VIEWER_TOKEN', rights: ['read'] },
        { id: 'ide', tokenEnv: 'IDE_TOKEN', rights: ['write'] },
        { id: 'other', tokenEnv: 'OTHER_TOKEN', rights: ['read', 'write'] },
        { id: 'ghost', tokenEnv: 'UNSET_TOKEN', rights: ['read'] },
      ],
    },
  };
}

let h: Harness;
beforeAll(async () => {
  h = await harness(config(), { env: { VIEWER_TOKEN: VIEWER, IDE_TOKEN: IDE, OTHER_TOKEN: OTHER }, marks: [mark] });
});
afterAll(async () => {
  await h?.close();
});

const status = async (): Promise<WorkspaceMcpStatus> => (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();

/** Every documented route with its path parameters filled in (the public `/healthz` too, unless asked). */
function concreteRoutes(options: { withPublic?: boolean } = {}): { method: 'GET' | 'POST' | 'DELETE'; url: string; right: string }[] {
  return routeTable(h.daemon, new SecretRedactor())
    .filter((route) => options.withPublic !== false || route.public !== true)
    .map((route) => ({ method: route.method, url: route.url.replace(':server', 'echo').replace(':id', 'no-such-session'), right: route.right }));
}

describe('GET /workspace/mcp', () => {
  it('is initialized with no session, lists each server with its entries and the budget cell', async () => {
    const response = await h.request({ method: 'GET', url: '/workspace/mcp' });
    expect(response.statusCode).toBe(200);
    const body = workspaceMcpSchema.parse(response.json());
    expect(body).toMatchObject({ initialized: true, ready: true, sessions: 0 });
    expect(body.budget).toEqual({ kind: 'mcp_budget', scope: 'workspace', liveCount: 2, clientBudget: 50, budgetMode: 'warn', status: 'ok', bySharing: { shared: 2, 'per-workspace': 0, 'per-principal': 0, 'per-session': 0 } });
    expect(body.servers.map((s) => s.name)).toEqual(['echo', 'prompts']);
    expect(body.servers[0]).toEqual({
      kind: 'mcp_server',
      name: 'echo',
      configured: true,
      transport: 'stdio',
      status: 'active',
      mcpStatus: 'connected',
      state: 'running',
      lastStartMs: expect.any(Number) as number,
      entryCount: 1,
      // The warm hold is the one ref; the fixture speaks the legacy era.
      entrySummary: [{ entryIndex: 0, refs: 1, status: 'active', sharing: 'shared', era: 'legacy' }],
      sharing: { policy: 'shared', reason: 'set in its config' },
    });
  });

  it('never shows a fingerprint', async () => {
    const text = (await h.request({ method: 'GET', url: '/workspace/mcp' })).body;
    const print = fingerprint(normalizeServerConfig(fixtureConfig('echo.mjs', mark)).config);
    expect(text).not.toContain(print);
    expect(text).not.toContain(mark);
  });
});

describe('security on every route', () => {
  it('401 without a token, with an unknown one, or with another scheme, on every route but the probes (/healthz, /readyz); the answer names Bearer', async () => {
    const guarded = concreteRoutes({ withPublic: false });
    expect(guarded.map((route) => route.url)).toEqual(expect.arrayContaining(['/workspace/mcp', '/metrics', '/workspace/shutdown']));
    expect(guarded.map((route) => route.url)).not.toContain('/healthz');
    expect(guarded.map((route) => route.url)).not.toContain('/readyz');
    for (const route of guarded) {
      const missing = await h.request({ ...route, token: null });
      expect(missing.statusCode, `${route.method} ${route.url}`).toBe(401);
      expect(missing.headers['www-authenticate']).toBe('Bearer realm="mcpool"');
      expect(errorBodySchema.parse(missing.json())).toEqual({ statusCode: 401, code: 'MCPOOL_UNAUTHORIZED', error: 'Unauthorized', message: 'a bearer token is required' });
      expect((await h.request({ ...route, token: 'not-a-known-token-at-all' })).statusCode).toBe(401);
    }
    expect((await h.request({ method: 'GET', url: '/capabilities', token: null, headers: { authorization: `Basic ${h.token}` } })).statusCode).toBe(401);
    // A client whose token variable is unset is simply not there.
    expect((await h.request({ method: 'GET', url: '/capabilities', token: '' })).statusCode).toBe(401);
  });

  it('/healthz answers 200 without a token (or with a bad one), and says nothing but that it is alive', async () => {
    for (const token of [null, 'not-a-known-token-at-all', h.token]) {
      const response = await h.request({ method: 'GET', url: '/healthz', token });
      expect(response.statusCode, String(token)).toBe(200);
      expect(Object.keys(healthSchema.parse(response.json())).sort()).toEqual(['status', 'uptimeMs']);
    }
    expect((await h.request({ method: 'GET', url: '/healthz', token: null, headers: { authorization: `Basic ${h.token}` } })).statusCode).toBe(200);
    // Host and Origin are still checked: a rebinding page cannot even learn that the daemon is up.
    expect((await h.request({ method: 'GET', url: '/healthz', token: null, headers: { host: 'evil.example.com' } })).statusCode).toBe(403);
    expect((await h.request({ method: 'GET', url: '/healthz', token: null, headers: { origin: 'http://evil.example.com' } })).statusCode).toBe(403);
  });

  it('403 for a Host that is not loopback or allow-listed (DNS rebinding), before the token is looked at', async () => {
    for (const { right: _right, ...route } of concreteRoutes()) {
      for (const host of ['evil.example.com', 'localhost.evil.com:7070', '127.0.0.1.nip.io']) {
        const response = await h.request({ ...route, token: null, headers: { host } });
        expect(response.statusCode, `${route.method} ${route.url} ${host}`).toBe(403);
        expect(response.json()).toMatchObject({ code: 'MCPOOL_FORBIDDEN' });
      }
    }
    for (const host of ['localhost', 'localhost:7070', '127.0.0.1:1', '[::1]:7070']) {
      expect((await h.request({ method: 'GET', url: '/healthz', headers: { host } })).statusCode, host).toBe(200);
    }
  });

  it('403 for a foreign Origin on every route, with no CORS header; an allowed origin gets CORS and its preflight', async () => {
    for (const { right: _right, ...route } of concreteRoutes()) {
      for (const origin of ['http://evil.example.com', 'null', 'http://localhost:3001']) {
        const response = await h.request({ ...route, headers: { origin } });
        expect(response.statusCode, `${route.method} ${route.url} ${origin}`).toBe(403);
        expect(response.headers['access-control-allow-origin']).toBeUndefined();
      }
    }
    const allowed = await h.request({ method: 'GET', url: '/healthz', headers: { origin: 'http://localhost:3000' } });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.headers['access-control-allow-origin']).toBe('http://localhost:3000');
    const preflight = await h.request({ method: 'OPTIONS', url: '/sessions', token: null, headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST' } });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toContain('authorization');
    const foreignPreflight = await h.request({ method: 'OPTIONS', url: '/sessions', token: null, headers: { origin: 'http://evil.example.com' } });
    expect(foreignPreflight.statusCode).toBe(403);
  });

  it('403 when the token lacks the right: read for GETs, write for sessions, admin for restart, reload and shutdown', async () => {
    // (The event stream is a GET that stays open; the listen tests read it with a read token.)
    for (const { right, ...route } of concreteRoutes().filter((r) => r.url !== '/workspace/mcp/events')) {
      const response = await h.request({ ...route, token: VIEWER, ...(route.method === 'POST' ? { payload: {} } : {}) });
      if (route.method === 'GET') {
        expect([200, 404], route.url).toContain(response.statusCode);
      } else {
        expect(response.statusCode, `${route.method} ${route.url}`).toBe(403);
        expect(response.json()).toMatchObject({ code: 'MCPOOL_FORBIDDEN', message: `this token lacks the ${right} right` });
        expect(right, `${route.method} ${route.url}`).toBe(/restart|reload|shutdown/.test(route.url) ? 'admin' : 'write');
      }
    }
  });

  it('refuses a stdio injection without the write right in the daemon itself too, before anything starts', async () => {
    const injectMark = marker('routes-inject');
    const reader = { id: 'viewer', rights: new Set(['read'] as const) };
    await expect(h.daemon.sessions.create(reader, { mcpServers: { x: fixtureConfig('echo.mjs', injectMark) } })).rejects.toMatchObject({ code: 'MCPOOL_FORBIDDEN' });
    expect(pidsWithMarker(injectMark)).toEqual([]);
    expect((await h.request({ method: 'HEAD', url: '/workspace/mcp' })).statusCode).toBe(404);
  });

  it('answers an unknown route 404 only to a valid token', async () => {
    expect((await h.request({ method: 'GET', url: '/nope', token: null })).statusCode).toBe(401);
    const response = await h.request({ method: 'POST', url: '/nope', token: VIEWER });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ statusCode: 404, code: 'MCPOOL_NOT_FOUND', error: 'Not Found', message: 'no route POST /nope' });
  });
});

describe('malformed input', () => {
  const post = (payload: string | object, headers: Record<string, string> = { 'content-type': 'application/json' }) => h.request({ method: 'POST', url: '/sessions', payload, headers });

  it('400 for invalid JSON, without quoting the body', async () => {
    const response = await post('{"mcpServers": {"x": {"env": {"K": "quoted-secret-value"}} ,,}');
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ statusCode: 400, code: 'MCPOOL_BAD_REQUEST', error: 'Bad Request', message: 'the body is not valid JSON' });
    expect(response.body).not.toContain('quoted-secret-value');
  });

  it('400 for a body of the wrong shape, naming each path, and for unknown fields', async () => {
    const response = await post({ mcpServers: 5, servers: 'echo', extra: true });
    expect(response.statusCode).toBe(400);
    const { message } = response.json<{ message: string }>();
    expect(message).toContain('body.mcpServers: expected a record');
    expect(message).toContain('body.servers: expected an array');
    expect(message).toContain('"extra"');
  });

  it('400 for an injected config that is invalid (with its JSON path) or uses ${VAR}: the daemon env never flows in', async () => {
    const bad = await post({ mcpServers: { x: { command: 5 } } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'MCPOOL_CONFIG_INVALID' });
    expect(bad.json<{ message: string }>().message).toContain('mcpServers.x.command');
    const interpolated = await post({ mcpServers: { x: { command: 'node', args: ['${HOME}'] } } });
    expect(interpolated.statusCode).toBe(400);
    expect(interpolated.json<{ message: string }>().message).toContain('environment variable HOME to be set');
  });

  it('400 for an unknown configured server or a bad entryIndex; 415 for text/plain; 413 past the body limit', async () => {
    expect((await post({ servers: ['nope'] })).json()).toMatchObject({ statusCode: 400, message: 'servers[0]: no configured server is named "nope"' });
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/echo/restart?entryIndex=abc' })).statusCode).toBe(400);
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/echo/restart?entryIndex=-1' })).statusCode).toBe(400);
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/echo/restart?other=1' })).statusCode).toBe(400);
    const plain = await post('{}', { 'content-type': 'text/plain' });
    expect(plain.statusCode).toBe(415);
    expect(plain.json()).toMatchObject({ code: 'MCPOOL_UNSUPPORTED_MEDIA_TYPE' });
    const large = await post({ label: 'x'.repeat(5000) });
    expect(large.statusCode).toBe(413);
    expect(large.json()).toMatchObject({ code: 'MCPOOL_PAYLOAD_TOO_LARGE' });
    const call = await h.request({ method: 'POST', url: '/sessions/x/tools/call', payload: { server: 'echo' } });
    expect(call.statusCode).toBe(400);
    expect(call.json<{ message: string }>().message).toContain('body.name');
  });
});

describe('sessions', () => {
  it('creates a session holding the configured servers, lists it, calls a tool, and deletes it', async () => {
    const created = await h.request({ method: 'POST', url: '/sessions', payload: { label: 'first' }, token: IDE });
    expect(created.statusCode).toBe(201);
    const session = sessionInfoSchema.parse(created.json());
    expect(session).toMatchObject({ clientId: 'ide', label: 'first' });
    expect(session.servers.map((s) => [s.name, s.status, s.injected, s.entryIndex])).toEqual([
      ['echo', 'connected', false, 0],
      ['prompts', 'connected', false, 0],
    ]);
    expect(session.servers[0]!.tools).toContain('echo');
    expect((await status()).servers[0]!.entrySummary).toEqual([{ entryIndex: 0, refs: 2, status: 'active', sharing: 'shared', era: 'legacy' }]);

    const list = sessionListSchema.parse((await h.request({ method: 'GET', url: '/sessions', token: VIEWER })).json());
    expect(list.sessions.map((s) => s.id)).toEqual([session.id]);
    expect((await h.request({ method: 'GET', url: `/sessions/${session.id}`, token: VIEWER })).json()).toEqual(session);

    const call = await h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name: 'echo', arguments: { text: 'hi' } }, token: IDE });
    expect(call.statusCode).toBe(200);
    expect(toolCallResponseSchema.parse(call.json()).result).toMatchObject({ content: [{ type: 'text', text: 'hi' }] });

    // Session ids are not credentials: to another client the session does not exist.
    expect((await h.request({ method: 'DELETE', url: `/sessions/${session.id}`, token: OTHER })).statusCode).toBe(404);
    expect((await h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name: 'echo', arguments: { text: 'x' } }, token: OTHER })).statusCode).toBe(404);

    expect((await h.request({ method: 'DELETE', url: `/sessions/${session.id}`, token: IDE })).statusCode).toBe(204);
    expect((await h.request({ method: 'DELETE', url: `/sessions/${session.id}`, token: IDE })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: `/sessions/${session.id}` })).statusCode).toBe(404);
    expect((await status()).servers[0]!.entrySummary).toEqual([{ entryIndex: 0, refs: 1, status: 'active', sharing: 'shared', era: 'legacy' }]);
  });

  it('maps call failures onto statuses: unknown server 404, filtered tool 403, upstream error 502', async () => {
    const session = (
      await h.request({ method: 'POST', url: '/sessions', payload: { servers: ['echo'], mcpServers: { filtered: { ...fixtureConfig('echo.mjs', mark), excludeTools: ['add'] } } } })
    ).json<SessionInfo>();
    const call = (payload: object) => h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload });
    expect((await call({ server: 'prompts', name: 'x' })).statusCode).toBe(404);
    expect((await call({ server: 'filtered', name: 'add', arguments: { a: 1, b: 2 } })).json()).toMatchObject({ statusCode: 403, code: 'MCPOOL_TOOL_NOT_ALLOWED' });
    expect((await call({ server: 'echo', name: 'throw' })).json()).toMatchObject({ statusCode: 502, code: 'MCPOOL_UPSTREAM_ERROR' });
    await h.request({ method: 'DELETE', url: `/sessions/${session.id}` });
  });

  it('reports a server that fails to start inside the session, not as a failed request', async () => {
    const created = await h.request({ method: 'POST', url: '/sessions', payload: { servers: [], mcpServers: { broken: { command: '/nonexistent/mcpool-test-binary' } } } });
    expect(created.statusCode).toBe(201);
    const session = created.json<SessionInfo>();
    expect(session.servers).toEqual([{ name: 'broken', injected: true, status: 'failed', tools: [], error: expect.objectContaining({ code: expect.stringMatching(/^MCPOOL_SPAWN_/) }) }]);
    await h.request({ method: 'DELETE', url: `/sessions/${session.id}` });
  });
});

describe('what the dashboard reads', () => {
  it('GET /workspace/sessions lists a REST session with its client, servers and last activity', async () => {
    const session = (await h.request({ method: 'POST', url: '/sessions', payload: { servers: ['echo'], label: 'dash' }, token: IDE })).json<SessionInfo>();
    const read = async () => workspaceSessionsSchema.parse((await h.request({ method: 'GET', url: '/workspace/sessions', token: VIEWER })).json()).sessions.find((s) => s.id === session.id)!;
    const before = await read();
    expect(before).toEqual({ kind: 'rest', id: session.id, clientId: 'ide', label: 'dash', createdAt: session.createdAt, lastActivityAt: expect.any(String), servers: [{ name: 'echo', status: 'connected' }] });
    await h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name: 'slow', arguments: { ms: 30 } }, token: IDE });
    // A call moves its last activity past its creation.
    expect(Date.parse((await read()).lastActivityAt)).toBeGreaterThan(Date.parse(session.createdAt));
    await h.request({ method: 'DELETE', url: `/sessions/${session.id}`, token: IDE });
  });

  it('GET /workspace/stats counts calls per server, with the latency buckets', async () => {
    const stats = async () => workspaceStatsSchema.parse((await h.request({ method: 'GET', url: '/workspace/stats', token: VIEWER })).json());
    const of = async (server: string) => (await stats()).servers.find((s) => s.server === server);
    const before = (await of('echo')) ?? { calls: 0, errors: 0, seconds: 0 };
    const session = (await h.request({ method: 'POST', url: '/sessions', payload: { servers: ['echo'] }, token: IDE })).json<SessionInfo>();
    const call = (name: string, args: object = {}) => h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name, arguments: args }, token: IDE });
    await call('echo', { text: 'a' });
    await call('echo', { text: 'b' });
    await call('throw');
    const after = (await of('echo'))!;
    expect(after.calls - before.calls).toBe(3);
    expect(after.errors - before.errors).toBe(1);
    expect(after.seconds).toBeGreaterThan(before.seconds);
    // Cumulative and ascending; every call is within the last finite bound (60 s).
    const bounds = after.buckets.map(([bound]) => bound);
    expect(bounds).toEqual([...bounds].sort((a, b) => a - b));
    expect(after.buckets.at(-1)![1]).toBe(after.calls);
    await h.request({ method: 'DELETE', url: `/sessions/${session.id}`, token: IDE });
  });

  it('GET /workspace/mcp/:server/stderr answers per entry; 404 for an unknown server, 400 for a bad count', async () => {
    const tail = stderrTailSchema.parse((await h.request({ method: 'GET', url: '/workspace/mcp/echo/stderr?lines=5', token: VIEWER })).json());
    expect(tail.server).toBe('echo');
    expect(tail.entries.map((entry) => entry.entryIndex)).toEqual([0]);
    expect((await h.request({ method: 'GET', url: '/workspace/mcp/nope/stderr' })).json()).toMatchObject({ statusCode: 404, code: 'MCPOOL_NOT_FOUND' });
    expect((await h.request({ method: 'GET', url: '/workspace/mcp/echo/stderr?lines=many' })).json()).toMatchObject({ statusCode: 400 });
  });
});

describe('restart', () => {
  it('answers the legacy shape for a name with one entry, {entries} with entryIndex', async () => {
    const legacy = await h.request({ method: 'POST', url: '/workspace/mcp/prompts/restart' });
    expect(legacy.statusCode).toBe(200);
    const body = restartResponseSchema.parse(legacy.json());
    expect(body).toEqual({ restarted: true, durationMs: expect.any(Number) });
    const entries = await h.request({ method: 'POST', url: '/workspace/mcp/prompts/restart?entryIndex=0' });
    expect(entries.json()).toEqual({ entries: [{ entryIndex: 0, restarted: true, durationMs: expect.any(Number) }] });
  });

  it('answers {entries} when two fingerprints share the name (a session injected its own echo)', async () => {
    const session = (
      await h.request({ method: 'POST', url: '/sessions', payload: { servers: [], mcpServers: { echo: { ...fixtureConfig('echo.mjs', mark), env: { FLAVOUR: 'session' } } } } })
    ).json<SessionInfo>();
    expect(session.servers).toEqual([expect.objectContaining({ name: 'echo', injected: true, entryIndex: 1 })]);
    const echo = (await status()).servers.find((s) => s.name === 'echo')!;
    expect(echo.entrySummary).toEqual([
      { entryIndex: 0, refs: 1, status: 'active', sharing: 'shared', era: 'legacy' },
      // An injected config sets no sharing: the operator's own entry.
      { entryIndex: 1, refs: 1, status: 'active', sharing: 'per-principal', ownerLabel: expect.stringMatching(/^[0-9a-f]{12}$/), era: 'legacy' },
    ]);
    const before = pidFromResult((await h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name: 'pid' } })).json<{ result: Record<string, unknown> }>().result);
    const response = await h.request({ method: 'POST', url: '/workspace/mcp/echo/restart' });
    expect(response.json()).toEqual({
      entries: [
        { entryIndex: 0, restarted: true, durationMs: expect.any(Number) },
        { entryIndex: 1, restarted: true, durationMs: expect.any(Number) },
      ],
    });
    const after = pidFromResult((await h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, payload: { server: 'echo', name: 'pid' } })).json<{ result: Record<string, unknown> }>().result);
    expect(after).not.toBe(before);
    await h.request({ method: 'DELETE', url: `/sessions/${session.id}` });
  });

  it('404 for an unknown server or entry', async () => {
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/nope/restart' })).json()).toMatchObject({ statusCode: 404, code: 'MCPOOL_NOT_FOUND', message: 'no server named "nope"' });
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/echo/restart?entryIndex=99' })).json()).toMatchObject({ statusCode: 404, message: 'server "echo" has no entry 99' });
  });
});

describe('system routes', () => {
  it('capabilities, healthz, readyz', async () => {
    expect((await h.request({ method: 'GET', url: '/capabilities', token: VIEWER })).json()).toEqual({ version: expect.any(String), capabilities: [...CAPABILITIES] });
    expect(CAPABILITIES).toEqual(expect.arrayContaining(['mcp_workspace_pool', 'mcp_pool_restart']));
    expect(healthSchema.parse((await h.request({ method: 'GET', url: '/healthz' })).json()).status).toBe('ok');
    expect(readySchema.parse((await h.request({ method: 'GET', url: '/readyz' })).json())).toEqual({ ready: true, servers: { total: 2, ready: 2, failed: 0, unavailable: 0 } });
  });

  it('/metrics: prom-client text with entries, refs, spawns, restarts, failures, call latency, budget, zombies', async () => {
    const response = await h.request({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/plain');
    for (const name of [
      'mcpool_entries{server="echo",status="active"}',
      'mcpool_entry_refs{server="echo"}',
      'mcpool_spawns_total{server="echo"}',
      'mcpool_restarts_total{server="prompts",result="restarted"}',
      'mcpool_failures_total',
      'mcpool_call_duration_seconds_bucket',
      'mcpool_budget_live_connections',
      'mcpool_budget_usage_ratio',
      'mcpool_zombie_processes ',
      'mcpool_tripped_keys 0',
      'mcpool_sessions',
      'mcpool_process_cpu_user_seconds_total',
    ]) {
      expect(response.body, name).toContain(name);
    }
  });

  it('/openapi.json describes exactly the registered routes, and the answers fit its schemas', async () => {
    const doc = (await h.request({ method: 'GET', url: '/openapi.json' })).json<{ openapi: string; paths: Record<string, Record<string, unknown>> }>();
    expect(doc.openapi).toBe('3.1.0');
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)).sort();
    const registered = routeTable(h.daemon, new SecretRedactor()).map((route) => `${route.method} ${route.url.replace(/:([A-Za-z]+)/g, '{$1}')}`).sort();
    expect(documented).toEqual(registered);
    for (const route of registered) {
      const [method, path] = route.split(' ') as [string, string];
      expect(h.app.hasRoute({ method, url: path.replace(/\{([A-Za-z]+)\}/g, ':$1') }), route).toBe(true);
    }
    const restart = doc.paths['/workspace/mcp/{server}/restart']!.post as { parameters: { name: string; in: string }[]; responses: Record<string, unknown> };
    expect(restart.parameters).toEqual([expect.objectContaining({ name: 'server', in: 'path' }), expect.objectContaining({ name: 'entryIndex', in: 'query' })]);
    expect(Object.keys(restart.responses).sort()).toEqual(['200', '400', '401', '403', '404', '503']);
  });
});
