/**
 * Everything here is public: what an IDE extension or agent host imports to pool MCP servers.
 */
export { McpTransportPool } from './pool.js';
export type {
  AcquireOptions,
  DefaultSharing,
  DrainAllOptions,
  DrainAllResult,
  EntrySummary,
  McpTransportPoolOptions,
  PoolBudgetCell,
  PoolSnapshot,
  ReconnectPolicy,
  RestartResult,
  ServerSnapshotSummary,
  SharingDefaultInfo,
} from './pool.js';
export { PooledConnection } from './pooledConnection.js';
export type { CallOptions, ConnectionStatus, PooledConnectionEvent, PooledConnectionEvents, ServerRequestHandler } from './pooledConnection.js';
export { SessionFilter } from './sessionFilter.js';
export type { SessionFields } from './sessionFilter.js';
export { BUDGET_REARM_FRACTION, BUDGET_WARN_FRACTION, WorkspaceBudget } from './budget.js';
export type { BudgetCell, BudgetOptions, BudgetStatus } from './budget.js';
export type { ActorHostOptions } from './actorHost.js';
export {
  ErrorCode,
  MCPCallInterruptedError,
  PoolError,
  isWorkspaceScopedBudgetEvent,
} from '@mcpool/protocol';
export type { ConnectionId, PoolEvent, ServerConfig, SessionTool, SharingPolicy, UpstreamNotification, ViewClientInfo } from '@mcpool/protocol';
export type { LogFn, LogLevel, Logger } from '@mcpool/protocol';
