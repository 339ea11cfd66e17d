/**
 * A local token issuer for the tests of signed-in users: an RS256 key pair made with `jose`, its
 * public key served as a JWKS and its RFC 8414 metadata served over HTTP on 127.0.0.1, and a
 * `sign` that mints access tokens the way an authorization server does (or breaks them the way a
 * test wants: another key, another issuer, an expiry in the past).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';

export interface JwtIssuer {
  /** `http://127.0.0.1:<port>`. */
  issuer: string;
  /** Requests the issuer's HTTP server answered, by path. */
  requests: Record<string, number>;
  /**
   * An access token for `sub`: issued now, for `audience`, expiring in `ttlS` (negative: already
   * expired), with `scope` when given; `issuer` and `key` replace this issuer's own.
   */
  sign(claims: { sub?: string; audience: string | string[]; ttlS?: number; scope?: string; issuer?: string; key?: 'own' | 'stranger' }): Promise<string>;
  close(): Promise<void>;
}

export async function startJwtIssuer(): Promise<JwtIssuer> {
  const own = await generateKeyPair('RS256', { extractable: true });
  const stranger = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(own.publicKey)), kid: 'own', alg: 'RS256', use: 'sig' };
  const requests: Record<string, number> = {};
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]!;
    requests[path] = (requests[path] ?? 0) + 1;
    const json = (body: unknown): void => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (path === '/.well-known/oauth-authorization-server') return json({ issuer, jwks_uri: `${issuer}/jwks`, token_endpoint: `${issuer}/token`, response_types_supported: ['code'] });
    if (path === '/jwks') return json({ keys: [jwk] });
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    requests,
    async sign({ sub = 'alice', audience, ttlS = 300, scope, issuer: claimedIssuer, key = 'own' }) {
      const signer: CryptoKey = key === 'own' ? own.privateKey : stranger.privateKey;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT(scope === undefined ? {} : { scope })
        .setProtectedHeader({ alg: 'RS256', kid: 'own', typ: 'at+jwt' })
        .setIssuer(claimedIssuer ?? issuer)
        .setSubject(sub)
        .setAudience(audience)
        .setIssuedAt(now - Math.max(0, -ttlS) - 10)
        .setExpirationTime(now + ttlS)
        .sign(signer);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
