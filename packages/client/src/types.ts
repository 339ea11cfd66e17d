/**
 * The wire shapes of the daemon's REST control API: the JSON each route takes and answers.
 * The daemon types its responses against these, so the two cannot drift apart silently.
 * Only `import type` from `@mcpool/protocol`: nothing here exists at run time.
 */
import type { BudgetMode, EntryStatus, SharingPolicy, TransportKind } from '@mcpool/protocol';

export type { BudgetMode, EntryStatus, SharingPolicy, TransportKind };

/** A right a token holds: `read` for GETs, `write` for sessions, `admin` for restart, reload and shutdown (each includes the ones before). */
export type Right = 'read' | 'write' | 'admin';

/** The error body of every failed request: one shape, `code` is stable (`MCPOOL_…`). */
export interface ErrorBody {
  statusCode: number;
  code: string;
  /** The HTTP reason phrase of `statusCode`. */
  error: string;
  message: string;
}

/** The MCPServerStatus values, aggregated over every entry of one server name. */
export type McpStatus = 'connected' | 'connecting' | 'disconnected';

/**
 * A server's (or entry's) status in `GET /workspace/mcp`: an entry's status; `auth_required`
 * (the remote server answered HTTP 401 and no token it accepts is known: nothing runs, nothing is
 * retried, until `mcpool auth <server>` or `POST /workspace/mcp/:server/auth`); or, for a server,
 * `unavailable` (its config entry cannot run — a bad field, an unset variable, a command that
 * does not exist — so nothing was started: `lastError` says why, a reload that fixes it starts it).
 */
/** `cold`: a server started on first use that has not started; sessions list it from its catalog. */
export type ServerStatus = EntryStatus | 'auth_required' | 'unavailable' | 'cold';

/** One pool entry of a server name. `entryIndex` is opaque and stable; the fingerprint never leaves the daemon. */
export interface EntrySummaryItem {
  entryIndex: number;
  /** Sessions holding a view on the entry (the daemon's warm hold counts as one). */
  refs: number;
  status: ServerStatus;
  /** Who may share this entry's process: `shared`, `per-principal` (one client's sessions) or `per-session`. */
  sharing: SharingPolicy;
  /**
   * `per-principal` and `per-session` entries: an opaque label of the client or session the entry
   * serves (equal labels, same owner, while the daemon runs). Never a client id, session id or token.
   */
  ownerLabel?: string;
  /** The protocol era its server speaks (`legacy` 2025-11-25 and older, `modern` 2026-07-28), once its connection settled it. */
  era?: 'legacy' | 'modern';
  /** Present when a call to the entry hit its deadline and none has been answered since (a stopped or hung server). */
  health?: 'unresponsive';
  /** Present while the server floods and the pool reads it only as fast as its bound allows. */
  throttled?: true;
}

/** One server cell of `GET /workspace/mcp`. */
export interface WorkspaceMcpServer {
  kind: 'mcp_server';
  name: string;
  /** Aggregated over the entries: any active → active, else draining, spawning, auth_required, failed, closed. */
  status: ServerStatus;
  /** Why the server does not run, as a kind a client can act on: `auth_required` → authorize it. */
  errorKind?: 'auth_required';
  mcpStatus: McpStatus;
  entryCount: number;
  entrySummary: EntrySummaryItem[];
  /** In the current config (false: only sessions that injected it, or an old config, hold it). */
  configured: boolean;
  /** Transport of the configured server, when configured. */
  transport?: TransportKind;
  /**
   * The last start failure of the configured server, if its last start failed; for an
   * `unavailable` server, why it cannot run (`MCPOOL_CONFIG_INVALID`, `MCPOOL_CONFIG_VARIABLE_UNSET`,
   * `MCPOOL_COMMAND_NOT_FOUND`).
   */
  lastError?: { code: string; message: string };
  /**
   * The config file's entry for this running server cannot run (a reload found it broken): the
   * server keeps its last good config, and this says why the new one was not applied.
   */
  configProblem?: { code: string; message: string };
  /**
   * Configured servers: who may share its process now (`shared`, `per-principal`, `per-session`)
   * and why — its config's `sharing`, else the daemon's default from what it knows of the server
   * (its protocol era, what the server is, its tools' annotations).
   */
  sharing?: { policy: SharingPolicy; reason: string };
  /** While a failed start keeps the server from being spawned again: when an acquire may spawn it (ISO time; a restart tries at once). */
  retryAt?: string;
  /** Where the server stands in its life (see {@link ServerLifeState}); absent for a server that failed or cannot run (`status` says why). */
  state?: ServerLifeState;
  /** How long its last start took in this daemon, spawn to ready (ms). */
  lastStartMs?: number;
  /**
   * What the pool learned about a configured server from using it, kept with its catalog (across
   * restarts): it asked its client for roots (`usesRoots`: its config may want
   * `sharing: "per-workspace"`), it sent its client requests (`makesServerRequests`: sampling,
   * elicitation, roots). Absent while nothing was learned.
   */
  learned?: { usesRoots?: true; makesServerRequests?: true };
}

