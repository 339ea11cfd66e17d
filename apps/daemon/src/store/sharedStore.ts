/**
 * The daemon's shared state: small values (JSON text) under a key, in a namespace. What needs
 * to outlive a process or to be the same on every replica goes here, and nothing else does:
 * upstream OAuth grants (`oauth`: a refresh token rotated on one replica must be the one the
 * others use), and a server's catalog (`catalog`: what a server offers, so any replica can list
 * it without starting it). Sessions, continuations and pool entries are a replica's own.
 *
 * Two kinds: the state directory (`file`, the default: one machine) and Redis (`redis`: every
 * replica reaches the same values). A store that cannot be reached fails its operation with
 * `MCPOOL_STORE_UNAVAILABLE` at once (no queue that grows while it is away).
 */

/** What a namespace holds; each is one key space. */
export type StoreNamespace = 'oauth' | 'catalog';

export interface SharedStore {
  readonly kind: 'file' | 'redis';
  /** The value under `key`, or undefined when there is none. */
  get(namespace: StoreNamespace, key: string): Promise<string | undefined>;
  /** Writes `value` under `key` whole: a reader sees the old value or the new one, never a part. */
  set(namespace: StoreNamespace, key: string, value: string): Promise<void>;
  /** Removes `key` (no error when it is not there). */
  delete(namespace: StoreNamespace, key: string): Promise<void>;
  /** Every key of `namespace` (the catalog loads them all at start). */
  keys(namespace: StoreNamespace): Promise<string[]>;
  /** Releases what the store holds (a connection). Idempotent. */
  close(): Promise<void>;
}

/** Keys are digests or names the daemon makes: a bounded set of characters, never a path. */
export const STORE_KEY = /^[\w.:-]{1,200}$/;

export function assertKey(key: string): void {
  if (!STORE_KEY.test(key)) throw new TypeError(`store key ${JSON.stringify(key)} must match ${STORE_KEY.source}`);
}
