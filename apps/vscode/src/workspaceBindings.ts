/**
 * Servers that belong to one workspace: a server moved into the pool from a folder's
 * `.vscode/mcp.json` whose config named `${workspaceFolder}` runs with that folder's path (its
 * own process, apart from the same server of another folder) and is shown only in windows that
 * have that folder open. The record is `<state dir>/vscode-workspaces.json` (server → folder),
 * written whole through a rename so a reader never sees half of it. Servers not in it are
 * everyone's.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export const BINDINGS_FILE = 'vscode-workspaces.json';

/** Server name → the absolute folder it belongs to. */
export type Bindings = Readonly<Record<string, string>>;

export async function readBindings(stateDir: string): Promise<Bindings> {
  try {
    const parsed = JSON.parse(await readFile(join(stateDir, BINDINGS_FILE), 'utf8')) as { servers?: unknown };
    const servers = typeof parsed.servers === 'object' && parsed.servers !== null ? (parsed.servers as Record<string, unknown>) : {};
    return Object.fromEntries(Object.entries(servers).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  } catch {
    return {};
  }
}

/** Records `bind` (server → folder) over what is there, dropping servers the pool no longer has. */
export async function writeBindings(stateDir: string, bind: Bindings, known: readonly string[]): Promise<void> {
  const current = await readBindings(stateDir);
  const keep = new Set([...known, ...Object.keys(bind)]);
  const servers = Object.fromEntries(Object.entries({ ...current, ...bind }).filter(([name]) => keep.has(name)));
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const file = join(stateDir, BINDINGS_FILE);
  const temporary = `${file}.${randomUUID()}`;
  await writeFile(temporary, `${JSON.stringify({ servers }, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

/** The servers a window with `folders` open shows: everyone's, and those bound to one of its folders. */
export function visibleIn(names: readonly string[], bindings: Bindings, folders: readonly string[]): string[] {
  const open = new Set(folders.map((folder) => resolve(folder)));
  return names.filter((name) => bindings[name] === undefined || open.has(resolve(bindings[name])));
}