/**
 * A server's life as the daemon tells it: `cold` (listed from its catalog, not started by this
 * daemon), `starting`, `running`, `stopped` (it ran and was let go while idle — no call for its
 * `idleStopMs`, or no session at all; listed from its catalog, the next call starts it again).
 */
export type ServerLifeState = 'cold' | 'starting' | 'running' | 'stopped';

/** The workspace budget cell. Consumers must tolerate other `scope` values. */
export interface WorkspaceBudgetCell {
  kind: 'mcp_budget';
  scope: 'workspace';
  liveCount: number;
  clientBudget: number;
  budgetMode: BudgetMode;
  status: 'ok' | 'warning' | 'exhausted' | 'off';
  /** `liveCount` split by the entries' sharing policy. */
  bySharing: Record<SharingPolicy, number>;
}

/** `GET /workspace/mcp`. `initialized` is true even with no session: the daemon is up. */
export interface WorkspaceMcpStatus {
  initialized: true;
  /** The configured servers have all been started once (ready or failed). */
  ready: boolean;
  servers: WorkspaceMcpServer[];
  budget: WorkspaceBudgetCell;
  /** Daemon sessions open now. */
  sessions: number;
  /** The daemon's admission limits and how much of each is in use. */
  limits: WorkspaceLimits;
}

/** The admission limits of `GET /workspace/mcp` (the `daemon` config section sets them). */
export interface WorkspaceLimits {
  /** Live actor threads (one per pool entry) and their hard cap (`maxActors`). */
  actors: { live: number; max: number };
  /** Servers one session starts at once (`maxParallelSpawns`); the rest wait their turn. */
  parallelSpawns: { perSession: number };
  /** How the supervisor pings actor threads, and how many missed pings in a row end one (`actorHeartbeat`). */
  actorHeartbeat: { intervalMs: number; timeoutMs: number; misses: number };
  /** Open `/mcp` sessions, the cap for all clients together and the cap per client. */
  mcpSessions: { open: number; max: number; perClient: number };
  /** Open REST sessions and the cap per client. */
  sessions: { open: number; perClient: number };
  /** Servers injected by open REST sessions; at most `perRequest` per request, `perClient` per client. */
  injectedServers: { live: number; perRequest: number; perClient: number };
}

/** One entry's outcome in `POST /workspace/mcp/:server/restart`. */
export interface RestartResult {
  entryIndex: number;
  restarted: boolean;
  durationMs: number;
  /** Why it was not restarted: `budget_would_exceed`, `superseded`, `draining`, … */
  reason?: string;
}

/** The legacy restart answer: the name had one entry and no `entryIndex` was asked. */
export interface RestartLegacyResponse {
  restarted: boolean;
  durationMs: number;
  /** Present (true) when the restart was skipped; `reason` says why. */
  skipped?: boolean;
  reason?: string;
}

/** The per-entry restart answer: several entries share the name, or `entryIndex` was given. */
export interface RestartEntriesResponse {
  entries: RestartResult[];
}

export type RestartResponse = RestartLegacyResponse | RestartEntriesResponse;

/** `POST /workspace/mcp/reload-all`: what changed, by server name. */
export interface ReloadResult {
  /** The file read, or null for the built-in default config. */
  source: string | null;
  added: string[];
  removed: string[];
  /** The fingerprint changed: new sessions get a new entry, the old one drains as its sessions leave. */
  changed: string[];
  unchanged: string[];
  /** Daemon settings that changed in the file but need a restart of the daemon to apply. */
  needsRestart: string[];
  /** Servers of the file whose entry cannot run: not applied (the others were). */
  rejected: ReloadRejection[];
}

/** A server a reload could not apply, and why. */
export interface ReloadRejection {
  name: string;
  /** `MCPOOL_CONFIG_INVALID`, `MCPOOL_CONFIG_VARIABLE_UNSET` or `MCPOOL_COMMAND_NOT_FOUND`. */
  code: string;
  message: string;
  /** True: the server runs its last good config, unchanged; false: it is unavailable. */
  keptRunning: boolean;
}

/** `POST /sessions` body. */
export interface CreateSessionRequest {
  /**
   * Servers only this session uses, in the `mcpServers` format; a name that is also configured
   * replaces the configured entry for this session. Never returned by any route. A stdio server
   * runs a command: it needs the `write` right.
   */
  mcpServers?: Record<string, Record<string, unknown>>;
  /** Which configured servers to acquire. @default all of them */
  servers?: string[];
  /** A free label shown in listings. */
  label?: string;
}

