/**
 * Both protocol eras over HTTP, through the pool's own HTTP transport: a modern-only v2 server
 * is reached in the modern era (its 400 to `initialize` is never needed: the probe settles it),
 * with the standard headers on every request; a legacy v1 server's answer to the probe sends
 * the pool to `initialize`; a 401 is an auth failure, not era evidence.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, type McpTransportPool } from '@mcpool/core';
import { startHttpModernServer, type HttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';
import { startHttpLegacyServer, type HttpLegacyServer } from '../../../test/fixtures/servers/httpLegacyServer.mjs';
import { textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool } = usePools({ drainDelayMs: 30_000 });
const LONG = 60_000;
let servers: { close(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

function eraOf(pool: McpTransportPool, name: string): string | undefined {
  return pool.getSnapshot().servers[name]?.entrySummary[0]?.era;
}

describe('HTTP upstreams of both eras', () => {
  it('a modern-only HTTP server is spoken to in the modern era, with MCP-Protocol-Version and Mcp-Method on each request', async () => {
    const server: HttpModernServer = await startHttpModernServer({ legacy: 'reject' });
    servers.push(server);
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('modern', { type: 'http', url: server.url }, 's1');
    expect(eraOf(pool, 'modern')).toBe('modern');
    expect(textOf(await view.callTool('echo', { text: 'over modern http' }))).toContain('over modern http');
    const call = server.exchanges.find((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'tools/call');
    expect(call?.headers['mcp-protocol-version']).toBe('2026-07-28');
    expect(call?.headers['mcp-method']).toBe('tools/call');
    expect(call?.headers['mcp-name']).toBe('echo');
    expect(server.exchanges.some((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'initialize')).toBe(false);
  }, LONG);

  it('a legacy v1 HTTP server refuses the probe and is initialized in the legacy era', async () => {
    const server: HttpLegacyServer = await startHttpLegacyServer({});
    servers.push(server);
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('legacy', { type: 'http', url: server.url }, 's1');
    expect(eraOf(pool, 'legacy')).toBe('legacy');
    expect(textOf(await view.callTool('echo', { text: 'over legacy http' }))).toContain('over legacy http');
  }, LONG);

  it('a 401 is an auth failure of the spawn, never era evidence', async () => {
    const server: HttpModernServer = await startHttpModernServer({ token: 'right-token' });
    servers.push(server);
    const pool = newPool({ stateDir: false });
    const failure = await pool.acquire('guarded', { type: 'http', url: server.url, headers: { Authorization: 'Bearer wrong' } }, 's1').then(
      () => undefined,
      (error: unknown) => error as { code?: string; message?: string },
    );
    expect(failure?.code).toBe(ErrorCode.SPAWN_FAILED);
    expect(failure?.message).toMatch(/401/);
    // Never fell back to initialize on the strength of the 401.
    expect(server.exchanges.some((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'initialize')).toBe(false);
  }, LONG);
});
