/**
 * The public types of `McpTransportPool`: its options, what `acquire`, `restartByName` and
 * `drainAll` take and give, and the snapshot. Types only.
 */
import type { ActorShares } from './actorShares.js';
import type { LogLevel, Logger, PoolEvent, ReconnectPolicy, ServerConfig, SharingPolicy, TransportKind, WireError, EntryStatus, ViewClientInfo, Root } from '@mcpool/protocol';
import type { ActorHostOptions } from './actorHost.js';
import type { BudgetCell, BudgetOptions } from './budget.js';

/** What the pool knows about a server when it picks the sharing policy its config does not set. */
export interface SharingDefaultInfo {
  serverName: string;
  /** The protocol era last seen for this fingerprint; `undefined` when none is known yet. */
  fingerprintEra: 'legacy' | 'modern' | undefined;
  /** The config being acquired, normalized (what the server is can decide its policy). */
  config: ServerConfig;
}

/** The policy of configs without `sharing`: one for all, or chosen per server. */
export type DefaultSharing = SharingPolicy | ((info: SharingDefaultInfo) => SharingPolicy);

/** Per-acquire options of {@link McpTransportPool.acquire}. */
export interface AcquireOptions {
  /**
   * Who the session acts for (a user, a client id). Sessions of one principal share a
   * `per-principal` server's process; other principals get their own. Required for a
   * `per-principal` server, ignored otherwise. Never shown: snapshots carry an opaque label.
   */
  principal?: string;
  /** What this view declares about its own client (sent with its requests to a modern-era server); absent fields take the pool's defaults. */
  client?: ViewClientInfo;
  /**
   * The session's roots (its workspace folders). A `per-workspace` server is shared by the sessions
   * with the same root URIs only, and the pool answers its `roots/list` with them; absent: no roots
   * (the sessions without roots share one entry). Ignored by servers of other policies.
   */
  roots?: readonly Root[];
  /**
   * Whether an entry this acquire starts counts against the principal's share of `actorShares`.
   * `false` for what the host does on its own account (keeping a server warm for a principal),
   * which no principal asked for. @default true
   */
  countsAgainstShare?: boolean;
}