/** One server of a daemon session. */
export interface SessionServer {
  name: string;
  /** Injected by this session (its config is never returned). */
  injected: boolean;
  status: 'connected' | 'disconnected' | 'failed' | 'released';
  entryIndex?: number;
  /** This session's tools on that server, after its filters. */
  tools: string[];
  /** Why the acquire failed, when it did. */
  error?: { code: string; message: string };
}

/** A daemon session: one pool session. */
export interface SessionInfo {
  id: string;
  /** The client (token) that created it; `operator` for the daemon's own token. */
  clientId: string;
  createdAt: string;
  label?: string;
  servers: SessionServer[];
}

export interface SessionList {
  sessions: SessionInfo[];
}

/** One session of `GET /workspace/sessions`: a REST session or a `/mcp` one. */
export interface WorkspaceSession {
  kind: 'rest' | 'mcp';
  id: string;
  /** The client (token) that opened it: `operator` for the daemon's own token. */
  clientId: string;
  /** A REST session's label, or the label a `/mcp` client gave its session (the `Mcpool-Session-Label` header). */
  label?: string;
  /** `/mcp` sessions: the MCP client, as it named itself (`clientInfo` of `initialize`, or of a modern request's `_meta`): which editor, which tool. */
  client?: { name: string; version: string };
  /** `/mcp/<server>` sessions: that server. */
  scope?: string;
  /**
   * `/mcp` only. `legacy`: a 2025-11-25 session (`Mcp-Session-Id`); `modern`: the views held for
   * one client's stateless 2026-07-28 requests on one endpoint, with its listen streams.
   */
  era?: 'legacy' | 'modern';
  /** `modern` only: its open `subscriptions/listen` streams. */
  listens?: number;
  createdAt: string;
  lastActivityAt: string;
  servers: { name: string; status: 'connected' | 'connecting' | 'disconnected' | 'failed' | 'released' | 'cold' }[];
}

/** `POST /workspace/sessions/close-idle` body. */
export interface CloseIdleRequest {
  /** Only sessions with no request for at least this long. @default 0 (every idle session) */
  idleForMs?: number;
}

/** `POST /workspace/sessions/close-idle`: the sessions it ended. */
export interface CloseIdleResponse {
  closed: { kind: 'rest' | 'mcp'; id: string }[];
}

/** `GET /workspace/sessions`: REST sessions first, each kind oldest first. */
export interface WorkspaceSessionList {
  sessions: WorkspaceSession[];
}

/** `POST /sessions/:id/tools/call` body. */
export interface ToolCallRequest {
  server: string;
  name: string;
  arguments?: Record<string, unknown>;
  /** @default the daemon's callTimeoutMs */
  timeoutMs?: number;
}

/** `POST /sessions/:id/tools/call`: the MCP result as the server sent it. */
export interface ToolCallResponse {
  result: Record<string, unknown>;
}

/** `GET /workspace/mcp/:server/stderr`: each live entry's last stderr lines, scrubbed. */
export interface StderrTail {
  server: string;
  entries: { entryIndex: number; lines: string[] }[];
}

/** `POST /ui/login-code`: a code that signs a browser in to the dashboard once. */
export interface DashboardCode {
  code: string;
  expiresInMs: number;
}

/** `GET /capabilities`. */
export interface CapabilitiesResponse {
  version: string;
  /** Feature tags, e.g. `mcp_workspace_pool`, `mcp_pool_restart`; unknown tags must be ignored. */
  capabilities: string[];
}

export interface HealthResponse {
  status: 'ok';
  uptimeMs: number;
}

/** `GET /readyz`: 200 when ready, 503 while the configured servers warm up. */
export interface ReadyResponse {
  ready: boolean;
  /** `total` counts the servers that can run; `unavailable` the config's servers that cannot (they never hold readiness back). */
  servers: { total: number; ready: number; failed: number; unavailable: number };
  /** The daemon is stopping (SIGTERM): not ready whatever its servers, so a balancer sends new work elsewhere. */
  draining?: boolean;
}

// --- Events (GET /workspace/mcp/events) ---------------------------------------------------------

export interface EntryEventBase {
  serverName: string;
  entryIndex: number;
}

/** An entry changed state (one per lifecycle change). `previous` is absent for a new entry. */
export interface EntryStatusEvent extends EntryEventBase {
  type: 'entry_status';
  status: EntryStatus | 'gone';
  previous?: EntryStatus;
  refs: number;
}

export interface EntryDisconnectedEvent extends EntryEventBase {
  type: 'disconnected';
  generation: number;
  reason: string;
}

export interface EntryReconnectedEvent extends EntryEventBase {
  type: 'reconnected';
  generation: number;
  clientGeneration: number;
}

