/**
 * Finding and checking the authorization server of a remote MCP server, as the MCP
 * authorization spec (authorization-server discovery) orders it:
 *
 * 1. Protected-resource metadata (RFC 9728): the `resource_metadata` URL of the server's
 *    `WWW-Authenticate: Bearer` challenge, else the well-known URL with the server's path
 *    inserted, else the one at the root. Its `resource` must be the server's URL or a parent of
 *    it on the same origin (metadata at the root names the origin): metadata for another
 *    resource is refused. That `resource` is the resource indicator (RFC 8707), sent verbatim.
 * 2. Authorization-server metadata: RFC 8414 (`/.well-known/oauth-authorization-server`), then
 *    OpenID discovery, path inserted then appended. A document whose `issuer` is not exactly the
 *    issuer the resource named is not used.
 * 3. Every URL used (metadata, endpoints) is https, or http on a loopback address. A server that
 *    is not itself on loopback may not send us to a loopback or special-purpose address literal,
 *    nor to a name that resolves to one it may not reach (`addressGuard.ts`: checked when the
 *    endpoint is read, and again at every connect). No fetch follows a redirect, so a redirect
 *    cannot lead a fetch somewhere else either.
 *
 * A URL that fails these checks is never fetched and never opened in a browser.
 */
import * as oauth from 'oauth4webapi';
import { z } from 'zod';
import { ErrorCode, PoolError } from '@mcpool/core';
import { parseBearerChallenge, type BearerChallenge } from '@mcpool/protocol';
import { GuardedFetch, checkResolved, isLoopbackHost, reachOf, specialPurpose, type Reach, type ResolveAll } from './addressGuard.js';

export { isLoopbackHost };

export { parseBearerChallenge, type BearerChallenge };

/** What a flow needs to know about the server it authorizes for. */
export interface Discovered {
  /** The resource indicator (RFC 8707): the MCP server's URL, without fragment. */
  resource: string;
  as: oauth.AuthorizationServer;
  /** Scopes to ask for: the challenge's, else the protected resource's `scopes_supported`. */
  scopes: string[] | undefined;
  /** Where the server's endpoints may resolve to (every request of its flows is held to it). */
  reach: Reach;
}

function authFailed(message: string, cause?: unknown): PoolError {
  return new PoolError(ErrorCode.AUTH_FAILED, message, cause === undefined ? {} : { cause });
}

/**
 * Throws unless `value` is a URL we may fetch or open for a server at `server`: https, or http on
 * loopback; and a loopback or special-purpose address literal only when the server itself is on
 * loopback (a name is judged by what it resolves to: {@link checkResolved}).
 */
export function checkEndpoint(value: unknown, what: string, server: URL): URL {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw authFailed(`the ${what} is not a URL`);
  }
  const loopback = isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw authFailed(`the ${what} ${url.origin} is neither https nor http on loopback: refused`);
  }
  if ((loopback || specialPurpose(url.hostname) !== undefined) && !isLoopbackHost(server.hostname)) {
    throw authFailed(`the ${what} ${url.origin} points into this machine, a private network or a special-purpose range, but the server does not: refused`);
  }
  if (url.username !== '' || url.password !== '') throw authFailed(`the ${what} carries credentials: refused`);
  return url;
}

/** Options that let `oauth4webapi` use http for a loopback URL (and only then). */
export function insecureFor(url: URL): { [oauth.allowInsecureRequests]?: boolean } {
  return url.protocol === 'http:' && isLoopbackHost(url.hostname) ? { [oauth.allowInsecureRequests]: true } : {};
}

/** The resource identifier of a server URL: the URL without fragment (RFC 8707 §2). */
export function resourceOf(serverUrl: string): URL {
  const url = new URL(serverUrl);
  url.hash = '';
  return url;
}

const ENDPOINTS = ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'device_authorization_endpoint', 'revocation_endpoint'] as const;
const FETCH_TIMEOUT_MS = 10_000;

