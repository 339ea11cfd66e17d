/**
 * The OAuth client cannot be sent inward by a remote server: address literals of every
 * special-purpose range are refused as written, names by every address they resolve to (when
 * discovery reads them), and again at connect, so a name that resolves elsewhere the second time
 * reaches nothing. Names are answered by an injected resolver (this machine has no public DNS);
 * the connects are real sockets to a listener on 127.0.0.1 that counts them.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterEach, describe, expect, it } from 'vitest';
import { GuardedFetch, checkResolved, reachOf, specialPurpose, type ResolveAll } from '../src/oauth/addressGuard.js';
import { checkEndpoint, discover } from '../src/oauth/discovery.js';

/** A resolver answering from `table` (a list of answers is used in turn, the last one kept). */
function resolver(table: Record<string, string | string[][]>): ResolveAll & { asked: string[] } {
  const asked: string[] = [];
  const turns = new Map<string, number>();
  const resolve = ((hostname: string, _options: unknown, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => {
    asked.push(hostname);
    const entry = table[hostname];
    if (entry === undefined) return void queueMicrotask(() => callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []));
    const turn = turns.get(hostname) ?? 0;
    turns.set(hostname, turn + 1);
    const addresses = typeof entry === 'string' ? [entry] : entry[Math.min(turn, entry.length - 1)]!;
    queueMicrotask(() => callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))));
  }) as ResolveAll & { asked: string[] };
  resolve.asked = asked;
  return resolve;
}

const servers: Server[] = [];
const fetches: GuardedFetch[] = [];
afterEach(async () => {
  for (const net of fetches.splice(0)) await net.close();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A TCP listener on 127.0.0.1 that counts connections (and closes each at once). */
async function listener(): Promise<{ port: number; connections: () => number }> {
  let count = 0;
  const server = createServer((socket: Socket) => {
    count += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { port: (server.address() as { port: number }).port, connections: () => count };
}

const publicServer = new URL('https://mcp.example.com/mcp');

describe('special-purpose address literals', () => {
  it.each([
    ['https://[::]/', 'unspecified'],
    ['https://[64:ff9b::a9fe:a9fe]/', 'rfc6052'],
    ['https://[64:ff9b:1::a9fe:a9fe]/', 'rfc6052'],
    ['https://[fec0::1]/', 'deprecatedSiteLocal'],
    ['https://[fd00::1]/', 'uniqueLocal'],
    ['https://[::ffff:a9fe:a9fe]/', 'linkLocal'],
    ['https://[::ffff:127.0.0.1]/', 'loopback'],
    ['https://[2002:a9fe:a9fe::1]/', '6to4'],
    ['https://100.100.100.200/', 'carrierGradeNat'],
    ['https://100.64.0.1/', 'carrierGradeNat'],
    ['https://192.0.0.192/', 'reserved'],
    ['https://169.254.169.254/', 'linkLocal'],
    ['https://0x7f000001/', 'loopback'],
    ['https://2130706433/', 'loopback'],
  ])('%s is %s and refused for a public server', (value, range) => {
    expect(specialPurpose(new URL(value).hostname)).toBe(range);
    expect(() => checkEndpoint(value, 'token endpoint', publicServer)).toThrow(/special-purpose range/);
  });

  it('global unicast addresses and names pass as written', () => {
    for (const value of ['https://93.184.216.34/token', 'https://[2606:4700:4700::1111]/token', 'https://auth.example.com/token']) {
      expect(checkEndpoint(value, 'token endpoint', publicServer).href).toBe(value);
    }
  });
});

describe('names, by the addresses they resolve to', () => {
  const dns = resolver({
    'mcp.example.com': '93.184.216.34',
    'auth.example.com': '93.184.216.35',
    'metadata.google.internal': '169.254.169.254',
    'localtest.me': '127.0.0.1',
    'nat64.example': '64:ff9b::a9fe:a9fe',
    'mixed.example': [['93.184.216.36', '10.0.0.9']],
    'mcp.corp': '10.1.1.1',
    'login.corp': '10.1.1.2',
  });

  it('a server’s reach follows where it is', async () => {
    expect(await reachOf(new URL('http://127.0.0.1:9/mcp'), dns)).toBe('anywhere');
    expect(await reachOf(new URL('http://localhost:9/mcp'), dns)).toBe('anywhere');
    expect(await reachOf(new URL('https://mcp.corp/mcp'), dns)).toBe('not-loopback');
    expect(await reachOf(publicServer, dns)).toBe('public');
  });

  it('a public server’s endpoints resolve to global addresses only, an intranet server’s anywhere but loopback', async () => {
    await expect(checkResolved(new URL('https://auth.example.com/'), 'public', dns)).resolves.toBeUndefined();
    for (const host of ['metadata.google.internal', 'localtest.me', 'nat64.example', 'mixed.example', 'login.corp']) {
      await expect(checkResolved(new URL(`https://${host}/`), 'public', dns), host).rejects.toMatchObject({ code: 'ERR_MCPOOL_ADDRESS_REFUSED' });
    }
    await expect(checkResolved(new URL('https://login.corp/'), 'not-loopback', dns)).resolves.toBeUndefined();
    await expect(checkResolved(new URL('https://localtest.me/'), 'not-loopback', dns)).rejects.toMatchObject({ code: 'ERR_MCPOOL_ADDRESS_REFUSED' });
  });

  it('discovery refuses a metadata URL whose name resolves inward before fetching anything', async () => {
    const net = new GuardedFetch(dns);
    fetches.push(net);
    for (const host of ['metadata.google.internal', 'localtest.me']) {
      const failure = await discover(publicServer.href, { resourceMetadata: `https://${host}/.well-known/oauth-protected-resource` }, undefined, net).then(
        () => undefined,
        (error: unknown) => error as { code?: string; message?: string },
      );
      expect(failure, host).toMatchObject({ code: 'MCPOOL_AUTH_FAILED', message: expect.stringContaining('special-purpose address') });
    }
  });
});

describe('at connect', () => {
  it('a name that resolved to a public address at the check and to loopback at connect reaches nothing', async () => {
    const target = await listener();
    const rebinding = resolver({ 'rebind.example': [['93.184.216.34'], ['127.0.0.1']] });
    await expect(checkResolved(new URL('https://rebind.example/'), 'public', rebinding)).resolves.toBeUndefined();
    const net = new GuardedFetch(rebinding);
    fetches.push(net);
    const failure = await net.fetchFor('public')(`http://rebind.example:${target.port}/token`).then(
      () => undefined,
      (error: unknown) => error as { cause?: { code?: string } },
    );
    expect(failure?.cause?.code).toBe('ERR_MCPOOL_ADDRESS_REFUSED');
    expect(target.connections()).toBe(0);
    expect(rebinding.asked).toEqual(['rebind.example', 'rebind.example']);
  });

  it('an intranet server’s fetch connects to its private network but not to loopback', async () => {
    const target = await listener();
    const dns = resolver({ 'loop.corp': '127.0.0.1' });
    const net = new GuardedFetch(dns);
    fetches.push(net);
    await expect(net.fetchFor('not-loopback')(`http://loop.corp:${target.port}/`)).rejects.toMatchObject({ cause: { code: 'ERR_MCPOOL_ADDRESS_REFUSED' } });
    // A loopback server's flows use the process's fetch, as before: its authorization server may be on this machine.
    expect(net.fetchFor('anywhere')).toBe(globalThis.fetch);
    expect(target.connections()).toBe(0);
  });
});