export interface McpTransportPoolOptions {
  /** How long an entry with no session stays warm. @default 30000 */
  drainDelayMs?: number;
  /** Hard idle cap from the first idle moment; not reset by attach/detach flapping. @default 300000 */
  maxIdleMs?: number;
  /** The workspace budget of live connections. @default { clientBudget: 50, mode: 'warn' } */
  budget?: BudgetOptions;
  /** Transports whose connections are shared. HTTP servers may keep per-connection state, so they are opt-in. @default ['stdio', 'websocket'] */
  pooledTransports?: readonly TransportKind[];
  /**
   * The sharing policy of a config with no `sharing` field. A function is asked on every acquire
   * of such a config, so its answer may follow what the pool learns about the server.
   * A transport that is not pooled is `per-session` whatever the policy says.
   * @default 'shared'
   */
  defaultSharing?: DefaultSharing;
  /** Wall-clock limit on spawn + initialize + discovery. @default stdio 30000, npx/uvx-like commands 120000, remote 10000 */
  spawnTimeoutMs?: number;
  /** Default per-call timeout. @default 60000 */
  callTimeoutMs?: number;
  /** Budget of each child shutdown step (stdin end, SIGTERM). @default 2000 */
  shutdownStepMs?: number;
  /**
   * The longest message a stdio server may send, in bytes, for configs that set no
   * `maxMessageBytes` of their own. A longer one is dropped as it streams (never held whole) and
   * fails the call it answers with `MCPOOL_MESSAGE_TOO_LARGE`; the connection stays up. Actor
   * threads get the heap limit such a message needs (320 MB for 64 MiB: a cap, not memory taken)
   * unless `actorHost.resourceLimits` sets one.
   * @default 67108864 (64 MiB)
   */
  maxMessageBytes?: number;
  /**
   * Where the pool logs (pino satisfies the interface; child loggers carry `component`, `server`,
   * `entryIndex`). Actor threads' lines come here too. Without one the pool writes nothing anywhere.
   */
  logger?: Logger;
  /**
   * The least severe level actor threads send to `logger` (below it a line is not even built).
   * @default the logger's own `level` when it has one (pino), read at each spawn; else 'info'
   */
  logLevel?: LogLevel | 'silent';
  /** Receives entry lifecycle and budget events. A throwing listener is logged, never fatal. */
  onEvent?: (event: PoolEvent) => void;
  /**
   * Actor threads: every entry (unpooled and per-session ones too) has its own worker thread,
   * its failure domain, and one booted spare waits for the next. `workerUrl`, `resourceLimits`
   * and `warmSpare` tune them.
   */
  actorHost?: ActorHostOptions;
  /**
   * Hard cap on live actor threads (one per entry, unpooled ones included; threads still shutting
   * down count until they exit; the one warm spare does not, it is a single fixed thread). Unlike
   * the budget, it refuses in every budget mode: a new entry past it rejects with
   * `MCPOOL_ACTOR_CAP_REACHED`. Sized for a 2-core laptop. @default 64
   */
  maxActors?: number;
  /**
   * Shares of `maxActors` between principals: the live entries one principal's acquires may have
   * started (`MCPOOL_CLIENT_LIMIT_REACHED` past it), and threads under the cap kept for exempt
   * principals (a host's operator; `MCPOOL_ACTOR_CAP_REACHED` for the others). Acquires without a
   * principal and attaches are never held by it. See `ActorShares`. @default no shares
   */
  actorShares?: ActorShares;
  /**
   * Spawns one session may have under way at once: a session that acquires many servers at once
   * (a REST session or a `/mcp` session naming dozens) starts them this many at a time, the rest
   * wait their turn (attaching to an entry that already exists never waits). Sized for a 2-core
   * laptop: each spawn is a thread and a process starting. @default 4
   */
  maxParallelSpawnsPerSession?: number;
  /**
   * How often the supervisor samples each actor thread's liveness: whether its event loop turned
   * (its idle time grew, or it handled a beat), read without waiting for an answer. @default 500
   */
  heartbeatIntervalMs?: number;
  /**
   * How long a thread may go without its event loop turning before it is declared blocked and
   * ended (its entry brought back if a session holds it). Counted, where the kernel tells (Linux),
   * in the thread's own CPU time while it runs and in wall time while it sleeps outside its loop:
   * a thread the machine gives no CPU to is not blamed for the wait, so a saturated machine does
   * not get healthy threads ended; elsewhere, wall time. @default 5000
   */
  heartbeatTimeoutMs?: number;
  /**
   * Samples without any sign of progress in a row, at least, before a thread is declared blocked
   * (so one late sample of a stalled supervisor decides nothing). A thread exit is death at once.
   * @default 3
   */
  heartbeatMisses?: number;
  /**
   * OTP-style restart intensity per entry key: more than `maxRestarts` transport losses or actor
   * thread deaths within `periodMs` and the key stays failed (`MCPOOL_SERVER_FAILED`) until
   * `restartByName`. A thread hosts one entry, so a death counts for that entry alone. The record
   * of a key lives as long as it can be acquired again: an unpooled entry's ends with the entry,
   * a per-session one's once its session holds nothing, and failures leave it after `periodMs`.
   * @default { maxRestarts: 5, periodMs: 30000 }
   */
  restartIntensity?: { maxRestarts: number; periodMs: number };
  /**
   * After a config's spawn fails, acquires of it fail at once with that error (its code, and
   * `data.retryAt`) instead of spawning again, for `initialMs`, doubling per consecutive failure
   * up to `maxMs`: a server that cannot start (an offline `npx`, a missing command) is tried at
   * this pace however many sessions ask for it. A successful spawn or `restartByName` ends it;
   * `false` turns it off. @default { initialMs: 1000, maxMs: 30000 }
   */
  spawnBackoff?: { initialMs: number; maxMs: number } | false;
  /** Reconnect backoff after a transport loss. @default stdio 3 tries, the first at once, then 500 ms apart; remote 5 tries, 1 s doubling to 16 s */
  reconnect?: { stdio?: ReconnectPolicy; remote?: ReconnectPolicy };
  /**
   * Where the pool records the process groups it owns (one file per pool, written from the first
   * spawn), so that a later run can end what a crash left. `false` or unset: no record, nothing
   * on disk. @default none; with `reapLeftovers`, `$XDG_STATE_HOME/mcpool/groups` (else `~/.local/state/mcpool/groups`)
   */
  stateDir?: string | false;
  /**
   * Where the pool keeps each server config's catalog (its lists, server info, era: one file per
   * config fingerprint), so a later pool lists a server without starting it. Unset: in memory only.
   */
  catalogDir?: string | false;
  /**
   * Told each catalog record the pool writes (its fingerprint, and the record as JSON text), so a
   * host of several processes can keep it where all of them read it; they give it back with
   * `adoptCatalog`. Called synchronously: a host that writes to the network does so in the background.
   */
  onCatalogRecord?: (fingerprint: string, text: string) => void;
  /**
   * At start (`start()` or the first acquire), SIGKILL the process groups that pools whose process
   * is gone recorded in `stateDir`, when each leader still matches its record (pid, start time,
   * command line: read from `/proc`, so this reaps on Linux only). Turns the ledger on. @default false
   */
  reapLeftovers?: boolean;
  /**
   * Where tokens for remote servers come from (an OAuth client the host runs). Used for `http`
   * and `sse` servers whose config sets no `Authorization` header and no `oauth: {enabled: false}`.
   * Without it, or when it has no token, a server that answers HTTP 401 makes its key
   * `auth_required`: acquires are refused with `MCPOOL_AUTH_REQUIRED` (nothing reaches the
   * server) until the host calls {@link McpTransportPool.authorized}.
   */
  credentials?: UpstreamCredentials;
}

/** Which server (and, for an entry of one principal, whose) a token is asked for. */
export interface CredentialTarget {
  serverName: string;
  config: ServerConfig;
  /**
   * The principal whose sessions alone use the entry: a `per-principal` entry's, or the acquiring
   * session's for a `per-session` or unpooled one (when it named a principal). Undefined for an
   * entry that every principal shares. A host keeps tokens of different principals apart by it.
   */
  principal: string | undefined;
}

