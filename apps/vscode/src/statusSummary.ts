/**
 * The status bar's words for the pool: servers running out of those configured, sessions open
 * (`/mcp` and REST), and the budget — or why there is no daemon.
 */
import { isRunnable, type PoolView } from './poolModel.js';

export interface StatusSummary {
  text: string;
  tooltip: string;
  /** No daemon: shown as a warning. */
  warning: boolean;
}

export function statusSummary(view: PoolView): StatusSummary {
  const status = view.status;
  if (view.link === undefined || status === undefined) {
    return { text: '$(debug-disconnect) mcpool', tooltip: `mcpool: no daemon${view.error ? ` (${view.error})` : ''}. Click to open the dashboard once it runs; "mcpool: Reconnect to the Daemon" tries again.`, warning: true };
  }
  const configured = status.servers.filter((server) => server.configured);
  const running = configured.filter((server) => server.status === 'active').length;
  const sessions = status.limits.mcpSessions.open + status.sessions;
  const { liveCount, clientBudget, status: budget } = status.budget;
  const failed = configured.filter((server) => !isRunnable(server.status)).map((server) => server.name);
  const tooltip = [
    `mcpool at ${view.link.baseUrl}`,
    `${running} of ${configured.length} servers running, one process each for every window`,
    `${sessions} sessions open`,
    `budget: ${liveCount}/${clientBudget} live connections (${budget})`,
    ...(failed.length > 0 ? [`not running: ${failed.join(', ')}`] : []),
    'Click to open the dashboard.',
  ].join('\n');
  return { text: `$(server-process) ${running}/${configured.length} · ${sessions} sessions · ${liveCount}/${clientBudget}`, tooltip, warning: failed.length > 0 || budget === 'exhausted' };
}
