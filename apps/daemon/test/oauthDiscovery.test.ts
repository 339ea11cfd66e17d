/**
 * Discovery cannot be turned against its user: protected-resource and authorization-server
 * metadata served by real HTTP servers on loopback, each lying in one way. Every lie ends in
 * `MCPOOL_AUTH_FAILED` before any URL from it is used; a redirect is never followed.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { browserCommand } from '../src/commands/authCommand.js';
import { checkEndpoint, discover, parseBearerChallenge, resourceCovers } from '../src/oauth/discovery.js';

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A loopback server answering from `routes` (path → JSON body, or a function); records the paths asked. */
async function serve(routes: (origin: string) => Record<string, unknown>): Promise<{ origin: string; asked: string[] }> {
  const asked: string[] = [];
  let table: Record<string, unknown> = {};
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    asked.push(req.url ?? '');
    const route = table[req.url ?? ''];
    if (route === undefined) return void res.writeHead(404).end();
    if (typeof route === 'function') return void (route as (res: ServerResponse) => void)(res);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(route));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  table = routes(origin);
  return { origin, asked };
}

function asMetadata(issuer: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, response_types_supported: ['code'], code_challenge_methods_supported: ['S256'], ...overrides };
}

const failure = (promise: Promise<unknown>): Promise<{ code?: string; message?: string }> =>
  promise.then(
    () => ({}),
    (error: unknown) => error as { code?: string; message?: string },
  );

describe('the WWW-Authenticate challenge', () => {
  it('reads the Bearer parameters, quoted or not, among other schemes', () => {
    expect(parseBearerChallenge('Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource", scope="a b"')).toEqual({
      resourceMetadata: 'https://mcp.example/.well-known/oauth-protected-resource',
      scope: 'a b',
    });
    expect(parseBearerChallenge('Basic realm="x", Bearer error=insufficient_scope, scope="files:write"')).toEqual({ error: 'insufficient_scope', scope: 'files:write' });
    expect(parseBearerChallenge('Basic realm="x"')).toBeUndefined();
    expect(parseBearerChallenge(undefined)).toBeUndefined();
  });
});

describe('endpoint checks', () => {
  const publicServer = new URL('https://mcp.example.com/mcp');
  const loopbackServer = new URL('http://127.0.0.1:9000/mcp');

  it('takes https, and http only on loopback for a loopback server', () => {
    expect(checkEndpoint('https://auth.example.com/authorize', 'authorization endpoint', publicServer).href).toBe('https://auth.example.com/authorize');
    expect(checkEndpoint('http://127.0.0.1:9001/auth', 'authorization endpoint', loopbackServer).port).toBe('9001');
  });

  it.each([
    ['http://auth.example.com/authorize', /neither https nor http on loopback/],
    ['file:///bin/sh', /neither https nor http on loopback/],
    ['javascript:alert(1)', /neither https nor http on loopback/],
    ['http://127.0.0.1:22/', /points into this machine/],
    ['https://10.0.0.5/authorize', /private network/],
    ['https://user:pass@auth.example.com/', /carries credentials/],
    ['not a url', /not a URL/],
  ])('%s', (value, refusal) => {
    expect(() => checkEndpoint(value, 'authorization endpoint', publicServer)).toThrow(refusal);
  });

  it('a URL reaches the browser as one program argument, never through a shell', () => {
    const url = 'https://example.com/authorize?x=$(touch /tmp/pwned)&y=`id`';
    expect(browserCommand(url, 'linux')).toEqual(['xdg-open', [url]]);
    expect(browserCommand(url, 'darwin')).toEqual(['open', [url]]);
    expect(browserCommand(url, 'win32')).toEqual(['rundll32', ['url.dll,FileProtocolHandler', url]]);
  });
});

