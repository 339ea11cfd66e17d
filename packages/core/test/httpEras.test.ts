/**
 * Both protocol eras over HTTP, through the pool's own HTTP transport: a modern-only v2 server
 * is reached in the modern era (its 400 to `initialize` is never needed: the probe settles it),
 * with the standard headers on every request, and its tools whose `x-mcp-header` declarations
 * are invalid left out of the list; a legacy v1 server's answer to the probe sends
 * the pool to `initialize`; a 401 is an auth failure, not era evidence.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode, PoolError, type Logger, type McpTransportPool, type PoolEvent } from '@mcpool/core';
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

  it('a listen stream cut while the connection lives is opened again, its lists are read again, and later changes reach the views', async () => {
    const server: HttpModernServer = await startHttpModernServer({ legacy: 'reject' });
    servers.push(server);
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('modern', { type: 'http', url: server.url }, 's1');
    const methodOf = (exchange: { body: unknown }): string | undefined => (exchange.body as { method?: string } | undefined)?.method;
    const listens = (): number => server.exchanges.filter((exchange) => methodOf(exchange) === 'subscriptions/listen').length;
    const toolLists = (): number => server.exchanges.filter((exchange) => methodOf(exchange) === 'tools/list').length;
    let disconnects = 0;
    view.on('disconnected', () => (disconnects += 1));
    await vi.waitFor(() => expect(listens()).toBe(1), { timeout: 20_000, interval: 20 });
    // The first stream carries a change: the pool reads the list again (the stream is live).
    // (Published again until seen: a change published before the server registered the stream is not sent on it.)
    const changeSeen = async (): Promise<void> => {
      const before = toolLists();
      await vi.waitFor(
        () => {
          server.notify.toolsChanged();
          expect(toolLists()).toBeGreaterThan(before);
        },
        { timeout: 20_000, interval: 250 },
      );
    };
    await changeSeen();

    // The network cuts the stream; nothing else breaks. The pool opens it again and, once it is
    // acknowledged, reads the list again to catch up on what it may have missed.
    expect(server.dropListens()).toBe(1);
    await vi.waitFor(() => expect(listens()).toBe(2), { timeout: 20_000, interval: 20 });
    const reopenedAt = server.exchanges.findLastIndex((exchange) => methodOf(exchange) === 'subscriptions/listen');
    await vi.waitFor(() => expect(server.exchanges.slice(reopenedAt).some((exchange) => methodOf(exchange) === 'tools/list')).toBe(true), { timeout: 20_000, interval: 20 });

    // The new stream is the one changes come on, and the connection itself was never replaced.
    await changeSeen();
    expect(textOf(await view.callTool('echo', { text: 'still here' }))).toContain('still here');
    expect(listens()).toBe(2);
    expect(disconnects).toBe(0);
  }, LONG);

  it('a call refused for a header mismatch (-32020) re-lists the tools and is retried once with the new header', async () => {
    const server: HttpModernServer = await startHttpModernServer({ legacy: 'reject' });
    servers.push(server);
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('modern', { type: 'http', url: server.url }, 's1');
    expect(textOf(await view.callTool('regional', { region: 'eu', text: 'one' }))).toBe('eu: one');
    const listsBefore = server.exchanges.filter((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'tools/list').length;

    // The server now mirrors `region` in another header, and says nothing: the pool's schema is stale.
    server.setRegionHeader('Zone');
    const changed = new Promise<void>((resolve) => view.on('toolsChanged', () => resolve()));
    expect(textOf(await view.callTool('regional', { region: 'us', text: 'two' }))).toBe('us: two');
    const calls = server.exchanges.filter((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'tools/call');
    const [refused, retried] = calls.slice(-2);
    expect(refused?.status).toBe(400);
    expect(refused?.headers['mcp-param-region']).toBe('us');
    expect(retried?.status).toBe(200);
    expect(retried?.headers['mcp-param-zone']).toBe('us');
    // One re-list, whose answer every view of the entry gets.
    const listsAfter = server.exchanges.filter((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'tools/list').length;
    expect(listsAfter).toBe(listsBefore + 1);
    await changed;
    const regional = view.tools.find((tool) => tool.name === 'regional');
    expect(JSON.stringify(regional?.inputSchema)).toContain('"x-mcp-header":"Zone"');

    // A refusal the re-list does not cure (the header changes on every request) reaches the
    // caller after one retry, with the server's code.
    let round = 0;
    server.setRegionHeader(() => `Shifting${++round}`);
    const callsBefore = calls.length;
    const failure = await view.callTool('regional', { region: 'eu', text: 'three' }).then(
      () => undefined,
      (error: unknown) => error as { code?: string; data?: Record<string, unknown> },
    );
    expect(failure?.code).toBe(ErrorCode.UPSTREAM_ERROR);
    expect(failure?.data).toMatchObject({ httpStatus: 400, mcpCode: -32020 });
    const callsNow = server.exchanges.filter((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'tools/call');
    expect(callsNow.length - callsBefore).toBe(2);
  }, LONG);

  it('tools whose x-mcp-header declarations are invalid are left out of the list, with a warning each; the valid ones stay', async () => {
    const server: HttpModernServer = await startHttpModernServer({ legacy: 'reject', invalidHeaderTools: true });
    servers.push(server);
    const lines: { level: string; msg: string; tool?: unknown; reason?: unknown }[] = [];
    const collecting = (bindings: Record<string, unknown>): Logger => {
      const at = (level: string) => (fields: object | string, msg?: string) => {
        lines.push(typeof fields === 'string' ? { level, ...bindings, msg: fields } : { level, ...bindings, ...fields, msg: msg ?? '' });
      };
      return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => collecting({ ...bindings, ...more }) };
    };
    const pool = newPool({ stateDir: false, logger: collecting({}) });
    const view = await pool.acquire('modern', { type: 'http', url: server.url }, 's1');
    // The server lists them: what the pool leaves out is its own decision.
    const listed = server.exchanges.find((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'tools/list');
    expect(listed).toBeDefined();
    const names = view.tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'regional', 'slow']));
    expect(names.filter((name) => name.startsWith('bad_'))).toEqual([]);
    expect(textOf(await view.callTool('regional', { region: 'eu', text: 'kept' }))).toBe('eu: kept');
    const warned = lines.filter((line) => line.level === 'warn' && /x-mcp-header/.test(line.msg));
    expect(warned.map((line) => line.tool).sort()).toEqual(['bad_duplicate_header', 'bad_empty_header', 'bad_object_header']);
    expect(warned.every((line) => typeof line.reason === 'string' && line.reason.length > 0)).toBe(true);
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
    expect(failure?.code).toBe(ErrorCode.AUTH_REQUIRED);
    // The library names no command: how a host authorizes a server is the host's to say.
    expect(failure?.message).toMatch(/^guarded requires authorization/);
    expect(failure?.message).not.toContain('mcpool');
    // Never fell back to initialize on the strength of the 401.
    expect(server.exchanges.some((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'initialize')).toBe(false);
  }, LONG);

  it('after a 401 the key is auth_required: acquires are refused without a request until authorized()', async () => {
    const server: HttpModernServer = await startHttpModernServer({ token: 'right-token' });
    servers.push(server);
    const events: PoolEvent[] = [];
    let token = 'Bearer wrong';
    const pool = newPool({
      stateDir: false,
      onEvent: (event) => events.push(event),
      credentials: { authorization: () => Promise.resolve(token), refused: () => Promise.resolve(undefined) },
    });
    const config = { type: 'http', url: server.url };
    await expect(pool.acquire('guarded', config, 's1')).rejects.toMatchObject({ code: ErrorCode.AUTH_REQUIRED });
    const seen = server.exchanges.length;
    expect(pool.getSnapshot().servers.guarded).toMatchObject({ status: 'auth_required', entrySummary: [{ status: 'auth_required' }] });
    expect(events).toContainEqual({ type: 'authRequired', serverName: 'guarded', challenge: expect.stringContaining('resource_metadata=') });
    for (let i = 0; i < 20; i++) {
      await expect(pool.acquire('guarded', config, `s${i + 2}`)).rejects.toMatchObject({ code: ErrorCode.AUTH_REQUIRED, data: { serverName: 'guarded' } });
    }
    expect(server.exchanges.length).toBe(seen);
    // The host has a token now: the gate opens and the next acquire connects with it.
    token = 'Bearer right-token';
    pool.authorized('guarded');
    expect(events).toContainEqual({ type: 'authorized', serverName: 'guarded' });
    const view = await pool.acquire('guarded', config, 'after');
    expect(textOf(await view.callTool('echo', { text: 'authorized' }))).toContain('authorized');
    expect(server.exchanges.at(-1)?.headers.authorization).toBe('Bearer right-token');
  }, LONG);

  it('a connect refused for a scope (403 with a challenge) the credentials call final fails with their error, and gates nothing', async () => {
    // The server wants a scope at its first request that no token will ever carry.
    const server: HttpModernServer = await startHttpModernServer({ requireScopes: { 'server/discover': 'mcp:admin', initialize: 'mcp:admin' }, scopesOf: () => Promise.resolve([]) });
    servers.push(server);
    const events: PoolEvent[] = [];
    const challenges: (string | undefined)[] = [];
    const pool = newPool({
      stateDir: false,
      spawnBackoff: false,
      onEvent: (event) => events.push(event),
      credentials: {
        authorization: () => Promise.resolve('Bearer scoped'),
        refused: (_target, _refused, challenge) => {
          challenges.push(challenge);
          return Promise.reject(new PoolError(ErrorCode.AUTH_FAILED, 'no authorization would help'));
        },
      },
    });
    // Several starts: the actor's failure events may reach the pool before or after the start's own rejection.
    for (let i = 0; i < 8; i++) {
      await expect(pool.acquire('scoped', { type: 'http', url: server.url }, `s${i}`)).rejects.toMatchObject({ code: ErrorCode.AUTH_FAILED, message: 'no authorization would help' });
    }
    expect(challenges.every((challenge) => challenge?.includes('error="insufficient_scope"') && challenge.includes('scope="mcp:admin"'))).toBe(true);
    expect(events.some((event) => event.type === 'authRequired')).toBe(false);
    expect(pool.getSnapshot().servers.scoped?.status).not.toBe('auth_required');
  }, LONG);
});
