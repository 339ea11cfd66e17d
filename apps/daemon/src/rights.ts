/**
 * The rights a token can hold, and what each includes. `read` sees (GETs, `/mcp` lists and calls),
 * `write` uses (sessions, injected servers, authorizing a server for itself), `admin` runs the
 * daemon (restart, reload, shutdown): one tenant's `write` must not interrupt or stop the others.
 * Each right includes the ones before it, so a token holds the set its highest right implies;
 * the operator token holds `admin`.
 */
import type { Right } from '@mcpool/client';

/** The rights, lowest first: each includes every one before it. */
export const RIGHT_NAMES = ['read', 'write', 'admin'] as const satisfies readonly Right[];

/** Every right `granted` includes (`admin` → admin, write, read). */
export function impliedRights(granted: Iterable<Right>): Set<Right> {
  let highest = -1;
  for (const right of granted) highest = Math.max(highest, RIGHT_NAMES.indexOf(right));
  return new Set<Right>(RIGHT_NAMES.slice(0, highest + 1));
}
