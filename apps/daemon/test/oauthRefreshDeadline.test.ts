/**
 * A token endpoint that never answers holds nothing past its deadlines: the daemon's OAuth client
 * asked for a token whose refresh hangs fails the pool's acquire at the spawn deadline
 * (`MCPOOL_SPAWN_TIMEOUT`, step `credentials`), and the refresh request itself is aborted at its
 * own bound. A real token endpoint on 127.0.0.1 that takes the request and never answers.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode, McpTransportPool, type Logger } from '@mcpool/core';
import { OAuthManager } from '../src/oauth/oauthManager.js';
import { TokenStore, grantKey } from '../src/oauth/tokenStore.js';
import { FileStore } from '../src/store/fileStore.js';
import { SecretRedactor } from '../src/secrets.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

const SILENT: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => SILENT };

/** A token endpoint on loopback that reads each request and never answers it. */
async function silentTokenEndpoint(): Promise<{ url: string; requests: IncomingMessage[]; closed: () => number }> {
  const requests: IncomingMessage[] = [];
  let closed = 0;
  const server: Server = createServer((request) => {
    requests.push(request);
    request.socket.on('close', () => (closed += 1));
    request.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  cleanup.push(() => server.closeAllConnections());
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/token`, requests, closed: () => closed };
}

describe('a token endpoint that never answers', () => {
  it('fails the acquire at the spawn deadline with MCPOOL_SPAWN_TIMEOUT, and the refresh is aborted at its own bound', async () => {
    const endpoint = await silentTokenEndpoint();
    const stateDir = mkdtempSync(join(tmpdir(), 'mcpool-refresh-'));
    cleanup.push(() => rmSync(stateDir, { recursive: true, force: true }));
    // A grant whose access token has expired: the next authorization() refreshes it first.
    const serverUrl = 'http://127.0.0.1:9/mcp';
    await new TokenStore(new FileStore(stateDir)).write(grantKey({ resource: serverUrl, clientId: undefined, principal: undefined }), {
      resource: serverUrl,
      as: { issuer: endpoint.url.replace('/token', ''), token_endpoint: endpoint.url },
      client: { client_id: 'mcpool-test' },
      accessToken: 'expired-access-token',
      refreshToken: 'refresh-token',
      expiresAt: Date.now() - 60_000,
      lifetimeMs: 3_600_000,
    });
    const oauth = new OAuthManager({ stateDir, logger: SILENT, redactor: new SecretRedactor(), onAuthorized: () => undefined, onRefreshed: () => undefined, refreshTimeoutMs: 3000 });
    cleanup.push(() => oauth.close());
    const pool = new McpTransportPool({ stateDir: false, spawnTimeoutMs: 1500, credentials: oauth });
    cleanup.push(() => pool.drainAll({ force: true }).then(() => undefined));

    // 1. The acquire fails at the spawn deadline, not at the token endpoint's pleasure.
    const started = performance.now();
    const error = await pool.acquire('remote', { type: 'http', url: serverUrl }, 's1').catch((e: unknown) => e);
    const tookMs = performance.now() - started;
    expect(error).toMatchObject({ code: ErrorCode.SPAWN_TIMEOUT, data: { serverName: 'remote', step: 'credentials', timeoutMs: 1500 } });
    expect(tookMs).toBeGreaterThanOrEqual(1400);
    expect(tookMs).toBeLessThan(10_000);
    // The refresh did reach the token endpoint, and nothing reached the server.
    expect(endpoint.requests).toHaveLength(1);
    await vi.waitFor(() => expect(pool.getSnapshot().liveActors).toBe(0), { timeout: 15_000, interval: 20 });

    // 2. The refresh request itself is aborted at its own bound (3 s here): its socket closes.
    await vi.waitFor(() => expect(endpoint.closed()).toBe(1), { timeout: 15_000, interval: 20 });
  });
});
