/**
 * `Daemon`: one `McpTransportPool` and what the REST API does with it. It holds no HTTP: the
 * routes call these methods. What it owns:
 * - the current config, and a warm hold (one pool session, `mcpool:warm`) on each configured
 *   server so the servers stay up with no client session (`keepWarm`);
 * - daemon sessions: each is one pool session that acquired its servers (the configured ones it
 *   asked for, plus any it injected); deleting it is `pool.releaseSession`;
 * - reload: a changed fingerprint gets a new entry for new acquires while the old one
 *   keeps its sessions and drains as they leave; nothing live is mutated;
 * - the entry watcher: one event and one log line per lifecycle change, from the pool's own
 *   events (never by polling its snapshot);
 * - shutdown in order (calls, streams, sessions, then servers), each server stopped gracefully
 *   within the deadline.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import {
  ErrorCode,
  McpTransportPool,
  PoolError,
  type DrainAllResult,
  type McpTransportPoolOptions,
  type PoolEvent,
  type PooledConnection,
  type ServerConfig,
  type SharingDefaultInfo,
  type SharingPolicy,
} from '@mcpool/core';
import { ConfigError, fingerprint, parseServersDocument } from '@mcpool/protocol';
import type {
  AuthStartResponse,
  CreateSessionRequest,
  DaemonEventPayload,
  EntryStatus,
  ReadyResponse,
  ReloadResult,
  RestartResponse,
  RestartResult,
  SessionInfo,
  SessionServer,
  ToolCallRequest,
  ToolCallResponse,
  WorkspaceMcpServer,
  WorkspaceMcpStatus,
} from '@mcpool/client';
import { OPERATOR_ID, TokenRegistry, clientPrincipals, type Principal } from './auth.js';
import type { DaemonSettings, LoadedConfig } from './config/daemonConfig.js';
import { EventHub } from './events.js';
import { DaemonErrorCode, HttpError } from './http/errors.js';
import { DaemonMetrics } from './metrics.js';
import { OAuthManager } from './oauth/oauthManager.js';
import type { SecretRedactor } from './secrets.js';
import { restFailure } from './telemetry/serverTelemetry.js';
import type { Telemetry } from './telemetry/telemetry.js';

/** The pool session that keeps configured servers warm. Not a daemon session: never listed. */
export const WARM_SESSION_ID = 'mcpool:warm';

/** How many ended entries the watcher remembers (so a late event of one is not taken for a new entry). */
const ENDED_ENTRIES_KEPT = 256;
/** Lines of a server's stderr a failure log line keeps. */
const STDERR_TAIL_LINES = 3;
const STDERR_TAIL_CHARS = 400;

/** Daemon settings a reload applies at once; any other change needs a daemon restart. */
const LIVE_SETTINGS = ['clients', 'allowedHosts', 'allowedOrigins'] as const satisfies readonly (keyof DaemonSettings)[];

/**
 * V8 limits of the daemon's actor threads. The old generation keeps the pool's default bound.
 * The young generation is held at two 1 MB semi-spaces (3 MB in V8's accounting): by default
 * each thread grows it to 32 MB under a burst of calls and keeps the pages, while what a relayed
 * call leaves alive there is a few KB. The main thread gets the same bound from the serve
 * process's heap watch.
 */
export const ACTOR_RESOURCE_LIMITS = { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 3 } as const;

export interface DaemonOptions {
  config: LoadedConfig;
  logger: Logger;
  redactor: SecretRedactor;
  /** The operator token (both rights). */
  operatorToken: string;
  /** Variables client tokens are read from. @default process.env */
  env?: Record<string, string | undefined>;
  /** Reads the config again (reload). @default reloading is refused */
  reloadConfig?: () => Promise<LoadedConfig>;
  /** Where the pool keeps its ledger of owned process groups (crash leftovers are reaped from it at start); `false`: no ledger, no reap. @default the pool's default */
  groupLedgerDir?: string | false;
  /** Extra pool options (tests shorten timings). */
  poolOptions?: Partial<McpTransportPoolOptions>;
  /** @default '0.0.0' */
  version?: string;
  /** OpenTelemetry, when it is on: server spans on `/mcp` and the REST tool call. @default off */
  telemetry?: Telemetry;
  /**
   * Where OAuth grants of remote servers are kept (`<dir>/oauth/`, files 0600). Unset: no OAuth
   * client; a server answering 401 stays `auth_required` and cannot be authorized from here.
   */
  oauthStateDir?: string;
}

interface SessionSlot {
  injected: boolean;
  view?: PooledConnection;
  error?: { code: ErrorCode; message: string };
}

/** What the entry watcher knows of one pool entry. */
interface WatchedEntry {
  status: EntryStatus;
  generation: number;
  /** Its failure has been logged (the pool tells a failure twice: a `failed` event and a status). */
  failureLogged: boolean;
}

/** Where a configured server's warm start stands (what `/readyz` counts). */
type WarmState = 'starting' | 'ready' | 'failed';

interface DaemonSession {
  id: string;
  clientId: string;
  /** Servers it injected (counted against the client's `maxInjectedServersPerClient` while it is open). */
  injectedCount: number;
  createdAt: string;
  label: string | undefined;
  servers: Map<string, SessionSlot>;
  closed: boolean;
  /** When a call through it last started or ended (ms since the epoch); its creation until then. */
  lastActivityAt: number;
}

export class Daemon {
  readonly pool: McpTransportPool;
  /** The OAuth client of remote servers (with `oauthStateDir`). */
  readonly oauth: OAuthManager | undefined;
  readonly events = new EventHub();
  readonly metrics: DaemonMetrics;
  /** Who may call: the operator token and the config's clients (rebuilt on reload). */
  readonly tokens = new TokenRegistry([]);
  readonly version: string;
  /** Set when OpenTelemetry export is on. */
  readonly telemetry: Telemetry | undefined;
  readonly startedAt = Date.now();
  readonly #logger: Logger;
  readonly #redactor: SecretRedactor;
  readonly #operatorToken: string;
  readonly #env: Record<string, string | undefined>;
  readonly #reloadConfig: (() => Promise<LoadedConfig>) | undefined;
  /** Settings the daemon runs with: the start-time ones, with live settings updated on reload. */
  #settings: DaemonSettings;
  #config: LoadedConfig;
  readonly #sessions = new Map<string, DaemonSession>();
  readonly #warm = new Map<string, PooledConnection>();
  readonly #warmErrors = new Map<string, { code: ErrorCode; message: string }>();
  readonly #inFlight = new Map<AbortController, Promise<unknown>>();
  readonly #streams = new Set<() => void>();
  readonly #entries = new Map<string, WatchedEntry>();
  readonly #ended = new Set<string>();
  /** Per configured server, its warm start: `/readyz` follows the current config, reloads included. */
  readonly #warmState = new Map<string, WarmState>();
  #warmStarted = false;
  readonly #authorizedListeners = new Set<(serverName: string) => void>();
  /** Open `/mcp` sessions, as the gateway counts them (0 until a gateway registers). */
  #mcpSessions: () => number = () => 0;
  #mcpSessionsByClient: () => Map<string, number> = () => new Map();
  #accepting = true;
  #chain: Promise<unknown> = Promise.resolve();
  #closing: Promise<DrainAllResult> | undefined;

