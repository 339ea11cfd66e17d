/**
 * Signed-in users: the daemon as an OAuth 2.1 resource server, with a real local issuer (a key
 * pair, its JWKS and metadata over HTTP) and real fixture servers behind the gateway.
 * - a token from the issuer, for the gateway, is a principal `user:<sub>`; expired, another
 *   audience, another issuer, another key, a symmetric algorithm: 401 with the RFC 9728 challenge;
 * - the Protected Resource Metadata is served without a token where clients look for it;
 * - static tokens work beside it; an unreachable issuer is 503, not 401;
 * - rights come from `users.rights` and the scopes a token carries (a missing right: 403 with the
 *   scope that grants it);
 * - two users get two entries of a per-principal server and share one of a shared server.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { WorkspaceMcpStatus } from '@mcpool/client';
import { fixtureConfig, marker, pidFromResult, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';
import { startJwtIssuer, type JwtIssuer } from './jwtIssuer.js';

const perUserMark = marker('users-per-user');
const sharedMark = marker('users-shared');
const RESOURCE = 'https://mcp.example.test/mcp';
const CLIENT_TOKEN = `ci-${randomUUID()}`;

let issuer: JwtIssuer;
let h: Harness;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  issuer = await startJwtIssuer();
  h = await harness(
    {
      mcpServers: {
        mine: fixtureConfig('echo.mjs', perUserMark, { sharing: 'per-principal' }),
        common: fixtureConfig('echo.mjs', sharedMark, { sharing: 'shared' }),
      },
      daemon: {
        keepWarm: false,
        clients: [{ id: 'ci', tokenEnv: 'USERS_CI_TOKEN', rights: ['read'], servers: ['common'] }],
        users: { issuer: issuer.issuer, resource: RESOURCE, scopeRights: { 'mcpool:write': ['write'] } },
      },
    },
    { env: { USERS_CI_TOKEN: CLIENT_TOKEN }, marks: [perUserMark, sharedMark], start: false },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await h?.close();
  await issuer?.close();
});

const METADATA = 'https://mcp.example.test/.well-known/oauth-protected-resource/mcp';

async function listTools(token: string | null, url = '/mcp'): Promise<{ status: number; challenge: string | undefined; body: Record<string, unknown> }> {
  const response = await h.request({
    method: 'POST',
    url,
    token,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'users-test', version: '1' } } } },
  });
  const challenge = response.headers['www-authenticate'];
  return { status: response.statusCode, challenge: typeof challenge === 'string' ? challenge : undefined, body: response.json<Record<string, unknown>>() };
}

describe('signed-in users (JWT access tokens)', { timeout: 120_000 }, () => {
  it('accepts a token of the issuer for the gateway, and lists every server for the user', async () => {
    const token = await issuer.sign({ sub: 'alice', audience: RESOURCE });
    // The servers start with the first request (no warm hold): they join the lists as they come up.
    await vi.waitFor(async () => {
      const answer = await listTools(token);
      expect(answer.status).toBe(200);
      const names = ((answer.body.result as { tools: { name: string }[] }).tools).map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(['mine__pid', 'common__pid']));
    }, { timeout: 60_000, interval: 200 });
  });

  it('refuses expired, other-audience, other-issuer, other-key and symmetric tokens with the RFC 9728 challenge', async () => {
    const cases: [string, string][] = [
      [await issuer.sign({ audience: RESOURCE, ttlS: -120 }), 'the access token has expired'],
      [await issuer.sign({ audience: 'https://other.example.test/mcp' }), 'the access token is not for this resource'],
      [await issuer.sign({ audience: RESOURCE, issuer: 'https://evil.example.test' }), 'the access token is not from the configured issuer'],
      [await issuer.sign({ audience: RESOURCE, key: 'stranger' }), 'the access token signature does not verify'],
      // HS256 with a made-up secret: a shared secret is never accepted.
      [await new SignJWT({}).setProtectedHeader({ alg: 'HS256', kid: 'own' }).setIssuer(issuer.issuer).setSubject('mallory').setAudience(RESOURCE).setExpirationTime('5m').sign(new TextEncoder().encode('x'.repeat(32))), 'the access token signature does not verify'],
    ];
    for (const [token, why] of cases) {
      const answer = await listTools(token);
      expect(answer.status, why).toBe(401);
      expect(answer.challenge).toBe(`Bearer realm="mcpool", resource_metadata="${METADATA}", error="invalid_token", error_description="${why}"`);
      expect(answer.body).toMatchObject({ error: { data: { code: 'MCPOOL_UNAUTHORIZED' } } });
      expect(JSON.stringify(answer.body)).not.toContain(token);
    }
    // No token at all: the challenge says where to sign in, and no error.
    const none = await listTools(null);
    expect(none.status).toBe(401);
    expect(none.challenge).toBe(`Bearer realm="mcpool", resource_metadata="${METADATA}"`);
    // One server's endpoint points at its own metadata.
    expect((await listTools(null, '/mcp/mine')).challenge).toBe(`Bearer realm="mcpool", resource_metadata="${METADATA}/mine"`);
  });

  it('publishes the Protected Resource Metadata without a token, for the gateway and each server endpoint', async () => {
    const gateway = await h.request({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp', token: null });
    expect(gateway.statusCode).toBe(200);
    expect(gateway.json()).toEqual({ resource: RESOURCE, authorization_servers: [issuer.issuer], bearer_methods_supported: ['header'], scopes_supported: ['mcpool:write'], resource_name: 'mcpool' });
    expect((await h.request({ method: 'GET', url: '/.well-known/oauth-protected-resource', token: null })).json()).toMatchObject({ resource: RESOURCE });
    expect((await h.request({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp/mine', token: null })).json()).toMatchObject({ resource: `${RESOURCE}/mine` });
    expect((await h.request({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp/nobody', token: null })).statusCode).toBe(404);
    // A token for one server's endpoint is a token for the gateway.
    expect((await listTools(await issuer.sign({ audience: `${RESOURCE}/mine` }), '/mcp/mine')).status).toBe(200);
  });

  it('keeps the static tokens working beside it, with their own access rules', async () => {
    await vi.waitFor(async () => {
      const answer = await listTools(CLIENT_TOKEN);
      expect(answer.status).toBe(200);
      const names = ((answer.body.result as { tools: { name: string }[] }).tools).map((tool) => tool.name);
      expect(names).toContain('common__pid');
      expect(names.filter((name) => !name.startsWith('common__'))).toEqual([]);
    }, { timeout: 60_000, interval: 200 });
    expect((await h.request({ method: 'GET', url: '/workspace/mcp' })).statusCode).toBe(200);
    expect((await listTools('not-a-known-token-at-all')).challenge).toContain('error="invalid_token"');
  });

  it('gives a user the rights of users.rights and of the scopes in the token, with a step-up challenge for a missing one', async () => {
    const reader = await issuer.sign({ sub: 'carol', audience: RESOURCE });
    const refused = await h.request({ method: 'POST', url: '/sessions', token: reader, payload: {} });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['www-authenticate']).toBe(`Bearer realm="mcpool", resource_metadata="${METADATA}", error="insufficient_scope", scope="mcpool:write"`);
    const writer = await issuer.sign({ sub: 'carol', audience: RESOURCE, scope: 'openid mcpool:write' });
    const created = await h.request({ method: 'POST', url: '/sessions', token: writer, payload: { servers: [] } });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ clientId: 'user:carol' });
    expect((await h.request({ method: 'DELETE', url: `/sessions/${created.json<{ id: string }>().id}`, token: writer })).statusCode).toBe(204);
  });

  it('gives two users two entries of a per-principal server and one entry of a shared server', async () => {
    const pids = async (sub: string): Promise<{ mine: number; common: number }> => {
      const { client } = await connectClient(`${base}/mcp`, await issuer.sign({ sub, audience: RESOURCE }));
      clients.push(client);
      return { mine: pidFromResult(await client.callTool({ name: 'mine__pid' })), common: pidFromResult(await client.callTool({ name: 'common__pid' })) };
    };
    const alice = await pids('alice');
    const alice2 = await pids('alice');
    const bob = await pids('bob');
    expect(alice2).toEqual(alice);
    expect(bob.mine).not.toBe(alice.mine);
    expect(bob.common).toBe(alice.common);
    expect(pidsWithMarker(perUserMark).sort()).toEqual([alice.mine, bob.mine].sort());
    expect(pidsWithMarker(sharedMark)).toEqual([alice.common]);
    const status = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
    expect(status.servers.find((server) => server.name === 'mine')!.entryCount).toBe(2);
    expect(status.servers.find((server) => server.name === 'common')!.entryCount).toBe(1);
  });

  it('answers 503 MCPOOL_ISSUER_UNAVAILABLE, not 401, while the issuer cannot be reached', async () => {
    const token = await issuer.sign({ sub: 'dave', audience: RESOURCE });
    // A daemon of its own whose issuer does not answer at all (nothing listens on its port).
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const dead = `http://127.0.0.1:${(probe.address() as { port: number }).port}`;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const lonely = await harness({ mcpServers: {}, daemon: { keepWarm: false, users: { issuer: dead, resource: RESOURCE } } }, { start: false });
    try {
      const answer = await lonely.request({ method: 'GET', url: '/workspace/mcp', token });
      expect(answer.statusCode).toBe(503);
      expect(answer.json()).toMatchObject({ code: 'MCPOOL_ISSUER_UNAVAILABLE' });
    } finally {
      await lonely.close();
    }
  });
});
