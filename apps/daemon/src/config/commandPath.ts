/**
 * Where a stdio server's command is, found the way spawning it finds it (POSIX `execvp`, which
 * Node's `spawn` uses): a command with a `/` is a path, relative to the server's working
 * directory; a bare name is looked up in the `PATH` the server is spawned with (its config's
 * `env.PATH`, else the daemon's own), directory by directory, the first executable regular file
 * winning. A wrapper (`npx -y pkg`, `uvx pkg`, `docker run …`) is checked as itself: what it
 * fetches or runs is its business.
 *
 * Nothing here caches: a command installed after the daemon started is found on the next look.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { basename, isAbsolute, normalize, resolve } from 'node:path';
import type { ServerConfig } from '@mcpool/protocol';

/** What a lookup depends on besides the config. */
export interface CommandLookup {
  /** The daemon's working directory (a server without `cwd` runs there). @default process.cwd() */
  cwd?: string;
  /** The daemon's `PATH` (a server without `env.PATH` is spawned with it). @default process.env.PATH */
  path?: string | undefined;
}

/** execvp's search path when the environment has no PATH at all (glibc's `_CS_PATH`). */
const DEFAULT_SEARCH_PATH = '/bin:/usr/bin';

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The working directory and `PATH` a stdio server is spawned with. */
function spawnContext(config: ServerConfig, lookup: CommandLookup): { cwd: string; searchPath: string } {
  const daemonCwd = lookup.cwd ?? process.cwd();
  const cwd = config.cwd === undefined ? daemonCwd : resolve(daemonCwd, config.cwd);
  const searchPath = config.env?.PATH ?? (Object.hasOwn(lookup, 'path') ? lookup.path : process.env.PATH) ?? DEFAULT_SEARCH_PATH;
  return { cwd, searchPath };
}

/** The file a bare name runs: the first executable of that name on `searchPath` (an empty entry is the working directory). */
function onSearchPath(name: string, searchPath: string, cwd: string): string | undefined {
  for (const dir of searchPath.split(':')) {
    const candidate = resolve(cwd, dir === '' ? '.' : dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** The outcome of a lookup: the executable's absolute path, or why there is none. */
export type CommandResolution = { found: string } | { missing: string };

/**
 * Finds the executable a stdio server's `command` runs.
 *
 * @returns `{found}` with its absolute path, or `{missing}` saying what was looked for (never a
 *   variable's value: the command and the directories are the config's own).
 */
export function resolveCommand(config: ServerConfig, lookup: CommandLookup = {}): CommandResolution {
  const command = config.command ?? '';
  const { cwd, searchPath } = spawnContext(config, lookup);
  if (command.includes('/')) {
    const path = resolve(cwd, command);
    return isExecutableFile(path) ? { found: path } : { missing: `no executable file at ${path}` };
  }
  const found = onSearchPath(command, searchPath, cwd);
  if (found !== undefined) return { found };
  const where = config.env?.PATH === undefined ? 'the PATH' : "the server's env.PATH";
  return { missing: `${JSON.stringify(command)} is not on ${where} it would be spawned with` };
}

/**
 * The canonical spelling of a stdio server's command: an absolute path that is exactly what the
 * spawn-time lookup of its file name finds (`/usr/bin/npx` where `npx` resolves to
 * `/usr/bin/npx`) is written as that name, so both spellings are one server (one fingerprint,
 * one process). The same file through another path (a symlink, another directory on PATH) is
 * not folded in: a multi-call binary (busybox) behaves by the name it was run as, and a lookup
 * that finds another file first runs another program.
 */
export function canonicalCommand(config: ServerConfig, lookup: CommandLookup = {}): ServerConfig {
  const command = config.command;
  if (config.transport !== 'stdio' || command === undefined || !isAbsolute(command)) return config;
  const name = basename(command);
  const { cwd, searchPath } = spawnContext(config, lookup);
  const found = onSearchPath(name, searchPath, cwd);
  return found !== undefined && found === normalize(command) ? { ...config, command: name } : config;
}
