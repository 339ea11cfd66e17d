/**
 * Sign-in for the dashboard without a token in any URL a browser keeps: a token holder asks
 * for a one-time code (`mcpool ui` does), the page trades it once for a session cookie
 * (HttpOnly, SameSite=Strict), and the cookie then stands for that token holder's rights.
 *
 * Codes live two minutes and work once; sessions twelve hours. Both are random 32-byte values,
 * kept only as SHA-256 digests, and bounded in number, so nothing here grows without bound or
 * needs a timer: expiry is checked when a value is presented. Each principal has a share (its own
 * oldest goes when it passes it), and at the total bound the oldest of a principal with a share
 * goes: the operator (or an `admin` client) is never signed out by another token's sign-ins.
 */
import { createHash, randomBytes } from 'node:crypto';
import { OPERATOR_ID, type Principal } from '../auth.js';

export const UI_COOKIE = 'mcpool_ui';
const CODE_TTL_MS = 120_000;
const SESSION_TTL_MS = 12 * 3600_000;
const CODES = { perPrincipal: 8, total: 32 };
const SESSIONS = { perPrincipal: 16, total: 64 };

interface Grant {
  principal: Principal;
  expiresAt: number;
}

const digest = (value: string): string => createHash('sha256').update(value).digest('hex');

const holdsNoShare = (principal: Principal): boolean => principal.id === OPERATOR_ID || principal.rights.has('admin');

/**
 * Adds to an insertion-ordered map within its bounds: past its share, the principal's own oldest
 * entry goes; past the total, the oldest entry of a principal with a share (else the oldest).
 */
function remember(map: Map<string, Grant>, key: string, grant: Grant, bounds: { perPrincipal: number; total: number }): void {
  const mine = [...map].filter(([, other]) => other.principal.id === grant.principal.id);
  for (const [old] of mine.slice(0, Math.max(0, mine.length - bounds.perPrincipal + 1))) map.delete(old);
  map.set(key, grant);
  while (map.size > bounds.total) {
    const victim = [...map].find(([, other]) => !holdsNoShare(other.principal)) ?? [...map][0]!;
    map.delete(victim[0]);
  }
}

export class UiSessions {
  readonly #codes = new Map<string, Grant>();
  readonly #sessions = new Map<string, Grant>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A one-time code that signs a browser in as `principal`. */
  mintCode(principal: Principal): { code: string; expiresInMs: number } {
    const code = randomBytes(32).toString('base64url');
    remember(this.#codes, digest(code), { principal, expiresAt: this.#now() + CODE_TTL_MS }, CODES);
    return { code, expiresInMs: CODE_TTL_MS };
  }

  /** Trades a code (once) for a session secret; undefined when the code is unknown, used or expired. */
  exchange(code: string): { secret: string; maxAgeSeconds: number } | undefined {
    const key = digest(code);
    const grant = this.#codes.get(key);
    this.#codes.delete(key);
    if (grant === undefined || grant.expiresAt <= this.#now()) return undefined;
    const secret = randomBytes(32).toString('base64url');
    remember(this.#sessions, digest(secret), { principal: grant.principal, expiresAt: this.#now() + SESSION_TTL_MS }, SESSIONS);
    return { secret, maxAgeSeconds: SESSION_TTL_MS / 1000 };
  }

  /** The principal of a session secret, or undefined. */
  identify(secret: string): Principal | undefined {
    const key = digest(secret);
    const grant = this.#sessions.get(key);
    if (grant === undefined) return undefined;
    if (grant.expiresAt <= this.#now()) {
      this.#sessions.delete(key);
      return undefined;
    }
    return grant.principal;
  }

  revoke(secret: string): void {
    this.#sessions.delete(digest(secret));
  }
}
