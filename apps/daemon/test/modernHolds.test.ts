/**
 * 2026-07-28 callers are stateless, but what the gateway holds for them is not: the views of each
 * (client, endpoint) and the `subscriptions/listen` streams they keep open. These are sessions an
 * operator must see and end, that count against the same per-client and daemon-wide caps as a
 * legacy session, and whose first request waits for a hanging server no longer than a legacy
 * `initialize` does. A real daemon on 127.0.0.1, real fixture servers, raw HTTP requests.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ErrorCode, HTTP_STATUS, JSON_RPC_CODE } from '@mcpool/protocol';
import type { WorkspaceSession } from '@mcpool/client';
import { formatSessions } from '../src/commands/clientCommands.js';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { ACCEPT_BOTH, initializeBody, modernRequest, openListen, raw, responseOf, type ModernTarget, type OpenStream } from './gatewayHelpers.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const mark = marker('modern-holds');
const TOKENS = { ALPHA_TOKEN: `alpha-${randomUUID()}`, BETA_TOKEN: `beta-${randomUUID()}` };
const JOIN_WAIT_MS = 2000;

let h: Harness;
let alpha: ModernTarget;
let beta: ModernTarget;
const streams: OpenStream[] = [];

const listen = (target: ModernTarget): OpenStream => {
  const stream = openListen(target, { toolsListChanged: true });
  streams.push(stream);
  return stream;
};
const acknowledged = (messages: Record<string, unknown>[]): boolean => messages.some((m) => m.method === 'notifications/subscriptions/acknowledged');

async function mcpSessions(): Promise<WorkspaceSession[]> {
  const answer = await h.request({ method: 'GET', url: '/workspace/sessions' });
  expect(answer.statusCode).toBe(200);
  return answer.json<{ sessions: WorkspaceSession[] }>().sessions.filter((session) => session.kind === 'mcp');
}

const legacyInit = (target: ModernTarget, path = '/mcp') =>
  raw(target.base, { path, headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: initializeBody() });

beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {
        changes: fixtureConfig('listChanged.mjs', mark, { sharing: 'shared' }),
        // Never answers initialize: a caller's first request must not wait for its spawn timeout.
        stuck: fixtureConfig('hanging.mjs', mark, { sharing: 'shared' }),
      },
      daemon: {
        keepWarm: false,
        mcpJoinWaitMs: JOIN_WAIT_MS,
        clients: [
          { id: 'alpha', tokenEnv: 'ALPHA_TOKEN', rights: ['read', 'write'] },
          { id: 'beta', tokenEnv: 'BETA_TOKEN', rights: ['read', 'write'] },
        ],
        mcpMaxSessionsPerClient: 2,
        // 3 for clients, and the one the operator always keeps.
        mcpMaxSessions: 4,
      },
    },
    { env: TOKENS, marks: [mark] },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
  alpha = { base, token: TOKENS.ALPHA_TOKEN };
  beta = { base, token: TOKENS.BETA_TOKEN };
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  await h?.close();
});

// The tests run in order over one daemon's state (a hanging server's window, open listens), so a
// retry would not start from the state its first try had: no retry.
describe('modern holds', { retry: 0 }, () => {
  it('a first modern request waits for a hanging server one join window at most, then answers with the servers that are ready', async () => {
    const started = performance.now();
    const first = await modernRequest(alpha, 'tools/list', {}, { path: '/mcp/changes' });
    expect(first.status).toBe(200);
    // The aggregate holds the hanging server: bounded by the window (plus a loaded machine's slack), far below the spawn timeout.
    const aggregate = await modernRequest(alpha, 'tools/list');
    const ms = performance.now() - started;
    expect(aggregate.status).toBe(200);
    expect(ms).toBeLessThan(JOIN_WAIT_MS + 10_000);
    const names = ((responseOf(aggregate).result as { tools: { name: string }[] }).tools ?? []).map((tool) => tool.name);
    expect(names.some((name) => name.startsWith('changes__'))).toBe(true);
    expect(names.some((name) => name.startsWith('stuck__'))).toBe(false);
    // The window is shared: a later request does not wait for the hanging server again.
    const again = performance.now();
    expect((await modernRequest(alpha, 'tools/list')).status).toBe(200);
    expect(performance.now() - again).toBeLessThan(JOIN_WAIT_MS);
  });

  it('are listed with their era and listens, counted per client in /metrics and shown by `mcpool sessions`', async () => {
    const stream = listen(alpha);
    await stream.waitFor(acknowledged, 'the listen acknowledged');
    const legacy = await legacyInit(beta, '/mcp/changes');
    expect(legacy.status).toBe(200);

    const sessions = await mcpSessions();
    const holds = sessions.filter((session) => session.era === 'modern');
    const alphaAggregate = holds.find((session) => session.clientId === 'alpha' && session.scope === undefined);
    expect(alphaAggregate).toMatchObject({ kind: 'mcp', era: 'modern', listens: 1 });
    expect(alphaAggregate!.servers.map((server) => server.name).sort()).toEqual(['changes', 'stuck']);
    expect(alphaAggregate!.servers.find((server) => server.name === 'stuck')!.status).not.toBe('connected');
    expect(holds.find((session) => session.clientId === 'alpha' && session.scope === 'changes')).toMatchObject({ listens: 0 });
    expect(sessions.filter((session) => session.era === 'legacy')).toEqual([expect.objectContaining({ clientId: 'beta', scope: 'changes' })]);

    const metrics = (await h.request({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/mcpool_mcp_client_sessions\{client="alpha"\} 1\b/);
    expect(metrics).toMatch(/mcpool_mcp_client_sessions\{client="beta"\} 1\b/);

    const table = formatSessions([], sessions);
    expect(table).toContain('ERA');
    expect(table).toMatch(new RegExp(`${alphaAggregate!.id}\\s+modern \\(1 listen\\)`));
    expect(table).toMatch(/legacy/);
  });

  it('count against the per-client and the daemon-wide caps, and refuse with the typed JSON-RPC error', async () => {
    // alpha holds 1 listen; one more reaches its share of 2.
    const second = listen(alpha);
    await second.waitFor(acknowledged, 'the second listen acknowledged');
    const third = listen(alpha);
    expect(await third.status).toBe(HTTP_STATUS[ErrorCode.CLIENT_LIMIT_REACHED]);
    await third.ended;
    expect(third.messages[0]).toMatchObject({ error: { code: JSON_RPC_CODE[ErrorCode.CLIENT_LIMIT_REACHED], message: expect.stringContaining('mcpMaxSessionsPerClient 2'), data: { code: ErrorCode.CLIENT_LIMIT_REACHED } } });
    // A legacy initialize of alpha is refused by the same share.
    expect((await legacyInit(alpha)).status).toBe(HTTP_STATUS[ErrorCode.CLIENT_LIMIT_REACHED]);
    // 2 listens of alpha + 1 legacy session of beta fill the clients' part of the daemon-wide cap (4 less the operator's 1): beta, under its share, gets 503.
    const betaListen = listen(beta);
    expect(await betaListen.status).toBe(HTTP_STATUS[ErrorCode.SESSION_CAP_REACHED]);
    // A listen with nothing to hold completes at once and is not refused.
    const empty = openListen(beta, {});
    expect(await empty.status).toBe(200);
    await empty.ended;
    expect(empty.messages.at(-1)).toMatchObject({ result: { resultType: 'complete' } });
    // Stateless requests are never capped.
    expect((await modernRequest(alpha, 'tools/list')).status).toBe(200);
  });

  it('end through DELETE /workspace/sessions/:id: their listens complete, their views are released, and another client cannot end them', async () => {
    const hold = (await mcpSessions()).find((session) => session.era === 'modern' && session.clientId === 'alpha' && session.scope === undefined)!;
    expect(hold.listens).toBe(2);
    const open = streams.filter((stream) => stream.messages.some((m) => m.method === 'notifications/subscriptions/acknowledged') && !stream.messages.some((m) => 'result' in m));
    expect(open.length).toBe(2);

    expect((await h.request({ method: 'DELETE', url: `/workspace/sessions/${hold.id}`, token: TOKENS.BETA_TOKEN })).statusCode).toBe(404);
    expect((await h.request({ method: 'DELETE', url: `/workspace/sessions/${hold.id}`, token: TOKENS.ALPHA_TOKEN })).statusCode).toBe(204);
    for (const stream of open) {
      await stream.ended;
      expect(stream.messages.at(-1)).toMatchObject({ result: { resultType: 'complete' } });
    }
    const after = await mcpSessions();
    expect(after.some((session) => session.id === hold.id)).toBe(false);
    // The freed share admits alpha again.
    const next = listen(alpha);
    await next.waitFor(acknowledged, 'a listen after the DELETE acknowledged');
    expect((await mcpSessions()).find((session) => session.era === 'modern' && session.clientId === 'alpha' && session.scope === undefined)).toMatchObject({ listens: 1 });
  });
});
