/**
 * `/readyz`: the daemon is ready once every server of the current config has been started once,
 * whether it came up or failed (a failed server is reported, not waited for). A reload that adds
 * or changes servers makes it not ready until those have started. A server of the config that
 * cannot run (`unavailable`) is counted apart and never waited for: nothing starts it.
 */
import type { ReadyResponse } from '@mcpool/client';

/** Where a configured server's first start stands. */
export type WarmState = 'starting' | 'ready' | 'failed';

/**
 * @param names the servers of the current config
 * @param stateOf where each one's start stands (undefined: not begun)
 * @param begun whether the daemon began warming at all
 * @param unavailable how many servers of the config cannot run
 */
export function readiness(names: readonly string[], stateOf: (name: string) => WarmState | undefined, begun: boolean, unavailable = 0): ReadyResponse {
  let ready = 0;
  let failed = 0;
  for (const name of names) {
    const state = stateOf(name);
    if (state === 'ready') ready += 1;
    else if (state === 'failed') failed += 1;
  }
  return { ready: begun && ready + failed === names.length, servers: { total: names.length, ready, failed, unavailable } };
}