describe('discovery', () => {
  it('finds the authorization server from the challenge, and the scopes from it', async () => {
    const as = await serve((origin) => ({ '/.well-known/oauth-authorization-server': asMetadata(origin) }));
    const rs = await serve((origin) => ({ '/prm': { resource: `${origin}/mcp`, authorization_servers: [as.origin], scopes_supported: ['x'] } }));
    const found = await discover(`${rs.origin}/mcp`, { resourceMetadata: `${rs.origin}/prm`, scope: 'mcp:tools' }, undefined);
    expect(found).toMatchObject({ resource: `${rs.origin}/mcp`, scopes: ['mcp:tools'], as: { issuer: as.origin } });
  });

  it('refuses authorization-server metadata whose issuer is not the one the resource named', async () => {
    const as = await serve(() => ({ '/.well-known/oauth-authorization-server': asMetadata('http://127.0.0.1:1'), '/.well-known/openid-configuration': asMetadata('http://127.0.0.1:1') }));
    const rs = await serve((origin) => ({ '/prm': { resource: `${origin}/mcp`, authorization_servers: [as.origin] } }));
    expect(await failure(discover(`${rs.origin}/mcp`, { resourceMetadata: `${rs.origin}/prm` }, undefined))).toMatchObject({ code: 'MCPOOL_AUTH_FAILED', message: expect.stringContaining('has no valid metadata') });
  });

  it('refuses protected-resource metadata for another resource', async () => {
    const rs = await serve((origin) => ({ '/prm': { resource: `${origin}/other`, authorization_servers: [origin] } }));
    expect(await failure(discover(`${rs.origin}/mcp`, { resourceMetadata: `${rs.origin}/prm` }, undefined))).toMatchObject({ code: 'MCPOOL_AUTH_FAILED', message: expect.stringContaining(`is for "${rs.origin}/other", not for ${rs.origin}/mcp`) });
  });

  it('refuses an endpoint that is not https (the authorization URL is never built from it)', async () => {
    const as = await serve((origin) => ({ '/.well-known/oauth-authorization-server': asMetadata(origin, { authorization_endpoint: 'http://evil.example/authorize' }) }));
    const rs = await serve((origin) => ({ '/prm': { resource: `${origin}/mcp`, authorization_servers: [as.origin] } }));
    expect(await failure(discover(`${rs.origin}/mcp`, { resourceMetadata: `${rs.origin}/prm` }, undefined))).toMatchObject({ code: 'MCPOOL_AUTH_FAILED', message: expect.stringContaining('neither https nor http on loopback') });
  });

  it('falls back to the metadata at the root, and sends its resource (the origin) exactly as published', async () => {
    const as = await serve((origin) => ({ '/.well-known/oauth-authorization-server': asMetadata(origin) }));
    const rs = await serve((origin) => ({ '/.well-known/oauth-protected-resource': { resource: origin, authorization_servers: [as.origin] } }));
    const found = await discover(`${rs.origin}/mcp`, undefined, undefined);
    // No slash added: the resource indicator must be the published identifier, byte for byte.
    expect(found.resource).toBe(rs.origin);
    expect(rs.asked).toEqual(['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']);
  });

  it('takes metadata for the server or a parent of it on its origin, and nothing else', () => {
    const server = new URL('http://127.0.0.1:9000/api/mcp');
    for (const resource of ['http://127.0.0.1:9000/api/mcp', 'http://127.0.0.1:9000/api', 'http://127.0.0.1:9000', 'http://127.0.0.1:9000/']) expect(resourceCovers(resource, server)).toBe(true);
    for (const resource of ['http://127.0.0.1:9000/api/mc', 'http://127.0.0.1:9000/api/mcp/x', 'http://127.0.0.1:9000/other', 'https://evil.example.com/api/mcp', 'http://127.0.0.1:9001/api/mcp', 'http://127.0.0.1:9000/api/mcp#x', 'not a url']) {
      expect(resourceCovers(resource, server), resource).toBe(false);
    }
  });

  it("tries an issuer's metadata where the spec says, in its order (path inserted, then OpenID appended)", async () => {
    const as = await serve((origin) => ({ '/tenant1/.well-known/openid-configuration': asMetadata(`${origin}/tenant1`) }));
    const rs = await serve((origin) => ({ '/prm': { resource: `${origin}/mcp`, authorization_servers: [`${as.origin}/tenant1`] } }));
    const found = await discover(`${rs.origin}/mcp`, { resourceMetadata: `${rs.origin}/prm` }, undefined);
    expect(found.as.issuer).toBe(`${as.origin}/tenant1`);
    expect(as.asked).toEqual(['/.well-known/oauth-authorization-server/tenant1', '/.well-known/openid-configuration/tenant1', '/tenant1/.well-known/openid-configuration']);
  });

  it('refuses an issuer that matches only after URL normalization (a trailing slash)', async () => {
    const as = await serve((origin) => ({ '/.well-known/oauth-authorization-server': asMetadata(`${origin}/`), '/.well-known/openid-configuration': asMetadata(`${origin}/`) }));
    const rs = await serve((origin) => ({ '/prm': { resource: `${origin}/mcp`, authorization_servers: [as.origin] } }));
    expect(await failure(discover(`${rs.origin}/mcp`, { resourceMetadata: `${rs.origin}/prm` }, undefined))).toMatchObject({ code: 'MCPOOL_AUTH_FAILED', message: expect.stringContaining(`its issuer is "${as.origin}/", not "${as.origin}"`) });
  });

  it('does not follow a redirect of a metadata fetch', async () => {
    const elsewhere = await serve((origin) => ({ '/prm': { resource: 'x', authorization_servers: [origin] } }));
    const rs = await serve(() => ({ '/prm': (res: ServerResponse) => res.writeHead(302, { location: `${elsewhere.origin}/prm` }).end() }));
    expect(await failure(discover(`${rs.origin}/mcp`, { resourceMetadata: `${rs.origin}/prm` }, undefined))).toMatchObject({ code: 'MCPOOL_AUTH_FAILED' });
    expect(elsewhere.asked).toEqual([]);
  });
});
