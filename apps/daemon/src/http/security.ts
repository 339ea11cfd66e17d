/**
 * The checks every request passes before any route or body parsing:
 * 1. `Host` must be loopback or allow-listed (this is what stops DNS rebinding) → 403;
 * 2. an `Origin`, when sent, must be allow-listed (the MCP spec (2025-11-25) says an invalid
 *    Origin gets 403; non-browser clients send none) → 403, unless it is the daemon's own
 *    origin (`http://` + the allowed Host); an allowed one gets CORS headers, and its preflight is
 *    answered here (a preflight carries no token);
 * 3. a bearer token the daemon knows (it can run commands, so every surface is authenticated)
 *    → 401, except on a public route (`/healthz`: a liveness probe by a service manager has
 *    no token, and the answer holds no data) and over the local socket (only the daemon's user
 *    can open it: the operator, without a token); with signed-in users configured, a JWT from
 *    their issuer is a token the daemon knows too, and a 401 points at the Protected Resource
 *    Metadata (RFC 9728) so a client can sign its user in;
 * 4. the route's right (`read` for GETs, `write` for the rest) → 403 (for a user, with the scope
 *    that would grant it, when one does: RFC 6750 `insufficient_scope`).
 */
import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Right } from '@mcpool/client';
import type { Principal, TokenRegistry } from '../auth.js';
import { normalizeOrigin } from '../config/daemonConfig.js';
import { UserTokenRefused, isUserPrincipal, looksLikeJwt, type JwtUsers } from '../users/jwtUsers.js';
import type { ProtectedResource } from '../users/protectedResource.js';
import { rightMissing } from '@mcpool/protocol';
import { DaemonErrorCode, HttpError } from './errors.js';

/** Host names always accepted: the loopback names. */
export const LOOPBACK_HOSTS: readonly string[] = Object.freeze(['localhost', '127.0.0.1', '[::1]']);

export interface SecurityPolicy {
  allowedHosts: ReadonlySet<string>;
  allowedOrigins: ReadonlySet<string>;
}

/** The policy of a daemon bound to `bindHost` with these allow-lists. */
export function securityPolicy(bindHost: string, allowedHosts: readonly string[], allowedOrigins: readonly string[]): SecurityPolicy {
  const hosts = new Set(LOOPBACK_HOSTS);
  for (const host of allowedHosts) hosts.add(host.toLowerCase());
  // Bound to one specific address: that address is how clients reach us.
  if (!['0.0.0.0', '::', '[::]'].includes(bindHost)) hosts.add(bindHost.includes(':') && !bindHost.startsWith('[') ? `[${bindHost.toLowerCase()}]` : bindHost.toLowerCase());
  const origins = new Set<string>();
  for (const origin of allowedOrigins) {
    const normalized = normalizeOrigin(origin);
    if (normalized !== undefined) origins.add(normalized);
  }
  return { allowedHosts: hosts, allowedOrigins: origins };
}

/** The host name of a `Host` header, lower-cased, without its port; undefined when malformed. */
export function hostnameOf(header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined;
  const value = header.trim().toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end === -1) return undefined;
    const rest = value.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return value.slice(0, end + 1);
  }
  const colon = value.lastIndexOf(':');
  if (colon === -1) return value;
  if (!/^\d{1,5}$/.test(value.slice(colon + 1))) return undefined;
  return value.slice(0, colon);
}

/** The `host[:port]` of an absolute-form request target; '' (never allowed) when it is not a URL. */
function authorityOf(target: string): string {
  try {
    return new URL(target).host;
  } catch {
    return '';
  }
}

/** How many `Host` lines the request's raw headers (`[name, value, name, value, …]`) hold. */
function hostLines(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === 'host') count += 1;
  return count;
}

