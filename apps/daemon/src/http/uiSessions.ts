/**
 * Sign-in for the dashboard without a token in any URL a browser keeps: a token holder asks
 * for a one-time code (`mcpool ui` does), the page trades it once for a session cookie
 * (HttpOnly, SameSite=Strict), and the cookie then stands for that token holder's rights.
 *
 * Codes live two minutes and work once; sessions twelve hours. Both are random 32-byte values,
 * kept only as SHA-256 digests, and bounded in number (the oldest go first), so nothing here
 * grows without bound or needs a timer: expiry is checked when a value is presented.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Principal } from '../auth.js';

export const UI_COOKIE = 'mcpool_ui';
const CODE_TTL_MS = 120_000;
const SESSION_TTL_MS = 12 * 3600_000;
const MAX_CODES = 32;
const MAX_SESSIONS = 64;

interface Grant {
  principal: Principal;
  expiresAt: number;
}

const digest = (value: string): string => createHash('sha256').update(value).digest('hex');

/** Insertion-ordered map capped at `max`: the oldest entry goes when a new one would pass it. */
function remember(map: Map<string, Grant>, key: string, grant: Grant, max: number): void {
  map.set(key, grant);
  while (map.size > max) map.delete(map.keys().next().value!);
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
    remember(this.#codes, digest(code), { principal, expiresAt: this.#now() + CODE_TTL_MS }, MAX_CODES);
    return { code, expiresInMs: CODE_TTL_MS };
  }

  /** Trades a code (once) for a session secret; undefined when the code is unknown, used or expired. */
  exchange(code: string): { secret: string; maxAgeSeconds: number } | undefined {
    const key = digest(code);
    const grant = this.#codes.get(key);
    this.#codes.delete(key);
    if (grant === undefined || grant.expiresAt <= this.#now()) return undefined;
    const secret = randomBytes(32).toString('base64url');
    remember(this.#sessions, digest(secret), { principal: grant.principal, expiresAt: this.#now() + SESSION_TTL_MS }, MAX_SESSIONS);
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