/** How discovery reaches the network: the fetch and resolver for what a server may reach. */
export interface DiscoveryNet {
  /** The fetch for a server of this reach (its connects re-check every address). */
  fetchFor(reach: Reach): typeof fetch;
  resolve: ResolveAll;
}

/** The system resolver and one guarded fetch for the process, made on first use: for a caller that brings none. */
let processNet: GuardedFetch | undefined;
const defaultNet = (): DiscoveryNet => (processNet ??= new GuardedFetch());

/** GET a metadata document: JSON asked for, no redirect followed (a 3xx is an answer like any other), bounded in time. */
function fetchMetadata(url: URL, fetchFn: typeof fetch): Promise<Response> {
  return fetchFn(url, { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
}

/**
 * Where the protected-resource metadata of `server` may be, in the order the MCP spec asks
 * (authorization-server discovery): the challenge's `resource_metadata` alone when it names one,
 * else the well-known URI with the server's path inserted, then the one at the root.
 */
function resourceMetadataUrls(server: URL, challenge: BearerChallenge | undefined): URL[] {
  if (challenge?.resourceMetadata !== undefined) return [checkEndpoint(challenge.resourceMetadata, 'protected-resource metadata URL', server)];
  const path = server.pathname.replace(/\/$/, '');
  const root = new URL('/.well-known/oauth-protected-resource', server.origin);
  return path === '' ? [root] : [new URL(`/.well-known/oauth-protected-resource${path}`, server.origin), root];
}

/**
 * True when the metadata's `resource` may stand for `server`: the same origin, and a path that is
 * the server's or one of its parents (whole segments). Metadata served at the root names the
 * origin; metadata naming another origin or a sibling path is someone else's and is refused
 * (RFC 9728 §3.3: its resource must be the one the client asked about).
 */
export function resourceCovers(resource: string, server: URL): boolean {
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    return false;
  }
  if (url.hash !== '' || url.origin !== server.origin) return false;
  const parent = url.pathname.replace(/\/$/, '');
  return parent === '' || server.pathname === parent || server.pathname.startsWith(`${parent}/`);
}

/** The members of protected-resource metadata (RFC 9728 §2) discovery reads; the others are ignored. */
const resourceMetadataSchema = z.looseObject({
  resource: z.string(),
  authorization_servers: z.array(z.string()).optional(),
  scopes_supported: z.array(z.string()).optional(),
});
type ResourceMetadata = z.infer<typeof resourceMetadataSchema>;

/** The protected-resource metadata of `server`: the first location that answers 200, checked. */
async function protectedResource(server: URL, challenge: BearerChallenge | undefined, fetchFn: typeof fetch): Promise<ResourceMetadata> {
  const tried: string[] = [];
  for (const url of resourceMetadataUrls(server, challenge)) {
    let response: Response;
    try {
      response = await fetchMetadata(url, fetchFn);
    } catch (error) {
      throw authFailed(`the protected-resource metadata of ${server.origin} could not be fetched from ${url.href}: ${(error as Error).message}`, error);
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      tried.push(`${url.pathname} answered ${response.status}`);
      continue;
    }
    let prm: ResourceMetadata;
    try {
      prm = resourceMetadataSchema.parse(await response.json());
    } catch (error) {
      throw authFailed(`the protected-resource metadata at ${url.href} is not usable: ${error instanceof z.ZodError ? z.prettifyError(error) : (error as Error).message}`, error);
    }
    if (!resourceCovers(prm.resource, server)) {
      throw authFailed(`the protected-resource metadata at ${url.href} is for ${JSON.stringify(prm.resource)}, not for ${server.href}: refused`);
    }
    return prm;
  }
  throw authFailed(`the protected-resource metadata of ${server.origin} was not found (${tried.join(', ')})`);
}

/**
 * Runs discovery for the server at `serverUrl`, given the challenge of its last 401 or 403 (if
 * any). Every metadata URL and endpoint is checked as written ({@link checkEndpoint}) and by the
 * addresses its name resolves to, before it is fetched or handed to a browser.
 */
export async function discover(serverUrl: string, challenge: BearerChallenge | undefined, configScopes: string[] | undefined, net: DiscoveryNet = defaultNet()): Promise<Discovered> {
  const server = resourceOf(serverUrl);
  const reach = await reachOf(server, net.resolve);
  const fetchFn = net.fetchFor(reach);
  const resolved = async (value: unknown, what: string): Promise<void> => {
    const url = checkEndpoint(value, what, server);
    try {
      await checkResolved(url, reach, net.resolve);
    } catch (error) {
      throw authFailed(`the ${what} ${url.origin} cannot be used: ${(error as Error).message}`, error);
    }
  };
  if (challenge?.resourceMetadata !== undefined) await resolved(challenge.resourceMetadata, 'protected-resource metadata URL');
  const prm = await protectedResource(server, challenge, fetchFn);
  const issuerValue = prm.authorization_servers?.[0];
  if (issuerValue === undefined) throw authFailed(`the protected-resource metadata of ${server.origin} names no authorization server`);
  await resolved(issuerValue, 'authorization server');
  const as = await authorizationServer(issuerValue, server, fetchFn);
  for (const name of ENDPOINTS) if (as[name] !== undefined) await resolved(as[name], name.replace('_', ' '));
  if (as.token_endpoint === undefined) throw authFailed(`the authorization server ${as.issuer} has no token endpoint`);
  // Scope selection (MCP authorization spec): the challenge's scopes are authoritative for the
  // operation that met it; else the config's; else the resource's `scopes_supported`; else none
  // (the parameter is left out).
  const scopes = challenge?.scope !== undefined ? challenge.scope.split(' ').filter(Boolean) : (configScopes ?? prm.scopes_supported);
  // The resource indicator is sent exactly as the metadata published it: a URL parser would add
  // a `/` to a pathless one.
  return { resource: prm.resource, as, scopes: scopes?.length ? scopes : undefined, reach };
}

/**
 * The metadata URLs of an issuer, in the order the MCP spec asks: RFC 8414 with the issuer's path
 * inserted, then OpenID discovery with it inserted, then appended (only the first two, without
 * path, for an issuer without one).
 */
function authorizationServerMetadataUrls(issuer: URL): URL[] {
  const path = issuer.pathname.replace(/\/$/, '');
  const at = (wellKnown: string): URL => new URL(`/.well-known/${wellKnown}${path}`, issuer.origin);
  if (path === '') return [at('oauth-authorization-server'), at('openid-configuration')];
  return [at('oauth-authorization-server'), at('openid-configuration'), new URL(`${path}/.well-known/openid-configuration`, issuer.origin)];
}

/**
 * The authorization server's metadata: the first of its well-known documents that answers 200
 * and names exactly `issuer` (RFC 8414 §3.3: a document with another `issuer` is not used, even
 * one equal after URL normalization).
 */
async function authorizationServer(issuer: string, server: URL, fetchFn: typeof fetch): Promise<oauth.AuthorizationServer> {
  const reasons: string[] = [];
  for (const url of authorizationServerMetadataUrls(new URL(issuer))) {
    let response: Response;
    try {
      response = await fetchMetadata(url, fetchFn);
    } catch (error) {
      reasons.push(`${url.pathname}: ${(error as Error).message}`);
      continue;
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      reasons.push(`${url.pathname} answered ${response.status}`);
      continue;
    }
    try {
      const as = await oauth.processDiscoveryResponse(new URL(issuer), response);
      if (as.issuer !== issuer) throw new Error(`its issuer is ${JSON.stringify(as.issuer)}, not ${JSON.stringify(issuer)}`);
      return as;
    } catch (error) {
      reasons.push(`${url.pathname}: ${(error as Error).message}`);
    }
  }
  throw authFailed(`the authorization server ${issuer} (named by ${server.origin}) has no valid metadata: ${reasons.join('; ')}`);
}
