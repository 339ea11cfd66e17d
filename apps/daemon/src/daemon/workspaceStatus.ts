/**
 * `GET /workspace/mcp`: the pool's snapshot seen through the config. Every configured server is
 * listed, running or not (`cold`: started on first use, listed from its catalog meanwhile), with the error of its last failed start while it stands (an
 * `unavailable` one with why it cannot run; a running one whose new entry a reload could not
 * apply with that `configProblem`); every running one too, configured or injected. It never holds
 * a fingerprint, an env value or a header.
 */
import type { CatalogFacts, PoolSnapshot, ServerConfig, SharingPolicy } from '@mcpool/core';
import type { ServerLifeState, WorkspaceMcpServer, WorkspaceMcpStatus } from '@mcpool/client';
import type { DaemonSettings, LoadedConfig } from '../config/daemonConfig.js';
import type { PlainError } from './failures.js';

export interface WorkspaceFigures {
  snapshot: PoolSnapshot;
  config: Readonly<LoadedConfig>;
  settings: Readonly<DaemonSettings>;
  /** Why the warm start of a server failed, while it stands. */
  warmError: (name: string) => PlainError | undefined;
  /** Who may share a configured server's process, and why (its config's `sharing`, else the default from what is known of it). */
  sharingOf: (config: ServerConfig, era: 'legacy' | 'modern' | undefined) => { policy: SharingPolicy; reason: string };
  /** Whether configured server `name` starts on first use and has a catalog: not running, it is `cold`. */
  cold: (name: string) => boolean;
  /** Where a server stands in its life (given whether it is `cold`), and its last start's cost (see `serverStates.ts`). */
  lifeOf: (name: string, cold: boolean) => { state: ServerLifeState | undefined; lastStartMs: number | undefined };
  /** What the catalog of configured server `name`'s config learned about it from use, if anything. */
  learnedOf: (name: string) => CatalogFacts | undefined;
  ready: boolean;
  restSessions: number;
  mcpSessions: number;
  injectedServers: number;
}

export function workspaceStatus(figures: WorkspaceFigures): WorkspaceMcpStatus {
  const { snapshot, settings } = figures;
  const configured = figures.config.servers;
  const { unavailable, kept = {} } = figures.config;
  const names = [...new Set([...Object.keys(configured), ...Object.keys(unavailable), ...Object.keys(snapshot.servers)])].sort();
  const servers = names.map((name): WorkspaceMcpServer => {
    const live = snapshot.servers[name];
    const config = configured[name];
    const cannotRun = Object.hasOwn(unavailable, name) ? unavailable[name] : undefined;
    const configProblem = Object.hasOwn(kept, name) ? kept[name] : undefined;
    const backoff = live?.spawnBackoff;
    const lastError =
      (cannotRun && { code: cannotRun.code, message: cannotRun.message }) ?? figures.warmError(name) ?? (backoff === undefined ? undefined : { code: backoff.lastError.code, message: backoff.lastError.message });
    const common = {
      kind: 'mcp_server' as const,
      name,
      configured: config !== undefined || cannotRun !== undefined,
      ...(config ? { transport: config.transport } : cannotRun?.config ? { transport: cannotRun.config.transport } : {}),
      ...(lastError ? { lastError: { ...lastError } } : {}),
      ...(configProblem ? { configProblem: { code: configProblem.code, message: configProblem.message } } : {}),
      ...(config ? { sharing: figures.sharingOf(config, live?.entrySummary.find((entry) => entry.era !== undefined)?.era) } : {}),
      ...(backoff === undefined ? {} : { retryAt: backoff.retryAt }),
      ...learnedFields(config === undefined ? undefined : figures.learnedOf(name)),
    };
    const life = figures.lifeOf(name, live === undefined && config !== undefined && figures.cold(name));
    const lifeFields = { ...(life.state === undefined || (live === undefined && lastError) ? {} : { state: life.state }), ...(life.lastStartMs === undefined ? {} : { lastStartMs: life.lastStartMs }) };
    // `cold` is a server listed from its catalog that never ran here; one that ran and was let go is `closed` (state `stopped`).
    if (live === undefined) return { ...common, ...lifeFields, status: cannotRun ? 'unavailable' : lastError ? 'failed' : life.state === 'cold' ? 'cold' : 'closed', mcpStatus: 'disconnected', entryCount: 0, entrySummary: [] };
    return {
      ...common,
      ...lifeFields,
      // Entries of an older config may still drain; the configured server itself cannot run.
      status: cannotRun ? 'unavailable' : live.status,
      ...(live.status === 'auth_required' ? { errorKind: 'auth_required' as const } : {}),
      mcpStatus: live.mcpStatus === 'CONNECTED' ? 'connected' : live.mcpStatus === 'CONNECTING' ? 'connecting' : 'disconnected',
      entryCount: live.entryCount,
      entrySummary: live.entrySummary.map((entry) => ({
        entryIndex: entry.entryIndex,
        refs: entry.refs,
        status: entry.status,
        sharing: entry.sharing,
        ...(entry.ownerLabel === undefined ? {} : { ownerLabel: entry.ownerLabel }),
        ...(entry.era === undefined ? {} : { era: entry.era }),
        ...(entry.health === undefined ? {} : { health: entry.health }),
        ...(entry.throttled === undefined ? {} : { throttled: entry.throttled }),
      })),
    };
  });
  const b = snapshot.budget;
  return {
    initialized: true,
    ready: figures.ready,
    servers,
    budget: { kind: 'mcp_budget', scope: 'workspace', liveCount: b.liveCount, clientBudget: b.clientBudget, budgetMode: b.budgetMode, status: b.status, bySharing: { ...b.bySharing } },
    sessions: figures.restSessions,
    limits: {
      actors: { live: snapshot.liveActors, max: snapshot.maxActors },
      // What the pool runs with (its own options), not what the config asked for.
      parallelSpawns: { perSession: snapshot.maxParallelSpawnsPerSession },
      actorHeartbeat: { ...snapshot.heartbeat },
      mcpSessions: { open: figures.mcpSessions, max: settings.mcpMaxSessions, perClient: settings.mcpMaxSessionsPerClient },
      sessions: { open: figures.restSessions, perClient: settings.maxSessionsPerClient },
      injectedServers: { live: figures.injectedServers, perRequest: settings.maxInjectedServersPerRequest, perClient: settings.maxInjectedServersPerClient },
    },
  };
}

/** The facts a user acts on (a server that uses roots wants per-workspace sharing), shown only when something was learned. */
function learnedFields(facts: CatalogFacts | undefined): Pick<WorkspaceMcpServer, 'learned'> {
  const learned: NonNullable<WorkspaceMcpServer['learned']> = {
    ...(facts?.usesRoots === true ? { usesRoots: true as const } : {}),
    ...(facts?.makesServerRequests === true ? { makesServerRequests: true as const } : {}),
  };
  return Object.keys(learned).length === 0 ? {} : { learned };
}