export interface EntryFailedEvent extends EntryEventBase {
  type: 'failed';
  generation: number;
  lastError: { code: string; message: string };
}

/** Budget events, workspace-wide. `scope` is absent on old daemons, which meant `session`. */
export interface BudgetWarningEvent {
  type: 'mcp_budget_warning';
  scope?: 'workspace' | 'session';
  sessionId?: string;
  liveCount: number;
  clientBudget: number;
  budgetMode: BudgetMode;
}

export interface ChildRefusedBatchEvent {
  type: 'mcp_child_refused_batch';
  scope?: 'workspace' | 'session';
  sessionId?: string;
  refused: { serverName: string; sessionId: string }[];
  liveCount: number;
  clientBudget: number;
  budgetMode: BudgetMode;
}

/** Budget guardrail events (the `DaemonMcpGuardrailEvent` shape). */
export type BudgetGuardrailEvent = BudgetWarningEvent | ChildRefusedBatchEvent;

/** A server's life state changed (`starting`, `running`, `stopped`), with its last start's cost once it ran. */
export interface ServerStateEvent {
  type: 'server_state';
  serverName: string;
  state: ServerLifeState;
  /** How long its last start took, spawn to ready (ms). */
  lastStartMs?: number;
}

export interface ServerProgressEvent {
  type: 'servers_progress';
  ready: number;
  failed: number;
  total: number;
}

export interface ConfigReloadedEvent {
  type: 'config_reloaded';
  trigger: 'api' | 'signal' | 'file';
  added: string[];
  removed: string[];
  changed: string[];
  /** Servers of the file the reload could not apply (each also has its `server_unavailable` event). */
  rejected?: string[];
}

/**
 * A configured server cannot run (at start, or in a reload): its entry is invalid, names an
 * unset variable or a command that does not exist. `keptRunning`: a reload found a running
 * server's new entry broken, and the server keeps its last good config.
 */
export interface ServerUnavailableEvent {
  type: 'server_unavailable';
  serverName: string;
  code: string;
  message: string;
  keptRunning: boolean;
}

export interface ConfigRejectedEvent {
  type: 'config_rejected';
  trigger: 'api' | 'signal' | 'file';
  message: string;
}

/** A remote server needs authorization (`command` says what to run), or has just been authorized. */
export interface AuthRequiredEvent {
  type: 'auth_required';
  serverName: string;
  command: string;
}

export interface AuthCompletedEvent {
  type: 'auth_completed';
  serverName: string;
}

/** A started authorization failed (the answer was refused, or the token endpoint said no): `message` says why. */
export interface AuthFailedEvent {
  type: 'auth_failed';
  serverName: string;
  message: string;
}

/** `POST /workspace/mcp/:server/auth`: where the user goes to authorize (never a token). */
export type AuthStartResponse =
  | { flow: 'authorization_code'; authorizationUrl: string; expiresAt: string }
  | { flow: 'device_code'; verificationUri: string; verificationUriComplete?: string; userCode: string; expiresAt: string };

export interface ServerRestartedEvent {
  type: 'server_restarted';
  serverName: string;
  entries: RestartResult[];
}

export interface SessionCreatedEvent {
  type: 'session_created';
  sessionId: string;
  clientId: string;
}

export interface SessionClosedEvent {
  type: 'session_closed';
  sessionId: string;
}

/** The stream lost events before this point: refetch `GET /workspace/mcp` rather than trust a delta. */
export interface EventsLostEvent {
  type: 'events_lost';
  reason: 'daemon_restarted' | 'buffer_overflow' | 'unknown_id';
}

export interface ShutdownEvent {
  type: 'shutdown';
  signal?: string;
}

/** Everything the event stream carries. Unknown `type`s may appear later: ignore them. */
export type DaemonEventPayload =
  | EntryStatusEvent
  | EntryDisconnectedEvent
  | EntryReconnectedEvent
  | EntryFailedEvent
  | BudgetWarningEvent
  | ChildRefusedBatchEvent
  | ServerProgressEvent
  | ServerStateEvent
  | ConfigReloadedEvent
  | ServerUnavailableEvent
  | ConfigRejectedEvent
  | ServerRestartedEvent
  | AuthRequiredEvent
  | AuthCompletedEvent
  | AuthFailedEvent
  | SessionCreatedEvent
  | SessionClosedEvent
  | EventsLostEvent
  | ShutdownEvent;

export type DaemonEventType = DaemonEventPayload['type'];

/** One event of the stream: the SSE `id` (for `Last-Event-ID`), its time, and its payload. */
export interface DaemonEvent<P extends DaemonEventPayload = DaemonEventPayload> {
  /** Absent on synthetic events (`events_lost`) that are not replayable. */
  id?: string;
  at: string;
  data: P;
}
