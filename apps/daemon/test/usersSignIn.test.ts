/**
 * An MCP client signs its user in by itself: the SDK v1 client's own OAuth support against the
 * daemon's challenge and Protected Resource Metadata, and a real authorization server
 * (`oidc-provider`, the fixture) that issues JWT access tokens for the gateway's resource. Nothing
 * here knows a token in advance: the client discovers the issuer from the daemon, registers,
 * sends its user through the authorization, and its calls then run as `user:<login>`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { fixtureConfig, marker, pidFromResult } from '../../../test/helpers/processes.js';
import { freePort } from '../../../test/helpers/ports.js';
import { startOAuthServer, type OAuthServer } from '../../../test/fixtures/servers/oauthServer.mjs';
import { harness, type Harness } from './helpers.js';

const mark = marker('users-sign-in');

/** What a desktop client keeps between runs: its registration, its tokens, its PKCE verifier. */
class RememberingProvider implements OAuthClientProvider {
  information: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  constructor(readonly redirectUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'sign-in test', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

let oauth: OAuthServer;
let h: Harness;
let base: string;
let callback: Server;
let redirectUrl: string;
let code: string | undefined;

beforeAll(async () => {
  oauth = await startOAuthServer({ accessTokenTtlS: 300 });
  callback = createServer((request, response) => {
    code = new URL(request.url ?? '/', 'http://127.0.0.1').searchParams.get('code') ?? undefined;
    response.writeHead(200, { 'content-type': 'text/plain' }).end('signed in');
  });
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
  redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  // The resource is the URL the client connects to (the SDK checks that the metadata names it).
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  h = await harness(
    {
      mcpServers: { mine: fixtureConfig('echo.mjs', mark, { sharing: 'per-principal' }) },
      daemon: { keepWarm: false, users: { issuer: oauth.issuer, resource: `${base}/mcp`, scopeRights: { 'mcp:tools': ['read'] } } },
    },
    { marks: [mark], start: false },
  );
  await h.app.listen({ host: '127.0.0.1', port });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await oauth?.close();
  callback?.closeAllConnections();
  await new Promise<void>((resolve) => callback?.close(() => resolve()) ?? resolve());
});

describe('an MCP client signs its user in through the daemon’s metadata', { timeout: 120_000 }, () => {
  it('discovers the issuer from the 401, authorizes, and calls as user:<login>', async () => {
    const provider = new RememberingProvider(redirectUrl);
    // 1. The first connect meets the challenge: the client finds the issuer and asks its user to authorize.
    const first = new Client({ name: 'sign-in', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    await expect(first.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.authorizationUrl?.origin).toBe(oauth.issuer);
    expect(provider.authorizationUrl?.searchParams.get('resource')).toBe(`${base}/mcp`);
    // 2. The user signs in as erin; the redirect brings the code back.
    const approved = await oauth.approve(provider.authorizationUrl!.href, 'erin');
    expect(approved.status).toBe(200);
    expect(code).toBeDefined();
    await transport.finishAuth(code!);
    expect(provider.saved?.access_token.split('.')).toHaveLength(3);
    // 3. Connected with the token: the calls run as the user.
    const client = new Client({ name: 'sign-in', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    try {
      expect(pidFromResult(await client.callTool({ name: 'mine__pid' }))).toBeGreaterThan(0);
      const sessions = (await h.request({ method: 'GET', url: '/workspace/sessions' })).json<{ sessions: { kind: string; clientId: string }[] }>();
      expect(sessions.sessions.filter((session) => session.kind === 'mcp').map((session) => session.clientId)).toContain('user:erin');
    } finally {
      await client.close();
    }
  });
});
