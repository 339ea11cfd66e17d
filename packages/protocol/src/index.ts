/**
 * Everything here is public: the config schema, fingerprints, wire messages, pool events and
 * error codes shared by every mcpool package. No side effects.
 */
export {
  ConfigError,
  KNOWN_CONFIG_FIELDS,
  interpolate,
  normalizeServerConfig,
  parseConfigText,
  parseServerEntries,
  parseServersDocument,
  serverConfigSchema,
  SHARING_POLICIES,
  START_MODES,
} from './config.js';
export type { ConfigErrorData, ConfigIssue, ConfigParseOptions, ConfigVariables, ConfigWarning, OAuthConfig, ParsedServerEntries, ServerConfig, ServerConfigInput, SharingPolicy, StartMode, TransportKind, TransportSpelling } from './config.js';
export {
  DEFAULT_POOLED_TRANSPORTS,
  HASHED_FIELDS,
  HOST_FIELDS,
  POOL_KEY_FIELDS,
  SESSION_FIELDS,
  connectionIdOf,
  fingerprint,
  isPoolable,
  parseConnectionId,
  sessionFieldsOf,
} from './fingerprint.js';
export type { ConnectionId } from './fingerprint.js';
export { MCPCallInterruptedError, PoolError, errorFromWire, errorToWire, hasCode } from './errors.js';
export { ErrorCode, HTTP_STATUS, JSON_RPC_CODE, JsonRpcCode, httpStatusOf, isErrorCode, jsonRpcCodeOf } from './errorCodes.js';
export type { ClientErrorCode } from './errorCodes.js';
export {
  REQUEST_STATE_REFUSAL,
  draining,
  noSuchServer,
  refusalOf,
  requestStateRefused,
  continuationLost,
  rightMissing,
  resourceNotFound,
  serverForbidden,
  serverNotRunnable,
  serverRequestRefused,
  serverUnavailable,
  shuttingDown,
  unknownName,
  upstreamUnavailable,
} from './refusals.js';
export type { RefusalKind } from './refusals.js';
export { parseBearerChallenge } from './bearerChallenge.js';
export type { BearerChallenge } from './bearerChallenge.js';
export type { CallInterruptedData, PoolErrorOptions, WireError } from './errors.js';
export { isWorkspaceScopedBudgetEvent } from './events.js';
export type {
  AuthEvent,
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
  ChildExit,
  CloseArgs,
  ControlOps,
  LogFn,
  LogLevel,
  LogRecord,
  Logger,
  ProgressInfo,
  ReconnectPolicy,
  Root,
  RestartOutcome,
  ServerProcessRequest,
  SupervisorOps,
  UpstreamNotification,
  ViewClientInfo,
  ViewEvents,
  ViewOps,
  ViewRequestArgs,
  ViewServerOps,
} from './messages.js';
export { MODERN_META } from './modernMeta.js';
