/**
 * Who may call the daemon: the operator token (created 0600 in the state directory on first run,
 * or `MCPOOL_TOKEN`), the operator's MCP token derived from it, plus the `clients` of the config,
 * each with its own token from an environment variable and its rights. Tokens are compared in
 * constant time (no timing leak).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '@mcpool/protocol';
import type { Right } from '@mcpool/client';
import type { ClientSpec } from './config/daemonConfig.js';
import { TOKEN_FILE } from './local/token.js';
import { impliedRights } from './rights.js';

// The reading side of the token lives with the other things a local client needs.
export { TOKEN_FILE, readOperatorToken } from './local/token.js';

/** Tokens shorter than this are refused: they could be guessed. */
export const MIN_TOKEN_LENGTH = 16;
export const OPERATOR_ID = 'operator';

/** An authenticated caller. */
export interface Principal {
  id: string;
  rights: ReadonlySet<Right>;
}

export interface OperatorToken {
  token: string;
  /** `env` (MCPOOL_TOKEN) or `file`. */
  source: 'env' | 'file';
  /** The token file, when `source` is `file`. */
  path?: string;
  /** The file was created by this call. */
  created: boolean;
  /** The file had looser permissions and was tightened to 0600. */
  tightened: boolean;
}

/**
 * The operator token: `MCPOOL_TOKEN` if set, else the state directory's `token` file, created
 * (0600, in a 0700 directory) with 32 random bytes on first run.
 *
 * @throws ConfigError when `MCPOOL_TOKEN` is too short, or the file is unusable.
 */
export async function ensureOperatorToken(stateDir: string, env: Record<string, string | undefined>): Promise<OperatorToken> {
  const fromEnv = env.MCPOOL_TOKEN;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (fromEnv.length < MIN_TOKEN_LENGTH) throw new ConfigError([{ path: 'env.MCPOOL_TOKEN', expected: `a token of at least ${MIN_TOKEN_LENGTH} characters`, received: 'got a shorter one' }]);
    return { token: fromEnv, source: 'env', created: false, tightened: false };
  }
  const path = join(stateDir, TOKEN_FILE);
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  try {
    // `wx`: never overwrite a token another daemon just wrote.
    const handle = await open(path, 'wx', 0o600);
    const token = randomBytes(32).toString('base64url');
    try {
      await handle.writeFile(`${token}\n`);
    } finally {
      await handle.close();
    }
    return { token, source: 'file', path, created: true, tightened: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw tokenFileError(path, error);
  }
  let tightened = false;
  try {
    const mode = (await stat(path)).mode & 0o777;
    if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
      await chmod(path, 0o600);
      tightened = true;
    }
    const token = (await readFile(path, 'utf8')).trim();
    if (token.length < MIN_TOKEN_LENGTH) throw new ConfigError([{ path: '', expected: `a token of at least ${MIN_TOKEN_LENGTH} characters`, received: 'got a shorter one' }], path);
    return { token, source: 'file', path, created: false, tightened };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw tokenFileError(path, error);
  }
}

/**
 * The operator's MCP token: what an MCP client that keeps its secrets itself (VS Code's
 * `${input:…}` prompt stores the answer in its secret storage) sends on `/mcp`. It is the
 * operator's principal (so a per-principal server's process is the one its other clients share)
 * with the `read` right only: it lists and calls the configured servers but cannot inject a
 * server, restart, reload or stop anything, so it never starts a command of its own. Derived
 * (HMAC-SHA256 of a fixed label, keyed by the operator token): nothing more to store, and it
 * changes when the operator token does. `mcpool token` prints it.
 */
export function operatorMcpToken(operatorToken: string): string {
  return `mcp_${createHmac('sha256', operatorToken).update('mcpool /mcp client token, read right only').digest('base64url')}`;
}

function tokenFileError(path: string, error: unknown): ConfigError {
  const code = (error as NodeJS.ErrnoException).code ?? 'an error';
  return new ConfigError([{ path: '', expected: 'a readable token file in the state directory', received: `got ${code}` }], path);
}

export interface ClientTokenProblem {
  id: string;
  tokenEnv: string;
  problem: 'unset' | 'too_short';
}

/**
 * Principals from the config's clients. A client whose variable is unset is left out (reported);
 * one whose token is too short is an error, since it would be guessable.
 */
export function clientPrincipals(clients: readonly ClientSpec[], env: Record<string, string | undefined>): { entries: TokenEntry[]; problems: ClientTokenProblem[] } {
  const entries: TokenEntry[] = [];
  const problems: ClientTokenProblem[] = [];
  for (const client of clients) {
    const token = env[client.tokenEnv];
    if (token === undefined || token === '') problems.push({ id: client.id, tokenEnv: client.tokenEnv, problem: 'unset' });
    else if (token.length < MIN_TOKEN_LENGTH) problems.push({ id: client.id, tokenEnv: client.tokenEnv, problem: 'too_short' });
    else entries.push({ id: client.id, token, rights: client.rights });
  }
  return { entries, problems };
}

export interface TokenEntry {
  id: string;
  token: string;
  rights: readonly Right[];
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** Maps a bearer token to its principal, in constant time over every known token. */
export class TokenRegistry {
  #entries: { id: string; digest: Buffer; rights: ReadonlySet<Right> }[] = [];

  constructor(entries: readonly TokenEntry[]) {
    this.replace(entries);
  }

  /** Swaps the known tokens (config reload rotates client tokens). */
  replace(entries: readonly TokenEntry[]): void {
    this.#entries = entries.map((entry) => ({
      id: entry.id,
      digest: digest(entry.token),
      rights: impliedRights(entry.rights),
    }));
  }

  /**
   * The principal holding `token`, or undefined. Both sides are hashed first, so the comparison
   * has a fixed length, and every entry is compared (no early exit).
   */
  identify(token: string): Principal | undefined {
    const candidate = digest(token);
    let found: Principal | undefined;
    for (const entry of this.#entries) {
      if (timingSafeEqual(candidate, entry.digest) && found === undefined) found = { id: entry.id, rights: entry.rights };
    }
    return found;
  }
}
