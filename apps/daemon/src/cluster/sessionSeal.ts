/**
 * Sealed legacy session ids, so that any replica can route a session and none can be fooled:
 * `mcs1.<base64url(iv ‖ ciphertext ‖ tag)>`, AES-256-GCM (node:crypto) over
 * `{o: owner replica, u: owner's advertised URL?, s: session, p: principal, e: expiry (ms)}`.
 * - Unreadable: nothing of it shows (not the principal, not the owner).
 * - Unforgeable: a changed byte, or an id sealed with a key the replicas do not hold, opens to
 *   nothing (the tag fails), and is answered as an unknown session (404).
 * - Rotation: the first key seals, every key opens; an id names no key, each is tried in turn.
 * - Bound to its principal and its expiry: the opener checks both.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const PREFIX = 'mcs1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What a sealed session id says. */
export interface SessionClaims {
  /** The replica that owns the session. */
  owner: string;
  /** The owner's advertised base URL (when it has one): where to forward when it is no peer of ours. */
  ownerUrl?: string | undefined;
  /** The session's id on its owner. */
  session: string;
  /** The principal that opened it. */
  principal: string;
  /** When it stops being accepted (ms since the epoch). */
  expiresAt: number;
}

export class SessionSeal {
  readonly #keys: readonly Buffer[];

  /** @param keys 32 bytes each; the first seals, all open. */
  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0 || keys.some((key) => key.length !== 32)) throw new TypeError('session keys must be 32 bytes each, at least one');
    this.#keys = keys;
  }

  /** True when `id` has the shape of a sealed id (it may still fail to open). */
  static sealed(id: string): boolean {
    return id.startsWith(PREFIX);
  }

  seal(claims: SessionClaims): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#keys[0]!, iv);
    const plain = JSON.stringify({ o: claims.owner, ...(claims.ownerUrl === undefined ? {} : { u: claims.ownerUrl }), s: claims.session, p: claims.principal, e: claims.expiresAt });
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /** The claims of `id`, or undefined when no key opens it (forged, altered, another deployment's). Expiry is the caller's to check. */
  open(id: string): SessionClaims | undefined {
    if (!SessionSeal.sealed(id) || id.length > 2048) return undefined;
    const raw = Buffer.from(id.slice(PREFIX.length), 'base64url');
    if (raw.length <= IV_BYTES + TAG_BYTES) return undefined;
    const iv = raw.subarray(0, IV_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    const body = raw.subarray(IV_BYTES, raw.length - TAG_BYTES);
    for (const key of this.#keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv);
        decipher.setAuthTag(tag);
        const plain = Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
        const parsed = JSON.parse(plain) as { o?: unknown; u?: unknown; s?: unknown; p?: unknown; e?: unknown };
        if (typeof parsed.o !== 'string' || typeof parsed.s !== 'string' || typeof parsed.p !== 'string' || typeof parsed.e !== 'number') return undefined;
        return { owner: parsed.o, ...(typeof parsed.u === 'string' ? { ownerUrl: parsed.u } : {}), session: parsed.s, principal: parsed.p, expiresAt: parsed.e };
      } catch {
        // Not this key: try the next one.
      }
    }
    return undefined;
  }
}
