/**
 * This daemon as one replica of several (`daemon.cluster`): it mints the legacy session ids it
 * owns sealed (owner, session, principal, expiry: see `sessionSeal.ts`), and says where a request
 * carrying a session id goes:
 * - its own session → served here;
 * - another replica's → forwarded to it (its peer URL, else the URL it sealed into the id);
 * - anything else → an unknown session (404, and the client re-initialises, as the MCP spec
 *   says): an id no key opens, one past its expiry, one sealed for another principal, one whose
 *   owner has no known address, and one that already came forwarded (a replica never forwards
 *   twice: an owner's address taken by a newcomer must not start a loop).
 * Without `cluster`, none of this exists and session ids stay plain random ids.
 */
import { hkdfSync, randomUUID } from 'node:crypto';
import type { ClusterSettings } from '../config/teamSettings.js';
import { parseSessionKeys } from '../config/teamSettings.js';
import { SessionSeal } from './sessionSeal.js';

/** The header a forwarded request, and the answer relayed back, carry: the replica that forwarded it. */
export const FORWARDED_BY = 'x-mcpool-forwarded-by';
/** The response header naming the replica that served the request. */
export const SERVED_BY = 'x-mcpool-replica';

export type SessionRoute = { kind: 'local' } | { kind: 'forward'; owner: string; url: string } | { kind: 'unknown' };

export class Cluster {
  readonly replicaId: string;
  readonly #settings: ClusterSettings;
  readonly #seal: SessionSeal;
  readonly #now: () => number;
  /**
   * The keys binding modern servers' `requestState`s to their callers, derived from the session
   * keys (HKDF-SHA256, one per key, same order): every replica opens what another wrapped.
   */
  readonly stateKeys: readonly Buffer[];

  /** @throws ConfigError when the keys' variable is unset or malformed */
  constructor(settings: ClusterSettings, env: Record<string, string | undefined>, now: () => number = Date.now) {
    this.replicaId = settings.replicaId;
    this.#settings = settings;
    const keys = parseSessionKeys(env[settings.sessionKeysEnv], settings.sessionKeysEnv);
    this.#seal = new SessionSeal(keys);
    this.stateKeys = keys.map((key) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'mcpool upstream requestState', 32)));
    this.#now = now;
  }

  /** A new session id owned here, for `principal`. */
  mintSessionId(principal: string): string {
    return this.#seal.seal({ owner: this.replicaId, ownerUrl: this.#settings.advertiseUrl, session: randomUUID(), principal, expiresAt: this.#now() + this.#settings.sessionMaxAgeMs });
  }

  /** Where a request for session `id`, made by `principal`, goes; `forwardedBy` is the header a forwarded request carries. */
  route(id: string, principal: string, forwardedBy: string | undefined): SessionRoute {
    const claims = this.#seal.open(id);
    if (claims === undefined || claims.expiresAt <= this.#now() || claims.principal !== principal) return { kind: 'unknown' };
    if (claims.owner === this.replicaId) return { kind: 'local' };
    if (forwardedBy !== undefined) return { kind: 'unknown' };
    const url = Object.hasOwn(this.#settings.peers, claims.owner) ? this.#settings.peers[claims.owner] : claims.ownerUrl;
    return url === undefined ? { kind: 'unknown' } : { kind: 'forward', owner: claims.owner, url: url.replace(/\/$/, '') };
  }
}
