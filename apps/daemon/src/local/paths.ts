/**
 * Where the daemon keeps things on this machine: the user config file and the state directory
 * (the token file, the daemon's log file). XDG on Linux and macOS, %APPDATA%/%LOCALAPPDATA% on
 * Windows. Node built-ins only, and nothing read at load: an editor extension bundles this.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

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
