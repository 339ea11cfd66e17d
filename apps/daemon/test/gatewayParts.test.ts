/**
 * The daemon's gateway parts: per-client access, the config fields it adds, and the no-token
 * loopback test mode (only `/mcp`, only on loopback, never the REST API).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@mcpool/protocol';
import { DEFAULT_SETTINGS, OPERATOR_ID, resolveSettings, type DaemonSettings, type Principal } from 'mcpool';
import { accessOf, ANONYMOUS_ID } from '../src/gateway/access.js';
import { harness, type Harness } from './helpers.js';
import { ACCEPT_BOTH, initializeBody } from './gatewayHelpers.js';

const principal = (id: string, rights: ('read' | 'write')[]): Principal => ({ id, rights: new Set(rights) });
const settings = (clients: DaemonSettings['clients']): DaemonSettings => ({ ...DEFAULT_SETTINGS, clients });

describe('access', () => {
  const configured = ['echo', 'files', 'memory'];

  it('the operator and the loopback test principal see every configured server', () => {
    for (const id of [OPERATOR_ID, ANONYMOUS_ID]) {
      const access = accessOf(principal(id, ['read']), settings([]), configured);
      expect([...access.servers]).toEqual(configured);
      expect(access.allows('files', 'anything')).toBe(true);
    }
  });

  it('a client sees its servers (default: all with write, none read-only) and its filter, exclude winning', () => {
    const clients: DaemonSettings['clients'] = [
      { id: 'writer', tokenEnv: 'W', rights: ['write'] },
      { id: 'reader', tokenEnv: 'R', rights: ['read'] },
      { id: 'scoped', tokenEnv: 'S', rights: ['read'], servers: ['echo', 'gone'], includeTools: ['echo__echo', 'echo__add'], excludeTools: ['echo__add'] },
    ];
    expect([...accessOf(principal('writer', ['read', 'write']), settings(clients), configured).servers]).toEqual(configured);
    expect([...accessOf(principal('reader', ['read']), settings(clients), configured).servers]).toEqual([]);
    const scoped = accessOf(principal('scoped', ['read']), settings(clients), configured);
    expect([...scoped.servers]).toEqual(['echo']);
    expect(scoped.allows('echo', 'echo')).toBe(true);
    expect(scoped.allows('echo', 'add')).toBe(false);
    expect(scoped.allows('echo', 'pid')).toBe(false);
    expect(scoped.allows('files', 'echo')).toBe(false);
    // A client no longer in the config (after a reload) has nothing.
    expect(accessOf(principal('vanished', ['read', 'write']), settings(clients), configured).servers.size).toBe(0);
  });
});

describe('config', () => {
  it('adds the gateway settings: a setting left out takes its default, the config file and the environment override it', () => {
    const defaults = resolveSettings({}, {});
    for (const key of ['mcpSessionTtlMs', 'mcpBodyLimitBytes', 'mcpMaxSessions', 'insecureNoAuthLoopback'] as const) expect(defaults[key]).toBe(DEFAULT_SETTINGS[key]);
    expect(resolveSettings({ daemon: { mcpSessionTtlMs: 500 } }, {}).mcpSessionTtlMs).toBe(500);
    expect(resolveSettings({}, { MCPOOL_MCP_SESSION_TTL_MS: '700' }).mcpSessionTtlMs).toBe(700);
    const withFilters = resolveSettings({ daemon: { clients: [{ id: 'a', tokenEnv: 'A', rights: ['read'], servers: ['echo'], includeTools: ['echo__echo'], excludeTools: [] }] } }, {});
    expect(withFilters.clients[0]).toMatchObject({ servers: ['echo'], includeTools: ['echo__echo'] });
  });

  it('refuses the no-token test mode unless bound to loopback', () => {
    expect(resolveSettings({ daemon: { insecureNoAuthLoopback: true } }, {}).insecureNoAuthLoopback).toBe(true);
    expect(resolveSettings({ daemon: { insecureNoAuthLoopback: true, host: '::1' } }, {}).insecureNoAuthLoopback).toBe(true);
    for (const host of ['0.0.0.0', 'localhost', '192.168.1.10']) {
      expect(() => resolveSettings({ daemon: { insecureNoAuthLoopback: true, host } }, {})).toThrow(ConfigError);
    }
    expect(() => resolveSettings({ daemon: { insecureNoAuthLoopback: true } }, {}, { host: '0.0.0.0' })).toThrow(/insecureNoAuthLoopback/);
  });
});

describe('the no-token loopback test mode', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await harness({ mcpServers: {}, daemon: { insecureNoAuthLoopback: true, mcpMaxSessions: 3 } }, { logLevel: 'warn' });
  });

  afterAll(async () => {
    await h?.close();
  });

  it('says so loudly at start', () => {
    expect(h.logs.some((line) => line.includes('INSECURE TEST MODE') && line.includes('"level":40'))).toBe(true);
  });

  it('opens /mcp sessions without a token, still checks Host and Origin, and leaves the REST API closed', async () => {
    const init = (headers: Record<string, string> = {}) =>
      h.request({ method: 'POST', url: '/mcp', token: null, headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...headers }, payload: initializeBody() });
    const opened = await init();
    expect(opened.statusCode).toBe(200);
    expect(opened.headers['mcp-session-id']).toMatch(/^[\x21-\x7E]+$/);
    expect((await init({ host: 'evil.example.com' })).statusCode).toBe(403);
    expect((await init({ origin: 'http://evil.example.com' })).statusCode).toBe(403);
    // A wrong token is still wrong.
    expect((await h.request({ method: 'POST', url: '/mcp', token: 'wrong-token-for-sure', headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH }, payload: initializeBody() })).statusCode).toBe(401);
    // (`/healthz` is liveness only and answers without a token.)
    for (const url of ['/workspace/mcp', '/sessions', '/metrics']) expect((await h.request({ method: 'GET', url, token: null })).statusCode).toBe(401);
  });

  it('refuses an initialize past mcpMaxSessions with 503, and takes one again after a DELETE', async () => {
    const init = () => h.request({ method: 'POST', url: '/mcp', token: null, headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH }, payload: initializeBody() });
    // Open sessions until refused: at most 2 attempts succeed (mcpMaxSessions 3, less the one the
    // operator always keeps), whatever the tests before this one left open.
    const ids: string[] = [];
    let refused: Awaited<ReturnType<typeof init>> | undefined;
    for (let attempt = 0; attempt <= 2 && refused === undefined; attempt++) {
      const opened = await init();
      if (opened.statusCode === 503) refused = opened;
      else {
        expect(opened.statusCode).toBe(200);
        ids.push(String(opened.headers['mcp-session-id']));
      }
    }
    expect(refused?.statusCode).toBe(503);
    expect(ids.length).toBeGreaterThan(0);
    expect(refused!.json()).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringContaining('too many open MCP sessions') } });
    const deleted = await h.request({ method: 'DELETE', url: '/mcp', token: null, headers: { 'mcp-session-id': ids.at(-1)!, 'mcp-protocol-version': '2025-11-25' } });
    expect(deleted.statusCode).toBe(200);
    // Exactly the one freed slot.
    expect((await init()).statusCode).toBe(200);
    expect((await init()).statusCode).toBe(503);
  });
});
