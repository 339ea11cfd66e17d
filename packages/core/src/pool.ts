/**
 * `McpTransportPool`, the supervisor: fingerprint routing, refcounts and the reverse index by
 * session, spawn de-duplication, the workspace budget, status aggregation and drainAll.
 * It never proxies a call: each session's `PooledConnection` talks to the entry's actor directly.
 *
 * The acquire rules, with the races an earlier pool hit in production:
 * - one spawn per key however many acquires race (the entry's `ready` promise is the in-flight
 *   spawn); a failed spawn rejects every waiter, stores no entry, and gives back the budget slot
 *   that the spawning acquire reserved (and no other);
 * - the session is indexed before any await and re-checked after it, so a `releaseSession`
 *   racing an acquire never leaks a ref;
 * - terminal states are set synchronously; eviction is by identity, so an old entry's late
 *   events cannot evict its replacement; an attach that races a closing entry gets a new entry.
 */
import { MessageChannel } from 'node:worker_threads';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  DEFAULT_POOLED_TRANSPORTS,
  ErrorCode,
  SHARING_POLICIES,
  PoolError,
  connectionIdOf,
  fingerprint,
  isPoolable,
  normalizeServerConfig,
  sessionFieldsOf,
  type ActorEvents,
  type ActorStartArgs,
  type ActorStartResult,
  type AttachArgs,
  type BudgetEvent,
  type ConnectionId,
  type EntryStatus,
  type LogLevel,
  type Logger,
  type PoolEvent,
  type ReconnectPolicy,
  type ServerConfig,
  type ServerSnapshot,
  type SharingPolicy,
  type TransportKind,
  type ViewClientInfo,
  type WireError,
} from '@mcpool/protocol';
import { ActorHost, type ActorHandle, type ActorHostOptions } from './actorHost.js';
import { WorkspaceBudget, type BudgetCell, type BudgetOptions } from './budget.js';
import { EraCache } from './eraCache.js';
import { GroupLedger, defaultStateDir } from './groupLedger.js';
import { countZombieChildren } from '@mcpool/protocol/processTree';
import { DEFAULT_MAX_LINE_BYTES } from '@mcpool/protocol/lineReader';
import { actorHeapMb } from './actorHeap.js';
import { PooledConnection } from './pooledConnection.js';
import { SILENT_LOGGER, actorLogLevel } from './logging.js';
import type { SessionFields } from './sessionFilter.js';

/** What the pool knows about a server when it picks the sharing policy its config does not set. */
export interface SharingDefaultInfo {
  serverName: string;
  /** The protocol era last seen for this fingerprint; `undefined` when none is known yet. */
  fingerprintEra: 'legacy' | 'modern' | undefined;
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
   * Actor thread hosting. `connectionsPerThread` (default 16) entries share one worker thread,
   * which saves a thread's memory per entry; the trade-off: the entries of one thread die together
   * (a crash, an out-of-memory, a busy loop in any of them) and come back together, their views
   * seeing `disconnected` then `reconnected`. `connectionsPerThread: 1` isolates every entry.
   */
  actorHost?: ActorHostOptions;
  /**
   * Hard cap on live actor threads (one per entry, unpooled ones included; threads still shutting
   * down count until they exit; the one warm spare does not, it is a single fixed thread). Unlike
   * the budget, it refuses in every budget mode: a new entry past it rejects with
   * `MCPOOL_ACTOR_CAP_REACHED`. Sized for a 2-core laptop (~30 MB per thread). @default 64
   */
  maxActors?: number;
  /**
   * Spawns one session may have under way at once: a session that acquires many servers at once
   * (a REST session or a `/mcp` session naming dozens) starts them this many at a time, the rest
   * wait their turn (attaching to an entry that already exists never waits). Sized for a 2-core
   * laptop: each spawn is a thread and a process starting. @default 4
   */
  maxParallelSpawnsPerSession?: number;
  /** How often each actor thread is pinged; a busy-looping thread is caught by it. @default 300 */
  heartbeatIntervalMs?: number;
  /** A ping unanswered this long counts as missed (one missed ping is not a death). @default 700 */
  heartbeatTimeoutMs?: number;
  /**
   * Consecutive missed pings before the actor is declared dead, and only once it has also been
   * silent for that many (interval + timeout) periods plus four times the supervisor's own recent
   * event-loop lateness: a busy host is not taken for a blocked actor. A thread exit is death at once.
   * @default 3
   */
  heartbeatMisses?: number;
  /**
   * OTP-style restart intensity per entry key: more than `maxRestarts` transport losses or actor
   * deaths within `periodMs` and the key stays failed (`MCPOOL_SERVER_FAILED`) until `restartByName`.
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

/** Which server (and, for a `per-principal` server, whose) a token is asked for. */
export interface CredentialTarget {
  serverName: string;
  config: ServerConfig;
  /** Set for a `per-principal` server only: tokens of different principals must not mix. */
  principal: string | undefined;
}

/**
 * The host's token source for remote servers. Values are whole `Authorization` header values
 * (`Bearer …`); the pool sends them to its actor threads and nowhere else (not to logs, events or
 * snapshots).
 */
export interface UpstreamCredentials {
  /** The value to send now (refreshed by the host if it is about to expire), or undefined when there is none. */
  authorization(target: CredentialTarget): Promise<string | undefined>;
  /**
   * The server answered `refused` (undefined: no token was sent) with HTTP 401 and `challenge`
   * (its `WWW-Authenticate`). Return another value to try once (a refreshed token), or undefined:
   * the key is then `auth_required`.
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
  /** Live connection actors (one per entry) and the stdio child processes behind them. */
  liveActors: number;
  /** Live worker threads hosting those actors (several share one; the warm spare is not counted). */
  actorThreads: number;
  /**
   * Whether a spare thread is booted (or booting) for the next connection. One is kept while no
   * thread has room for another connection, from the pool's start and after an entry's end.
   */
  spareThread: boolean;
  /** The hard cap on live actor threads (`maxActors`). */
  maxActors: number;
  /** Spawns one session may have under way at once (`maxParallelSpawnsPerSession`). */
  maxParallelSpawnsPerSession: number;
  /** The heartbeat the supervisor runs on actor threads (`heartbeatIntervalMs`, `heartbeatTimeoutMs`, `heartbeatMisses`). */
  heartbeat: { intervalMs: number; timeoutMs: number; misses: number };
}

/** A key whose restarts exceeded the intensity: refused until a manual restart. */
/** A config whose spawns failed in a row (keyed by name and fingerprint, whoever owned the entry). */
interface SpawnFailure {
  serverName: string;
  failures: number;
  /** `Date.now()` from which an acquire spawns it again. */
  retryAt: number;
  lastError: WireError;
}

interface TrippedKey {
  serverName: string;
  entryIndex: number;
  config: ServerConfig;
  pooled: boolean;
  placement: Placement;
  lastError: WireError;
}

/** A key whose server answered HTTP 401: refused without a spawn until the host has a token. */
interface AuthGate {
  serverName: string;
  entryIndex: number;
  placement: Placement;
  challenge: string | undefined;
}

/** Which sessions an entry may serve: its policy and, when narrower than shared, whose it is. */
interface Placement {
  readonly sharing: SharingPolicy;
  readonly ownerLabel: string | undefined;
}

interface PoolEntry {
  /** The pool key: the connection id, plus the owner for entries that are not shared. */
  readonly id: ConnectionId;
  readonly serverName: string;
  readonly entryIndex: number;
  readonly config: ServerConfig;
  readonly pooled: boolean;
  readonly placement: Placement;
  readonly handle: ActorHandle;
  status: EntryStatus;
  /** What the actor was last told: no refs (`true`) or some. */
  idle: boolean;
  views: Map<string, PooledConnection>;
  ready: Promise<void>;
  budgetHeld: boolean;
  closing: Promise<void> | undefined;
  lastError: WireError | undefined;
  restarting: Promise<RestartResult> | undefined;
  pinging: boolean;
  /** The protocol era the actor settled on. */
  era: 'legacy' | 'modern' | undefined;
  /** Set when the heartbeat gave up on the actor (its exit is then a death, whatever the code). */
  unresponsive?: boolean;
  /** Consecutive pings that went unanswered within the timeout. */
  missedPings: number;
  /** When the actor last answered a ping (or became live). */
  lastPongAt: number;
  /** A call hit its deadline and none has been answered since. */
  callsTimingOut: boolean;
  /** The actor holds back reading the server (it floods). */
  throttled: boolean;
  /** The highest snapshot generation the actor reported; every event of the entry carries it, so it never goes down. */
  generation: number;
  /** The principal of a `per-principal` entry (for its credentials); undefined otherwise. */
  readonly principal: string | undefined;
  /** Which authorization the entry needs: its server and, per principal, whose (unpooled entries of one config share it). */
  readonly authKey: string;
  /** The `Authorization` value the actor holds, when the host's credentials supply one. */
  authorization: string | undefined;
  /** A refusal of the token being handled (one at a time per entry). */
  authRefusal: Promise<void> | undefined;
}

const DEFAULT_CALL_TIMEOUT_MS = 60_000;
/** How often the group ledger records the members of the groups it holds (one `ps`). */
const LEDGER_REFRESH_MS = 5_000;
/** Live actor threads at most: ~30 MB each, 64 is ~2 GB, what a 2-core laptop can carry beside its work. */
const DEFAULT_MAX_ACTORS = 64;
/** Spawns under way per session: two per core of a 2-core laptop. */
const DEFAULT_MAX_PARALLEL_SPAWNS = 4;
const SPAWN_TIMEOUT_STDIO_MS = 30_000;
const SPAWN_TIMEOUT_PACKAGE_RUNNER_MS = 120_000;
const SPAWN_TIMEOUT_REMOTE_MS = 10_000;
const SPAWN_TIMEOUT_MIN_MS = 100;
const SPAWN_TIMEOUT_MAX_MS = 300_000;
/** Extra time the supervisor gives an actor past its own spawn timeout before declaring it hung. */
const ACTOR_SLACK_MS = 5_000;
/** How many times an acquire retries when the entry it found was closing under it. */
const ATTACH_ATTEMPTS = 3;
/** Hex chars of an owner digest shown as an entry's `ownerLabel` (48 bits: labels of one pool do not collide in practice). */
const OWNER_LABEL_CHARS = 12;

/** Commands that may download a package before the server starts. */
const PACKAGE_RUNNERS = /(^|[/\\])(npx|uvx|bunx|pnpx)(\.cmd|\.exe)?$/;

/**
 * One pool of MCP server connections for a host: sessions that acquire the same server config
 * share one entry (one process or remote connection), each with its own filtered view. Drain it
 * with `drainAll()` (or `await using`) when the host shuts down.
 *
 * @example
 * ```ts
 * import { McpTransportPool } from '@mcpool/core';
 *
 * const pool = new McpTransportPool({ drainDelayMs: 30_000 });
 * const memory = await pool.acquire('memory', { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] }, 'session-1');
 * console.log(memory.tools.map((tool) => tool.name));
 * await memory.release();
 * await pool.drainAll();
 * ```
 */
export class McpTransportPool {
  readonly #options: Required<Pick<McpTransportPoolOptions, 'drainDelayMs' | 'maxIdleMs' | 'callTimeoutMs' | 'shutdownStepMs'>> & {
    spawnTimeoutMs: number | undefined;
    pooledTransports: readonly TransportKind[];
  };
  readonly #defaultSharing: DefaultSharing;
  /** Salts owner digests, so neither keys nor labels can be matched to a guessed principal. */
  readonly #ownerSalt = randomBytes(16);
  readonly #logger: Logger;
  /** The host's logger itself (the pool's own lines go to a `component: 'pool'` child). */
  readonly #rootLogger: Logger | undefined;
  readonly #logLevel: LogLevel | 'silent' | undefined;
  readonly #onEvent: ((event: PoolEvent) => void) | undefined;
  readonly #host: ActorHost;
  readonly #budget: WorkspaceBudget;
  readonly #entries = new Map<ConnectionId, PoolEntry>();
  /** Reverse index: session → the entries it holds views on (and acquires under way). */
  readonly #sessions = new Map<string, Set<PoolEntry>>();
  /** Acquires under way per session; `releaseSession` cancels them. */
  readonly #pending = new Map<string, Set<{ cancelled: boolean }>>();
  readonly #viewEntry = new WeakMap<PooledConnection, PoolEntry>();
  /** What each view declared about its client, for its attach to a replacement entry. */
  readonly #viewClient = new WeakMap<PooledConnection, ViewClientInfo>();
  readonly #nextEntryIndex = new Map<string, number>();
  #unpooledSeq = 0;
  #draining = false;
  readonly #tripped = new Map<ConnectionId, TrippedKey>();
  readonly #authGates = new Map<string, AuthGate>();
  readonly #credentials: UpstreamCredentials | undefined;
  readonly #failures = new Map<ConnectionId, number[]>();
  /** Configs whose last spawn failed, by `name::fingerprint`: acquires fail fast until `retryAt`. */
  readonly #spawnFailures = new Map<string, SpawnFailure>();
  readonly #spawnBackoff: { initialMs: number; maxMs: number } | false;
  /** Teardowns under way per key: a replacement spawns only once the old tree is gone. */
  readonly #retiring = new Map<ConnectionId, Promise<void>>();
  #heartbeat: NodeJS.Timeout | undefined;
  #ledgerRefresh: NodeJS.Timeout | undefined;
  readonly #heartbeatIntervalMs: number;
  readonly #heartbeatTimeoutMs: number;
  readonly #heartbeatMisses: number;
  /** When the heartbeat timer last fired, to measure how late the supervisor's own loop runs. */
  #lastTickAt = 0;
  /** The supervisor's recent event-loop lateness (ms): the worst tick, decaying by half per tick. */
  #supervisorLagMs = 0;
  readonly #maxMessageBytes: number;
  /** Whether the pool sizes its threads' heaps for their messages (the host set no `resourceLimits`). */
  readonly #sizesHeaps: boolean;
  readonly #maxActors: number;
  readonly #maxParallelSpawns: number;
  /** Per session: spawns under way and the acquires waiting for one of them to settle. */
  readonly #spawnSlots = new Map<string, { running: number; waiting: (() => void)[] }>();
  readonly #intensity: { maxRestarts: number; periodMs: number };
  readonly #reconnect: { stdio?: ReconnectPolicy | undefined; remote?: ReconnectPolicy | undefined };
  readonly #ledger: GroupLedger | undefined;
  readonly #reapLeftovers: boolean;
  #started = false;
  /** Era verdicts by config fingerprint (in the state dir when there is one). */
  readonly #eras: EraCache;

