/**
 * The messages that cross threads, carried by {@link RpcChannel}.
 *
 * Control channel (supervisor ⇄ actor, over the Worker / parentPort):
 *   requests  supervisor → actor: {@link ControlOps}
 *   events    actor → supervisor: {@link ActorEvents}
 *   requests  actor → supervisor: {@link SupervisorOps}
 * View channel (PooledConnection ⇄ actor, one MessageChannel per session and entry):
 *   requests  view → actor: {@link ViewOps}
 *   events    actor → view: {@link ViewEvents}
 */
import type { ServerConfig } from './config.js';
import type { WireError } from './errors.js';
import type { DisconnectReason, EntryStatus, ServerSnapshot } from './events.js';

/** Reconnect backoff after a transport loss: the n-th try waits `initialDelayMs × factor^(n-1)`, at most `maxDelayMs`. */
export interface ReconnectPolicy {
  /** Tries before the entry is given up as failed. */
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  /** 1 for a fixed delay. */
  factor: number;
  /** The wait before the first try, when it differs. @default initialDelayMs */
  firstDelayMs?: number | undefined;
}

/** What the supervisor hands an actor when it starts one. */
export interface ActorStartArgs {
  serverName: string;
  entryIndex: number;
  config: ServerConfig;
  /** Wall-clock limit for spawn + connect + initialize + discovery. */
  spawnTimeoutMs: number;
  /** Default per-call timeout when a call gives none. */
  callTimeoutMs: number;
  /** How long a drained entry (no refs) stays warm before it closes. */
  drainDelayMs: number;
  /** Hard idle cap: measured from the first idle moment, not reset by attach/detach. */
  maxIdleMs: number;
  /** Per-step budget of the child shutdown: stdin end → wait → SIGTERM → wait → SIGKILL. */
  shutdownStepMs: number;
  /**
   * The longest message a stdio server may send, in bytes: a longer one is dropped unread and
   * fails the call it answers (`MCPOOL_MESSAGE_TOO_LARGE`). @default 64 MiB
   */
  maxMessageBytes?: number | undefined;
  /** pino level for the actor's logs. */
  logLevel: string;
  /**
   * Reconnects after a transport loss. `firstDelayMs` is the wait before the first try.
   * @default stdio: 3 tries, the first at once, then 500 ms apart; remote: 5 tries, 1 s doubling to 16 s
   */
  reconnect?: ReconnectPolicy | undefined;
  /** The era a cached verdict names for this config (skips the probe for legacy); absent → probe. */
  era?: 'legacy' | 'modern' | undefined;
  /** How long the era probe waits for `server/discover` before it counts the server as legacy. @default a third of `spawnTimeoutMs`, 1–10 s */
  probeTimeoutMs?: number | undefined;
  /** The pool's client declaration: modern `_meta` for views that declare none. */
  client?: ViewClientInfo | undefined;
  /** A `per-workspace` entry's roots: the actor answers the server's `roots/list` with them itself, at any time. */
  roots?: readonly Root[] | undefined;
  /**
   * Tools the config's catalog knows to send their client requests, with the methods each sent:
   * the connection starts with them learned, so other sessions' calls of them wait their turn
   * from the first one (see `asked`).
   */
  askingTools?: Readonly<Record<string, readonly string[]>> | undefined;
  /**
   * The `Authorization` header value for a remote server whose credentials the pool's host
   * supplies (an OAuth access token). A secret: never logged, never in a snapshot.
   */
  authorization?: string | undefined;
}

export interface ActorStartResult {
  snapshot: ServerSnapshot;
  pid: number | undefined;
  /** The protocol era the actor settled on with its server. */
  era?: 'legacy' | 'modern' | undefined;
}

/**
 * What a view declares about its own client, so a modern-era upstream shared by many sessions
 * sees each caller as itself (`params._meta` of every request the view makes).
 * Absent fields take the pool's defaults.
 */
/** A root a client declares (`roots/list`): a `file://` URI and an optional display name. */
export interface Root {
  uri: string;
  name?: string | undefined;
}

export interface ViewClientInfo {
  protocolVersion?: string | undefined;
  capabilities?: Record<string, unknown> | undefined;
  clientInfo?: { name: string; version: string; [field: string]: unknown } | undefined;
  logLevel?: string | undefined;
}