const PREFLIGHT_HEADERS = 'authorization, content-type, last-event-id, cache-control, accept, mcp-session-id, mcp-protocol-version';
const PREFLIGHT_METHODS = 'GET, POST, DELETE';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** The right the route needs. @default 'read' for GET, 'write' otherwise */
    right?: Right;
    /** The route may run without a token when the hook's `anonymous` gives a principal (the `/mcp` test mode). */
    anonymous?: boolean;
    /** The route needs no credential at all: its answer holds no data (liveness, the dashboard's page and assets, its sign-in). */
    public?: boolean;
  }
}

export interface SecurityHookOptions {
  /**
   * The principal of a request without an Authorization header on a route marked `anonymous`;
   * undefined (the default) means a token is required there too.
   */
  anonymous?: () => Principal | undefined;
  /** The principal of a dashboard session cookie, if the request carries a valid one. */
  cookieSession?: (request: FastifyRequest) => Principal | undefined;
  /** Signed-in users (JWT access tokens from the configured issuer). @default static tokens only */
  users?: { verifier: JwtUsers; resource: ProtectedResource };
  /**
   * The principal of a request whose connection authenticated it (the local socket, which only
   * the daemon's user can open): it needs no token. Undefined for any other request.
   */
  connectionPrincipal?: (request: FastifyRequest) => Principal | undefined;
}

