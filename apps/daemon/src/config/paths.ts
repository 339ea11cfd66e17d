/**
 * Where the daemon looks for things on this machine: the user config file, the state directory
 * (the token file, the daemon's log file), and the command's own entry file. XDG on Linux and
 * macOS, %APPDATA%/%LOCALAPPDATA% on Windows.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The command's own entry file, `bin/mcpool.js` (from `dist/config/paths.js`): what a service, an autostart or a stdio client runs. */
export const BIN_PATH = fileURLToPath(new URL('../../bin/mcpool.js', import.meta.url));

/**
 * The daemon's log file in its state directory: an autostarted daemon and the service units
 * append to it, `mcpool logs` reads it.
 */
export const DAEMON_LOG_FILE = 'daemon.log';

export interface PathEnv {
  env: Record<string, string | undefined>;
  /** @default os.homedir() */
  home?: string;
  /** @default process.platform */
  platform?: NodeJS.Platform;
}

/** The user config file: `$XDG_CONFIG_HOME/mcpool/config.json` (default `~/.config`). */
export function userConfigFile({ env, home = homedir(), platform = process.platform }: PathEnv): string {
  if (platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'mcpool', 'config.json');
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'mcpool', 'config.json');
}

/** The state directory (token file): `MCPOOL_STATE_DIR`, else `$XDG_STATE_HOME/mcpool` (default `~/.local/state`). */
export function defaultStateDir({ env, home = homedir(), platform = process.platform }: PathEnv): string {
  if (env.MCPOOL_STATE_DIR) return env.MCPOOL_STATE_DIR;
  if (platform === 'win32' && env.LOCALAPPDATA) return join(env.LOCALAPPDATA, 'mcpool');
  return join(env.XDG_STATE_HOME || join(home, '.local', 'state'), 'mcpool');
}
