/**
 * The public API of `@mcpool/client` (a test pins the list): the typed client of the mcpool daemon's REST control API and its
 * event stream. It runs on `fetch` alone — no Node-only import anywhere under this entry (a test
 * guards it) — so a browser or an IDE webview can load it. Its only run-time imports are plain,
 * browser-safe modules: the error-code table and `eventsource-parser`.
 */
export { McpoolClient, isRestartEntries } from './client.js';
export type { EventStream, EventStreamOptions, McpoolClientOptions, RequestOptions } from './client.js';
export { ErrorCode, McpoolHttpError, McpoolRequestError } from './errors.js';
export type { ClientErrorCode } from './errors.js';
export {
  INITIAL_SESSION_VIEW_STATE,
  isWorkspaceScopedBudgetEvent,
  reduceSessionViewState,
  reduceSessionViewStates,
} from './budget.js';
export type { DaemonSessionViewState } from './budget.js';
export type {
  AuthCompletedEvent,
  AuthRequiredEvent,
  AuthStartResponse,
  BudgetGuardrailEvent,
  BudgetMode,
  BudgetWarningEvent,
  CapabilitiesResponse,
  ChildRefusedBatchEvent,
  ConfigRejectedEvent,
  ConfigReloadedEvent,
  CreateSessionRequest,
  DaemonEvent,
  DaemonEventPayload,
  DaemonEventType,
  DashboardCode,
  EntryDisconnectedEvent,
  EntryEventBase,
  EntryFailedEvent,
  EntryReconnectedEvent,
  EntryStatus,
  EntryStatusEvent,
  EntrySummaryItem,
  ErrorBody,
  EventsLostEvent,
  HealthResponse,
  McpStatus,
  ServerStatus,
  ReadyResponse,
  ReloadResult,
  RestartEntriesResponse,
  RestartLegacyResponse,
  RestartResponse,
  RestartResult,
  Right,
  ServerProgressEvent,
  ServerRestartedEvent,
  SessionClosedEvent,
  SessionCreatedEvent,
  SessionInfo,
  SessionList,
  SessionServer,
  SharingPolicy,
  ShutdownEvent,
  StderrTail,
  ToolCallRequest,
  ToolCallResponse,
  TransportKind,
  WorkspaceBudgetCell,
  WorkspaceMcpServer,
  WorkspaceLimits,
  WorkspaceMcpStatus,
  WorkspaceSession,
  WorkspaceSessionList,
} from './types.js';
