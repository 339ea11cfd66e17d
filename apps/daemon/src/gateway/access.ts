/**
 * What a principal may use through `/mcp`: which configured servers, and which of their tools and
 * prompts. Read from the current settings on every request, so a config reload that narrows a
 * client applies to its open sessions at once, on lists and on calls alike.
 *
 * - The operator token, and the loopback test principal, see every configured server.
 * - A client sees `clients[].servers`; without that field, every configured server when it has the
 *   `write` right and none when it is read-only (a viewer token must not gain tool calls).
 * - `clients[].includeTools` / `excludeTools` name tools and prompts as `<server>__<name>`, the
 *   way `/mcp` shows them; exclude wins.
 * - A signed-in user (`user:<sub>`) has the profile of `users`: its `servers` (every configured
 *   server when unset: the gateway is what users sign in for), `includeTools`, `excludeTools`.
 */
import type { Principal } from '../auth.js';
import { OPERATOR_ID } from '../auth.js';
import type { DaemonSettings } from '../config/daemonConfig.js';
import { qualify, type GatewayAccess } from '@mcpool/gateway';
import { isUserPrincipal } from '../users/jwtUsers.js';

/** The principal of `/mcp` requests in the no-token loopback test mode (not a valid client id). */
export const ANONYMOUS_ID = 'anonymous:loopback';

export type { GatewayAccess };

const NOTHING: GatewayAccess = { servers: new Set(), allows: () => false };

export function accessOf(principal: Principal, settings: Readonly<DaemonSettings>, configured: readonly string[]): GatewayAccess {
  if (principal.id === OPERATOR_ID || principal.id === ANONYMOUS_ID) return { servers: new Set(configured), allows: () => true };
  const spec = isUserPrincipal(principal.id) ? settings.users : settings.clients.find((client) => client.id === principal.id);
  if (spec === undefined) return NOTHING;
  const wanted = spec.servers ?? (principal.rights.has('write') || isUserPrincipal(principal.id) ? configured : []);
  const servers = new Set(wanted.filter((name) => configured.includes(name)));
  const include = spec.includeTools === undefined ? undefined : new Set(spec.includeTools);
  const exclude = new Set(spec.excludeTools ?? []);
  return {
    servers,
    allows(server, name) {
      if (!servers.has(server)) return false;
      const qualified = qualify(server, name);
      if (exclude.has(qualified)) return false;
      return include === undefined || include.has(qualified);
    },
  };
}