  constructor(options: DaemonOptions) {
    this.#config = options.config;
    this.#settings = options.config.settings;
    this.#logger = options.logger;
    this.#redactor = options.redactor;
    this.#operatorToken = options.operatorToken;
    this.#env = options.env ?? process.env;
    this.#reloadConfig = options.reloadConfig;
    this.version = options.version ?? '0.0.0';
    this.telemetry = options.telemetry;
    for (const config of Object.values(this.#config.servers)) this.#redactor.addServerConfig(config);
    this.#redactor.add(this.#operatorToken);
    this.#applyClients();
    const s = this.#settings;
    this.oauth =
      options.oauthStateDir === undefined
        ? undefined
        : new OAuthManager({
            stateDir: options.oauthStateDir,
            logger: this.#logger,
            redactor: this.#redactor,
            onAuthorized: (name) => this.pool.authorized(name),
            onRefreshed: (name) => void this.pool.refreshAuthorization(name),
          });
    this.pool = new McpTransportPool({
      ...(this.oauth === undefined ? {} : { credentials: this.oauth }),
      shutdownStepMs: shutdownStepFor(s.shutdownTimeoutMs),
      drainDelayMs: s.drainDelayMs,
      maxIdleMs: s.maxIdleMs,
      budget: { clientBudget: s.budget.clientBudget, mode: s.budget.mode },
      pooledTransports: s.pooledTransports,
      ...(s.spawnTimeoutMs === undefined ? {} : { spawnTimeoutMs: s.spawnTimeoutMs }),
      callTimeoutMs: s.callTimeoutMs,
      maxActors: s.maxActors,
      maxParallelSpawnsPerSession: s.maxParallelSpawns,
      heartbeatIntervalMs: s.actorHeartbeat.intervalMs,
      heartbeatTimeoutMs: s.actorHeartbeat.timeoutMs,
      heartbeatMisses: s.actorHeartbeat.misses,
      logger: this.#logger,
      onEvent: (event) => this.#onPoolEvent(event),
      defaultSharing: daemonDefaultSharing,
      // A daemon owns its machine's servers: it ends what a crashed run of it left.
      reapLeftovers: options.groupLedgerDir !== false,
      ...(options.groupLedgerDir === undefined ? {} : { stateDir: options.groupLedgerDir }),
      actorHost: { resourceLimits: ACTOR_RESOURCE_LIMITS },
      ...options.poolOptions,
    });
    this.metrics = new DaemonMetrics({
      snapshot: () => this.pool.getSnapshot(),
      health: () => this.pool.getHealth(),
      sessions: () => this.#sessions.size,
      mcpSessions: () => this.#mcpSessions(),
      mcpSessionsByClient: () => this.#mcpSessionsByClient(),
      injectedServers: () => this.#injectedLive(),
      settings: () => this.#settings,
      eventSubscribers: () => this.events.subscribers,
    });
  }

  /**
   * Calls `listener` with the name of each server that has just been authorized (the `/mcp`
   * gateway's sessions then acquire it). Not an event-stream subscriber: the stream's subscriber
   * count stays the clients'. Returns the function that removes it.
   */
  onServerAuthorized(listener: (serverName: string) => void): () => void {
    this.#authorizedListeners.add(listener);
    return () => this.#authorizedListeners.delete(listener);
  }

  /** The `/mcp` gateway tells the daemon how to count its sessions, all and per client (for status and metrics). */
  countMcpSessionsWith(count: () => number, byClient: () => Map<string, number>): void {
    this.#mcpSessions = count;
    this.#mcpSessionsByClient = byClient;
  }

  /**
   * Refuses a `POST /sessions` that injects more servers than one request may. The route calls it
   * on the raw body too, before validating it: a huge map is refused without walking it.
   *
   * @throws HttpError REQUEST_TOO_LARGE (400)
   */
  assertInjectionSize(injecting: number): void {
    const max = this.#settings.maxInjectedServersPerRequest;
    if (injecting <= max) return;
    this.refused('injected_per_request');
    throw new HttpError(ErrorCode.REQUEST_TOO_LARGE, `mcpServers holds ${injecting} servers; one request may inject at most ${max} (daemon.maxInjectedServersPerRequest)`, {
      data: { injected: injecting, max },
    });
  }

  /** Counts a refusal by an admission limit (`/metrics`: `mcpool_admission_refusals_total`). */
  refused(limit: 'actors' | 'mcp_sessions' | 'mcp_sessions_per_client' | 'sessions_per_client' | 'injected_per_request' | 'injected_per_client'): void {
    this.metrics.refusals.inc({ limit });
  }

  get settings(): Readonly<DaemonSettings> {
    return this.#settings;
  }

  get config(): Readonly<LoadedConfig> {
    return this.#config;
  }

  get accepting(): boolean {
    return this.#accepting;
  }

  /** Tool calls under way through daemon sessions. */
  get inFlightCalls(): number {
    return this.#inFlight.size;
  }

  /**
   * Warms every configured server, logging "N/M servers ready" as each settles. Resolves when all
   * have settled (a failed start is logged, not thrown).
   */
  start(): Promise<void> {
    // Crash leftovers are reaped before anything is spawned.
    this.pool.start();
    return this.#serialize(() => this.#warmAll());
  }

  // --- Status -------------------------------------------------------------------------------

  /** `GET /workspace/mcp`. Never holds a fingerprint, an env value or a header. */
  status(): WorkspaceMcpStatus {
    const snapshot = this.pool.getSnapshot();
    const configured = this.#config.servers;
    const names = [...new Set([...Object.keys(configured), ...Object.keys(snapshot.servers)])].sort();
    const servers = names.map((name): WorkspaceMcpServer => {
      const live = snapshot.servers[name];
      const config = configured[name];
      const backoff = live?.spawnBackoff;
      const lastError = this.#warmErrors.get(name) ?? (backoff === undefined ? undefined : { code: backoff.lastError.code, message: backoff.lastError.message });
      const common = {
        kind: 'mcp_server' as const,
        name,
        configured: config !== undefined,
        ...(config ? { transport: config.transport } : {}),
        ...(lastError ? { lastError: { ...lastError } } : {}),
        ...(backoff === undefined ? {} : { retryAt: backoff.retryAt }),
      };
      if (live === undefined) return { ...common, status: lastError ? 'failed' : 'closed', mcpStatus: 'disconnected', entryCount: 0, entrySummary: [] };
      return {
        ...common,
        status: live.status,
        ...(live.status === 'auth_required' ? { errorKind: 'auth_required' as const } : {}),
        mcpStatus: live.mcpStatus === 'CONNECTED' ? 'connected' : live.mcpStatus === 'CONNECTING' ? 'connecting' : 'disconnected',
        entryCount: live.entryCount,
        entrySummary: live.entrySummary.map((entry) => ({
          entryIndex: entry.entryIndex,
          refs: entry.refs,
          status: entry.status,
          sharing: entry.sharing,
          ...(entry.ownerLabel === undefined ? {} : { ownerLabel: entry.ownerLabel }),
          ...(entry.era === undefined ? {} : { era: entry.era }),
          ...(entry.health === undefined ? {} : { health: entry.health }),
          ...(entry.throttled === undefined ? {} : { throttled: entry.throttled }),
        })),
      };
    });
    const b = snapshot.budget;
    return {
      initialized: true,
      ready: this.readiness().ready,
      servers,
      budget: { kind: 'mcp_budget', scope: 'workspace', liveCount: b.liveCount, clientBudget: b.clientBudget, budgetMode: b.budgetMode, status: b.status, bySharing: { ...b.bySharing } },
      sessions: this.#sessions.size,
      limits: {
        actors: { live: snapshot.liveActors, max: snapshot.maxActors },
        // What the pool runs with (its own options), not what the config asked for.
        parallelSpawns: { perSession: snapshot.maxParallelSpawnsPerSession },
        actorHeartbeat: { ...snapshot.heartbeat },
        mcpSessions: { open: this.#mcpSessions(), max: this.#settings.mcpMaxSessions, perClient: this.#settings.mcpMaxSessionsPerClient },
        sessions: { open: this.#sessions.size, perClient: this.#settings.maxSessionsPerClient },
        injectedServers: { live: this.#injectedLive(), perRequest: this.#settings.maxInjectedServersPerRequest, perClient: this.#settings.maxInjectedServersPerClient },
      },
    };
  }

  /** Injected servers held by open REST sessions, all clients (or one). */
  #injectedLive(clientId?: string): number {
    let count = 0;
    for (const session of this.#sessions.values()) if (clientId === undefined || session.clientId === clientId) count += session.injectedCount;
    return count;
  }

  /**
   * `GET /readyz`: ready once every server of the current config has been started once (ready or
   * failed). A reload that adds or changes servers makes it not ready until they have started.
   */
  readiness(): ReadyResponse {
    const names = Object.keys(this.#config.servers);
    let ready = 0;
    let failed = 0;
    for (const name of names) {
      const state = this.#warmState.get(name);
      if (state === 'ready') ready += 1;
      else if (state === 'failed') failed += 1;
    }
    return { ready: this.#warmStarted && ready + failed === names.length, servers: { total: names.length, ready, failed } };
  }

  // --- Authorization --------------------------------------------------------------------------

  /**
   * `POST /workspace/mcp/:server/auth`: starts an OAuth flow for a configured remote server and
   * answers where its user goes. `principal` is the caller: a `per-principal` server's grant is
   * the caller's own.
   *
   * @throws HttpError NOT_FOUND (unknown server), PoolError INVALID_ARGUMENT (not remote, or no OAuth client), AUTH_FAILED
   */
  async authorize(name: string, principal: string, options: { device?: boolean } = {}): Promise<AuthStartResponse> {
    this.#assertAccepting();
    const config = Object.hasOwn(this.#config.servers, name) ? this.#config.servers[name] : undefined;
    if (config === undefined) throw new HttpError(DaemonErrorCode.NOT_FOUND, `no server named ${JSON.stringify(name)}`);
    if (this.oauth === undefined) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'this daemon runs without an OAuth client (no state directory)');
    if (config.oauth?.enabled === false) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `${name} has oauth.enabled: false in its config`);
    const sharing = config.sharing ?? 'shared';
    return this.oauth.start(name, config, sharing === 'per-principal' ? principal : undefined, options);
  }

  /** REST sessions that hold `name` without a live view (it waited for authorization) acquire it again. */
  async #rejoin(name: string): Promise<void> {
    const config = Object.hasOwn(this.#config.servers, name) ? this.#config.servers[name] : undefined;
    if (config === undefined) return;
    await Promise.all(
      [...this.#sessions.values()].map(async (session) => {
        const slot = session.servers.get(name);
        if (session.closed || slot === undefined || slot.injected || (slot.view !== undefined && slot.view.status !== 'failed')) return;
        try {
          const view = await this.pool.acquire(name, config, session.id, { principal: session.clientId });
          if (session.closed) return void view.release().catch(() => undefined);
          session.servers.set(name, { injected: false, view });
        } catch (error) {
          session.servers.set(name, { injected: false, error: toPlainError(error) });
        }
      }),
    );
  }

  // --- Restart --------------------------------------------------------------------------------

  /**
   * Restarts the entries of `name`: the legacy `{restarted, durationMs}` when the name
   * has one entry and no `entryIndex` was given, else `{entries}`. A configured server with no
   * live entry is started again through the warm hold.
   *
   * @throws HttpError NOT_FOUND for an unknown server or entry.
   */
  async restart(name: string, entryIndex?: number): Promise<RestartResponse> {
    this.#assertAccepting();
    const snapshot = this.pool.getSnapshot();
    const configured = Object.hasOwn(this.#config.servers, name);
    // Own properties only: `__proto__` or `constructor` is an unknown name, not Object's.
    const live = Object.hasOwn(snapshot.servers, name) ? snapshot.servers[name] : undefined;
    if (!configured && live === undefined) throw new HttpError(DaemonErrorCode.NOT_FOUND, `no server named ${JSON.stringify(name)}`);
    if (entryIndex !== undefined && !live?.entrySummary.some((entry) => entry.entryIndex === entryIndex)) {
      throw new HttpError(DaemonErrorCode.NOT_FOUND, `server ${JSON.stringify(name)} has no entry ${entryIndex}`);
    }
    let results: RestartResult[] = [];
    if (live !== undefined) results = await this.pool.restartByName(name, entryIndex === undefined ? {} : { entryIndex });
    if (results.length === 0) {
      if (entryIndex !== undefined) throw new HttpError(DaemonErrorCode.NOT_FOUND, `server ${JSON.stringify(name)} has no entry ${entryIndex}`);
      if (!configured || !this.#settings.keepWarm) return { restarted: false, durationMs: 0, skipped: true, reason: 'not_running' };
      const started = Date.now();
      const ok = await this.#warmOne(name);
      results = [{ entryIndex: this.#warm.get(name)?.entryIndex ?? -1, restarted: ok, durationMs: Date.now() - started, ...(ok ? {} : { reason: 'start_failed' }) }];
    }
    // A restart that brought a failed key back (past its restart intensity, or its actor died)
    // left an entry nobody holds: the warm hold goes back on it, or it would drain away.
    if (results.some((result) => result.restarted) && !this.#warmHeld(name)) await this.#rewarm(name);
    for (const result of results) {
      this.metrics.restarts.inc({ server: name, result: result.restarted ? 'restarted' : 'skipped' });
      this.#logger.info({ server: name, entryIndex: result.entryIndex, restarted: result.restarted, ms: result.durationMs, reason: result.reason }, result.restarted ? 'entry restarted' : 'entry restart skipped');
    }
    this.#publish({ type: 'server_restarted', serverName: name, entries: results.map((r) => ({ ...r })) });
    if (entryIndex === undefined && results.length === 1) {
      const [only] = results as [RestartResult];
      return only.restarted ? { restarted: true, durationMs: only.durationMs } : { restarted: false, durationMs: only.durationMs, skipped: true, ...(only.reason ? { reason: only.reason } : {}) };
    }
    return { entries: results };
  }

  // --- Reload ---------------------------------------------------------------------------------

  /**
   * Re-reads the config. Changed fingerprints get a new entry for new acquires (the
   * warm hold moves to it); the old entry keeps its sessions and drains as they leave. Client
   * tokens, allowed hosts and origins apply at once; other daemon settings are reported in
   * `needsRestart`. An invalid file changes nothing.
   *
   * @throws HttpError CONFIG_REJECTED (409) when the file is invalid.
   */
  reload(trigger: 'api' | 'signal' | 'file'): Promise<ReloadResult> {
    this.#assertAccepting();
    return this.#serialize(() => this.#reload(trigger));
  }

  async #reload(trigger: 'api' | 'signal' | 'file'): Promise<ReloadResult> {
    if (this.#reloadConfig === undefined) throw new HttpError(DaemonErrorCode.NOT_IMPLEMENTED, 'this daemon has no config source to reload');
    const previous = this.#config;
    let next: LoadedConfig;
    try {
      next = await this.#reloadConfig();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      this.metrics.reloads.inc({ result: 'rejected' });
      this.#logger.error({ trigger, code: error.code }, `config rejected, the running config is unchanged: ${error.message}`);
      this.#publish({ type: 'config_rejected', trigger, message: error.message });
      throw new HttpError(DaemonErrorCode.CONFIG_REJECTED, `${error.message}\n(the running config is unchanged)`, { data: { file: error.data.file } });
    }
    const result = diffServers(previous.servers, next.servers);
    const needsRestart = (Object.keys(next.settings) as (keyof DaemonSettings)[]).filter(
      (key) => !(LIVE_SETTINGS as readonly string[]).includes(key) && !isDeepStrictEqual(this.#settings[key], next.settings[key]),
    );
    const reloadResult: ReloadResult = { source: next.source.kind === 'file' ? next.source.path : null, ...result, needsRestart };
    if (trigger === 'file' && next.digest === previous.digest) return reloadResult;

    for (const config of Object.values(next.servers)) this.#redactor.addServerConfig(config);
    this.#config = next;
    this.#settings = { ...this.#settings, ...Object.fromEntries(LIVE_SETTINGS.map((key) => [key, next.settings[key]])) };
    this.#applyClients();
    // The warm hold follows the config: off the old entries, onto the new ones.
    await Promise.all(
      [...result.changed, ...result.removed].map(async (name) => {
        const view = this.#warm.get(name);
        this.#warm.delete(name);
        this.#warmErrors.delete(name);
        this.#warmState.delete(name);
        await view?.release();
      }),
    );
    await Promise.all([...result.changed, ...result.added].map((name) => this.#warmAndCount(name)));
    this.metrics.reloads.inc({ result: 'applied' });
    this.#logger.info({ trigger, added: result.added, removed: result.removed, changed: result.changed, needsRestart }, 'config reloaded');
    if (needsRestart.length > 0) this.#logger.warn({ settings: needsRestart }, 'these daemon settings changed but apply only after a restart of the daemon');
    this.#publish({ type: 'config_reloaded', trigger, added: result.added, removed: result.removed, changed: result.changed });
    return reloadResult;
  }

  #applyClients(): void {
    const { entries, problems } = clientPrincipals(this.#settings.clients, this.#env);
    for (const problem of problems) {
      this.#logger.warn({ client: problem.id, variable: problem.tokenEnv, problem: problem.problem }, `client ${problem.id} is disabled: its token variable ${problem.tokenEnv} is ${problem.problem === 'unset' ? 'unset' : 'too short'}`);
    }
    for (const entry of entries) this.#redactor.add(entry.token);
    this.tokens.replace([{ id: OPERATOR_ID, token: this.#operatorToken, rights: ['read', 'write'] }, ...entries]);
  }

  // --- Sessions -------------------------------------------------------------------------------

  /**
   * Creates a daemon session: acquires the configured servers it asked for (all by default) and
   * the ones it injected, each through the pool under the session's id. A server that fails to
   * start is reported in the session, not as a failed request. Injected configs are interpolated
   * against no variables at all: the daemon's environment never flows into a client's config.
   *
   * @throws ConfigError (400) for a bad injected config, HttpError BAD_REQUEST for an unknown
   *   configured server, FORBIDDEN when a stdio server is injected without the `write` right.
   */
  async createSession(principal: Principal, request: CreateSessionRequest): Promise<SessionInfo> {
    this.#assertAccepting();
    // Admission first, on counts alone: a refused request parses no config and starts nothing.
    const settings = this.#settings;
    const injecting = request.mcpServers === undefined ? 0 : Object.keys(request.mcpServers).length;
    this.assertInjectionSize(injecting);
    let open = 0;
    for (const session of this.#sessions.values()) if (session.clientId === principal.id) open += 1;
    if (open >= settings.maxSessionsPerClient) {
      this.refused('sessions_per_client');
      throw new HttpError(ErrorCode.CLIENT_LIMIT_REACHED, `client ${principal.id} has ${open} open sessions, its limit (daemon.maxSessionsPerClient ${settings.maxSessionsPerClient}); delete some first`, {
        data: { limit: 'maxSessionsPerClient', open, max: settings.maxSessionsPerClient },
      });
    }
    const held = this.#injectedLive(principal.id);
    if (injecting > 0 && held + injecting > settings.maxInjectedServersPerClient) {
      this.refused('injected_per_client');
      throw new HttpError(
        ErrorCode.CLIENT_LIMIT_REACHED,
        `client ${principal.id} holds ${held} injected servers; ${injecting} more would pass its limit (daemon.maxInjectedServersPerClient ${settings.maxInjectedServersPerClient}); delete sessions that inject servers first`,
        { data: { limit: 'maxInjectedServersPerClient', held, requested: injecting, max: settings.maxInjectedServersPerClient } },
      );
    }
    const configured = this.#config.servers;
    const wanted = request.servers ?? Object.keys(configured);
    const injected = request.mcpServers === undefined ? {} : parseServersDocument({ mcpServers: request.mcpServers }, { env: {} }).servers;
    wanted.forEach((name, i) => {
      if (!Object.hasOwn(configured, name) && !Object.hasOwn(injected, name)) {
        throw new HttpError(DaemonErrorCode.BAD_REQUEST, `servers[${i}]: no configured server is named ${JSON.stringify(name)}`);
      }
    });
    // Running a command is remote code execution: it takes the write right, whatever the route.
    if (Object.values(injected).some((config) => config.transport === 'stdio') && !principal.rights.has('write')) {
      throw new HttpError(DaemonErrorCode.FORBIDDEN, 'injecting a stdio server needs the write right');
    }
    for (const config of Object.values(injected)) this.#redactor.addServerConfig(config);

    const plan = new Map<string, { config: ServerConfig; injected: boolean }>();
    for (const name of wanted) if (Object.hasOwn(configured, name)) plan.set(name, { config: configured[name]!, injected: false });
    for (const [name, config] of Object.entries(injected)) plan.set(name, { config, injected: true });

    const session: DaemonSession = { id: randomUUID(), clientId: principal.id, injectedCount: Object.keys(injected).length, createdAt: new Date().toISOString(), label: request.label, servers: new Map(), closed: false, lastActivityAt: Date.now() };
    this.#sessions.set(session.id, session);
    if (Object.keys(injected).length > 0) {
      // A stdio server is a command run for a client, so every such launch is logged (command
      // only: never env or headers).
      for (const [name, config] of Object.entries(injected)) {
        this.#logger.debug({ sessionId: session.id, client: principal.id, server: name, transport: config.transport, command: config.command }, 'session injects a server');
      }
    }
    await Promise.all(
      [...plan].map(async ([name, { config, injected: isInjected }]) => {
        try {
          // The principal is the token's client id: a per-principal server is shared by its sessions only.
          const view = await this.pool.acquire(name, config, session.id, { principal: principal.id });
          session.servers.set(name, { injected: isInjected, view });
        } catch (error) {
          const wire = toPlainError(error);
          session.servers.set(name, { injected: isInjected, error: wire });
          if (wire.code === ErrorCode.ACTOR_CAP_REACHED) this.refused('actors');
          const spawnFailure = isSpawnFailure(wire.code);
          if (spawnFailure) this.metrics.failures.inc({ server: name, kind: 'spawn' });
          // A failed spawn has its one log line from the entry watcher already.
          (spawnFailure ? this.#logger.debug : this.#logger.warn).call(this.#logger, { sessionId: session.id, server: name, code: wire.code, error: wire.message }, 'session could not acquire a server');
        }
      }),
    );
    if (session.closed) throw new PoolError(ErrorCode.CONNECTION_RELEASED, `session ${session.id} was closed while its servers started`);
    this.#logger.debug({ sessionId: session.id, client: principal.id, servers: plan.size }, 'session created');
    this.#publish({ type: 'session_created', sessionId: session.id, clientId: principal.id });
    return this.#info(session);
  }

  listSessions(): SessionInfo[] {
    return [...this.#sessions.values()].map((session) => this.#info(session));
  }

  /** The sessions with the time of their last call (the dashboard shows how recently each was used). */
  listSessionActivity(): (SessionInfo & { lastActivityAt: string })[] {
    return [...this.#sessions.values()].map((session) => ({ ...this.#info(session), lastActivityAt: new Date(session.lastActivityAt).toISOString() }));
  }

  /**
   * The last `lines` lines each live entry of `name` wrote to stderr, scrubbed of every secret the
   * daemon knows (the actor already replaced the server's own env and header values).
   *
   * @throws HttpError NOT_FOUND for a server neither configured nor running.
   */
  async stderrTail(name: string, lines: number): Promise<{ server: string; entries: { entryIndex: number; lines: string[] }[] }> {
    const running = Object.hasOwn(this.pool.getSnapshot().servers, name);
    if (!Object.hasOwn(this.#config.servers, name) && !running) throw new HttpError(DaemonErrorCode.NOT_FOUND, `no server named ${JSON.stringify(name)}`);
    const entries = running ? await this.pool.stderrTail(name, { lines }) : [];
    return { server: name, entries: entries.map((entry) => ({ entryIndex: entry.entryIndex, lines: entry.lines.map((line) => this.#redactor.scrub(line)) })) };
  }

  /** @throws HttpError NOT_FOUND */
  getSession(id: string): SessionInfo {
    const session = this.#sessions.get(id);
    if (session === undefined) throw new HttpError(DaemonErrorCode.NOT_FOUND, `no session ${JSON.stringify(id)}`);
    return this.#info(session);
  }

  /**
   * Closes a session: `pool.releaseSession`, so its entries drain when no other session holds
   * them. Only its creator or the operator may; to anyone else it does not exist (404).
   */
  async deleteSession(principal: Principal, id: string): Promise<void> {
    const session = this.#owned(principal, id);
    this.#sessions.delete(id);
    session.closed = true;
    await this.pool.releaseSession(id);
    this.#logger.debug({ sessionId: id, client: principal.id }, 'session closed');
    this.#publish({ type: 'session_closed', sessionId: id });
  }

  /**
   * Calls a tool through the session's filtered view of `server`. `headers` are the HTTP request's: with
   * telemetry on, their `traceparent` makes the call's server span a child of the caller's.
   */
  callTool(principal: Principal, id: string, request: ToolCallRequest, headers?: IncomingHttpHeaders): Promise<ToolCallResponse> {
    const server = this.telemetry?.server;
    if (server === undefined) return this.#callTool(principal, id, request);
    return server.run({ method: 'tools/call', tool: request.name, restSessionId: id, headers }, () => this.#callTool(principal, id, request), restFailure, (response) => response.result);
  }

  async #callTool(principal: Principal, id: string, request: ToolCallRequest): Promise<ToolCallResponse> {
    this.#assertAccepting();
    const session = this.#owned(principal, id);
    const slot = session.servers.get(request.server);
    if (slot === undefined) throw new HttpError(DaemonErrorCode.NOT_FOUND, `session ${id} has no server ${JSON.stringify(request.server)}`);
    if (slot.view === undefined) {
      const error = slot.error ?? { code: ErrorCode.SERVER_FAILED, message: 'the server did not start' };
      throw new PoolError(error.code, `${request.server} did not start for this session: ${error.message}`);
    }
    const controller = new AbortController();
    const started = performance.now();
    session.lastActivityAt = Date.now();
    const call = slot.view.callTool(request.name, request.arguments, { signal: controller.signal, ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }) });
    this.#inFlight.set(controller, call.catch(() => undefined));
    try {
      const result = await call;
      this.metrics.observeCall(request.server, true, (performance.now() - started) / 1000);
      return { result };
    } catch (error) {
      this.metrics.observeCall(request.server, false, (performance.now() - started) / 1000);
      if (controller.signal.aborted) throw new HttpError(DaemonErrorCode.SHUTTING_DOWN, 'the daemon is shutting down; the call was cancelled');
      throw error;
    } finally {
      this.#inFlight.delete(controller);
      session.lastActivityAt = Date.now();
    }
  }

  /** Whether `principal` may see the REST session `id` (its own, or any for the operator). */
  hasSession(principal: Principal, id: string): boolean {
    const session = this.#sessions.get(id);
    return session !== undefined && (session.clientId === principal.id || principal.id === OPERATOR_ID);
  }

  #owned(principal: Principal, id: string): DaemonSession {
    const session = this.#sessions.get(id);
    // Session ids are not credentials (the MCP spec (2025-11-25) says a session is never
    // authentication): another client's session is "not found".
    if (session === undefined || (session.clientId !== principal.id && principal.id !== OPERATOR_ID)) {
      throw new HttpError(DaemonErrorCode.NOT_FOUND, `no session ${JSON.stringify(id)}`);
    }
    return session;
  }

  #info(session: DaemonSession): SessionInfo {
    const servers = [...session.servers]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, slot]): SessionServer => {
        if (slot.view === undefined) return { name, injected: slot.injected, status: 'failed', tools: [], ...(slot.error ? { error: { ...slot.error } } : {}) };
        return { name, injected: slot.injected, status: slot.view.status, entryIndex: slot.view.entryIndex, tools: slot.view.tools.map((tool) => tool.name) };
      });
    return { id: session.id, clientId: session.clientId, createdAt: session.createdAt, ...(session.label === undefined ? {} : { label: session.label }), servers };
  }

  // --- Events and the entry watcher -----------------------------------------------------------

  /** Registers an open event stream so shutdown can end it; returns the unregister function. */
  trackStream(close: () => void): () => void {
    this.#streams.add(close);
    return () => this.#streams.delete(close);
  }

  #publish(payload: DaemonEventPayload): void {
    this.events.publish(payload);
  }

  /**
   * The entry watcher: the pool's events, as they happen. An entry event older than what was
   * applied for that entry (a lower generation) is dropped, as the pool's event contract says.
   */
  #onPoolEvent(event: PoolEvent): void {
    if (event.type === 'authRequired') {
      this.#publish({ type: 'auth_required', serverName: event.serverName, command: `mcpool auth ${event.serverName}` });
      return;
    }
    if (event.type === 'authorized') {
      this.#publish({ type: 'auth_completed', serverName: event.serverName });
      // The warm hold failed on the 401; it comes back now (and with it the `ready` status).
      if (!this.#warmHeld(event.serverName)) void this.#rewarm(event.serverName);
      void this.#rejoin(event.serverName);
      for (const listener of [...this.#authorizedListeners]) listener(event.serverName);
      return;
    }
    if (event.type === 'mcp_budget_warning') {
      this.#publish({ type: 'mcp_budget_warning', scope: 'workspace', liveCount: event.liveCount, clientBudget: event.clientBudget, budgetMode: event.budgetMode });
      return;
    }
    if (event.type === 'mcp_child_refused_batch') {
      this.#publish({ type: 'mcp_child_refused_batch', scope: 'workspace', refused: event.refused.map((r) => ({ ...r })), liveCount: event.liveCount, clientBudget: event.clientBudget, budgetMode: event.budgetMode });
      return;
    }
    const key = `${event.serverName}\u0000${event.entryIndex}`;
    const known = this.#entries.get(key);
    if (known !== undefined && event.generation < known.generation) return;
    if (known !== undefined) known.generation = event.generation;
    const where = { server: event.serverName, entryIndex: event.entryIndex };
    switch (event.type) {
      case 'statusChanged':
        this.#onStatus(key, known, event.serverName, event.entryIndex, event.status, event.generation, event.lastError);
        break;
      case 'disconnected':
        this.#logger.warn({ ...where, reason: event.reason }, `${event.serverName}#${event.entryIndex} disconnected`);
        this.#publish({ type: 'disconnected', serverName: event.serverName, entryIndex: event.entryIndex, generation: event.generation, reason: event.reason });
        break;
      case 'reconnected':
        this.#logger.info({ ...where, clientGeneration: event.clientGeneration }, `${event.serverName}#${event.entryIndex} reconnected`);
        this.#publish({ type: 'reconnected', serverName: event.serverName, entryIndex: event.entryIndex, generation: event.generation, clientGeneration: event.clientGeneration });
        break;
      case 'failed':
        // Told twice (this event and a `failed` status), logged once.
        if (!this.#ended.has(key)) this.#logFailure(known ?? this.#watch(key, 'spawning', event.generation), event.serverName, event.entryIndex, event.lastError);
        this.#publish({ type: 'failed', serverName: event.serverName, entryIndex: event.entryIndex, generation: event.generation, lastError: { code: event.lastError.code, message: event.lastError.message } });
        // The pool brings a dead held entry back; the warm hold goes onto it (the pool's restart
        // intensity bounds how often: past it, the acquire is refused and the hold waits for a restart).
        if (event.lastError.code === ErrorCode.ACTOR_DIED && this.#warm.get(event.serverName)?.entryIndex === event.entryIndex) void this.#rewarm(event.serverName);
        break;
      default:
      // list changes reach sessions through their views; the stream carries lifecycle only
    }
  }

  /** One `entry_status` event and one log line per status change; a closed entry is `gone`. */
  #onStatus(key: string, known: WatchedEntry | undefined, server: string, entryIndex: number, status: EntryStatus, generation: number, lastError: { code: string; message: string } | undefined): void {
    if (known === undefined && this.#ended.has(key)) return; // a late event of an entry already gone
    const previous = known?.status;
    if (previous === status) return;
    const entry = known ?? this.#watch(key, status, generation);
    entry.status = status;
    if (known === undefined) this.metrics.spawns.inc({ server });
    const refs = this.#refsOf(server, entryIndex);
    const fields = { server, entryIndex, status, previous, refs };
    if (status === 'failed') {
      this.metrics.failures.inc({ server, kind: 'entry' });
      this.#logFailure(entry, server, entryIndex, lastError ?? { code: ErrorCode.SERVER_FAILED, message: 'failed' });
    } else if (status === 'closed') {
      this.#logger.info({ ...fields, status: 'gone' }, `${server}#${entryIndex} gone`);
    } else {
      this.#logger.info(fields, `${server}#${entryIndex} ${status}`);
    }
    const shown = status === 'closed' ? 'gone' : status;
    this.#publish({ type: 'entry_status', serverName: server, entryIndex, status: shown, refs: status === 'closed' ? 0 : refs, ...(previous ? { previous } : {}) });
    if (status === 'closed' || status === 'failed') this.#forget(key);
  }

  #watch(key: string, status: EntryStatus, generation: number): WatchedEntry {
    const entry: WatchedEntry = { status, generation, failureLogged: false };
    this.#entries.set(key, entry);
    return entry;
  }

  /** An ended entry is forgotten, but remembered as ended (bounded) so its late events are not taken for a new entry. */
  #forget(key: string): void {
    this.#entries.delete(key);
    this.#ended.add(key);
    if (this.#ended.size > ENDED_ENTRIES_KEPT) this.#ended.delete(this.#ended.values().next().value!);
  }

  /** A failure is one log line, whichever of its two tellings comes first: the error, with the tail of the server's stderr. */
  #logFailure(entry: WatchedEntry, server: string, entryIndex: number, lastError: { code: string; message: string }): void {
    if (entry.failureLogged) return;
    entry.failureLogged = true;
    const { headline, stderr } = splitStderr(lastError.message);
    this.#logger.error({ server, entryIndex, code: lastError.code, error: headline, ...(stderr ? { stderr } : {}) }, `${server}#${entryIndex} failed: ${headline}`);
  }

  #refsOf(server: string, entryIndex: number): number {
    return this.pool.getSnapshot().servers[server]?.entrySummary.find((entry) => entry.entryIndex === entryIndex)?.refs ?? 0;
  }

  // --- Warm hold ------------------------------------------------------------------------------

  async #warmAll(): Promise<void> {
    const names = Object.keys(this.#config.servers);
    for (const name of names) this.#warmState.set(name, 'starting');
    this.#warmStarted = true;
    if (names.length === 0) this.#logger.info('no servers configured');
    await Promise.all(names.map((name) => this.#warmAndCount(name)));
  }

  /** Warms one server and says where the warm-up of the current config stands ("N/M servers ready"). */
  async #warmAndCount(name: string): Promise<void> {
    this.#warmState.set(name, 'starting');
    await this.#warmOne(name);
    if (this.#closing !== undefined) return;
    const { ready, failed, total } = this.readiness().servers;
    this.#logger.info({ ready, failed, total }, `${ready}/${total} servers ready${failed > 0 ? ` (${failed} failed)` : ''}`);
    this.#publish({ type: 'servers_progress', ready, failed, total });
  }

  /** True when the warm hold on `name` is a live view (not failed with its entry, not released). */
  #warmHeld(name: string): boolean {
    const view = this.#warm.get(name);
    return view !== undefined && view.status !== 'failed' && view.status !== 'released';
  }

  /** Puts the warm hold of a configured server back after its entry died (keepWarm only). */
  async #rewarm(name: string): Promise<void> {
    if (!this.#settings.keepWarm || this.#closing !== undefined || !Object.hasOwn(this.#config.servers, name)) return;
    // Let the failure settle in the views first (their ports close after the pool's event).
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.#warmHeld(name)) return;
    this.#warm.delete(name);
    if (await this.#warmOne(name)) this.#logger.info({ server: name, entryIndex: this.#warm.get(name)?.entryIndex }, `${name}: warm hold restored`);
  }

  /** Acquires `name`'s current config under the warm session; false when it fails (the entry watcher logged why). */
  async #warmOne(name: string): Promise<boolean> {
    const config = Object.hasOwn(this.#config.servers, name) ? this.#config.servers[name] : undefined;
    if (config === undefined || this.#closing !== undefined) return false;
    try {
      // The warm hold makes no calls, so it may share the operator's process of a per-principal server.
      const view = await this.pool.acquire(name, config, WARM_SESSION_ID, { principal: OPERATOR_ID });
      const previous = this.#warm.get(name);
      this.#warmErrors.delete(name);
      if (this.#settings.keepWarm) this.#warm.set(name, view);
      if (previous !== undefined && previous !== view) await previous.release();
      if (!this.#settings.keepWarm) await view.release();
      if (this.#config.servers[name] === config) this.#warmState.set(name, 'ready');
      return true;
    } catch (error) {
      if (this.#closing !== undefined) return false;
      const wire = toPlainError(error);
      this.#warmErrors.set(name, wire);
      if (this.#config.servers[name] === config) this.#warmState.set(name, 'failed');
      this.metrics.failures.inc({ server: name, kind: 'spawn' });
      // A failed spawn has its one log line from the entry watcher (with the server's stderr).
      (isSpawnFailure(wire.code) ? this.#logger.debug : this.#logger.warn).call(this.#logger, { server: name, code: wire.code, error: wire.message }, `${name} failed to start`);
      return false;
    }
  }

  // --- Shutdown -------------------------------------------------------------------------------

  /**
   * Shuts down in this order: stop accepting; cancel in-flight calls and end event
   * streams; release every session; `drainAll()`: each server gets stdin EOF, then SIGTERM, then
   * SIGKILL, and only what is still alive when `shutdownTimeoutMs` (counted from here) runs out
   * is killed at once. Idempotent. The HTTP server is closed by the caller around this (it stops
   * listening first, and closes last).
   */
  shutdown(reason: string): Promise<DrainAllResult> {
    this.#closing ??= (async () => {
      const deadline = Date.now() + this.#settings.shutdownTimeoutMs;
      // 1. Stop accepting: new sessions, calls, restarts and reloads get 503 from here on.
      this.#accepting = false;
      this.oauth?.close();
      this.#logger.info({ reason, sessions: this.#sessions.size, calls: this.#inFlight.size }, 'shutting down');
      this.#publish({ type: 'shutdown', signal: reason });
      // 2. Cancel in-flight calls (each sends notifications/cancelled upstream) and wait for them.
      const calls = [...this.#inFlight];
      for (const [controller] of calls) controller.abort();
      await Promise.all(calls.map(([, settled]) => settled));
      for (const close of [...this.#streams]) close();
      // 3. Release every session (the warm hold too).
      const ids = [...this.#sessions.keys()];
      for (const session of this.#sessions.values()) session.closed = true;
      this.#sessions.clear();
      await Promise.all([...ids, WARM_SESSION_ID].map((id) => this.pool.releaseSession(id).catch(() => undefined)));
      this.#warm.clear();
      // 4. Close every entry now, bypassing the drain grace, each through its graceful steps;
      // what is left at the deadline is killed.
      const result = await this.pool.drainAll({ timeoutMs: Math.max(0, deadline - Date.now()) });
      const log = result.errors.length > 0 ? this.#logger.warn.bind(this.#logger) : this.#logger.info.bind(this.#logger);
      log({ drained: result.drained, forced: result.forced, errors: result.errors.map((e) => e.message) }, 'pool drained');
      return result;
    })();
    return this.#closing;
  }

  #assertAccepting(): void {
    if (!this.#accepting) throw new HttpError(DaemonErrorCode.SHUTTING_DOWN, 'the daemon is shutting down');
  }

  /** Runs reloads (and the first warm-up) one at a time. */
  #serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(task, task);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}

/** What changed between two server maps, by fingerprint (which never leaves the daemon). */
export function diffServers(
  previous: Record<string, ServerConfig>,
  next: Record<string, ServerConfig>,
): Pick<ReloadResult, 'added' | 'removed' | 'changed' | 'unchanged'> {
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  const unchanged: string[] = [];
  for (const name of Object.keys(next).sort()) {
    const before = previous[name];
    if (before === undefined) added.push(name);
    // A new sharing policy puts new acquires on other entries, as a new fingerprint does.
    else if (fingerprint(before) !== fingerprint(next[name]!) || before.sharing !== next[name]!.sharing) changed.push(name);
    else unchanged.push(name);
  }
  for (const name of Object.keys(previous).sort()) if (!Object.hasOwn(next, name)) removed.push(name);
  return { added, removed, changed, unchanged };
}

/**
 * The daemon's policy for a server whose config sets no `sharing`: a modern-era (2026-07-28)
 * server keeps no conversation state in its process, so its clients share it; a legacy one may
 * (a stdio process's lifetime is often its session), so each client gets its own. An era not
 * known yet is treated as legacy: sharing by mistake leaks one client's state to another, not
 * sharing costs a process.
 */
export function daemonDefaultSharing(info: SharingDefaultInfo): SharingPolicy {
  return info.fingerprintEra === 'modern' ? 'shared' : 'per-principal';
}

/**
 * The budget of each graceful step of a child's stop (stdin end, then SIGTERM) so that both, the
 * SIGKILL after them and the process-tree sweep fit in the shutdown deadline: 2 s (the MCP
 * SDK's own) when there is room, less for a short deadline.
 */
export function shutdownStepFor(shutdownTimeoutMs: number): number {
  return Math.max(50, Math.min(2000, Math.floor((shutdownTimeoutMs - 3000) / 2)));
}

function isSpawnFailure(code: string): boolean {
  return code === ErrorCode.SPAWN_FAILED || code === ErrorCode.SPAWN_TIMEOUT;
}

/**
 * Splits a failure message from the part the actor appends, `; stderr: <tail>`, keeping only the
 * last few lines of that tail: a log line says what failed and the end of what the server said.
 */
export function splitStderr(message: string): { headline: string; stderr: string | undefined } {
  const at = message.indexOf('; stderr: ');
  if (at === -1) return { headline: message, stderr: undefined };
  let headline = message.slice(0, at);
  let rest = message.slice(at + '; stderr: '.length);
  // The detail may come in parentheses, `… (the process exited with code 1; stderr: …)`: the
  // headline keeps the part before the stderr, without the parenthesis left open.
  const open = headline.lastIndexOf(' (');
  if (open !== -1 && !headline.slice(open).includes(')') && rest.endsWith(')')) {
    headline = `${headline.slice(0, open)}: ${headline.slice(open + 2)}`;
    rest = rest.slice(0, -1);
  }
  const lines = rest
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line.length > 0);
  const tail = lines.slice(-STDERR_TAIL_LINES).join('\n');
  return { headline, stderr: tail.length > STDERR_TAIL_CHARS ? tail.slice(-STDERR_TAIL_CHARS) : tail };
}

function toPlainError(error: unknown): { code: ErrorCode; message: string } {
  if (error instanceof PoolError) return { code: error.code, message: error.message };
  return { code: ErrorCode.INTERNAL, message: error instanceof Error ? error.message : String(error) };
}
