/**
 * Finding and checking the authorization server of a remote MCP server, with `oauth4webapi`:
 *
 * 1. Protected-resource metadata (RFC 9728): the `resource_metadata` URL of the server's
 *    `WWW-Authenticate: Bearer` challenge, else the well-known URL under the server's own URL.
 *    Its `resource` must be the server's URL: metadata that names another resource is refused.
 * 2. Authorization-server metadata: RFC 8414 (`/.well-known/oauth-authorization-server`), else
 *    OpenID discovery. `oauth4webapi` refuses metadata whose `issuer` is not the one the
 *    resource named.
 * 3. Every URL used (metadata, endpoints) is https, or http on a loopback address. A server that
 *    is not itself on loopback may not send us to a loopback or private address literal. No fetch
 *    follows a redirect (`oauth4webapi` asks fetch for `redirect: 'manual'`, and a 3xx fails the
 *    metadata check), so a redirect cannot lead a fetch somewhere else either.
 *
 * A URL that fails these checks is never fetched and never opened in a browser.
 */
import { isIP } from 'node:net';
import * as oauth from 'oauth4webapi';
import { ErrorCode, PoolError } from '@mcpool/core';

/** The parameters of a `Bearer` challenge that discovery uses (RFC 6750 §3, RFC 9728 §5.1). */
export interface BearerChallenge {
  resourceMetadata?: string;
  scope?: string;
  error?: string;
}

/** What a flow needs to know about the server it authorizes for. */
export interface Discovered {
  /** The resource indicator (RFC 8707): the MCP server's URL, without fragment. */
  resource: string;
  as: oauth.AuthorizationServer;
  /** Scopes to ask for: the challenge's, else the protected resource's `scopes_supported`. */
  scopes: string[] | undefined;
}

/**
 * The `Bearer` challenge of a `WWW-Authenticate` header (auth-params per RFC 9110 §11.2: token
 * or quoted-string values), or undefined when it has none.
 */
export function parseBearerChallenge(header: string | undefined): BearerChallenge | undefined {
  if (header === undefined) return undefined;
  const start = /(?:^|,)\s*Bearer(?:\s+|$)/i.exec(header);
  if (start === null) return undefined;
  const params: Record<string, string> = {};
  const pattern = /\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)/y;
  pattern.lastIndex = start.index + start[0].length;
  // Bounded: each match consumes at least one character of the header.
  for (let i = 0; i < 64; i++) {
    const match = pattern.exec(header);
    if (match === null) break;
    params[match[1]!.toLowerCase()] = match[2] === undefined ? (match[3] ?? '') : match[2].replaceAll(/\\(.)/g, '$1');
  }
  return {
    ...(params.resource_metadata ? { resourceMetadata: params.resource_metadata } : {}),
    ...(params.scope ? { scope: params.scope } : {}),
    ...(params.error ? { error: params.error } : {}),
  };
}

/** True for `localhost`, 127.0.0.0/8 and ::1. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/** Private, link-local and unique-local address literals (no DNS lookup: a name is not judged). */
function isPrivateAddress(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (isIP(host) === 4) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    return a === 10 || a === 0 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254);
  }
  if (isIP(host) === 6) return host.startsWith('fc') || host.startsWith('fd') || host.startsWith('fe80') || host.startsWith('::ffff:');
  return false;
}

function authFailed(message: string, cause?: unknown): PoolError {
  return new PoolError(ErrorCode.AUTH_FAILED, message, cause === undefined ? {} : { cause });
}

/**
 * Throws unless `value` is a URL we may fetch or open for a server at `server`: https, or http on
 * loopback; and a loopback or private literal only when the server itself is on loopback.
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
  if ((loopback || isPrivateAddress(url.hostname)) && !isLoopbackHost(server.hostname)) {
    throw authFailed(`the ${what} ${url.origin} points into this machine or a private network, but the server does not: refused`);
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

/** Runs discovery for the server at `serverUrl`, given the challenge of its last 401 (if any). */
export async function discover(serverUrl: string, challenge: BearerChallenge | undefined, configScopes: string[] | undefined): Promise<Discovered> {
  const resource = resourceOf(serverUrl);
  let prmResponse: Response;
  try {
    if (challenge?.resourceMetadata !== undefined) {
      const metadataUrl = checkEndpoint(challenge.resourceMetadata, 'protected-resource metadata URL', resource);
      prmResponse = await fetch(metadataUrl, { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
    } else {
      prmResponse = await oauth.resourceDiscoveryRequest(resource, { ...insecureFor(resource), signal: AbortSignal.timeout(10_000) });
    }
  } catch (error) {
    if (error instanceof PoolError) throw error;
    throw authFailed(`the protected-resource metadata of ${resource.origin} could not be fetched: ${(error as Error).message}`, error);
  }
  let prm: oauth.ResourceServer;
  try {
    prm = await oauth.processResourceDiscoveryResponse(resource, prmResponse);
  } catch (error) {
    throw authFailed(`the protected-resource metadata of ${resource.origin} is not usable: ${(error as Error).message}`, error);
  }
  const issuerValue = prm.authorization_servers?.[0];
  if (issuerValue === undefined) throw authFailed(`the protected-resource metadata of ${resource.origin} names no authorization server`);
  const issuer = checkEndpoint(issuerValue, 'authorization server', resource);
  const as = await authorizationServer(issuer, resource);
  for (const name of ENDPOINTS) if (as[name] !== undefined) checkEndpoint(as[name], name.replace('_', ' '), resource);
  if (as.token_endpoint === undefined) throw authFailed(`the authorization server ${issuer.origin} has no token endpoint`);
  const scopes = challenge?.scope !== undefined ? challenge.scope.split(' ').filter(Boolean) : configScopes ?? prm.scopes_supported;
  return { resource: resource.href, as, scopes: scopes?.length ? scopes : undefined };
}

/** RFC 8414 metadata, else OpenID discovery; the issuer in it must be `issuer`. */
async function authorizationServer(issuer: URL, resource: URL): Promise<oauth.AuthorizationServer> {
  let lastError: unknown;
  for (const algorithm of ['oauth2', 'oidc'] as const) {
    try {
      const response = await oauth.discoveryRequest(issuer, { algorithm, ...insecureFor(issuer), signal: AbortSignal.timeout(10_000) });
      return await oauth.processDiscoveryResponse(issuer, response);
    } catch (error) {
      lastError = error;
    }
  }
  throw authFailed(`the authorization server ${issuer.origin} (named by ${resource.origin}) has no valid metadata: ${(lastError as Error).message}`, lastError);
}
