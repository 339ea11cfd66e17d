/**
 * The public API of `@mcpool/core`: what an IDE extension or agent host imports to pool MCP
 * servers, and every type those signatures name. Nothing else is exported; a test pins the list.
 */
export { McpTransportPool } from './pool.js';
export type {
  AcquireOptions,
  DefaultSharing,
  DrainAllOptions,
  DrainAllResult,
  EntrySummary,
  CredentialTarget,
  McpTransportPoolOptions,
  PoolBudgetCell,
  PoolSnapshot,
  RestartResult,
  ServerSnapshotSummary,
  SpawnBackoffSummary,
  SharingDefaultInfo,
  UpstreamCredentials,
} from './poolTypes.js';
export type { ActorHostOptions } from './actorHost.js';
export type { ActorShares } from './actorShares.js';
export type { CatalogChange, CatalogFacts, CatalogList, CatalogRecord } from './catalog.js';
export type { BudgetCell, BudgetOptions, BudgetStatus } from './budget.js';
export type {
  CallOptions,
  ConnectionStatus,
  InputRequiredResult,
  PooledConnection,
  PooledConnectionEvent,
  PooledConnectionEvents,
  ServerRequestHandler,
} from './pooledConnection.js';
export type { SessionFields } from './sessionFilter.js';
export { ConfigError, ErrorCode, MCPCallInterruptedError, PoolError, isWorkspaceScopedBudgetEvent } from '@mcpool/protocol';
export type {
  AuthEvent,
  BudgetEvent,
  BudgetMode,
  BudgetWarningEvent,
  CallInterruptedData,
  ChildRefusedBatchEvent,
  ConfigErrorData,
  ConfigIssue,
  ConnectionId,
  DisconnectReason,
  EntryEvent,
  EntryEventBase,
  EntryStatus,
  LogFn,
  LogLevel,
  Logger,
  OAuthConfig,
  PoolErrorOptions,
  PoolEvent,
  ProgressInfo,
  PromptInfo,
  ReconnectPolicy,
  ResourceInfo,
  ResourceTemplateInfo,
  ServerConfig,
  Root,
  ServerConfigInput,
  ServerSnapshot,
  SessionTool,
  SharingPolicy,
  StartMode,
  ToolInfo,
  TransportKind,
  TransportSpelling,
  UpstreamNotification,
  ViewClientInfo,
  WireError,
} from '@mcpool/protocol';
