/**
 * The pool key of an acquire: which entry a session may share, from the config's fingerprint, its
 * sharing policy and whose the session is. Pure but for the salt and the unpooled sequence:
 * - an unpooled config (a transport not pooled) gets a key of its own per acquire;
 * - `shared`: `name::fingerprint`, one entry for every session;
 * - `per-workspace`: that id plus a salted digest of the session's root URIs (sorted, without
 *   duplicates: the same folders in another order are the same workspace), one entry per set;
 * - `per-principal` / `per-session`: that id plus a salted digest of the principal or session, so
 *   neither keys nor the labels shown in snapshots can be matched to a guessed owner.
 * An entry that one principal's sessions alone use (`per-principal`, `per-session`, unpooled) names
 * that principal for its credentials, and waits for authorization apart from other principals'
 * entries: a token is asked for whose it is, and one principal's missing grant closes no other's gate.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ErrorCode, PoolError, connectionIdOf, type ConnectionId, type Root, type SharingPolicy } from '@mcpool/protocol';
import type { EntryKey } from './entry.js';

/** Hex chars of an owner digest shown as an entry's `ownerLabel` (48 bits: labels of one pool do not collide in practice). */
const OWNER_LABEL_CHARS = 12;

export interface KeyRequest {
  name: string;
  fingerprint: string;
  pooled: boolean;
  /** The config's policy (a config that is not pooled is `per-session` whatever it says). */
  sharing: SharingPolicy;
  sessionId: string;
  principal: string | undefined;
  /** The session's roots: part of a `per-workspace` key, ignored otherwise. */
  roots?: readonly Root[] | undefined;
}

export class PoolKeys {
  /** Salts owner digests. */
  readonly #salt = randomBytes(16);
  #unpooledSeq = 0;

  /** The key of one acquire. Throws `MCPOOL_INVALID_ARGUMENT` for a `per-principal` server acquired without a principal. */
  keyOf(request: KeyRequest): EntryKey {
    const { name, fingerprint, pooled, sharing, sessionId, principal } = request;
    const base = connectionIdOf(name, fingerprint);
    if (!pooled) {
      // One connection per acquire: its own entry, per-session already.
      const digest = this.ownerDigest('session', sessionId);
      return { id: `${name}::unpooled-${++this.#unpooledSeq}` as ConnectionId, placement: { sharing: 'per-session', ownerLabel: label(digest) }, principal, authKey: this.#authKeyOf(base, principal), ownerSession: sessionId };
    }
    if (sharing === 'shared') return { id: base, placement: { sharing, ownerLabel: undefined }, principal: undefined, authKey: base, ownerSession: undefined };
    if (sharing === 'per-workspace') {
      const roots = workspaceOf(request.roots ?? []);
      const digest = this.ownerDigest('workspace', JSON.stringify(roots.map((root) => root.uri)));
      const id = `${base}::per-workspace:${digest}` as ConnectionId;
      return { id, placement: { sharing, ownerLabel: label(digest) }, principal: undefined, authKey: base, ownerSession: undefined, roots };
    }
    if (sharing === 'per-principal' && principal === undefined) {
      // Guessing would be wrong either way: one anonymous principal would share the process
      // between unrelated callers, one per session would quietly multiply processes.
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, `${name} is shared per principal: acquire it with options.principal`, { data: { serverName: name, sharing } });
    }
    const digest = sharing === 'per-principal' ? this.ownerDigest('principal', principal!) : this.ownerDigest('session', sessionId);
    // Not a parsable connection id on purpose: the owner part keeps entries of one fingerprint apart.
    const id = `${base}::${sharing}:${digest}` as ConnectionId;
    const placement = { sharing, ownerLabel: label(digest) };
    if (sharing === 'per-principal') return { id, placement, principal, authKey: this.#authKeyOf(base, principal), ownerSession: undefined };
    return { id, placement, principal, authKey: this.#authKeyOf(base, principal), ownerSession: sessionId };
  }

  /** The authorization an entry of one principal waits for: its server's, that principal's own. */
  #authKeyOf(base: ConnectionId, principal: string | undefined): string {
    return principal === undefined ? base : `${base}::${this.ownerDigest('principal', principal)}`;
  }

  /** A salted digest of a principal or session: collision-free as a key part, opaque as a label. */
  ownerDigest(kind: 'principal' | 'session' | 'workspace', owner: string): string {
    return createHash('sha256').update(this.#salt).update(kind).update('\u0000').update(owner).digest('hex').slice(0, 32);
  }
}

/** A workspace's roots as its key sees them: by URI, sorted, the first of duplicates kept. */
export function workspaceOf(roots: readonly Root[]): Root[] {
  const byUri = new Map<string, Root>();
  for (const root of roots) if (!byUri.has(root.uri)) byUri.set(root.uri, root.name === undefined ? { uri: root.uri } : { uri: root.uri, name: root.name });
  return [...byUri.values()].sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
}

function label(digest: string): string {
  return digest.slice(0, OWNER_LABEL_CHARS);
}
