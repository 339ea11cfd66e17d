/**
 * The pool a daemon runs: its options from the daemon's settings. A daemon owns its machine's
 * servers, so it reaps what a crashed run of it left; its default sharing follows what is known of
 * the server (`sharingDefaults.ts`). Its actor threads take the library's limits, which hold one
 * message of the largest size.
 */
import type { Logger } from 'pino';
import type { McpTransportPoolOptions, PoolEvent, SharingDefaultInfo, SharingPolicy, UpstreamCredentials } from '@mcpool/core';
import type { DaemonSettings } from '../config/daemonConfig.js';
import { holdsNoShare, operatorHeadroom } from './operatorHeadroom.js';
import { decideSharing } from './sharingDefaults.js';

export interface DaemonPoolWiring {
  logger: Logger;
  onEvent: (event: PoolEvent) => void;
  /** The OAuth client of remote servers, when the daemon runs one. */
  credentials?: UpstreamCredentials | undefined;
  /** Where the pool keeps its ledger of owned process groups; `false`: no ledger, no reap. @default the pool's default */
  groupLedgerDir?: string | false | undefined;
  /** Where the pool keeps its servers' catalogs. @default in memory only */
  catalogDir?: string | undefined;
  /** Told each catalog record the pool writes (the shared store keeps it). */
  onCatalogRecord?: ((fingerprint: string, text: string) => void) | undefined;
  /** Extra pool options, over the settings' (tests shorten timings). */
  overrides?: Partial<McpTransportPoolOptions> | undefined;
  /** Whether a principal holds no share of `maxActors` (the operator, `admin` clients). @default the operator only */
  holdsNoShare?: ((principal: string) => boolean) | undefined;
  /** The policy of a config without `sharing`, with what the daemon learned. @default {@link daemonDefaultSharing} */
  defaultSharing?: ((info: SharingDefaultInfo) => SharingPolicy) | undefined;
}

export function daemonPoolOptions(s: Readonly<DaemonSettings>, wiring: DaemonPoolWiring): McpTransportPoolOptions {
  return {
    ...(wiring.credentials === undefined ? {} : { credentials: wiring.credentials }),
    shutdownStepMs: shutdownStepFor(s.shutdownTimeoutMs),
    drainDelayMs: s.drainDelayMs,
    maxIdleMs: s.maxIdleMs,
    budget: { clientBudget: s.budget.clientBudget, mode: s.budget.mode },
    pooledTransports: s.pooledTransports,
    ...(s.spawnTimeoutMs === undefined ? {} : { spawnTimeoutMs: s.spawnTimeoutMs }),
    callTimeoutMs: s.callTimeoutMs,
    maxActors: s.maxActors,
    actorShares: { perPrincipal: s.maxActorsPerClient, reserved: operatorHeadroom(s.maxActors), exempt: wiring.holdsNoShare ?? ((principal) => holdsNoShare(principal, [])) },
    maxParallelSpawnsPerSession: s.maxParallelSpawns,
    heartbeatIntervalMs: s.actorHeartbeat.intervalMs,
    heartbeatTimeoutMs: s.actorHeartbeat.timeoutMs,
    heartbeatMisses: s.actorHeartbeat.misses,
    logger: wiring.logger,
    onEvent: wiring.onEvent,
    defaultSharing: wiring.defaultSharing ?? daemonDefaultSharing,
    // A daemon owns its machine's servers: it ends what a crashed run of it left.
    reapLeftovers: wiring.groupLedgerDir !== false,
    ...(wiring.groupLedgerDir === undefined ? {} : { stateDir: wiring.groupLedgerDir }),
    ...(wiring.catalogDir === undefined ? {} : { catalogDir: wiring.catalogDir }),
    ...(wiring.onCatalogRecord === undefined ? {} : { onCatalogRecord: wiring.onCatalogRecord }),
    ...wiring.overrides,
  };
}

/** The daemon's policy for a server whose config sets no `sharing`, from what the pool knows at an acquire (see `sharingDefaults.ts`). */
export function daemonDefaultSharing(info: SharingDefaultInfo): SharingPolicy {
  return decideSharing(info).policy;
}

/**
 * The budget of each graceful step of a child's stop (stdin end, then SIGTERM) so that both, the
 * SIGKILL after them and the process-tree sweep fit in the shutdown deadline: 2 s (the MCP
 * SDK's own) when there is room, less for a short deadline.
 */
export function shutdownStepFor(shutdownTimeoutMs: number): number {
  return Math.max(50, Math.min(2000, Math.floor((shutdownTimeoutMs - 3000) / 2)));
}

