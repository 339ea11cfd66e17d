/**
 * OAuth grants in the shared store's `oauth` namespace, one JSON value per key: on one machine
 * the state directory (`<stateDir>/oauth/<key>.json`, 0600), on a team's replicas Redis, so a
 * grant made or refreshed on one replica is the one every replica uses. The key is a digest of
 * what must not share a token: the server's URL and client id, and the principal the grant was
 * given to (a grant is theirs alone unless the config shares it). Keys are the digest, so
 * nothing about the server or principal shows in a listing.
 */
import { createHash } from 'node:crypto';
import type { AuthorizationServer } from 'oauth4webapi';
import type { SharedStore } from '../store/sharedStore.js';

/** How a client authenticates at the token endpoint (RFC 7591 §2). */
export type TokenAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

/** What one authorization left: the tokens, and what refreshing them needs. */
export interface StoredGrant {
  /** The resource indicator the tokens are for (the MCP server's URL). */
  resource: string;
  as: AuthorizationServer;
  /** The client the grant was issued to, and how it authenticates at the token endpoint (absent in grants kept before it was stored). */
  client: { client_id: string; client_secret?: string | undefined; token_endpoint_auth_method?: TokenAuthMethod | undefined };
  accessToken: string;
  refreshToken?: string | undefined;
  /** When the access token expires (ms since the epoch); absent when the server did not say. */
  expiresAt?: number | undefined;
  /** The access token's lifetime as issued (ms): how early it is refreshed. */
  lifetimeMs?: number | undefined;
  scope?: string | undefined;
  /** The scopes the authorization asked for (a step-up asks for them again, with the new ones). */
  requestedScopes?: string[] | undefined;
}

export function grantKey(parts: { resource: string; clientId: string | undefined; principal: string | undefined }): string {
  return createHash('sha256').update(JSON.stringify([parts.resource, parts.clientId ?? '', parts.principal ?? ''])).digest('hex').slice(0, 40);
}

export class TokenStore {
  readonly #store: SharedStore;

  constructor(store: SharedStore) {
    this.#store = store;
  }

  /** The grant under `key`; undefined when there is none or it is unreadable. @throws PoolError STORE_UNAVAILABLE (not "no grant": the server stays authorized) */
  async read(key: string): Promise<StoredGrant | undefined> {
    const text = await this.#store.get('oauth', key);
    if (text === undefined) return undefined;
    try {
      const grant = JSON.parse(text) as StoredGrant;
      return typeof grant.accessToken === 'string' ? grant : undefined;
    } catch {
      return undefined;
    }
  }

  async write(key: string, grant: StoredGrant): Promise<void> {
    await this.#store.set('oauth', key, JSON.stringify(grant));
  }

  async remove(key: string): Promise<void> {
    await this.#store.delete('oauth', key);
  }
}
