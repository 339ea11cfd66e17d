/**
 * A reload applies server by server. The file's servers that can run are applied (added,
 * changed, removed as the file says); a server whose new entry cannot run (a bad field, an unset
 * variable, a missing command) is reported, and:
 * - if it runs now, it keeps running its last good config: a bad edit never stops a working
 *   server, as a bad file never changed anything before reloads went per server;
 * - if it does not run now, it is (still) unavailable with the new reason.
 * Only a file that cannot be read as a whole (not JSON, no servers map, a bad `daemon` setting)
 * is refused as a whole.
 */
import type { ReloadRejection } from '@mcpool/client';
import type { LoadedConfig } from './daemonConfig.js';

/** The config a reload applies, and the servers of the file it could not apply. */
export function mergeReload(previous: Readonly<LoadedConfig>, next: LoadedConfig): { config: LoadedConfig; rejected: ReloadRejection[] } {
  const servers = { ...next.servers };
  const unavailable = { ...next.unavailable };
  const kept: NonNullable<LoadedConfig['kept']> = {};
  const rejected: ReloadRejection[] = [];
  for (const [name, problem] of Object.entries(next.unavailable)) {
    const running = Object.hasOwn(previous.servers, name) ? previous.servers[name] : undefined;
    if (running !== undefined) {
      servers[name] = running;
      kept[name] = problem;
      delete unavailable[name];
    }
    rejected.push({ name, code: problem.code, message: problem.message, keptRunning: running !== undefined });
  }
  return { config: { ...next, servers, unavailable, ...(Object.keys(kept).length > 0 ? { kept } : {}) }, rejected };
}
