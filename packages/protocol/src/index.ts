/**
 * Everything here is public: the config schema, fingerprints, wire messages, pool events and
 * error codes shared by every mcpool package. No side effects.
 */
export {
  ConfigError,
  KNOWN_CONFIG_FIELDS,
  interpolate,
  normalizeServerConfig,
  parseServersDocument,
  serverConfigSchema,
} from './config.js';
export type { ConfigErrorData, ConfigIssue, ConfigWarning, OAuthConfig, ServerConfig, TransportKind } from './config.js';
export {
  DEFAULT_POOLED_TRANSPORTS,
  HASHED_FIELDS,
  SESSION_FIELDS,
  connectionIdOf,
  fingerprint,
  isPoolable,
  parseConnectionId,
  sessionFieldsOf,
} from './fingerprint.js';
export type { ConnectionId } from './fingerprint.js';
export { ErrorCode, MCPCallInterruptedError, PoolError, errorFromWire, errorToWire, hasCode } from './errors.js';
export type { CallInterruptedData, PoolErrorOptions, WireError } from './errors.js';
export { isWorkspaceScopedBudgetEvent } from './events.js';
export type {
  BudgetEvent,
  BudgetMode,
  BudgetWarningEvent,
  ChildRefusedBatchEvent,
  DisconnectReason,
  EntryEvent,
  EntryEventBase,
  EntryStatus,
  PoolEvent,
  PoolEventType,
  PromptInfo,
  ResourceInfo,
  ResourceTemplateInfo,
  ServerSnapshot,
  SessionTool,
  ToolInfo,
} from './events.js';
export { RpcChannel } from './rpc.js';
export type { RpcChannelOptions, RpcHandler, RpcHandlerContext, RpcPort, RpcRequestOptions } from './rpc.js';
export type {
  ActorEvents,
  ActorStartArgs,
  ActorStartResult,
  AttachArgs,
  CallEvent,
  CallToolArgs,
  CloseArgs,
  ControlOps,
  ProgressInfo,
  RestartOutcome,
  UpstreamNotification,
  ViewEvents,
  ViewOps,
  ViewServerOps,
} from './messages.js';
