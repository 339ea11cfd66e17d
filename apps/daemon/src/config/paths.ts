/**
 * Where the daemon looks for things on this machine: the command's own entry file, and (from
 * `local/paths.ts`, which clients on this machine bundle) the user config file and the state
 * directory with the token and log files.
 */
import { fileURLToPath } from 'node:url';

export { DAEMON_LOG_FILE, defaultStateDir, userConfigFile } from '../local/paths.js';
export type { PathEnv } from '../local/paths.js';

/** The command's own entry file, `bin/mcpool.js` (from `dist/config/paths.js`): what a service, an autostart or a stdio client runs. */
export const BIN_PATH = fileURLToPath(new URL('../../bin/mcpool.js', import.meta.url));
