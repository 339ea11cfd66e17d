/**
 * Where the daemon's OAuth client may connect for a remote server: by the address a name resolves
 * to, not by how a URL spells its host. A remote server must not be able to send the daemon inward
 * (cloud metadata, this machine, the private network) through the URLs of its metadata.
 *
 * Rules:
 * - Special-purpose addresses are those of the IANA IPv4 and IPv6 special-purpose registries, as
 *   `ipaddr.js` names them: unspecified, loopback, private, link-local, carrier-grade NAT
 *   (100.64/10), unique-local, deprecated site-local (fec0::/10), NAT64 (64:ff9b::/96 and
 *   64:ff9b:1::/48), 6to4, Teredo, documentation, benchmarking, multicast, reserved… An
 *   IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is judged as its IPv4 address.
 * - What a server may reach ({@link Reach}) follows where the server itself is: a server on
 *   loopback (by its URL) may send us anywhere, as before; a server whose own host resolves into a
 *   special-purpose range (an intranet server) may send us there too, but not to loopback; any
 *   other server only to global unicast addresses.
 * - Checked twice: once when discovery reads an endpoint (every address its name resolves to),
 *   and again at every connect, through the lookup the connection itself uses, so a name that
 *   resolves elsewhere the second time (DNS rebinding) is refused too. A name with any refused
 *   address is refused whole.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, fetch as undiciFetch } from 'undici';

/** What a server's OAuth endpoints may resolve to. */
export type Reach = 'anywhere' | 'not-loopback' | 'public';

/** Resolves a name to all of its addresses (`dns.lookup` with `all: true`), injectable for tests. */
export type ResolveAll = (hostname: string, options: LookupAllOptions, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolve: ResolveAll = (hostname, options, callback) => dnsLookup(hostname, options, callback);

/** True for `localhost`, 127.0.0.0/8 and ::1 as a URL writes them. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/** The special-purpose range `address` is in (`loopback`, `carrierGradeNat`, `rfc6052`…), or undefined for a global unicast address or a name. */
export function specialPurpose(address: string): string | undefined {
  const host = address.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(host)) return undefined;
  let parsed = ipaddr.parse(host);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  return range === 'unicast' ? undefined : range;
}

/** Why `reach` refuses `address`, or undefined when it admits it. */
function refusal(address: string, reach: Reach): string | undefined {
  if (reach === 'anywhere') return undefined;
  const range = specialPurpose(address);
  if (range === undefined) return undefined;
  if (reach === 'not-loopback' && range !== 'loopback' && range !== 'unspecified') return undefined;
  return `${address} is a special-purpose address (${range})`;
}

function addressRefused(hostname: string, why: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${hostname}: ${why}, which this server may not send us to: refused`), { code: 'ERR_MCPOOL_ADDRESS_REFUSED' });
}

/** All the addresses of `hostname` (itself when it is an address literal). */
function resolveAll(hostname: string, resolve: ResolveAll): Promise<string[]> {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(host)) return Promise.resolve([host]);
  return new Promise((done, fail) => resolve(host, { all: true }, (error, addresses) => (error ? fail(error) : done(addresses.map((entry) => entry.address)))));
}

/**
 * What the endpoints of a server at `server` may reach: see the module's rules. A server whose name
 * does not resolve gets `public` (its endpoints are judged strictly; its own connect fails anyway).
 */
export async function reachOf(server: URL, resolve: ResolveAll = systemResolve): Promise<Reach> {
  if (isLoopbackHost(server.hostname)) return 'anywhere';
  const addresses = await resolveAll(server.hostname, resolve).catch(() => []);
  return addresses.some((address) => specialPurpose(address) !== undefined) ? 'not-loopback' : 'public';
}

/**
 * Throws unless every address the host of `url` resolves to is one `reach` admits.
 * @throws Error with code `ERR_MCPOOL_ADDRESS_REFUSED`, or the resolver's own error
 */
export async function checkResolved(url: URL, reach: Reach, resolve: ResolveAll = systemResolve): Promise<void> {
  if (reach === 'anywhere') return;
  for (const address of await resolveAll(url.hostname, resolve)) {
    const why = refusal(address, reach);
    if (why !== undefined) throw addressRefused(url.hostname, why);
  }
}

/** A `lookup` for `net.connect` that refuses a name resolving to any address `reach` does not admit. */
export function guardedLookup(reach: Reach, resolve: ResolveAll = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) return callback(error, '', 0);
      for (const entry of addresses) {
        const why = refusal(entry.address, reach);
        if (why !== undefined) return callback(addressRefused(hostname, why), '', 0);
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      // Node asks for every address when it races them (autoSelectFamily), else for one.
      if (options.all === true) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/**
 * The fetch of the OAuth client: for each {@link Reach} but `anywhere`, one connection pool whose
 * every connect goes through {@link guardedLookup}. An address literal is not looked up at
 * connect; it was judged as written (`checkEndpoint`) and resolves to itself.
 */
export class GuardedFetch {
  readonly #agents = new Map<Reach, Agent>();
  readonly #resolve: ResolveAll;

  constructor(resolve: ResolveAll = systemResolve) {
    this.#resolve = resolve;
  }

  /** The resolver this fetch checks with (discovery's first check uses the same). */
  get resolve(): ResolveAll {
    return this.#resolve;
  }

  /** A fetch that reaches only what `reach` admits. */
  fetchFor(reach: Reach): typeof fetch {
    if (reach === 'anywhere') return globalThis.fetch;
    let agent = this.#agents.get(reach);
    if (agent === undefined) this.#agents.set(reach, (agent = new Agent({ connect: { lookup: guardedLookup(reach, this.#resolve) } })));
    const dispatcher = agent;
    return ((input: Parameters<typeof undiciFetch>[0], init?: Parameters<typeof undiciFetch>[1]) => undiciFetch(input, { ...init, dispatcher })) as unknown as typeof fetch;
  }

  /** Closes the pools' idle connections. */
  async close(): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(agents.map((agent) => agent.close()));
  }
}