/**
 * The host's token source for remote servers. Values are whole `Authorization` header values
 * (`Bearer …`); the pool sends them to its actor threads and nowhere else (not to logs, events or
 * snapshots).
 */
export interface UpstreamCredentials {
  /**
   * The value to send now (refreshed by the host if it is about to expire), or undefined when there
   * is none. It is a step of the entry's spawn and under its deadline (`spawnTimeoutMs`): `signal`
   * aborts when the deadline passes (pass it to the token request), and the acquire then fails
   * with `MCPOOL_SPAWN_TIMEOUT` whether or not the promise settles.
   */
  authorization(target: CredentialTarget, options?: { signal?: AbortSignal }): Promise<string | undefined>;
  /**
   * The server answered `refused` (undefined: no token was sent) with HTTP 401, or 403 with a
   * challenge (a scope the token lacks), and `challenge` (its `WWW-Authenticate`). Return another
   * value to try once (a newer token), or undefined: authorizing again is needed (a 401 makes the
   * key `auth_required`; a 403 fails that request, saying what to run, and the token serves on).
   * Reject with `MCPOOL_AUTH_FAILED` when authorizing again would not help either: the refused
   * request (or connect) fails with that error and the key is not gated.
   */
  refused(target: CredentialTarget, refused: string | undefined, challenge: string | undefined): Promise<string | undefined>;
}

/** One entry's outcome of `restartByName`. */
export interface RestartResult {
  entryIndex: number;
  restarted: boolean;
  durationMs: number;
  /** Why not restarted ('budget_would_exceed', 'superseded', 'failed', 'draining', …); or 'reset' for a failed entry brought back. */
  reason?: string;
}

export interface DrainAllOptions {
  /** Kill at once instead of the graceful stdin → SIGTERM → SIGKILL steps. @default false */
  force?: boolean;
  /** Deadline for the whole drain; what is still alive then is killed. @default 10000 */
  timeoutMs?: number;
}

export interface DrainAllResult {
  drained: number;
  forced: number;
  errors: WireError[];
}

export interface EntrySummary {
  entryIndex: number;
  refs: number;
  /** `auth_required`: the server answered HTTP 401 and no token it accepts is known; nothing runs. */
  status: EntryStatus | 'auth_required';
  /** Who may share this entry's process. An unpooled entry is `per-session`. */
  sharing: SharingPolicy;
  /**
   * For `per-principal` and `per-session` entries: an opaque label of the principal or session the
   * entry serves. Equal labels are the same principal (or session) within one pool's life; the
   * label reveals nothing of the id itself.
   */
  ownerLabel?: string;
  /** The protocol era the entry's server speaks, once its connection settled it. */
  era?: 'legacy' | 'modern' | undefined;
  /**
   * Present when the entry is live but not serving: a call to it hit its deadline (a stopped or
   * hung server) and no call has succeeded since. Cleared by the next call that gets an answer.
   */
  health?: 'unresponsive';
  /**
   * Present while the server sends more on its own than its sessions may get (a notification
   * flood): the actor reads it only as fast as the bound allows, so it is slowed, others are not.
   */
  throttled?: true;
}

export interface ServerSnapshotSummary {
  name: string;
  /** `auth_required` when no entry is live and one waits for authorization. */
  status: EntryStatus | 'auth_required';
  mcpStatus: 'CONNECTED' | 'CONNECTING' | 'DISCONNECTED';
  entryCount: number;
  entrySummary: EntrySummary[];
  /** Present while a failed spawn keeps this server from being spawned again (see `spawnBackoff`). */
  spawnBackoff?: SpawnBackoffSummary;
}

/** A server whose spawn failed: how often in a row, its last error, and when the next acquire may spawn it. */
export interface SpawnBackoffSummary {
  failures: number;
  /** ISO time from which an acquire spawns it again. */
  retryAt: string;
  lastError: WireError;
}

/** The budget cell, with the live connections split by sharing policy (they add up to `liveCount`). */
export interface PoolBudgetCell extends BudgetCell {
  bySharing: Record<SharingPolicy, number>;
}

export interface PoolSnapshot {
  servers: Record<string, ServerSnapshotSummary>;
  budget: PoolBudgetCell;
  /** Live connection actors: one per entry, each on its own worker thread (the warm spare is not counted). */
  liveActors: number;
  /**
   * Whether a spare thread is booted (or booting) for the next connection. One is kept from the
   * pool's start, and booted again each time a connection took it or an entry ended.
   */
  spareThread: boolean;
  /** The hard cap on live actor threads (`maxActors`). */
  maxActors: number;
  /** Spawns one session may have under way at once (`maxParallelSpawnsPerSession`). */
  maxParallelSpawnsPerSession: number;
  /** The liveness check the supervisor runs on actor threads (`heartbeatIntervalMs`, `heartbeatTimeoutMs`, `heartbeatMisses`). */
  heartbeat: { intervalMs: number; timeoutMs: number; misses: number };
}
