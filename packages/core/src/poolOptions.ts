/**
 * The pool's options, checked eagerly ("options.X must be …") and with their defaults filled in.
 * No side effect: the constructor that calls this touches no disk, thread or timer.
 */
import { resolveActorShares, type ActorShares } from './actorShares.js';
import { DEFAULT_POOLED_TRANSPORTS, ErrorCode, PoolError, SHARING_POLICIES, type LogLevel, type ReconnectPolicy, type SharingPolicy, type TransportKind } from '@mcpool/protocol';
import { DEFAULT_MAX_LINE_BYTES } from '@mcpool/protocol/lineReader';
import type { DefaultSharing, McpTransportPoolOptions } from './poolTypes.js';

const DEFAULT_CALL_TIMEOUT_MS = 60_000;
/** Live actor threads at most: what a 2-core laptop can carry beside its work. */
const DEFAULT_MAX_ACTORS = 64;
/** Spawns under way per session: two per core of a 2-core laptop. */
const DEFAULT_MAX_PARALLEL_SPAWNS = 4;

export interface ResolvedPoolOptions {
  drainDelayMs: number;
  maxIdleMs: number;
  callTimeoutMs: number;
  shutdownStepMs: number;
  maxMessageBytes: number;
  /** Whether the pool sizes its threads' heaps for their messages (the host set no `resourceLimits`). */
  sizesHeaps: boolean;
  spawnTimeoutMs: number | undefined;
  pooledTransports: readonly TransportKind[];
  defaultSharing: DefaultSharing;
  logLevel: LogLevel | 'silent' | undefined;
  maxActors: number;
  actorShares: ActorShares | undefined;
  maxParallelSpawns: number;
  heartbeat: { intervalMs: number; timeoutMs: number; misses: number };
  restartIntensity: { maxRestarts: number; periodMs: number };
  spawnBackoff: { initialMs: number; maxMs: number } | false;
  reconnect: { stdio?: ReconnectPolicy | undefined; remote?: ReconnectPolicy | undefined };
  reapLeftovers: boolean;
}

export function resolvePoolOptions(options: McpTransportPoolOptions): ResolvedPoolOptions {
  const positive = (name: string, value: number | undefined, fallback: number): number => {
    if (value === undefined) return fallback;
    if (!Number.isFinite(value) || value < 0) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.${name} must be a non-negative number, got ${value}`);
    return value;
  };
  const integer = (name: string, value: number | undefined, fallback: number, min: number): number => {
    const resolved = value ?? fallback;
    if (!Number.isInteger(resolved) || resolved < min) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.${name} must be an integer ≥ ${min}, got ${value}`);
    return resolved;
  };
  const defaultSharing = options.defaultSharing ?? 'shared';
  if (typeof defaultSharing !== 'function') assertSharingPolicy(defaultSharing, 'options.defaultSharing');
  const restartIntensity = options.restartIntensity ?? { maxRestarts: 5, periodMs: 30_000 };
  if (!Number.isInteger(restartIntensity.maxRestarts) || restartIntensity.maxRestarts < 0 || !(restartIntensity.periodMs > 0)) {
    throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.restartIntensity must be { maxRestarts: integer ≥ 0, periodMs: > 0 }');
  }
  const spawnBackoff = options.spawnBackoff ?? { initialMs: 1000, maxMs: 30_000 };
  if (spawnBackoff !== false && (typeof spawnBackoff !== 'object' || spawnBackoff === null || !(spawnBackoff.initialMs >= 0) || !(spawnBackoff.maxMs >= spawnBackoff.initialMs))) {
    throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.spawnBackoff must be false or { initialMs: ≥ 0, maxMs: ≥ initialMs }');
  }
  const reapLeftovers = options.reapLeftovers === true;
  if (reapLeftovers && options.stateDir === false) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.reapLeftovers needs a stateDir, got stateDir: false');
  const intervalMs = positive('heartbeatIntervalMs', options.heartbeatIntervalMs, 500);
  if (intervalMs < 1) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.heartbeatIntervalMs must be at least 1, got ${intervalMs}`);
  return {
    drainDelayMs: positive('drainDelayMs', options.drainDelayMs, 30_000),
    maxIdleMs: positive('maxIdleMs', options.maxIdleMs, 300_000),
    callTimeoutMs: positive('callTimeoutMs', options.callTimeoutMs, DEFAULT_CALL_TIMEOUT_MS),
    shutdownStepMs: positive('shutdownStepMs', options.shutdownStepMs, 2000),
    maxMessageBytes: integer('maxMessageBytes', options.maxMessageBytes, DEFAULT_MAX_LINE_BYTES, 1024),
    sizesHeaps: options.actorHost?.resourceLimits === undefined,
    spawnTimeoutMs: options.spawnTimeoutMs === undefined ? undefined : positive('spawnTimeoutMs', options.spawnTimeoutMs, 0),
    pooledTransports: options.pooledTransports ?? DEFAULT_POOLED_TRANSPORTS,
    defaultSharing,
    logLevel: options.logLevel,
    maxActors: integer('maxActors', options.maxActors, DEFAULT_MAX_ACTORS, 1),
    actorShares: resolveActorShares(options.actorShares, integer('maxActors', options.maxActors, DEFAULT_MAX_ACTORS, 1)),
    maxParallelSpawns: integer('maxParallelSpawnsPerSession', options.maxParallelSpawnsPerSession, DEFAULT_MAX_PARALLEL_SPAWNS, 1),
    heartbeat: {
      intervalMs,
      timeoutMs: positive('heartbeatTimeoutMs', options.heartbeatTimeoutMs, 5000),
      misses: integer('heartbeatMisses', options.heartbeatMisses, 3, 1),
    },
    restartIntensity,
    spawnBackoff,
    reconnect: options.reconnect ?? {},
    reapLeftovers,
  };
}

export function assertSharingPolicy(value: unknown, what: string): SharingPolicy {
  if (!(SHARING_POLICIES as readonly unknown[]).includes(value)) {
    throw new PoolError(ErrorCode.INVALID_ARGUMENT, `${what} must be one of ${SHARING_POLICIES.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as SharingPolicy;
}
