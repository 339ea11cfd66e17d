/**
 * Credential isolation and the unpooled path: configs that differ in an env token
 * or an Authorization header never share a connection, and each session's calls reach its own.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode, McpTransportPool, type UpstreamCredentials } from '@mcpool/core';
import { startHttpFixture, type HttpFixture } from '../../../test/fixtures/servers/httpHeaders.mjs';
import { expectNoSurvivors, fixtureConfig, marker, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';

const pools: McpTransportPool[] = [];
const marks: string[] = [];
const servers: HttpFixture[] = [];

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.drainAll({ force: true })));
  await Promise.all(servers.splice(0).map((server) => server.close()));
  for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
});

function newPool(options: ConstructorParameters<typeof McpTransportPool>[0] = {}): McpTransportPool {
  const pool = new McpTransportPool(options);
  pools.push(pool);
  return pool;
}

describe('credential isolation', () => {
  it('two env tokens → two processes, and each session reaches its own', async () => {
    const pool = newPool();
    const mark = marker('envtoken');
    marks.push(mark);
    const a = await pool.acquire('gh', fixtureConfig('envTools.mjs', mark, { env: { FIXTURE_TOKEN: 'token-A' } }), 'A');
    const b = await pool.acquire('gh', fixtureConfig('envTools.mjs', mark, { env: { FIXTURE_TOKEN: 'token-B' } }), 'B');
    const a2 = await pool.acquire('gh', fixtureConfig('envTools.mjs', mark, { env: { FIXTURE_TOKEN: 'token-A' } }), 'A2');

    expect(pidsWithMarker(mark)).toHaveLength(2);
    expect(pool.getSnapshot().servers.gh!.entryCount).toBe(2);
    // A server's answers are scrubbed of its own entry's secrets: `[redacted]` says the answer was
    // exactly this entry's credential (another entry's would come back as it is).
    expect(textOf(await a.callTool('whoami'))).toBe('[redacted]');
    expect(textOf(await b.callTool('whoami'))).toBe('[redacted]');
    expect(textOf(await a2.callTool('whoami'))).toBe('[redacted]');
    expect(a.id).toBe(a2.id);
    expect(a.id).not.toBe(b.id);
    expect(new Set([a.entryIndex, b.entryIndex])).toEqual(new Set([0, 1]));
  });

  it('two Authorization headers on a pooled HTTP server → two connections, each call carries its own header', async () => {
    const server = await startHttpFixture();
    servers.push(server);
    const pool = newPool({ pooledTransports: ['stdio', 'http'] });
    const cfg = (token: string): Record<string, unknown> => ({ type: 'http', url: server.url, headers: { Authorization: `Bearer ${token}` } });
    const a = await pool.acquire('remote', cfg('A'), 'A');
    const b = await pool.acquire('remote', cfg('B'), 'B');
    const a2 = await pool.acquire('remote', cfg('A'), 'A2');

    expect(pool.getSnapshot().servers.remote!.entryCount).toBe(2);
    // A server's answers are scrubbed of its own entry's secrets: `[redacted]` says the answer was
    // exactly this entry's credential (another entry's would come back as it is).
    expect(textOf(await a.callTool('whoami'))).toBe('[redacted]');
    expect(textOf(await b.callTool('whoami'))).toBe('[redacted]');
    expect(textOf(await a2.callTool('whoami'))).toBe('[redacted]');
  });

  it('a legacy SSE server is reached over its SSE endpoint', async () => {
    const server = await startHttpFixture();
    servers.push(server);
    const pool = newPool();
    const view = await pool.acquire('legacy', { type: 'sse', url: server.url.replace(/\/mcp$/, '/sse'), headers: { Authorization: 'Bearer S' } }, 'A');
    expect(textOf(await view.callTool('echo', { text: 'over sse' }))).toBe('over sse');
    expect(textOf(await view.callTool('whoami'))).toBe('[redacted]');
  });
});

describe('the unpooled path', () => {
  it('HTTP is not pooled by default: one connection per session, same view rules, counted by the budget, closed at once on release', async () => {
    const server = await startHttpFixture();
    servers.push(server);
    const pool = newPool({ budget: { clientBudget: 10, mode: 'warn' } });
    const cfg = { url: server.url, excludeTools: ['whoami'] };
    const a = await pool.acquire('remote', cfg, 'A');
    const b = await pool.acquire('remote', { url: server.url, trust: true }, 'B');

    expect(pool.getSnapshot().servers.remote!.entryCount).toBe(2);
    expect(pool.getSnapshot().budget.liveCount).toBe(2);
    expect(a.tools.map((tool) => tool.name)).toEqual(['echo']);
    expect(b.tools.every((tool) => tool.trust)).toBe(true);
    await expect(a.callTool('whoami')).rejects.toMatchObject({ code: 'MCPOOL_TOOL_NOT_ALLOWED' });

    await a.release();
    expect(pool.getSnapshot().servers.remote!.entryCount).toBe(1);
    expect(pool.getSnapshot().budget.liveCount).toBe(1);
    await pool.releaseSession('B');
    expect(pool.getSnapshot().servers).toEqual({});
    expect(pool.getSnapshot().budget.liveCount).toBe(0);
    await vi.waitFor(() => expect(pool.getSnapshot().liveActors).toBe(0), { timeout: 15_000, interval: 20 });
  });
});

describe('websocket upstreams', () => {
  it('are pooled by default: two sessions share one socket, and the configured headers reach the server', async () => {
    const { startWsFixture } = await import('../../../test/fixtures/servers/wsServer.mjs');
    const server = await startWsFixture();
    try {
      const pool = newPool();
      const cfg = { url: server.url, headers: { Authorization: 'Bearer W' } };
      const a = await pool.acquire('ws', cfg, 'A');
      const b = await pool.acquire('ws', { ...cfg, excludeTools: ['whoami'] }, 'B');
      expect(a.id).toBe(b.id);
      expect(pool.getSnapshot().servers.ws!.entryCount).toBe(1);
      expect(textOf(await a.callTool('whoami'))).toBe('[redacted]');
      expect(textOf(await b.callTool('echo', { text: 'over ws' }))).toBe('over ws');
      await expect(b.callTool('whoami')).rejects.toMatchObject({ code: 'MCPOOL_TOOL_NOT_ALLOWED' });
    } finally {
      await Promise.all(pools.splice(0).map((pool) => pool.drainAll({ force: true })));
      await server.close();
    }
  });
});

describe('the credential step of a spawn', () => {
  it('a token endpoint that never answers fails the acquire at the spawn deadline (MCPOOL_SPAWN_TIMEOUT), whether or not the host heeds the signal', async () => {
    const server = await startHttpFixture();
    servers.push(server);
    // A token endpoint on loopback that takes each request and never answers it.
    let requests = 0;
    let closed = 0;
    const tokens: Server = createServer((request) => {
      requests += 1;
      request.socket.on('close', () => (closed += 1));
      request.resume();
    });
    await new Promise<void>((resolve) => tokens.listen(0, '127.0.0.1', resolve));
    const tokenUrl = `http://127.0.0.1:${(tokens.address() as AddressInfo).port}/token`;
    try {
      const fetchToken = async (signal: AbortSignal | undefined): Promise<string> => `Bearer ${await (await fetch(tokenUrl, { method: 'POST', ...(signal ? { signal } : {}) })).text()}`;
      const heeds: UpstreamCredentials = { authorization: (_target, options) => fetchToken(options?.signal), refused: () => Promise.resolve(undefined) };
      const ignores: UpstreamCredentials = { authorization: () => fetchToken(undefined), refused: () => Promise.resolve(undefined) };
      for (const [credentials, aborts] of [[heeds, true], [ignores, false]] as const) {
        const pool = newPool({ spawnTimeoutMs: 1000, credentials });
        const started = performance.now();
        const error = await pool.acquire('remote', { type: 'http', url: server.url }, 's1').catch((e: unknown) => e);
        const tookMs = performance.now() - started;
        expect(error).toMatchObject({ code: ErrorCode.SPAWN_TIMEOUT, data: { serverName: 'remote', step: 'credentials', timeoutMs: 1000 } });
        expect(tookMs).toBeGreaterThanOrEqual(950);
        expect(tookMs).toBeLessThan(10_000);
        // The host's token request was told: it aborted (its socket closed) when it heeded the signal.
        if (aborts) await vi.waitFor(() => expect(closed).toBe(1), { timeout: 10_000, interval: 20 });
        await vi.waitFor(() => expect(pool.getSnapshot().liveActors).toBe(0), { timeout: 15_000, interval: 20 });
      }
      expect(requests).toBe(2);
    } finally {
      tokens.closeAllConnections();
      await new Promise<void>((resolve) => tokens.close(() => resolve()));
    }
  });
});
