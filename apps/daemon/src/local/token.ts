/**
 * The operator token as a client on this machine reads it: `MCPOOL_TOKEN` if set, else the state
 * directory's `token` file (which `serve` creates, mode 0600, on its first run). Reading never
 * creates anything, and the token is only ever held in memory by the reader.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The token file's name in the state directory. */
export const TOKEN_FILE = 'token';

/** The operator token, or undefined when there is none yet (no daemon has run with this state directory). */
export async function readOperatorToken(stateDir: string, env: Record<string, string | undefined>): Promise<string | undefined> {
  if (env.MCPOOL_TOKEN) return env.MCPOOL_TOKEN;
  try {
    return (await readFile(join(stateDir, TOKEN_FILE), 'utf8')).trim() || undefined;
  } catch {
    return undefined;
  }
}
