/**
 * Client credentials belong to the authorization server that issued them (the MCP spec's
 * authorization-server binding), against real metadata and registration endpoints on loopback:
 * - the protected resource moves to another authorization server: the next authorization
 *   registers there, and the old server's client id is sent nowhere;
 * - with a pre-registered `oauth.clientId` whose grant another issuer gave, the move is said
 *   (`MCPOOL_AUTH_FAILED` naming both issuers) instead of presenting that client to the new
 *   server; the old grant is dropped, so running `mcpool auth` again uses the configured client.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, type Logger } from '@mcpool/core';
import { normalizeServerConfig } from '@mcpool/protocol';
import { OAuthManager } from '../src/oauth/oauthManager.js';
import { TokenStore, grantKey } from '../src/oauth/tokenStore.js';
import { FileStore } from '../src/store/fileStore.js';
import { SecretRedactor } from '../src/secrets.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

const SILENT: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => SILENT };

/** One loopback origin: the MCP resource's metadata and two authorization servers' (`/a`, `/b`), the resource naming `current`. */
async function world(): Promise<{ url: string; issuer: (as: 'a' | 'b') => string; moveTo: (as: 'a' | 'b') => void; registrations: { as: string; body: Record<string, unknown> }[]; asked: string[] }> {
  const registrations: { as: string; body: Record<string, unknown> }[] = [];
  const asked: string[] = [];
  let current: 'a' | 'b' = 'a';
  let origin = '';
  const issuer = (as: 'a' | 'b'): string => `${origin}/${as}`;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '';
    asked.push(path);
    const json = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (path === '/.well-known/oauth-protected-resource/mcp') return json(200, { resource: `${origin}/mcp`, authorization_servers: [issuer(current)] });
    const metadata = /^\/\.well-known\/oauth-authorization-server\/(a|b)$/.exec(path);
    if (metadata !== null) {
      const at = issuer(metadata[1] as 'a' | 'b');
      return json(200, { issuer: at, authorization_endpoint: `${at}/authorize`, token_endpoint: `${at}/token`, registration_endpoint: `${at}/register`, response_types_supported: ['code'], code_challenge_methods_supported: ['S256'] });
    }
    const register = /^\/(a|b)\/register$/.exec(path);
    if (register !== null && req.method === 'POST') {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        registrations.push({ as: register[1]!, body: JSON.parse(text) as Record<string, unknown> });
        json(201, { client_id: `${register[1]}-registered-client` });
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  cleanup.push(() => server.closeAllConnections());
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: `${origin}/mcp`, issuer, moveTo: (as) => (current = as), registrations, asked };
}

/** An OAuth client with a grant from authorization server `a` already kept for `clientId`'s key. */
async function manager(w: Awaited<ReturnType<typeof world>>, clientId: string | undefined): Promise<{ oauth: OAuthManager; store: TokenStore; key: string }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'mcpool-registration-'));
  cleanup.push(() => rmSync(stateDir, { recursive: true, force: true }));
  const store = new TokenStore(new FileStore(stateDir));
  const key = grantKey({ resource: w.url, clientId, principal: undefined });
  await store.write(key, {
    resource: w.url,
    as: { issuer: w.issuer('a'), token_endpoint: `${w.issuer('a')}/token` },
    client: { client_id: clientId ?? 'a-registered-client' },
    accessToken: 'a-access-token',
    refreshToken: 'a-refresh-token',
  });
  const oauth = new OAuthManager({ stateDir, logger: SILENT, redactor: new SecretRedactor(), onAuthorized: () => undefined, onRefreshed: () => undefined });
  cleanup.push(() => oauth.close());
  return { oauth, store, key };
}

function config(url: string, oauth?: Record<string, unknown>): ReturnType<typeof normalizeServerConfig>['config'] {
  return normalizeServerConfig({ type: 'http', url, ...(oauth === undefined ? {} : { oauth }) }).config;
}

describe('the protected resource names another authorization server', () => {
  it('the next authorization registers at the new server and presents its client, never the old one', async () => {
    const w = await world();
    const { oauth } = await manager(w, undefined);
    w.moveTo('b');
    const start = await oauth.start('remote', config(w.url), undefined);
    expect(start.flow).toBe('authorization_code');
    const authorizationUrl = new URL((start as { authorizationUrl: string }).authorizationUrl);
    expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${w.issuer('b')}/authorize`);
    expect(authorizationUrl.searchParams.get('client_id')).toBe('b-registered-client');
    expect(w.registrations.map((r) => r.as)).toEqual(['b']);
    expect(w.asked.some((path) => path.startsWith('/a/'))).toBe(false);
  });

  it('a pre-registered client whose grant another issuer gave is not presented there: the move is said, the old grant dropped', async () => {
    const w = await world();
    const { oauth, store, key } = await manager(w, 'operator-client');
    const configured = config(w.url, { clientId: 'operator-client', clientSecret: 'operator-secret' });
    // Still at the issuer that gave the grant: the configured client is used.
    const same = await oauth.start('remote', configured, undefined);
    expect(new URL((same as { authorizationUrl: string }).authorizationUrl).searchParams.get('client_id')).toBe('operator-client');

    w.moveTo('b');
    const refused = await oauth.start('remote', configured, undefined).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: ErrorCode.AUTH_FAILED, data: { serverName: 'remote', issuer: w.issuer('b'), previousIssuer: w.issuer('a') } });
    expect((refused as Error).message).toContain(`oauth.clientId was issued by ${w.issuer('a')}`);
    expect(await store.read(key)).toBeUndefined();
    expect(w.registrations).toEqual([]);

    // Asked again, the user chose: the configured client goes to the new server.
    const again = await oauth.start('remote', configured, undefined);
    const url = new URL((again as { authorizationUrl: string }).authorizationUrl);
    expect(url.origin + url.pathname).toBe(`${w.issuer('b')}/authorize`);
    expect(url.searchParams.get('client_id')).toBe('operator-client');
  });
});