export interface AttachArgs {
  viewId: string;
  sessionId: string;
  /** The actor's end of the view channel (transferred). */
  port: import('node:worker_threads').MessagePort;
  /** The view's own client declaration (modern-era `_meta`). */
  client?: ViewClientInfo | undefined;
  /**
   * Whom the view's session acts for. What the server sends on its own goes only to views of one
   * principal; views without one are the host's own, one principal together.
   */
  principal?: string | undefined;
}

export interface RestartOutcome {
  restarted: boolean;
  /** Why not: 'failed' (the new connection could not start), 'superseded' (closed meanwhile), or the entry's status. */
  reason?: string;
}

export interface CloseArgs {
  reason: string;
}

export interface ControlOps {
  start: { args: ActorStartArgs; result: ActorStartResult };
  attach: { args: AttachArgs; result: { generation: number } };
  detach: { args: { viewId: string }; result: void };
  /** refs fell to 0 (`idle: true`) or rose from 0 (`idle: false`). */
  setIdle: { args: { idle: boolean }; result: { status: EntryStatus } };
  close: { args: CloseArgs; result: void };
  /** End the connection now, without graceful steps: the supervisor ended its process tree already. */
  dispose: { args: { reason: string }; result: void };
  /** Restart the connection in place (old tree swept first); concurrent restarts coalesce. */
  restart: { args: null; result: RestartOutcome };
  /** Answered at once: one round trip to the thread (the bench times a thread's boot with it). */
  ping: { args: null; result: 'pong' };
  /**
   * The last lines the server wrote to stderr (stdio only; empty for remote servers), oldest
   * first, across the reconnects of this entry, with the values of its own env and headers
   * replaced by `[redacted]`.
   */
  stderrTail: { args: null; result: { lines: string[] } };
  /** The supervisor ends the connection with `error` (its token was revoked): views get `failed` with it. */
  fail: { args: { error: WireError }; result: void };
  /** A new `Authorization` value (a refreshed token): used by every later request and reconnect. */
  setAuthorization: { args: { authorization: string }; result: void };
  /**
   * No new token for the calls refused since the last `authRejected`: they fail now, with `error`
   * when given (what to do), else with the server's refusal itself.
   */
  declineAuthorization: { args: { error?: WireError | undefined }; result: void };
}

/** A stdio server's process, as its actor asks for it: what to run, where, with exactly this environment. */
export interface ServerProcessRequest {
  command: string;
  args: string[];
  cwd?: string | undefined;
  env: Record<string, string>;
}

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ChildExit {
  code: number | null;
  signal: string | null;
}

/**
 * Requests an actor sends the supervisor on its control channel. The supervisor spawns an
 * actor's stdio server, so that the process reaps it whatever becomes of the actor's thread; the
 * actor owns the child's stdio, handed over as three Unix sockets it listens on.
 */
export interface SupervisorOps {
  /**
   * Connect to `sockets` (stdin, stdout, stderr), spawn the server on them in its own process
   * group, and report `{pid}` as progress; the answer comes when the process has exited and been
   * reaped. Rejects with `MCPOOL_SPAWN_FAILED` when it cannot start.
   */
  spawnChild: { args: ServerProcessRequest & { sockets: [stdin: string, stdout: string, stderr: string] }; progress: { pid: number }; result: ChildExit };
}

export interface ActorEvents {
  /** Sent right after the child process starts, before initialize. */
  spawned: { pid: number; pgid: number };
  /** A retired connection's process group is gone (after a restart or a transport loss). */
  reaped: { pgid: number };
  /**
   * The remote server refused a call's token: HTTP 401, or 403 with a challenge (a scope the
   * token lacks); `challenge` is its `WWW-Authenticate`. Answered by `setAuthorization` or
   * `declineAuthorization`.
   */
  authRejected: { challenge?: string | undefined; status?: 401 | 403 | undefined };
  /** The actor's machine changed state. */
  status: { status: EntryStatus; generation: number; reason?: string /* a DisconnectReason, or free text */; error?: WireError };
  /** The connection was lost, came back, or failed (the same payload views get). */
  connection: ViewEvents['status'];
  /** The actor is closed and its child is gone; the worker exits next. */
  closed: { reason: string };
  /**
   * The server's lists as a discovery or a list change left them (the same snapshot views get):
   * the pool keeps them as the config's catalog. Lists change rarely, so this costs little.
   */
  lists: ServerSnapshot;
  /** A connection settled its era; `probed` when it came from a probe (a fresh verdict to cache). */
  era: { era: 'legacy' | 'modern'; protocolVersion: string; probed: boolean };
  /** Notifications the server sends are dropped as they are read (a flood), or passed on again; at the end, how many were dropped. */
  throttle: { throttled: boolean; reason?: 'rate' | 'views_backed_up'; dropped?: number };
  /** Notifications the server sent that no single principal's views could be said to own: dropped, never broadcast. */
  unattributed: { dropped: number };
  /**
   * The server sent its client a request (`method`: sampling, elicitation, roots): told once per
   * method, and once per tool newly learned to send it (`tool`: a call of it was in flight), and
   * only after the connection's first `lists`. The pool keeps it in the config's catalog.
   */
  asked: { method: string; tool?: string | undefined };
}

