/**
 * The shared store, with a real `redis-server` of the test's own (Debian's; `.ci/run` installs it):
 * - one contract for the state directory and Redis (get, set, delete, keys; values whole; a key
 *   prefix keeps two deployments apart);
 * - Redis away: an operation fails at once with `MCPOOL_STORE_UNAVAILABLE` (no queue), and works
 *   again once Redis is back;
 * - two daemons (two replicas) on one Redis share an upstream OAuth grant: one authorizes, the
 *   other connects with it; a refresh token one rotates is adopted by the other instead of being
 *   spent again (which the authorization server would reject, and the grant with it).
 * On a machine without `redis-server` the Redis cases skip, and their names say why.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PoolError } from '@mcpool/protocol';
import { FileStore } from '../src/store/fileStore.js';
import { RedisStore } from '../src/store/redisStore.js';
import type { SharedStore } from '../src/store/sharedStore.js';
import { absent, startRedis, type Service } from '../../../test/helpers/services.js';
import { startHttpModernServer, type HttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';
import { startOAuthServer, type OAuthServer } from '../../../test/fixtures/servers/oauthServer.mjs';
import { harness, type Harness } from './helpers.js';

const quiet = { info: () => undefined, warn: () => undefined };
/** Set when this machine has no `redis-server`: the Redis cases skip and their names say why. */
const noRedis = absent('redis-server');
const why = noRedis === undefined ? '' : ` (skipped: ${noRedis})`;
let redis: Service & { url: string };
const dirs: string[] = [];
const stores: SharedStore[] = [];

beforeAll(async () => {
  if (noRedis === undefined) redis = await startRedis();
}, 60_000);

afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  await redis?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function redisStore(keyPrefix?: string): Promise<RedisStore> {
  const store = new RedisStore({ url: redis.url, ...(keyPrefix === undefined ? {} : { keyPrefix }), logger: quiet, commandTimeoutMs: 1000 });
  stores.push(store);
  await store.open();
  return store;
}

function fileStore(): FileStore {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-store-'));
  dirs.push(dir);
  return new FileStore(dir);
}

describe('one store contract, on disk and in Redis', { timeout: 60_000 }, () => {
  for (const kind of ['file', 'redis'] as const) {
    it.skipIf(kind === 'redis' && noRedis !== undefined)(`${kind}: get, set, delete and keys, per namespace${kind === 'redis' ? why : ''}`, async () => {
      const store = kind === 'file' ? fileStore() : await redisStore(`contract-${Date.now()}:`);
      expect(await store.get('oauth', 'a1')).toBeUndefined();
      await store.set('oauth', 'a1', '{"v":1}');
      await store.set('oauth', 'a2', '{"v":2}');
      await store.set('catalog', 'c1', '{"tools":[]}');
      await store.set('oauth', 'a1', '{"v":3}');
      expect(await store.get('oauth', 'a1')).toBe('{"v":3}');
      expect((await store.keys('oauth')).sort()).toEqual(['a1', 'a2']);
      expect(await store.keys('catalog')).toEqual(['c1']);
      await store.delete('oauth', 'a1');
      await store.delete('oauth', 'never-there');
      expect(await store.get('oauth', 'a1')).toBeUndefined();
      expect(await store.keys('oauth')).toEqual(['a2']);
      // Keys are the daemon's own digests and names: never a path.
      await expect(store.set('oauth', '../escape', 'x')).rejects.toThrow(TypeError);
    });
  }

  it.skipIf(noRedis !== undefined)(`redis: a key prefix keeps two deployments apart${why}`, async () => {
    const one = await redisStore('team-one:');
    const two = await redisStore('team-two:');
    await one.set('oauth', 'same', 'one');
    await two.set('oauth', 'same', 'two');
    expect(await one.get('oauth', 'same')).toBe('one');
    expect(await two.keys('oauth')).toEqual(['same']);
    expect(await two.get('oauth', 'same')).toBe('two');
  });
});

