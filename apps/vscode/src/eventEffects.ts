/**
 * What a daemon event means for the definitions an editor window shows: which servers' tool
 * lists may have changed (and so must be read again before their `version` is known), and
 * whether the figures of the status bar moved. The definitions themselves change only when a
 * read finds different tools, or servers come or go: an event alone never bumps a version.
 */
import type { DaemonEventPayload } from '@mcpool/client';

export interface EventEffect {
  /** Servers whose metadata is read again: `all` after a gap in the stream or a reload. */
  reread: 'all' | readonly string[];
  /** The pool's figures (servers running, sessions, budget) may have changed. */
  status: boolean;
  /** Servers whose config changed: what still reads the old one must let go before the re-read. */
  replaced?: readonly string[];
}

const NOTHING: EventEffect = Object.freeze({ reread: Object.freeze([]), status: false });

/** The effect of one event; unknown event types (a newer daemon's) change nothing. */
export function effectOf(event: DaemonEventPayload | { type: string }): EventEffect {
  const payload = event as DaemonEventPayload;
  switch (payload.type) {
    case 'entry_status':
      // A server that (re)started serves the tools it has now: a changed package, a new config.
      return { reread: payload.status === 'active' ? [payload.serverName] : [], status: true };
    case 'reconnected':
    case 'auth_completed':
      return { reread: [payload.serverName], status: true };
    case 'server_restarted':
      return { reread: [payload.serverName], status: true };
    case 'config_reloaded':
      // Added and removed servers change the list; a changed one may list other tools.
      return { reread: [...payload.added, ...payload.changed], status: true, ...(payload.changed.length > 0 ? { replaced: payload.changed } : {}) };
    case 'events_lost':
      return { reread: 'all', status: true };
    case 'disconnected':
    case 'failed':
    case 'auth_required':
    case 'servers_progress':
    case 'session_created':
    case 'session_closed':
    case 'mcp_budget_warning':
    case 'mcp_child_refused_batch':
      return { reread: [], status: true };
    default:
      return NOTHING;
  }
}