/**
 * A request from a view, forwarded upstream as the JSON-RPC method it names. The deadline is the
 * caller's: the actor arms one timer with `timeoutMs`, progress re-arms it, never past
 * `maxTotalTimeoutMs` from the start.
 */
export interface ViewRequestArgs {
  method: string;
  params?: Record<string, unknown> | undefined;
  timeoutMs?: number | undefined;
  /** @default timeoutMs × 10 */
  maxTotalTimeoutMs?: number | undefined;
  /** Ask the server for progress (sets a progress token upstream). */
  wantProgress?: boolean | undefined;
  /** The caller may cancel: the actor then ties the upstream request to the view's cancel. */
  cancellable?: boolean | undefined;
  /** The caller listens for notifications attributed to this call (logging during it). */
  wantNotifications?: boolean | undefined;
  /**
   * The caller answers the server→client requests attributed to this call itself: the number
   * names the call on the view's side, and comes back with each such request.
   */
  asks?: number | undefined;
}

/** @deprecated A view sends {@link ViewRequestArgs} with method `tools/call`. */
export type CallToolArgs = ViewRequestArgs;

/** A notification from the server, passed on as received. */
export interface UpstreamNotification {
  method: string;
  params?: Record<string, unknown>;
}

/** What travels on a call's progress channel: its progress, or a notification attributed to it. */
export type CallEvent = ({ kind: 'progress' } & ProgressInfo) | { kind: 'notification'; notification: UpstreamNotification };

/** Requests a view sends to its actor. */
export interface ViewOps {
  /** Any MCP request, forwarded as is; the result comes back as the server sent it. */
  request: { args: ViewRequestArgs; result: Record<string, unknown> };
  /** Refcounted upstream per entry; replayed after a reconnect (modern: part of the listen filter). */
  subscribe: { args: { uri: string }; result: void };
  unsubscribe: { args: { uri: string }; result: void };
}

/** Progress payload of a call, as the server sent it. */
export interface ProgressInfo {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * Requests an actor sends to a view: a server→client request attributed to the view, and to the
 * call (its `asks` number) that takes it when one does.
 */
export interface ViewServerOps {
  serverRequest: { args: { method: string; params: Record<string, unknown>; call?: number | undefined }; result: Record<string, unknown> };
}

export interface ViewEvents {
  /** A notification the server sent that no single call can be blamed for. */
  notification: UpstreamNotification;
  /** A resource this view subscribed to changed. */
  resourceUpdated: { uri: string };
  /** A full snapshot; replayed on attach and sent after every change. */
  snapshot: ServerSnapshot;
  /** The connection status changed. */
  status: { status: 'disconnected' | 'reconnected' | 'failed'; generation: number; clientGeneration: number; reason?: DisconnectReason; error?: WireError };
}

/**
 * What a pool writes its logs to: a host's logger, pino or any object with these methods.
 * Without one the pool writes nothing anywhere. `child` adds bindings to every line it logs.
 */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

/** pino's call shapes: fields first and a message, or a message alone. */
export interface LogFn {
  (fields: object, msg?: string): void;
  (msg: string): void;
}

/** The levels a pool logs at, least severe first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** One log line of an actor thread, written by the supervisor to the host's logger. */
export interface LogRecord {
  level: LogLevel;
  msg: string;
  /** The line's own fields and the actor's bindings, as plain JSON. */
  fields: Record<string, unknown>;
}

/** Merged into the actor events above. */
export interface ActorEvents {
  /** A log line of the actor; nothing is sent below the level the supervisor asked for. */
  log: LogRecord;
}