describe.skipIf(noRedis !== undefined)(`Redis away and back${why}`, { timeout: 60_000 }, () => {
  it('fails each operation at once with MCPOOL_STORE_UNAVAILABLE, and works again when it is back', async () => {
    const own = await startRedis();
    // A command timeout far past the bound below: only a command that is never queued fails within it.
    const store = new RedisStore({ url: own.url, logger: quiet, commandTimeoutMs: 30_000 });
    stores.push(store);
    try {
      await store.open();
      await store.set('oauth', 'k', 'v');
      await own.kill();
      const started = Date.now();
      const failure = await store.get('oauth', 'k').catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PoolError);
      expect(failure).toMatchObject({ code: 'MCPOOL_STORE_UNAVAILABLE' });
      // Failed at once, not queued until Redis returns or the command times out.
      expect(Date.now() - started).toBeLessThan(5000);
      // Back on the same port (empty: no persistence); the client reconnects by itself.
      const again = await startRedis(own.port);
      try {
        await vi.waitFor(async () => expect(await store.get('oauth', 'k')).toBeUndefined(), { timeout: 30_000, interval: 100 });
        await store.set('oauth', 'k', 'back');
        expect(await store.get('oauth', 'k')).toBe('back');
      } finally {
        await again.stop();
      }
    } finally {
      await store.close();
      await own.stop();
    }
  });
});

describe.skipIf(noRedis !== undefined)(`two replicas share upstream OAuth grants through Redis${why}`, { timeout: 120_000 }, () => {
  let as: OAuthServer;
  let mcp: HttpModernServer;
  let a: Harness;
  let b: Harness;

  beforeAll(async () => {
    as = await startOAuthServer({ accessTokenTtlS: 600 });
    let check: (authorization: string | undefined) => Promise<boolean> = () => Promise.resolve(false);
    mcp = await startHttpModernServer({ verify: (authorization) => check(authorization), resourceMetadata: { authorization_servers: [as.issuer], scopes_supported: ['mcp:tools'] }, scope: 'mcp:tools' });
    check = as.verifier(mcp.url);
    const doc = { mcpServers: { remote: { type: 'http', url: mcp.url, sharing: 'shared' } }, daemon: { keepWarm: false } };
    a = await harness(doc, { oauth: true, start: false, store: await redisStore('replicas:') });
    b = await harness(doc, { oauth: true, start: false, store: await redisStore('replicas:') });
  }, 120_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await mcp?.close();
    await as?.close();
  });

  const call = async (h: Harness): Promise<number> => {
    const session = (await h.request({ method: 'POST', url: '/sessions', payload: { servers: ['remote'] } })).json<{ id: string }>().id;
    const answer = await h.request({ method: 'POST', url: `/sessions/${session}/tools/call`, payload: { server: 'remote', name: 'echo', arguments: { text: 'hi' } } });
    await h.request({ method: 'DELETE', url: `/sessions/${session}` });
    return answer.statusCode;
  };

  it('one authorizes, the other calls with the same grant; a rotation by one is adopted by the other', async () => {
    // 1. Replica a authorizes; replica b never does, and calls all the same.
    const started = await a.request({ method: 'POST', url: '/workspace/mcp/remote/auth', payload: {} });
    expect(started.statusCode).toBe(200);
    expect(await as.approve(started.json<{ authorizationUrl: string }>().authorizationUrl)).toMatchObject({ status: 200 });
    await vi.waitFor(async () => expect(await call(a)).toBe(200), { timeout: 60_000, interval: 200 });
    await vi.waitFor(async () => expect(await call(b)).toBe(200), { timeout: 60_000, interval: 200 });

    // 2. Both hold the operator's grant (it authorized) in memory; a refreshes it (the server rotates the refresh token).
    const target = { serverName: 'remote', config: a.daemon.config.servers.remote!, principal: 'operator' };
    const first = (await b.daemon.oauth!.authorization(target))!;
    expect(await a.daemon.oauth!.authorization(target)).toBe(first);
    const refreshes = as.tokenRequests.refresh_token ?? 0;
    const rotated = await a.daemon.oauth!.refused(target, first, undefined);
    expect(rotated).toBeDefined();
    expect(rotated).not.toBe(first);
    expect(as.tokenRequests.refresh_token).toBe(refreshes + 1);

    // 3. b's token is refused too: it takes a's grant from the store instead of spending the old refresh token.
    expect(await b.daemon.oauth!.refused(target, first, undefined)).toBe(rotated);
    expect(as.tokenRequests.refresh_token).toBe(refreshes + 1);
    // Not even tried: OAuth 2.1's reuse detection revokes a grant whose spent refresh token comes back.
    expect(as.tokenErrors.refresh_token ?? 0).toBe(0);
    expect(await call(b)).toBe(200);
  });
});
