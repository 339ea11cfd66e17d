/**
 * OAuth tokens on disk: one JSON file per key under `<stateDir>/oauth/` (directory 0700, files
 * 0600, written to a temporary file and renamed so a crash never leaves half a token). The key is
 * a digest of what must not share a token: the server's URL and client id, and the principal for
 * a `per-principal` server. File names are the digest, so nothing about the server or principal
 * shows in a listing.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AuthorizationServer } from 'oauth4webapi';

/** What one authorization left: the tokens, and what refreshing them needs. */
export interface StoredGrant {
  /** The resource indicator the tokens are for (the MCP server's URL). */
  resource: string;
  as: AuthorizationServer;
  client: { client_id: string; client_secret?: string | undefined };
  accessToken: string;
  refreshToken?: string | undefined;
  /** When the access token expires (ms since the epoch); absent when the server did not say. */
  expiresAt?: number | undefined;
  /** The access token's lifetime as issued (ms): how early it is refreshed. */
  lifetimeMs?: number | undefined;
  scope?: string | undefined;
}

export function grantKey(parts: { resource: string; clientId: string | undefined; principal: string | undefined }): string {
  return createHash('sha256').update(JSON.stringify([parts.resource, parts.clientId ?? '', parts.principal ?? ''])).digest('hex').slice(0, 40);
}

export class TokenStore {
  readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, 'oauth');
  }

  async read(key: string): Promise<StoredGrant | undefined> {
    try {
      const grant = JSON.parse(await readFile(this.#file(key), 'utf8')) as StoredGrant;
      return typeof grant.accessToken === 'string' ? grant : undefined;
    } catch {
      return undefined;
    }
  }

  async write(key: string, grant: StoredGrant): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await chmod(this.dir, 0o700);
    const temp = `${this.#file(key)}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temp, JSON.stringify(grant), { mode: 0o600 });
    await rename(temp, this.#file(key));
  }

  async remove(key: string): Promise<void> {
    await rm(this.#file(key), { force: true });
  }

  #file(key: string): string {
    return join(this.dir, `${key}.json`);
  }
}