/** The `onRequest` hook doing the four checks. `policy` is read per request (reload updates it). */
export function securityHook(policy: () => SecurityPolicy, tokens: TokenRegistry, options: SecurityHookOptions = {}) {
  return async function checkRequest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { allowedHosts, allowedOrigins } = policy();
    // Node keeps the first of several Host lines; a proxy in front may have checked another one.
    // RFC 9112 §3.2: a request with more than one Host line gets 400.
    if (hostLines(request.raw.rawHeaders) > 1) throw new HttpError(DaemonErrorCode.BAD_REQUEST, 'the request has more than one Host header');
    // An absolute-form target (`GET http://name/path`) names the host itself, and RFC 9112 §3.2.2
    // has it win over the Host line: that name is the one to check.
    const target = request.raw.url ?? '/';
    const absolute = target.startsWith('/') || target === '*' ? undefined : authorityOf(target);
    const host = absolute === undefined ? hostnameOf(request.headers.host) : hostnameOf(absolute);
    if (host === undefined || !allowedHosts.has(host)) throw new HttpError(DaemonErrorCode.FORBIDDEN, 'this Host is not allowed (only loopback names and daemon.allowedHosts)');

    const origin = request.headers.origin;
    // Same origin as the (allowed) Host: a page of the daemon itself, which serves none — not a
    // cross-site request, so no allow-list entry is needed (the conformance suite sends this).
    const sameOrigin = origin !== undefined && normalizeOrigin(origin) === normalizeOrigin(`http://${request.headers.host}`);
    if (origin !== undefined && !sameOrigin) {
      const normalized = normalizeOrigin(origin);
      if (normalized === undefined || !allowedOrigins.has(normalized)) throw new HttpError(DaemonErrorCode.FORBIDDEN, 'this Origin is not allowed (see daemon.allowedOrigins)');
      reply.header('access-control-allow-origin', normalized).header('vary', 'Origin');
      if (request.method === 'OPTIONS') {
        await reply
          .code(204)
          .header('access-control-allow-methods', PREFLIGHT_METHODS)
          .header('access-control-allow-headers', PREFLIGHT_HEADERS)
          .header('access-control-max-age', '600')
          .send();
        return reply;
      }
    }

    // Whatever token came (none, or a stale one), a liveness probe is answered.
    if (!request.is404 && request.routeOptions.config?.public === true) return;

    // The connection is the credential (the local socket): whatever header came, it is that principal.
    const connected = options.connectionPrincipal?.(request);
    if (connected !== undefined) {
      request.principal = connected;
      return;
    }

    const authorization = request.headers.authorization;
    if (authorization === undefined && !request.is404 && request.routeOptions.config?.anonymous === true) {
      const anonymous = options.anonymous?.();
      if (anonymous !== undefined) {
        request.principal = anonymous;
        return;
      }
    }
    const match = authorization === undefined ? null : /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
    let principal = match ? tokens.identify(match[1]!) : undefined;
    const users = options.users;
    const path = (request.raw.url ?? '/').split('?', 1)[0]!;
    // Not a static token: a signed-in user's JWT, if users are configured (an unreachable
    // issuer throws ISSUER_UNAVAILABLE: the token may be fine, so not a 401).
    let refused: UserTokenRefused | undefined;
    if (principal === undefined && match && users !== undefined && looksLikeJwt(match[1]!)) {
      try {
        principal = await users.verifier.identify(match[1]!, users.resource.audiences());
      } catch (error) {
        if (!(error instanceof UserTokenRefused)) throw error;
        refused = error;
      }
    }
    // A dashboard cookie: the browser sends it with every same-site request, so a change
    // (anything but GET) also needs the page's own Origin, which a cross-site form cannot forge.
    if (authorization === undefined && (request.method === 'GET' || sameOrigin)) principal = options.cookieSession?.(request);
    if (principal === undefined) {
      const invalid = refused !== undefined ? { reason: refused.reason, description: refused.message } : authorization === undefined ? undefined : { reason: 'malformed' as const, description: 'the bearer token is not valid' };
      reply.header('www-authenticate', users === undefined ? 'Bearer realm="mcpool"' : users.resource.challenge(path, invalid));
      throw new HttpError(DaemonErrorCode.UNAUTHORIZED, authorization === undefined ? 'a bearer token is required' : (refused?.message ?? 'the bearer token is not valid'));
    }
    request.principal = principal;
    // An unknown route only needs a valid token to learn that it is unknown.
    const right: Right = request.is404 ? 'read' : (request.routeOptions.config?.right ?? (request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write'));
    if (!principal.rights.has(right)) {
      const scope = users !== undefined && isUserPrincipal(principal.id) ? users.resource.scopeFor(right) : undefined;
      if (scope !== undefined) reply.header('www-authenticate', users!.resource.challenge(path, { insufficientScope: scope }));
      throw rightMissing(right);
    }
  };
}

/** The timeouts the settings give Node's HTTP server (passed to `http.createServer`). */
export function serverTimeouts(settings: { requestTimeoutMs: number; headersTimeoutMs: number }): ServerOptions {
  const requestTimeout = settings.requestTimeoutMs;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(settings.headersTimeoutMs, requestTimeout);
  // Node looks for expired requests this often: a late request is cut within its timeout plus this.
  const connectionsCheckingInterval = Math.max(50, Math.min(1000, Math.floor(headersTimeout / 4)));
  return { requestTimeout, headersTimeout, connectionsCheckingInterval };
}

/**
 * Caps the open connections of each remote address other than loopback: a connection beyond `max`
 * is destroyed as it arrives, before any byte of it is read, so one host holding many sockets (slow
 * bodies, idle keep-alives) cannot take the file descriptors every other client needs. Loopback is
 * every local client at once, so a cap on it is a cap on the machine: local connections are admitted
 * per principal instead (`connectionAdmission.ts`). Other connections, including that address's
 * first `max`, are not touched. Logged once each time an address reaches the cap (not per refusal:
 * a client retrying in a loop must not flood the log). `exempt`: the addresses never capped (loopback).
 */
export function limitConnectionsPerAddress(server: Server, max: number, logger: Pick<Logger, 'warn'>, exempt: (address: string) => boolean = isLoopbackAddress): void {
  const open = new Map<string, number>();
  const capped = new Set<string>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    if (exempt(address)) return;
    const count = open.get(address) ?? 0;
    if (count >= max) {
      if (!capped.has(address)) {
        capped.add(address);
        logger.warn({ address, max }, `connection refused: ${address} already has ${max} open connections (daemon.maxConnectionsPerAddress)`);
      }
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
      if (left < max) capped.delete(address);
    });
  });
}

/** 127.0.0.0/8, ::1 and their IPv4-mapped form: a connection from this machine. */
function isLoopbackAddress(address: string): boolean {
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}