  /**
   * Checks the options and does nothing else: no disk, no signal, no thread, no timer. The pool's
   * background work begins at {@link start} (or the first acquire).
   */
  constructor(options: McpTransportPoolOptions = {}) {
    const positive = (name: string, value: number | undefined, fallback: number): number => {
      if (value === undefined) return fallback;
      if (!Number.isFinite(value) || value < 0) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.${name} must be a non-negative number, got ${value}`);
      return value;
    };
    this.#options = {
      drainDelayMs: positive('drainDelayMs', options.drainDelayMs, 30_000),
      maxIdleMs: positive('maxIdleMs', options.maxIdleMs, 300_000),
      callTimeoutMs: positive('callTimeoutMs', options.callTimeoutMs, DEFAULT_CALL_TIMEOUT_MS),
      shutdownStepMs: positive('shutdownStepMs', options.shutdownStepMs, 2000),
      spawnTimeoutMs: options.spawnTimeoutMs === undefined ? undefined : positive('spawnTimeoutMs', options.spawnTimeoutMs, 0),
      pooledTransports: options.pooledTransports ?? DEFAULT_POOLED_TRANSPORTS,
    };
    this.#defaultSharing = options.defaultSharing ?? 'shared';
    if (typeof this.#defaultSharing !== 'function') assertSharingPolicy(this.#defaultSharing, 'options.defaultSharing');
    this.#rootLogger = options.logger;
    this.#logLevel = options.logLevel;
    this.#logger = (options.logger ?? SILENT_LOGGER).child({ component: 'pool' });
    this.#onEvent = options.onEvent;
    this.#budget = new WorkspaceBudget(options.budget ?? {}, (event) => this.#emitBudget(event));
    this.#maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_LINE_BYTES;
    if (!Number.isInteger(this.#maxMessageBytes) || this.#maxMessageBytes < 1024) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.maxMessageBytes must be an integer ≥ 1024, got ${options.maxMessageBytes}`);
    }
    // Threads are sized for the messages they take, unless the host sized them itself.
    this.#sizesHeaps = options.actorHost?.resourceLimits === undefined;
    this.#host = new ActorHost(this.#sizesHeaps ? { ...options.actorHost, resourceLimits: { maxOldGenerationSizeMb: actorHeapMb(this.#maxMessageBytes) } } : options.actorHost);
    this.#intensity = options.restartIntensity ?? { maxRestarts: 5, periodMs: 30_000 };
    if (!Number.isInteger(this.#intensity.maxRestarts) || this.#intensity.maxRestarts < 0 || !(this.#intensity.periodMs > 0)) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.restartIntensity must be { maxRestarts: integer ≥ 0, periodMs: > 0 }');
    }
    this.#reconnect = options.reconnect ?? {};
    const backoff = options.spawnBackoff ?? { initialMs: 1000, maxMs: 30_000 };
    if (backoff !== false && (typeof backoff !== 'object' || backoff === null || !(backoff.initialMs >= 0) || !(backoff.maxMs >= backoff.initialMs))) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.spawnBackoff must be false or { initialMs: ≥ 0, maxMs: ≥ initialMs }');
    }
    this.#spawnBackoff = backoff;
    this.#reapLeftovers = options.reapLeftovers === true;
    this.#credentials = options.credentials;
    if (this.#reapLeftovers && options.stateDir === false) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.reapLeftovers needs a stateDir, got stateDir: false');
    // No I/O here: the ledger makes its directory when it records its first group.
    const stateDir = typeof options.stateDir === 'string' ? options.stateDir : this.#reapLeftovers ? defaultStateDir() : undefined;
    this.#ledger = stateDir === undefined ? undefined : new GroupLedger(stateDir);
    this.#eras = new EraCache(stateDir);
    this.#heartbeatTimeoutMs = positive('heartbeatTimeoutMs', options.heartbeatTimeoutMs, 700);
    this.#heartbeatIntervalMs = positive('heartbeatIntervalMs', options.heartbeatIntervalMs, 300);
    this.#heartbeatMisses = options.heartbeatMisses ?? 3;
    if (!Number.isInteger(this.#heartbeatMisses) || this.#heartbeatMisses < 1) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.heartbeatMisses must be an integer ≥ 1, got ${options.heartbeatMisses}`);
    this.#maxActors = options.maxActors ?? DEFAULT_MAX_ACTORS;
    if (!Number.isInteger(this.#maxActors) || this.#maxActors < 1) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.maxActors must be an integer ≥ 1, got ${options.maxActors}`);
    this.#maxParallelSpawns = options.maxParallelSpawnsPerSession ?? DEFAULT_MAX_PARALLEL_SPAWNS;
    if (!Number.isInteger(this.#maxParallelSpawns) || this.#maxParallelSpawns < 1) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.maxParallelSpawnsPerSession must be an integer ≥ 1, got ${options.maxParallelSpawnsPerSession}`);
    }
  }

  /**
   * Starts the pool's background work now rather than at the first acquire: the crash-leftover
   * reap (with `reapLeftovers`), the warm spare thread and the heartbeat (an unref'd timer).
   * Idempotent, synchronous; a no-op once `drainAll()` began.
   */
  start(): void {
    if (this.#started || this.#draining) return;
    this.#started = true;
    if (this.#reapLeftovers && this.#ledger !== undefined) {
      const reaped = this.#ledger.reapLeftovers();
      if (reaped.killed > 0) this.#logger.warn(reaped, 'killed process groups left by a crashed run');
    }
    this.#lastTickAt = performance.now();
    this.#heartbeat = setInterval(() => this.#pingActors(), this.#heartbeatIntervalMs);
    this.#heartbeat.unref();
    if (this.#ledger !== undefined) {
      // Group members (a server's helpers) are recorded as they appear: one `ps` per period, only while groups are held.
      const ledger = this.#ledger;
      this.#ledgerRefresh = setInterval(() => void ledger.refresh(), LEDGER_REFRESH_MS);
      this.#ledgerRefresh.unref();
    }
    this.#host.prewarm();
  }

  /**
   * Gives `sessionId` a view of the server `name` configured by `cfg`. Sessions whose configs have
   * the same fingerprint share one entry (one process), as far as its sharing policy allows:
   * `shared` lets every session in, `per-principal` only the sessions of `options.principal`,
   * `per-session` none (the config's `sharing`, else the pool's `defaultSharing`). Per-session
   * fields (`includeTools`, `excludeTools`, `trust`) shape only this session's view. A session that
   * acquires the same entry twice gets the same view back.
   *
   * Rejects with `MCPOOL_POOL_DRAINING`, `MCPOOL_BUDGET_EXHAUSTED` (mode `enforce`),
   * `MCPOOL_ACTOR_CAP_REACHED` (`maxActors` live threads, any budget mode),
   * `MCPOOL_CONFIG_INVALID`, `MCPOOL_INVALID_ARGUMENT` (a `per-principal` server acquired without
   * a principal), `MCPOOL_SPAWN_FAILED` / `MCPOOL_SPAWN_TIMEOUT` (every waiter of that spawn gets
   * the same error; acquires of that config fail at once with it while `spawnBackoff` lasts, then one spawns again), or `MCPOOL_CONNECTION_RELEASED` when
   * `releaseSession(sessionId)` ran meanwhile.
   *
   * @example
   * ```ts
   * // Two sessions, one process: the second acquire attaches to the first one's entry.
   * const config = { command: 'npx', args: ['-y', '@modelcontextprotocol/server-github'], env: { GITHUB_TOKEN: '${GITHUB_TOKEN}' } };
   * const a = await pool.acquire('github', config, 'session-a');
   * const b = await pool.acquire('github', { ...config, excludeTools: ['delete_repo'] }, 'session-b');
   * a.id === b.id; // true: the same entry, two views
   * ```
   */
  async acquire(name: string, cfg: ServerConfig | Record<string, unknown>, sessionId: string, options: AcquireOptions = {}): Promise<PooledConnection> {
    this.#assertOpen();
    if (typeof name !== 'string' || name.length === 0) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'name must be a non-empty string');
    if (typeof sessionId !== 'string' || sessionId.length === 0) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'sessionId must be a non-empty string');
    if (typeof options !== 'object' || options === null) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options must be an object');
    const { principal, client } = options;
    if (principal !== undefined && (typeof principal !== 'string' || principal.length === 0)) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.principal must be a non-empty string');
    }
    if (client !== undefined && (typeof client !== 'object' || client === null || Array.isArray(client) || !isCloneable(client))) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.client must be a plain object of JSON-like values (it is sent to the actor thread)');
    }
    this.start();
    const config = normalizeServerConfig(cfg, { path: name }).config;
    const fields = sessionFieldsOf(config);
    const pooled = isPoolable(config, this.#options.pooledTransports);
    const fp = fingerprint(config);
    // An unpooled connection is its own entry (one per acquire), so it is per-session already.
    const sharing = pooled ? this.#sharingOf(name, config, fp) : 'per-session';
    let id: ConnectionId;
    let placement: Placement;
    if (!pooled) {
      id = `${name}::unpooled-${++this.#unpooledSeq}` as ConnectionId;
      placement = { sharing, ownerLabel: this.#ownerDigest('session', sessionId).slice(0, OWNER_LABEL_CHARS) };
    } else if (sharing === 'shared') {
      id = connectionIdOf(name, fp);
      placement = { sharing, ownerLabel: undefined };
    } else {
      if (sharing === 'per-principal' && principal === undefined) {
        // Guessing would be wrong either way: one anonymous principal would share the process
        // between unrelated callers, one per session would quietly multiply processes.
        throw new PoolError(ErrorCode.INVALID_ARGUMENT, `${name} is shared per principal: acquire it with options.principal`, {
          data: { serverName: name, sharing },
        });
      }
      const digest = sharing === 'per-principal' ? this.#ownerDigest('principal', principal!) : this.#ownerDigest('session', sessionId);
      // Not a parsable connection id on purpose: the owner part keeps entries of one fingerprint apart.
      id = `${connectionIdOf(name, fp)}::${sharing}:${digest}` as ConnectionId;
      placement = { sharing, ownerLabel: digest.slice(0, OWNER_LABEL_CHARS) };
    }

    const tripped = this.#tripped.get(id);
    if (tripped !== undefined) {
      throw new PoolError(ErrorCode.SERVER_FAILED, `${name} failed more than ${this.#intensity.maxRestarts} times in ${this.#intensity.periodMs} ms and stays failed until restarted: ${tripped.lastError.message}`, {
        data: { serverName: name, entryIndex: tripped.entryIndex, lastError: tripped.lastError },
      });
    }
    const entryPrincipal = sharing === 'per-principal' ? principal : undefined;
    // Unpooled entries have an id per acquire; whether a token is missing is the same for all of them.
    const authKey = entryPrincipal === undefined ? connectionIdOf(name, fp) : `${connectionIdOf(name, fp)}::${this.#ownerDigest('principal', entryPrincipal)}`;
    if (this.#authGates.has(authKey)) throw authRequiredError(name);
    let authRetried = false;
    const token = { cancelled: false };
    let tokens = this.#pending.get(sessionId);
    if (tokens === undefined) this.#pending.set(sessionId, (tokens = new Set()));
    tokens.add(token);
    try {
      for (let attempt = 0; attempt < ATTACH_ATTEMPTS; attempt++) {
        let entry = this.#entries.get(id);
        if (entry !== undefined && isTerminal(entry.status)) {
          this.#evict(entry);
          entry = undefined;
        }
        if (entry === undefined) {
          this.#assertNoBackoff(name, fp);
          // A new entry waits for one of the session's spawn slots; the slot is held until it started or failed.
          const slot = await this.#spawnSlot(sessionId);
          try {
            // A drainAll that started meanwhile wins over the release it implies.
            this.#assertOpen();
            if (token.cancelled) throw new PoolError(ErrorCode.CONNECTION_RELEASED, `session ${sessionId} was released while acquiring ${name}`);
            entry = this.#entries.get(id);
            if (entry !== undefined && isTerminal(entry.status)) {
              this.#evict(entry);
              entry = undefined;
            }
            // Another acquire spawned it while this one waited: attach to that one.
            if (entry === undefined) {
              // A spawn that failed while this one waited for its slot set a backoff.
              this.#assertNoBackoff(name, fp);
              entry = this.#spawn(name, id, config, pooled, sessionId, placement, { principal: entryPrincipal, key: authKey });
              void entry.ready.then(slot, slot);
            } else slot();
          } catch (error) {
            slot();
            throw error;
          }
        }
        const existing = entry.views.get(sessionId);
        if (existing !== undefined) return await shareView(existing, fields);
        // Index before the await: a releaseSession that runs meanwhile sees this acquire.
        this.#index(sessionId, entry);
        try {
          await entry.ready;
        } catch (error) {
          // The token was refused at connect and the host has a refreshed one: one more try.
          if (!authRetried && error instanceof PoolError && error.code === ErrorCode.AUTH_REQUIRED && !this.#authGates.has(authKey)) {
            authRetried = true;
            attempt -= 1;
            continue;
          }
          throw error;
        } finally {
          if (!entry.views.has(sessionId)) this.#unindex(sessionId, entry);
        }
        // A drainAll that started meanwhile wins over the release it implies.
        if (token.cancelled) {
          this.#idleIfUnused(entry);
          this.#assertOpen();
          throw new PoolError(ErrorCode.CONNECTION_RELEASED, `session ${sessionId} was released while acquiring ${name}`);
        }
        this.#assertOpen();
        if (isTerminal(entry.status)) continue;
        // Another acquire of this session attached while we waited: share its view.
        const attached = entry.views.get(sessionId);
        if (attached !== undefined) return await shareView(attached, fields);
        try {
          return await this.#attach(entry, sessionId, fields, client);
        } catch (error) {
          // The entry ended under the attach (closing, or its thread died): take a fresh one.
          const ended = error instanceof PoolError && (error.code === ErrorCode.ENTRY_CLOSING || error.code === ErrorCode.ACTOR_DIED || error.code === ErrorCode.PORT_CLOSED);
          if (ended && !token.cancelled) {
            this.#evict(entry);
            continue;
          }
          throw error;
        }
      }
      throw new PoolError(ErrorCode.ENTRY_UNSTABLE, `${name}: the entry kept closing under ${ATTACH_ATTEMPTS} attaches`);
    } finally {
      tokens.delete(token);
      if (tokens.size === 0 && this.#pending.get(sessionId) === tokens) this.#pending.delete(sessionId);
    }
  }

  /**
   * Waits for one of `sessionId`'s spawn slots (`maxParallelSpawnsPerSession`); resolves with the
   * function that gives it back (idempotent), which wakes the next waiter in arrival order.
   */
  async #spawnSlot(sessionId: string): Promise<() => void> {
    let slots = this.#spawnSlots.get(sessionId);
    if (slots === undefined) this.#spawnSlots.set(sessionId, (slots = { running: 0, waiting: [] }));
    if (slots.running >= this.#maxParallelSpawns) {
      const own = slots;
      await new Promise<void>((resolve) => own.waiting.push(resolve));
    } else slots.running += 1;
    const held = slots;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      // The slot passes straight to the next waiter (`running` unchanged), or is freed.
      const next = held.waiting.shift();
      if (next !== undefined) next();
      else if (--held.running === 0 && this.#spawnSlots.get(sessionId) === held) this.#spawnSlots.delete(sessionId);
    };
  }

  /** Releases one session's view of one entry. Unknown ids are ignored. */
  async release(connectionId: ConnectionId | string, sessionId: string): Promise<void> {
    for (const entry of this.#sessions.get(sessionId) ?? []) {
      if (entry.id !== connectionId) continue;
      const view = entry.views.get(sessionId);
      if (view !== undefined) await this.#releaseView(view);
    }
  }

  /** Releases everything `sessionId` holds and cancels its acquires under way. O(refs of that session). */
  async releaseSession(sessionId: string): Promise<void> {
    for (const token of this.#pending.get(sessionId) ?? []) token.cancelled = true;
    const held = [...(this.#sessions.get(sessionId) ?? [])];
    await Promise.all(
      held.map((entry) => {
        const view = entry.views.get(sessionId);
        return view === undefined ? Promise.resolve() : this.#releaseView(view);
      }),
    );
  }

  /** A fresh, plain snapshot: per server name, its entries with refs and status; the budget cell. */
  getSnapshot(): PoolSnapshot {
    const servers: Record<string, ServerSnapshotSummary> = {};
    const bySharing: Record<SharingPolicy, number> = { shared: 0, 'per-principal': 0, 'per-session': 0 };
    for (const entry of this.#entries.values()) {
      const server = (servers[entry.serverName] ??= { name: entry.serverName, status: 'closed', mcpStatus: 'DISCONNECTED', entryCount: 0, entrySummary: [] });
      server.entryCount += 1;
      server.entrySummary.push({
        entryIndex: entry.entryIndex,
        refs: entry.views.size,
        status: entry.status,
        ...placementFields(entry.placement),
        ...(entry.era ? { era: entry.era } : {}),
        ...(entry.callsTimingOut && !isTerminal(entry.status) ? { health: 'unresponsive' as const } : {}),
        ...(entry.throttled && !isTerminal(entry.status) ? { throttled: true as const } : {}),
      });
      if (entry.budgetHeld) bySharing[entry.placement.sharing] += 1;
    }
    // A key past its restart intensity stays visible as failed until it is restarted.
    for (const tripped of this.#tripped.values()) {
      const server = (servers[tripped.serverName] ??= { name: tripped.serverName, status: 'closed', mcpStatus: 'DISCONNECTED', entryCount: 0, entrySummary: [] });
      server.entryCount += 1;
      server.entrySummary.push({ entryIndex: tripped.entryIndex, refs: 0, status: 'failed', ...placementFields(tripped.placement) });
    }
    const now = Date.now();
    for (const failure of this.#spawnFailures.values()) {
      if (failure.retryAt <= now) continue;
      const server = (servers[failure.serverName] ??= { name: failure.serverName, status: 'failed', mcpStatus: 'DISCONNECTED', entryCount: 0, entrySummary: [] });
      server.spawnBackoff = { failures: failure.failures, retryAt: new Date(failure.retryAt).toISOString(), lastError: failure.lastError };
    }
    for (const gate of this.#authGates.values()) {
      const server = (servers[gate.serverName] ??= { name: gate.serverName, status: 'closed', mcpStatus: 'DISCONNECTED', entryCount: 0, entrySummary: [] });
      server.entryCount += 1;
      server.entrySummary.push({ entryIndex: gate.entryIndex, refs: 0, status: 'auth_required', ...placementFields(gate.placement) });
    }
    for (const server of Object.values(servers)) {
      if (server.entrySummary.length === 0) continue;
      server.entrySummary.sort((a, b) => a.entryIndex - b.entryIndex);
      server.status = aggregateStatus(server.entrySummary.map((e) => e.status));
      server.mcpStatus = server.status === 'active' || server.status === 'draining' ? 'CONNECTED' : server.status === 'spawning' ? 'CONNECTING' : 'DISCONNECTED';
    }
    return {
      servers,
      budget: { ...this.#budget.cell(), bySharing },
      liveActors: this.#host.liveCount,
      actorThreads: this.#host.threadCount,
      spareThread: this.#host.hasSpare,
      maxActors: this.#maxActors,
      maxParallelSpawnsPerSession: this.#maxParallelSpawns,
      heartbeat: { intervalMs: this.#heartbeatIntervalMs, timeoutMs: this.#heartbeatTimeoutMs, misses: this.#heartbeatMisses },
    };
  }

  /**
   * Restarts the entries of `name` (or only `entryIndex`) in place: the old process tree is swept,
   * a new connection opened, and every view gets `disconnected` then `reconnected` with a fresh
   * snapshot. Concurrent restarts of an entry share one. Drain and idle timers are cancelled at
   * the start, and re-armed afterwards for an entry nobody holds. A key that tripped the restart
   * intensity is brought back (`reason: 'reset'`) unless the budget refuses the new connection
   * (`reason: 'budget_would_exceed'`). An unknown name gives `[]`; so does a draining pool.
   */
  async restartByName(name: string, options: { entryIndex?: number } = {}): Promise<RestartResult[]> {
    if (this.#draining) return [];
    // An operator's restart is the "try now" a backing-off server waits for.
    for (const [key, failure] of this.#spawnFailures) if (failure.serverName === name) this.#spawnFailures.delete(key);
    const wanted = (entryIndex: number): boolean => options.entryIndex === undefined || options.entryIndex === entryIndex;
    const work: Promise<RestartResult>[] = [];
    for (const entry of this.#entries.values()) {
      if (entry.serverName !== name || !wanted(entry.entryIndex) || isTerminal(entry.status)) continue;
      entry.restarting ??= this.#restartEntry(entry).finally(() => {
        entry.restarting = undefined;
      });
      work.push(entry.restarting);
    }
    for (const [id, tripped] of this.#tripped) {
      if (tripped.serverName === name && wanted(tripped.entryIndex)) work.push(this.#resetTripped(id, tripped));
    }
    return Promise.all(work);
  }

  async #restartEntry(entry: PoolEntry): Promise<RestartResult> {
    const started = Date.now();
    const done = (restarted: boolean, reason?: string): RestartResult => ({
      entryIndex: entry.entryIndex,
      restarted,
      durationMs: Date.now() - started,
      ...(reason === undefined ? {} : { reason }),
    });
    if (entry.status === 'spawning') {
      await entry.ready.catch(() => undefined);
      return done(false, 'superseded');
    }
    try {
      const outcome = await entry.handle.request<{ restarted: boolean; reason?: string }>('restart', null, {
        timeoutMs: this.#spawnTimeoutFor(entry.config) + this.#options.shutdownStepMs * 3 + ACTOR_SLACK_MS,
      });
      if (outcome.restarted) {
        this.#logger.info({ server: entry.serverName, entryIndex: entry.entryIndex, ms: Date.now() - started }, 'restarted');
        // The restart left `draining`: nobody holds it, so the grace starts again.
        if (entry.status === 'draining') this.#setStatus(entry, 'active');
        entry.idle = false;
        this.#idleIfUnused(entry);
      }
      return done(outcome.restarted, outcome.reason);
    } catch (error) {
      return done(false, error instanceof PoolError ? error.code : String(error));
    }
  }

  async #resetTripped(id: ConnectionId, tripped: TrippedKey): Promise<RestartResult> {
    const started = Date.now();
    const result = (restarted: boolean, reason: string): RestartResult => ({ entryIndex: tripped.entryIndex, restarted, durationMs: Date.now() - started, reason });
    if (this.#budget.wouldRefuse()) return result(false, 'budget_would_exceed');
    this.#tripped.delete(id);
    this.#failures.delete(id);
    if (this.#entries.has(id)) return result(true, 'reset');
    try {
      const entry = this.#spawn(tripped.serverName, id, tripped.config, tripped.pooled, 'restart', tripped.placement);
      await entry.ready;
      this.#idleIfUnused(entry);
      return result(true, 'reset');
    } catch (error) {
      return result(false, error instanceof PoolError ? error.code : 'failed');
    }
  }

  /**
   * The host has a token for `serverName` now: its keys leave `auth_required` (the next acquire
   * connects, with the token from `credentials`), and live entries of it take the current token.
   * Emits `authorized`.
   */
  authorized(serverName: string): void {
    for (const [id, gate] of this.#authGates) if (gate.serverName === serverName) this.#authGates.delete(id);
    this.#emit({ type: 'authorized', serverName });
    void this.refreshAuthorization(serverName);
  }

  /** Hands the current token from `credentials` to every live entry of `serverName` whose token changed (after a refresh). */
  async refreshAuthorization(serverName: string): Promise<void> {
    const live = [...this.#entries.values()].filter((entry) => entry.serverName === serverName && entry.status !== 'spawning' && !isTerminal(entry.status) && this.#usesCredentials(entry.config));
    await Promise.all(
      live.map(async (entry) => {
        const next = await this.#credentials!.authorization(this.#targetOf(entry)).catch(() => undefined);
        if (next === undefined || next === entry.authorization) return;
        entry.authorization = next;
        await entry.handle.request('setAuthorization', { authorization: next }).catch(() => undefined);
      }),
    );
  }

  /**
   * Health figures that need a process listing: zombie children of this process (0 expected: the
   * supervisor spawns every stdio server and reaps it, whatever becomes of its actor thread).
   */
  async getHealth(): Promise<{ liveActors: number; zombies: number; trippedKeys: number }> {
    return { liveActors: this.#host.liveCount, zombies: await countZombieChildren(), trippedKeys: this.#tripped.size };
  }

  /**
   * The last lines the live entries of `name` wrote to stderr, oldest first: at most `lines` per
   * entry (the actor keeps 100), across the entry's reconnects, with the values of the entry's
   * own env and headers replaced by `[redacted]`. Remote servers have none. An entry whose actor
   * does not answer within `timeoutMs` is left out; an unknown name gives `[]`.
   */
  async stderrTail(name: string, options: { lines?: number; timeoutMs?: number } = {}): Promise<{ entryIndex: number; lines: string[] }[]> {
    const { lines = 50, timeoutMs = 2000 } = options;
    const entries = [...this.#entries.values()].filter((entry) => entry.serverName === name && entry.handle.alive).sort((a, b) => a.entryIndex - b.entryIndex);
    const tails = await Promise.all(
      entries.map(async (entry) => {
        try {
          const tail = await entry.handle.request<{ lines: string[] }>('stderrTail', null, { timeoutMs });
          return { entryIndex: entry.entryIndex, lines: lines > 0 ? tail.lines.slice(-lines) : [] };
        } catch {
          return undefined;
        }
      }),
    );
    return tails.filter((tail) => tail !== undefined);
  }

  /**
   * Refuses new acquires (`MCPOOL_POOL_DRAINING`), closes every entry in parallel and ends the
   * actor threads. Entries still alive at the deadline are killed (thread and process group).
   */
  async drainAll(options: DrainAllOptions = {}): Promise<DrainAllResult> {
    const { force = false, timeoutMs = 10_000 } = options;
    // One deadline for the whole drain (spawns in flight, graceful closes, teardowns): each wait
    // gets what is left of it, so the drain never takes a multiple of `timeoutMs`.
    const deadline = Date.now() + timeoutMs;
    const left = (): number => Math.max(0, deadline - Date.now());
    this.#draining = true;
    for (const tokens of this.#pending.values()) for (const token of tokens) token.cancelled = true;
    const entries = [...this.#entries.values()];
    const result: DrainAllResult = { drained: 0, forced: 0, errors: [] };
    await Promise.all(
      entries.map(async (entry) => {
        // Spawns in flight end within the same deadline.
        await withDeadline(entry.ready.catch(() => undefined), left());
        for (const view of entry.views.values()) view.dispose(new PoolError(ErrorCode.POOL_DRAINING, 'the pool is draining'));
        entry.views.clear();
        try {
          if (force) {
            this.#setStatus(entry, 'closed');
            await entry.handle.terminate();
            result.forced += 1;
          } else {
            const graceful = await withDeadline(this.#closeEntry(entry, 'drainAll').then(() => true), left());
            if (graceful === true) result.drained += 1;
            else {
              // Still alive at the deadline: kill the thread and the whole tree.
              await entry.handle.terminate();
              result.forced += 1;
            }
          }
        } catch (error) {
          result.errors.push({ code: ErrorCode.INTERNAL, message: `${entry.serverName}#${entry.entryIndex}: ${(error as Error).message}` });
        } finally {
          this.#evict(entry);
        }
      }),
    );
    this.#sessions.clear();
    clearInterval(this.#heartbeat);
    clearInterval(this.#ledgerRefresh);
    await withDeadline(Promise.allSettled([...this.#retiring.values()]), left());
    await this.#host.close();
    this.#budget.dispose();
    this.#ledger?.dispose();
    return result;
  }

  /** Same as `drainAll()`; lets `await using pool = new McpTransportPool()` work. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#draining || this.#entries.size > 0) await this.drainAll();
  }

  #assertOpen(): void {
    if (this.#draining) throw new PoolError(ErrorCode.POOL_DRAINING, 'the pool is draining and accepts no new acquire');
  }

  #spawnTimeoutFor(config: ServerConfig): number {
    let timeout = this.#options.spawnTimeoutMs;
    if (timeout === undefined) {
      if (config.transport !== 'stdio') timeout = SPAWN_TIMEOUT_REMOTE_MS;
      else if (PACKAGE_RUNNERS.test(config.command ?? '') || /^(pnpm|yarn)$/.test(config.command ?? '') && config.args?.[0] === 'dlx') {
        timeout = SPAWN_TIMEOUT_PACKAGE_RUNNER_MS;
      } else timeout = SPAWN_TIMEOUT_STDIO_MS;
    }
    return Math.min(SPAWN_TIMEOUT_MAX_MS, Math.max(SPAWN_TIMEOUT_MIN_MS, timeout));
  }

  /** The policy of `config`: its own `sharing`, else the pool's default for it. */
  #sharingOf(name: string, config: ServerConfig, fp: string): SharingPolicy {
    if (config.sharing !== undefined) return config.sharing;
    const fallback = this.#defaultSharing;
    if (typeof fallback !== 'function') return fallback;
    return assertSharingPolicy(fallback({ serverName: name, fingerprintEra: this.#eraOf(fp) }), 'options.defaultSharing()');
  }

  /**
   * The protocol era last settled for a fingerprint (the era cache), or `undefined` before any
   * connection of that config settled one: a default that depends on it takes its safe branch.
   */
  #eraOf(fp: string): 'legacy' | 'modern' | undefined {
    return this.#eras.get(fp)?.era;
  }

  /** A salted digest of a principal or session: collision-free as a key part, opaque as a label. */
  #ownerDigest(kind: 'principal' | 'session', owner: string): string {
    return createHash('sha256').update(this.#ownerSalt).update(kind).update('\u0000').update(owner).digest('hex').slice(0, 32);
  }

  /** Remote servers without a configured `Authorization` header take their token from `credentials`. */
  #usesCredentials(config: ServerConfig): boolean {
    if (this.#credentials === undefined || (config.transport !== 'http' && config.transport !== 'sse') || config.oauth?.enabled === false) return false;
    return !Object.keys(config.headers ?? {}).some((header) => header.toLowerCase() === 'authorization');
  }

  #targetOf(entry: PoolEntry): CredentialTarget {
    return { serverName: entry.serverName, config: entry.config, principal: entry.principal };
  }

  /** The key answers 401 and no token helps: refused without a spawn until `authorized`. */
  #closeGate(entry: PoolEntry, challenge: string | undefined): void {
    if (this.#authGates.has(entry.authKey)) return;
    this.#authGates.set(entry.authKey, { serverName: entry.serverName, entryIndex: entry.entryIndex, placement: entry.placement, challenge });
    this.#logger.warn({ server: entry.serverName, entryIndex: entry.entryIndex }, `${entry.serverName} requires authorization: nothing is retried until it is authorized`);
    this.#emit({ type: 'authRequired', serverName: entry.serverName, challenge });
  }

  /** A connect met HTTP 401: a refreshed token gets one more try (by the acquire), else the key waits for authorization. */
  async #spawnRefused(entry: PoolEntry, failure: PoolError): Promise<PoolError> {
    const challenge = (failure.data as { challenge?: string } | undefined)?.challenge;
    if (this.#usesCredentials(entry.config)) {
      const next = await this.#credentials!.refused(this.#targetOf(entry), entry.authorization, challenge).catch(() => undefined);
      if (next !== undefined && next !== entry.authorization) return new PoolError(ErrorCode.AUTH_REQUIRED, `${entry.serverName} refused its token; a refreshed one is ready`, { data: { serverName: entry.serverName } });
    }
    this.#closeGate(entry, challenge);
    return authRequiredError(entry.serverName);
  }

  /** A call met HTTP 401 (expired or revoked token): refresh once, else close the entry and wait for authorization. */
  #callRefused(entry: PoolEntry, challenge: string | undefined): Promise<void> {
    entry.authRefusal ??= (async () => {
      const sent = entry.authorization;
      const next = this.#usesCredentials(entry.config) ? await this.#credentials!.refused(this.#targetOf(entry), sent, challenge).catch(() => undefined) : undefined;
      if (next !== undefined && next !== sent) {
        entry.authorization = next;
        await entry.handle.request('setAuthorization', { authorization: next }).catch(() => undefined);
        return;
      }
      if (isTerminal(entry.status)) return;
      this.#closeGate(entry, challenge);
      // Every entry on that authorization (unpooled ones each have their own connection) holds
      // the same dead token: each actor fails its entry with this error, so every view gets
      // `failed` and what to run.
      const error = authRequiredError(entry.serverName).toWire();
      const holders = [...this.#entries.values()].filter((other) => other.authKey === entry.authKey && !isTerminal(other.status));
      await Promise.all(holders.map((holder) => holder.handle.request('fail', { error }).catch(() => this.#closeEntry(holder, 'auth_required'))));
    })().finally(() => (entry.authRefusal = undefined));
    return entry.authRefusal;
  }

  /** Creates the entry and starts its actor. Synchronous up to the point the entry is visible. */
  #spawn(name: string, id: ConnectionId, config: ServerConfig, pooled: boolean, sessionId: string, placement: Placement, auth?: { principal: string | undefined; key: string }): PoolEntry {
    // Before the budget: a refusal here reserves nothing. The host counts a thread from its
    // creation (synchronous, below) to its exit, so concurrent spawns cannot overshoot.
    if (this.#host.liveCount >= this.#maxActors) {
      throw new PoolError(
        ErrorCode.ACTOR_CAP_REACHED,
        `${name} was refused: the pool already runs ${this.#host.liveCount} actor threads, its cap (maxActors ${this.#maxActors}); release sessions, or raise maxActors (daemon.maxActors, MCPOOL_MAX_ACTORS)`,
        { data: { serverName: name, liveActors: this.#host.liveCount, maxActors: this.#maxActors } },
      );
    }
    if (!this.#budget.tryReserve(name, sessionId)) {
      throw new PoolError(ErrorCode.BUDGET_EXHAUSTED, `the workspace budget of ${this.#budget.clientBudget} live connections is used up; ${name} was refused`, {
        data: { serverName: name, liveCount: this.#budget.liveCount, clientBudget: this.#budget.clientBudget },
      });
    }
    const entryIndex = this.#nextEntryIndex.get(name) ?? 0;
    this.#nextEntryIndex.set(name, entryIndex + 1);
    const spawnTimeoutMs = this.#spawnTimeoutFor(config);
    let handle: ActorHandle;
    try {
      const heapMb = this.#sizesHeaps ? actorHeapMb(config.maxMessageBytes ?? this.#maxMessageBytes) : undefined;
      handle = this.#host.create(this.#rootLogger?.child({ component: 'actor', server: name, entryIndex }), { heapMb });
    } catch (error) {
      // No thread, no entry: the reservation goes back.
      this.#budget.release();
      throw error;
    }
    const entry: PoolEntry = {
      id,
      serverName: name,
      entryIndex,
      config,
      pooled,
      placement,
      handle,
      status: 'spawning',
      idle: false,
      views: new Map(),
      ready: Promise.resolve(),
      budgetHeld: true,
      closing: undefined,
      lastError: undefined,
      restarting: undefined,
      pinging: false,
      missedPings: 0,
      lastPongAt: performance.now(),
      callsTimingOut: false,
      throttled: false,
      generation: 0,
      era: undefined,
      principal: auth?.principal,
      authKey: auth?.key ?? id,
      authorization: undefined,
      authRefusal: undefined,
    };
    this.#entries.set(id, entry);
    this.#emit({ type: 'statusChanged', serverName: name, entryIndex, generation: entry.generation, status: 'spawning' });
    const log = this.#logger.child({ server: name, entryIndex });
    handle.onEvent((ev, data) => this.#onActorEvent(entry, ev, data));
    handle.onExit((code) => this.#onActorExit(entry, code));
    const args: ActorStartArgs = {
      serverName: name,
      entryIndex,
      config,
      spawnTimeoutMs,
      callTimeoutMs: this.#options.callTimeoutMs,
      drainDelayMs: this.#options.drainDelayMs,
      maxIdleMs: this.#options.maxIdleMs,
      shutdownStepMs: this.#options.shutdownStepMs,
      maxMessageBytes: config.maxMessageBytes ?? this.#maxMessageBytes,
      logLevel: actorLogLevel(this.#rootLogger, this.#logLevel),
      reconnect: config.transport === 'stdio' ? this.#reconnect.stdio : this.#reconnect.remote,
      era: this.#eras.get(fingerprint(config))?.era,
    };
    const started = Date.now();
    const spawnKey = connectionIdOf(name, fingerprint(config));
    // A replacement starts only once its predecessor's process tree is gone (bounded).
    const previous = this.#retiring.get(id);
    entry.ready = (previous === undefined ? Promise.resolve() : withDeadline(previous, this.#options.shutdownStepMs * 2 + 3000))
      .then(async () => {
        if (this.#usesCredentials(config)) {
          entry.authorization = await this.#credentials!.authorization(this.#targetOf(entry));
          if (entry.authorization !== undefined) args.authorization = entry.authorization;
        }
        return handle.request<ActorStartResult>('start', args, { timeoutMs: spawnTimeoutMs + ACTOR_SLACK_MS });
      })
      .then((result) => {
        seenGeneration(entry, result.snapshot.generation);
        entry.lastPongAt = performance.now();
        // The server is up: the helpers it started by now join its group's record.
        void this.#ledger?.refresh();
        if (entry.status === 'spawning') this.#setStatus(entry, 'active');
        this.#spawnFailures.delete(spawnKey);
        entry.era = result.era ?? entry.era;
        log.info({ pid: result.pid, era: result.era, ms: Date.now() - started, tools: result.snapshot.tools.length }, 'entry ready');
      })
      .catch(async (error: unknown) => {
        let failure = error instanceof PoolError ? error : new PoolError(ErrorCode.SPAWN_FAILED, String(error), { cause: error });
        // The connection's port closed under its start: its actor thread ended (a thread's ports
        // close before its exit is seen), which is the actor's death, not the server's failure.
        if (failure.code === ErrorCode.PORT_CLOSED) failure = new PoolError(ErrorCode.ACTOR_DIED, `the actor thread of ${name}#${entry.entryIndex} ended during its start: ${failure.message}`, { cause: failure });
        if (failure.code === ErrorCode.AUTH_REQUIRED) failure = await this.#spawnRefused(entry, failure);
        entry.lastError = failure.toWire();
        this.#recordSpawnFailure(spawnKey, name, entry.lastError);
        // The cached era may be what failed: the next spawn of this config probes again.
        this.#eras.forget(fingerprint(config));
        this.#setStatus(entry, 'failed');
        this.#evict(entry);
        // The error goes to every waiter of this spawn; whoever acquired decides what to log.
        log.debug({ code: failure.code, error: failure.message }, 'spawn failed');
        await handle.shutdown('spawn failed', this.#options.shutdownStepMs * 2 + 1000);
        throw failure;
      });
    return entry;
  }

  /** Rejects an acquire that would spawn a config still backing off after a failed spawn, with that spawn's error. */
  #assertNoBackoff(name: string, fp: string): void {
    const failure = this.#spawnFailures.get(connectionIdOf(name, fp));
    if (failure === undefined) return;
    const waitMs = failure.retryAt - Date.now();
    if (waitMs <= 0) return;
    const { code, message } = failure.lastError;
    throw new PoolError(
      code,
      `${name} failed to start ${failure.failures === 1 ? 'once' : `${failure.failures} times in a row`} and is not tried again for ${Math.ceil(waitMs / 1000)} s (restart it to try now): ${message}`,
      { data: { serverName: name, failures: failure.failures, retryAt: new Date(failure.retryAt).toISOString(), lastError: failure.lastError } },
    );
  }

  #recordSpawnFailure(key: string, name: string, lastError: WireError): void {
    if (this.#spawnBackoff === false) return;
    // Not the server's fault: the next acquire may spawn at once.
    // An auth refusal has its own gate, lifted by a token, not by time.
    // A dead actor thread is the restart intensity's to bound, not a reason to hold the server back.
    if (lastError.code === ErrorCode.CONNECTION_RELEASED || lastError.code === ErrorCode.POOL_DRAINING || lastError.code === ErrorCode.AUTH_REQUIRED || lastError.code === ErrorCode.ACTOR_DIED) return;
    const failures = (this.#spawnFailures.get(key)?.failures ?? 0) + 1;
    const delay = Math.min(this.#spawnBackoff.maxMs, this.#spawnBackoff.initialMs * 2 ** Math.min(failures - 1, 30));
    this.#spawnFailures.set(key, { serverName: name, failures, retryAt: Date.now() + delay, lastError });
  }

  async #attach(entry: PoolEntry, sessionId: string, fields: SessionFields, client: ViewClientInfo | undefined): Promise<PooledConnection> {
    const { port1, port2 } = new MessageChannel();
    const view: PooledConnection = new PooledConnection({
      id: entry.id,
      serverName: entry.serverName,
      entryIndex: entry.entryIndex,
      sessionId,
      port: port1,
      fields,
      callTimeoutMs: this.#options.callTimeoutMs,
      transport: entry.config.transport,
      url: entry.config.url ?? entry.config.httpUrl,
      onRelease: (released) => this.#releaseView(released),
      logger: this.#logger,
      // The view may move to a replacement entry: outcomes count for the one it is on now.
      onCallOutcome: (outcome) => {
        const current = this.#viewEntry.get(view);
        if (current !== undefined) this.#onCallOutcome(current, outcome);
      },
      onPortLost: (lost) => this.#willReattach(lost),
    });
    this.#viewEntry.set(view, entry);
    if (client !== undefined) this.#viewClient.set(view, client);
    // Refs and index change synchronously, so the drain decision never sees a stale count.
    entry.views.set(sessionId, view);
    this.#index(sessionId, entry);
    try {
      const wake = entry.idle;
      if (wake) {
        entry.idle = false;
        entry.handle.ref();
      }
      const attach: AttachArgs = { viewId: randomUUID(), sessionId, port: port2, ...(client === undefined ? {} : { client }) };
      // An idle entry's actor may be ending it (its drain timer): only an answered attach tells,
      // and a refused one sends this acquire to a fresh entry. An entry in use is not drained, so
      // its attach is refused only when the entry fails, and its other views with it.
      const seed = wake ? undefined : this.#seedOf(entry);
      if (seed !== undefined) {
        // The entry's lists are known here already (a live view of it has them): the new
        // view starts from them and is usable now, without waiting for the actor's thread. The
        // port keeps its order: the actor's replay (the lists at attach time) is its first
        // message, then every change after it; a request sent meanwhile waits in the port.
        view.seed(seed);
        const tell = (): void => this.#attachSeeded(entry, view, attach);
        // Told after this turn: waking the actor's thread now lets it take the CPU from the
        // caller's own work on a busy machine (a woken thread may preempt its waker).
        setImmediate(tell);
        return view;
      }
      // Same channel as the attach below, so the actor leaves `draining` before it attaches.
      if (wake) void entry.handle.request('setIdle', { idle: false }).catch(() => undefined);
      await entry.handle.request('attach', attach, { transfer: [port2], timeoutMs: 10_000 });
      await view.ready;
      return view;
    } catch (error) {
      const failure = error instanceof PoolError ? error : new PoolError(ErrorCode.INTERNAL, String(error), { cause: error });
      if (entry.views.get(sessionId) === view) {
        entry.views.delete(sessionId);
        this.#unindex(sessionId, entry);
        view.dispose(failure);
        this.#idleIfUnused(entry);
      }
      throw failure;
    }
  }

  /** The newest snapshot a new view of `entry` may start from: a connected view's, when it has one. */
  #seedOf(entry: PoolEntry): ServerSnapshot | undefined {
    let seed: ServerSnapshot | undefined;
    for (const other of entry.views.values()) {
      const snapshot = other.seedSnapshot;
      if (snapshot !== undefined && (seed === undefined || snapshot.generation > seed.generation)) seed = snapshot;
    }
    return seed;
  }

  /** Tells the actor of a view that was seeded, unless the view was released meanwhile (its port then closes and the actor never sees it). */
  #attachSeeded(entry: PoolEntry, view: PooledConnection, attach: AttachArgs): void {
    if (entry.views.get(attach.sessionId) !== view) {
      attach.port.close();
      return;
    }
    entry.handle.request('attach', attach, { transfer: [attach.port], timeoutMs: 10_000 }).catch((error: unknown) => this.#attachRefused(entry, view, error));
  }

  /**
   * A seeded view's attach failed after its acquire returned: the view fails (its session sees
   * `failed` and may acquire again). An actor that died is its death handler's: a held entry's
   * replacement adopts the view with the others, or the view's port closes and it fails.
   */
  #attachRefused(entry: PoolEntry, view: PooledConnection, error: unknown): void {
    const failure = error instanceof PoolError ? error : new PoolError(ErrorCode.INTERNAL, String(error), { cause: error });
    const held = entry.views.get(view.sessionId) === view;
    if (held && failure.code === ErrorCode.ACTOR_DIED) return;
    if (held) {
      entry.views.delete(view.sessionId);
      this.#unindex(view.sessionId, entry);
      this.#idleIfUnused(entry);
    }
    if (this.#viewEntry.get(view) === entry) view.fail(failure);
  }

  async #releaseView(view: PooledConnection): Promise<void> {
    const entry = this.#viewEntry.get(view);
    if (entry === undefined) return;
    view.dispose(new PoolError(ErrorCode.CONNECTION_RELEASED, `this connection to ${view.serverName} was released`));
    if (entry.views.get(view.sessionId) !== view) return;
    entry.views.delete(view.sessionId);
    this.#unindex(view.sessionId, entry);
    if (!entry.pooled) {
      // Unpooled connections close at once on release.
      if (entry.views.size === 0) await this.#closeEntry(entry, 'released');
      return;
    }
    this.#idleIfUnused(entry);
  }

  /** refs 1 → 0: the actor starts its drain grace (or an unpooled entry closes). */
  #idleIfUnused(entry: PoolEntry): void {
    if (entry.views.size > 0 || entry.idle || isTerminal(entry.status) || entry.status === 'spawning') return;
    if (!entry.pooled) {
      void this.#closeEntry(entry, 'released');
      return;
    }
    entry.idle = true;
    // Nobody holds it: it must not keep the host alive (a host that exits kills its group).
    entry.handle.unref();
    void entry.handle.request('setIdle', { idle: true }).catch(() => undefined);
  }

  #closeEntry(entry: PoolEntry, reason: string): Promise<void> {
    if (entry.closing === undefined) {
      // Terminal state first, synchronously: no attach can reach this entry from now on.
      if (!isTerminal(entry.status)) this.#setStatus(entry, 'closed');
      this.#evict(entry);
      entry.closing = this.#retire(entry, entry.handle.shutdown(reason, this.#options.shutdownStepMs * 2 + 2000));
    }
    return entry.closing;
  }

  /** Tracks an entry's teardown so its replacement waits for it. */
  #retire(entry: PoolEntry, teardown: Promise<void>): Promise<void> {
    const done = teardown.catch(() => undefined).finally(() => {
      if (this.#retiring.get(entry.id) === done) this.#retiring.delete(entry.id);
      if (entry.handle.pgid !== undefined) this.#ledger?.remove(entry.handle.pgid);
      // A thread whose last connection ended is not reused (nothing of a past connection may
      // linger in a new one): when that leaves no thread with room, the next acquire gets a
      // booted spare, as it would on a pool that had just started.
      if (!this.#draining) this.#host.prewarm();
    });
    this.#retiring.set(entry.id, done);
    return done;
  }

  /** Counts a transport loss or actor death against the key's restart intensity; trips it past the limit. */
  #recordFailure(entry: PoolEntry, lastError: WireError): void {
    const now = Date.now();
    const times = (this.#failures.get(entry.id) ?? []).filter((t) => now - t < this.#intensity.periodMs);
    times.push(now);
    this.#failures.set(entry.id, times);
    if (times.length <= this.#intensity.maxRestarts || this.#tripped.has(entry.id)) return;
    this.#tripped.set(entry.id, { serverName: entry.serverName, entryIndex: entry.entryIndex, config: entry.config, pooled: entry.pooled, placement: entry.placement, lastError });
    this.#logger.error({ server: entry.serverName, entryIndex: entry.entryIndex, failures: times.length, periodMs: this.#intensity.periodMs }, 'restart intensity exceeded: the server stays failed until restarted');
    if (!isTerminal(entry.status)) {
      entry.lastError = lastError;
      this.#emit({ type: 'failed', serverName: entry.serverName, entryIndex: entry.entryIndex, generation: entry.generation, lastError });
      void this.#closeEntry(entry, 'restart intensity exceeded');
    }
  }

  /**
   * The heartbeat. An actor is declared dead on evidence only: its thread exited (handled by
   * `#onActorExit`), or it missed `heartbeatMisses` pings in a row and has been silent longer than
   * a window that grows with the supervisor's own lateness. A ping is answered by the actor's
   * event loop, so a thread that computes for a second (a big parse) misses one ping and lives; a
   * thread that never yields misses them all. The supervisor measures how late its own timer
   * fires: when it is late, the CPU is starved or its loop is blocked, a ping's timeout says
   * nothing about the actor, and that miss is not counted.
   */
  #pingActors(): void {
    const now = performance.now();
    const lateness = Math.max(0, now - this.#lastTickAt - this.#heartbeatIntervalMs);
    this.#lastTickAt = now;
    this.#supervisorLagMs = Math.max(lateness, this.#supervisorLagMs / 2);
    for (const entry of this.#entries.values()) {
      // A spawning actor may still be loading its modules; its start request has its own deadline.
      if (entry.pinging || !entry.handle.alive || entry.status !== 'active' && entry.status !== 'draining') continue;
      entry.pinging = true;
      const sentAt = performance.now();
      entry.handle
        .request('ping', null, { timeoutMs: this.#heartbeatTimeoutMs })
        .then(() => {
          entry.missedPings = 0;
          entry.lastPongAt = performance.now();
        })
        .catch((error: unknown) => {
          if (!(error instanceof PoolError) || error.code !== ErrorCode.CALL_TIMEOUT || !entry.handle.alive) return;
          // The supervisor itself ran late during this ping: no evidence against the actor.
          if (this.#supervisorLagMs > this.#heartbeatTimeoutMs / 2 || performance.now() - sentAt > this.#heartbeatTimeoutMs * 2) return;
          entry.missedPings += 1;
          const silentMs = performance.now() - Math.max(entry.lastPongAt, 0);
          const windowMs = this.#heartbeatMisses * (this.#heartbeatIntervalMs + this.#heartbeatTimeoutMs) + 4 * this.#supervisorLagMs;
          if (entry.missedPings < this.#heartbeatMisses || silentMs < windowMs) {
            this.#logger.debug({ server: entry.serverName, entryIndex: entry.entryIndex, missed: entry.missedPings, silentMs: Math.round(silentMs) }, 'actor missed a heartbeat');
            return;
          }
          // Blocked (a busy loop, a runaway parse): it cannot serve its views. End it.
          this.#logger.error(
            { server: entry.serverName, entryIndex: entry.entryIndex, missed: entry.missedPings, silentMs: Math.round(silentMs), supervisorLagMs: Math.round(this.#supervisorLagMs) },
            'actor stopped answering its heartbeat',
          );
          entry.unresponsive = true;
          void entry.handle.terminate({ blocked: true });
        })
        .finally(() => {
          entry.pinging = false;
        });
    }
  }

  /** A view saw a call to its entry end: a deadline marks the entry unresponsive, an answer clears it. */
  #onCallOutcome(entry: PoolEntry, outcome: 'answered' | 'timeout'): void {
    const timingOut = outcome === 'timeout';
    if (entry.callsTimingOut === timingOut) return;
    entry.callsTimingOut = timingOut;
    const fields = { server: entry.serverName, entryIndex: entry.entryIndex };
    if (timingOut) this.#logger.warn(fields, 'a call hit its deadline: the entry is unresponsive until a call is answered');
    else this.#logger.info(fields, 'the entry answers calls again');
  }

  /** Removes an entry from routing, by identity, and gives back its budget slot once. */
  #evict(entry: PoolEntry): void {
    if (this.#entries.get(entry.id) === entry) this.#entries.delete(entry.id);
    if (entry.budgetHeld) {
      entry.budgetHeld = false;
      this.#budget.release();
    }
  }

  #onActorEvent(entry: PoolEntry, ev: string, data: unknown): void {
    if (ev === 'spawned') {
      this.#ledger?.add((data as ActorEvents['spawned']).pgid);
      return;
    }
    if (ev === 'reaped') {
      this.#ledger?.remove((data as ActorEvents['reaped']).pgid);
      return;
    }
    if (ev === 'throttle') {
      entry.throttled = (data as ActorEvents['throttle']).throttled;
      return;
    }
    if (ev === 'authRejected') {
      void this.#callRefused(entry, (data as ActorEvents['authRejected']).challenge);
      return;
    }
    if (ev === 'era') {
      const { era, protocolVersion, probed } = data as ActorEvents['era'];
      entry.era = era;
      if (probed) this.#eras.set(fingerprint(entry.config), { era, protocolVersion });
      return;
    }
    if (ev === 'status') {
      const { status, error, generation } = data as ActorEvents['status'];
      seenGeneration(entry, generation);
      if (entry.status === 'spawning' && status === 'active') return; // settled by `ready`
      if (isTerminal(entry.status) && !isTerminal(status)) return;
      this.#setStatus(entry, status);
      if (status === 'closed') {
        this.#evict(entry);
        void this.#retire(entry, entry.handle.shutdown('closed', this.#options.shutdownStepMs + 1000));
      } else if (status === 'failed') {
        entry.lastError = error;
        this.#evict(entry);
      }
      return;
    }
    if (ev === 'connection') {
      const payload = data as ActorEvents['connection'];
      const base = { serverName: entry.serverName, entryIndex: entry.entryIndex, generation: seenGeneration(entry, payload.generation) };
      if (payload.status === 'disconnected') {
        this.#emit({ ...base, type: 'disconnected', reason: payload.reason ?? 'transport_closed' });
        if (payload.reason !== 'restart') {
          this.#recordFailure(entry, { code: ErrorCode.ENTRY_LOST, message: `the transport of ${entry.serverName} was lost` });
        }
      }
      else if (payload.status === 'reconnected') this.#emit({ ...base, type: 'reconnected', clientGeneration: payload.clientGeneration });
      else {
        const lastError = payload.error ?? { code: ErrorCode.SERVER_FAILED, message: 'failed' };
        entry.lastError = lastError;
        // A reconnect met HTTP 401: the key waits for a token like a first connect would.
        if (lastError.code === ErrorCode.AUTH_REQUIRED) this.#closeGate(entry, (lastError.data as { challenge?: string } | undefined)?.challenge);
        this.#emit({ ...base, type: 'failed', lastError });
        for (const view of entry.views.values()) this.#unindex(view.sessionId, entry);
        entry.views.clear();
        void this.#retire(entry, entry.handle.shutdown('failed', this.#options.shutdownStepMs * 2 + 1000));
      }
    }
  }

  #onActorExit(entry: PoolEntry, code: number): void {
    // Whatever the exit, the child outlives its thread: end its tree (a no-op once it is gone).
    const teardown = entry.handle.killTree();
    if (!entry.unresponsive && (entry.status === 'closed' || (entry.status === 'failed' && entry.views.size === 0))) {
      this.#evict(entry);
      void this.#retire(entry, teardown);
      return;
    }
    // The thread died under a live entry: its views' ports closed with it, so their in-flight
    // calls reject as interrupted. A held entry is brought back (see `#bringBack`).
    const held = entry.views.size > 0 && entry.pooled;
    const lastError: WireError = {
      code: ErrorCode.ACTOR_DIED,
      message: entry.unresponsive ? `the actor of ${entry.serverName} stopped answering and was ended` : `the actor of ${entry.serverName} died (exit code ${code})`,
      data: { exitCode: code },
    };
    entry.lastError = lastError;
    this.#setStatus(entry, 'failed');
    this.#evict(entry);
    void this.#retire(entry, teardown);
    // A held entry keeps its views until its replacement takes them (see `#bringBack`).
    if (!held) {
      for (const view of entry.views.values()) this.#unindex(view.sessionId, entry);
      entry.views.clear();
    }
    this.#logger.error({ server: entry.serverName, entryIndex: entry.entryIndex, exitCode: code }, 'actor died');
    this.#emit({ type: 'disconnected', serverName: entry.serverName, entryIndex: entry.entryIndex, generation: entry.generation, reason: 'actor_died' });
    this.#emit({ type: 'failed', serverName: entry.serverName, entryIndex: entry.entryIndex, generation: entry.generation, lastError });
    this.#recordFailure(entry, lastError);
    if (held) this.#bringBack(entry);
  }

  /**
   * Whether a view whose actor port closed under it will be attached to a replacement: when its
   * entry is pooled and was not being ended on purpose (a close, a drain). The death itself (the
   * thread's exit) may be seen before or after the port closes; either way `#bringBack` runs.
   */
  #willReattach(view: PooledConnection): boolean {
    const entry = this.#viewEntry.get(view);
    return entry !== undefined && entry.pooled && !this.#draining && entry.closing === undefined && entry.status !== 'closed' && entry.views.get(view.sessionId) === view;
  }

  /**
   * Starts a replacement for a held entry whose actor died (OTP's permanent child), and attaches
   * the dead entry's views to it: each gets `disconnected`, then the replacement's snapshot and
   * `reconnected`; calls in flight when it died fail as interrupted (never replayed). A session
   * that acquired the server again meanwhile keeps its new view and the old one fails. Not past
   * the restart intensity, nor while draining: the views then fail (`ACTOR_DIED`).
   */
  #bringBack(dead: PoolEntry): void {
    const log = this.#logger.child({ server: dead.serverName });
    const orphan = (error: PoolError): void => {
      for (const view of dead.views.values()) {
        this.#unindex(view.sessionId, dead);
        view.fail(error);
      }
      dead.views.clear();
    };
    const lost = new PoolError(ErrorCode.ACTOR_DIED, dead.lastError?.message ?? `the actor of ${dead.serverName} died`, { data: { serverName: dead.serverName, entryIndex: dead.entryIndex } });
    if (this.#draining || this.#tripped.has(dead.id)) {
      orphan(lost);
      return;
    }
    let replacement = this.#entries.get(dead.id);
    try {
      if (replacement === undefined || isTerminal(replacement.status)) {
        replacement = this.#spawn(dead.serverName, dead.id, dead.config, dead.pooled, 'restart', dead.placement, { principal: dead.principal, key: dead.authKey });
        log.info({ entryIndex: replacement.entryIndex, replaces: dead.entryIndex }, 'a held entry died: started its replacement');
      }
    } catch (error) {
      log.warn({ err: error }, 'a held entry died and could not be replaced');
      orphan(error instanceof PoolError ? error : lost);
      return;
    }
    const target = replacement;
    target.ready.then(
      async () => {
        await this.#adopt(dead, target, lost);
        this.#idleIfUnused(target);
      },
      (error: unknown) => {
        log.warn({ entryIndex: target.entryIndex, err: error }, 'the replacement of a dead entry failed to start');
        orphan(error instanceof PoolError ? error : lost);
      },
    );
  }

  /** Moves the live views of `dead` onto `target`: a new port each, attached like a new view. */
  async #adopt(dead: PoolEntry, target: PoolEntry, lost: PoolError): Promise<void> {
    for (const view of [...dead.views.values()]) {
      const sessionId = view.sessionId;
      dead.views.delete(sessionId);
      this.#unindex(sessionId, dead);
      if (view.status === 'released' || view.status === 'failed') continue;
      if (isTerminal(target.status) || target.views.has(sessionId)) {
        view.fail(lost);
        continue;
      }
      const { port1, port2 } = new MessageChannel();
      view.reattach(port1, target.entryIndex);
      this.#viewEntry.set(view, target);
      target.views.set(sessionId, view);
      this.#index(sessionId, target);
      if (target.idle) {
        target.idle = false;
        target.handle.ref();
        void target.handle.request('setIdle', { idle: false }).catch(() => undefined);
      }
      const client = this.#viewClient.get(view);
      const attach: AttachArgs = { viewId: randomUUID(), sessionId, port: port2, ...(client === undefined ? {} : { client }) };
      try {
        await target.handle.request('attach', attach, { transfer: [port2], timeoutMs: 10_000 });
      } catch (error) {
        if (target.views.get(sessionId) === view) {
          target.views.delete(sessionId);
          this.#unindex(sessionId, target);
        }
        view.fail(error instanceof PoolError ? error : lost);
      }
    }
  }

  /** Every status change of an entry is an event (the daemon logs one line per lifecycle change). */
  #setStatus(entry: PoolEntry, status: EntryStatus): void {
    if (entry.status === status) return;
    entry.status = status;
    this.#emit({
      type: 'statusChanged',
      serverName: entry.serverName,
      entryIndex: entry.entryIndex,
      generation: entry.generation,
      status,
      ...(status === 'failed' && entry.lastError ? { lastError: entry.lastError } : {}),
    });
  }

  #index(sessionId: string, entry: PoolEntry): void {
    let set = this.#sessions.get(sessionId);
    if (set === undefined) this.#sessions.set(sessionId, (set = new Set()));
    set.add(entry);
  }

  #unindex(sessionId: string, entry: PoolEntry): void {
    const set = this.#sessions.get(sessionId);
    if (set === undefined) return;
    set.delete(entry);
    if (set.size === 0) this.#sessions.delete(sessionId);
  }

  #emit(event: PoolEvent): void {
    if (this.#onEvent === undefined) return;
    try {
      this.#onEvent(event);
    } catch (error) {
      this.#logger.error({ err: error, event: event.type }, 'onEvent listener threw');
    }
  }

  #emitBudget(event: BudgetEvent): void {
    this.#logger.warn({ event: event.type, liveCount: event.liveCount, clientBudget: event.clientBudget }, 'budget');
    this.#emit(event);
    // Workspace-scoped: every session hears it, once per view.
    for (const entry of this.#entries.values()) for (const view of entry.views.values()) view.deliverBudgetEvent(event);
  }
}

/** A second acquire by the same session gets its existing view, with the latest per-session fields. */
async function shareView(view: PooledConnection, fields: SessionFields): Promise<PooledConnection> {
  view.updateSessionFields(fields);
  await view.ready;
  return view;
}

function placementFields(placement: Placement): Pick<EntrySummary, 'sharing' | 'ownerLabel'> {
  return placement.ownerLabel === undefined ? { sharing: placement.sharing } : { sharing: placement.sharing, ownerLabel: placement.ownerLabel };
}

/** Whether `value` survives the structured clone that carries it to the actor thread. */
function isCloneable(value: unknown): boolean {
  try {
    structuredClone(value);
    return true;
  } catch {
    return false;
  }
}

function assertSharingPolicy(value: unknown, what: string): SharingPolicy {
  if (!(SHARING_POLICIES as readonly unknown[]).includes(value)) {
    throw new PoolError(ErrorCode.INVALID_ARGUMENT, `${what} must be one of ${SHARING_POLICIES.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as SharingPolicy;
}

/** Records a generation the actor reported; the entry's never goes down (a late event cannot lower it). */
function seenGeneration(entry: PoolEntry, generation: number | undefined): number {
  if (typeof generation === 'number' && generation > entry.generation) entry.generation = generation;
  return entry.generation;
}

/** The error of an acquire that waits for authorization: what to run is in the message and `data`. */
function authRequiredError(serverName: string): PoolError {
  const command = `mcpool auth ${serverName}`;
  return new PoolError(ErrorCode.AUTH_REQUIRED, `${serverName} requires authorization: run \`${command}\` (or POST /workspace/mcp/${encodeURIComponent(serverName)}/auth) and try again`, {
    data: { serverName, command },
  });
}

function isTerminal(status: EntryStatus): boolean {
  return status === 'closed' || status === 'failed';
}

/** Per name: any active entry makes it active, else draining, else spawning, else failed, else closed. */
function aggregateStatus(statuses: EntrySummary['status'][]): EntrySummary['status'] {
  for (const status of ['active', 'draining', 'spawning', 'auth_required', 'failed'] as const) if (statuses.includes(status)) return status;
  return 'closed';
}

async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
