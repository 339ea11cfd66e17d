/**
 * `Daemon`: one `McpTransportPool` and the parts of the daemon around it, wired together. It holds
 * no HTTP: the routes call these methods, and every refusal is a `PoolError` whose code the routes
 * map to a status. The parts, each in its own file under `daemon/`:
 * - `configState`: the config and settings it runs with, and what a reload changes;
 * - `warmHold`: one pool session holding every configured server (`keepWarm`), and readiness;
 * - `restSessions` (public as `sessions`: the routes call it): REST sessions, their calls, and
 *   their idle reaper;
 * - `entryWatcher`: the pool's events as daemon events and log lines;
 * - `workspaceStatus`, `poolOptions`.
 * What stays here is what crosses them: authorization, restart, reload, the drain before a stop
 * (not ready, no new session, calls in flight finish), and shutdown in order (calls, streams,
 * sessions, then servers), each server stopped gracefully within the deadline.
 */
import type { Logger } from 'pino';
import { ErrorCode, McpTransportPool, PoolError, type DrainAllResult, type McpTransportPoolOptions } from '@mcpool/core';
import { ConfigError } from '@mcpool/protocol';
import { canonicalCommand } from './config/commandPath.js';
import { mergeReload } from './config/reloadMerge.js';
import { missingCommand } from './config/serverAvailability.js';
import type {
  AuthStartResponse,
  DaemonEventPayload,
  ReadyResponse,
  ReloadResult,
  ServerLifeState,
  RestartResponse,
  RestartResult,
  WorkspaceMcpStatus,
} from '@mcpool/client';
import { TokenRegistry } from './auth.js';
import type { DaemonSettings, LoadedConfig } from './config/daemonConfig.js';
import { SYSTEM_CLOCK, type DaemonClock } from './daemon/clock.js';
import { idleStopMsOf } from './daemon/idleStopPolicy.js';
import { ServerStates } from './daemon/serverStates.js';
import { ConfigState } from './daemon/configState.js';
import { EntryWatcher } from './daemon/entryWatcher.js';
import { holdsNoShare } from './daemon/operatorHeadroom.js';
import { daemonPoolOptions } from './daemon/poolOptions.js';
import { RestSessions, type AdmissionLimit } from './daemon/restSessions.js';
import { ServerSharing } from './daemon/serverSharing.js';
import { WARM_SESSION_ID, WarmHold } from './daemon/warmHold.js';
import { workspaceStatus } from './daemon/workspaceStatus.js';
import { EventHub } from './events.js';
import { DaemonMetrics } from './metrics.js';
import { OAuthManager } from './oauth/oauthManager.js';
import { configuredGrantsOnly, grantOwner } from './oauth/configuredGrants.js';
import type { SecretRedactor } from './secrets.js';
import type { SharedStore } from './store/sharedStore.js';
import { catalogWriter, loadCatalog } from './store/sharedCatalog.js';
import { Cluster } from './cluster/cluster.js';
import type { Telemetry } from './telemetry/contract.js';

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
  /** Where the pool keeps each server config's catalog (a restarted daemon lists servers from it without starting them). @default in memory only */
  catalogDir?: string;
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
  /** Where those grants are kept (Redis, for replicas that share them). @default the state directory under `oauthStateDir` */
  store?: SharedStore;
  /** The clock of the rules about time (the REST sessions' idle TTL, idle stop). @default the system clock */
  clock?: DaemonClock;
}

export class Daemon {
  readonly pool: McpTransportPool;
  /** The OAuth client of remote servers (with `oauthStateDir`). */
  readonly oauth: OAuthManager | undefined;
  readonly events: EventHub;
  readonly metrics: DaemonMetrics;
  /** Who may call: the operator token and the config's clients (rebuilt on reload). */
  readonly tokens = new TokenRegistry([]);
  readonly version: string;
  /** Set when OpenTelemetry export is on. */
  readonly telemetry: Telemetry | undefined;
  readonly startedAt = Date.now();
  /** The clock of the rules about time (REST sessions' idle TTL, idle stop). */
  readonly clock: DaemonClock;
  /** This daemon as one replica of several (`daemon.cluster`): sealed session ids and where they go. */
  readonly cluster: Cluster | undefined;
  readonly #logger: Logger;
  /** The shared store (Redis for replicas): the catalog is read from it at start. */
  readonly #store: SharedStore | undefined;
  readonly #redactor: SecretRedactor;
  readonly #reloadConfig: (() => Promise<LoadedConfig>) | undefined;
  readonly #config: ConfigState;
  readonly #warm: WarmHold;
  /** Where each server stands in its life (status, metrics, events). */
  readonly #lives: ServerStates;
  /** REST sessions (`POST /sessions` and the routes under it). */
  readonly sessions: RestSessions;
  readonly #streams = new Set<() => void>();
  readonly #authorizedListeners = new Set<(serverName: string) => void>();
  readonly #addedListeners = new Set<(names: readonly string[]) => void>();
  /** What is learned about sharing the servers, and whose entry the warm hold keeps. */
  readonly #sharing = new ServerSharing();
  /** Open `/mcp` sessions, as the gateway counts them (0 until a gateway registers). */
  #mcpSessions: () => number = () => 0;
  #mcpSessionsByClient: () => Map<string, number> = () => new Map();
  /** Calls under way through `/mcp` (0 until a gateway registers). */
  #mcpCalls: () => number = () => 0;
  #accepting = true;
  #draining: Promise<{ drained: boolean; left: number }> | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  #closing: Promise<DrainAllResult> | undefined;

  constructor(options: DaemonOptions) {
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.#logger = options.logger;
    this.#store = options.store;
    this.events = new EventHub(undefined, this.#logger);
    this.#redactor = options.redactor;
    this.#reloadConfig = options.reloadConfig;
    this.version = options.version ?? '0.0.0';
    this.telemetry = options.telemetry;
    this.#config = new ConfigState({
      config: options.config,
      redactor: this.#redactor,
      tokens: this.tokens,
      operatorToken: options.operatorToken,
      env: options.env ?? process.env,
      logger: this.#logger,
    });
    const cluster = options.config.settings.cluster;
    this.cluster = cluster === undefined ? undefined : new Cluster(cluster, options.env ?? process.env);
    this.oauth =
      options.oauthStateDir === undefined
        ? undefined
        : new OAuthManager({
            stateDir: options.oauthStateDir,
            ...(options.store === undefined ? {} : { store: options.store }),
            logger: this.#logger,
            redactor: this.#redactor,
            onAuthorized: (name) => this.pool.authorized(name),
            onRefreshed: (name) => void this.pool.refreshAuthorization(name),
            onFailed: (name, message) => this.events.publish({ type: 'auth_failed', serverName: name, message }),
            clientMetadataUrl: this.#config.settings.oauthClientMetadataUrl,
          });
    // Every figure is read when scraped, from the parts made below.
    this.metrics = new DaemonMetrics({
      snapshot: () => this.pool.getSnapshot(),
      health: () => this.pool.getHealth(),
      sessions: () => this.sessions.size,
      mcpSessions: () => this.#mcpSessions(),
      mcpSessionsByClient: () => this.#mcpSessionsByClient(),
      injectedServers: () => this.sessions.injectedLive(),
      settings: () => this.#config.settings,
      eventSubscribers: () => this.events.subscribers,
      serverStates: () => this.#lifeCounts(),
    });
    const publish = (payload: DaemonEventPayload): void => {
      this.events.publish(payload);
    };
    this.#lives = new ServerStates({ publish: (change) => publish({ type: 'server_state', ...change }), configured: (name) => this.#config.server(name) !== undefined });
    // The watcher is made before the pool, whose events it takes from the first one on.
    const watcher = new EntryWatcher({
      logger: this.#logger,
      metrics: this.metrics,
      publish,
      refsOf: (server, entryIndex) => this.pool.getSnapshot().servers[server]?.entrySummary.find((entry) => entry.entryIndex === entryIndex)?.refs ?? 0,
      onAuthorized: (name) => this.#onAuthorized(name),
      // The pool brings a dead held entry back; the warm hold goes onto it (the pool's restart
      // intensity bounds how often: past it, the acquire is refused and the hold waits for a restart).
      onActorDied: (name, entryIndex) => {
        if (this.#warm.entryIndexOf(name) === entryIndex) void this.#warm.rewarm(name);
      },
    });
    this.pool = new McpTransportPool(
      daemonPoolOptions(this.#config.settings, {
        logger: this.#logger,
        onEvent: (event) => {
          watcher.onPoolEvent(event);
          this.#lives.onPoolEvent(event);
        },
        credentials: this.oauth === undefined ? undefined : configuredGrantsOnly(this.oauth, (name) => this.#config.server(name)),
        groupLedgerDir: options.groupLedgerDir,
        catalogDir: options.catalogDir,
        // Replicas over Redis share their catalog: what one learned, the others list.
        onCatalogRecord: options.store?.kind === 'redis' ? catalogWriter(options.store, this.#logger) : undefined,
        overrides: options.poolOptions,
        defaultSharing: this.#sharing.policyOf,
        holdsNoShare: (principal) => holdsNoShare(principal, this.#config.settings.clients),
      }),
    );
    const closing = (): boolean => this.#closing !== undefined;
    this.#warm = new WarmHold({ pool: this.pool, config: this.#config, logger: this.#logger, metrics: this.metrics, publish, closing, sharing: this.#sharing, serialize: (task) => void this.#serialize(task) });
    this.sessions = new RestSessions({
      pool: this.pool,
      config: this.#config,
      redactor: this.#redactor,
      logger: this.#logger,
      metrics: this.metrics,
      publish,
      clock: this.clock,
      assertAccepting: () => this.#assertAccepting(),
      assertOpening: () => this.assertOpening(),
      telemetry: this.telemetry?.server,
      onServerUsed: (name, principal) => this.serverUsed(name, principal),
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

  /** A session of `principal` (REST or `/mcp`) holds a view of `name` now: the warm hold may follow it (see `warmHold.ts`). */
  serverUsed(name: string, principal: string): void {
    this.#warm.follow(name, principal);
  }

  /** The `/mcp` gateway tells the daemon how many calls it has under way (the drain waits for them). */
  countMcpCallsWith(count: () => number): void {
    this.#mcpCalls = count;
  }

  /** Counts a refusal by an admission limit (`/metrics`: `mcpool_admission_refusals_total`). */
  refused(limit: AdmissionLimit): void {
    this.metrics.refusals.inc({ limit });
  }

  get settings(): Readonly<DaemonSettings> {
    return this.#config.settings;
  }

  get config(): Readonly<LoadedConfig> {
    return this.#config.config;
  }

  get accepting(): boolean {
    return this.#accepting;
  }

  /** True from the start of a drain (SIGTERM) on: `/readyz` is 503 and no new session opens. */
  get draining(): boolean {
    return this.#draining !== undefined;
  }

  /** Calls under way: REST tool calls and `/mcp` requests (a listen stream is not a call). */
  get callsInFlight(): number {
    return this.sessions.inFlightCalls + this.#mcpCalls();
  }

  /**
   * Warms every configured server, logging "N/M servers ready" as each settles, and starts reaping
   * idle REST sessions. Resolves when all have settled (a failed start is logged, not thrown).
   */
  start(): Promise<void> {
    // Crash leftovers are reaped before anything is spawned.
    this.pool.start();
    this.sessions.startReaper();
    this.#reportUnavailable(Object.entries(this.#config.config.unavailable).map(([name, problem]) => ({ name, code: problem.code, message: problem.message, keptRunning: false })));
    const store = this.#store;
    return this.#serialize(async () => {
      // The shared catalog first: a lazy server another replica learned is then not started here.
      if (store?.kind === 'redis') await loadCatalog(store, this.pool, this.#logger);
      await this.#warm.warmAll();
    });
  }

  // --- Status -------------------------------------------------------------------------------

  /** `GET /workspace/mcp`. Never holds a fingerprint, an env value or a header. */
  status(): WorkspaceMcpStatus {
    return workspaceStatus({
      snapshot: this.pool.getSnapshot(),
      config: this.#config.config,
      settings: this.#config.settings,
      warmError: (name) => this.#warm.lastError(name),
      sharingOf: (config, era) => this.#sharing.decision(config, era),
      cold: (name) => this.#warm.cold(name),
      lifeOf: (name, cold) => ({ state: this.#lives.stateOf(name, cold), lastStartMs: this.#lives.lastStartMs(name) }),
      learnedOf: (name) => {
        const config = this.#config.server(name);
        return config === undefined ? undefined : this.pool.catalogOf(name, config)?.learned;
      },
      ready: this.readiness().ready,
      restSessions: this.sessions.size,
      mcpSessions: this.#mcpSessions(),
      injectedServers: this.sessions.injectedLive(),
    });
  }

  /** The configured servers by life state (a server whose last start failed, or that cannot run, is in none). */
  #lifeCounts(): Record<ServerLifeState, number> {
    const counts: Record<ServerLifeState, number> = { cold: 0, starting: 0, running: 0, stopped: 0 };
    for (const name of Object.keys(this.#config.config.servers)) {
      if (this.#warm.lastError(name) !== undefined) continue;
      const state = this.#lives.stateOf(name, this.#warm.cold(name));
      if (state !== undefined) counts[state] += 1;
    }
    return counts;
  }

  /** Whether configured server `name` starts on first use (listed from its catalog until then). */
  startsOnUse(name: string): boolean {
    return this.#warm.startsOnUse(name);
  }

  /** After how long without use a caller's view of configured server `name` (of that era) is given back (see `daemon/idleStopPolicy.ts`). */
  idleStopMsOf(name: string, era: 'legacy' | 'modern' | undefined): number | undefined {
    return idleStopMsOf(this.#config.server(name), this.#config.settings, era);
  }

  /** `GET /readyz`: see `daemon/readiness.ts`; never ready while draining. */
  readiness(): ReadyResponse {
    const warm = this.#warm.readiness();
    return this.draining ? { ...warm, ready: false, draining: true } : warm;
  }

  /**
   * The last `lines` lines each live entry of `name` wrote to stderr: the entry's connection
   * replaced the server's own env and header values, and the daemon's credentials go here.
   *
   * @throws PoolError NOT_FOUND for a server neither configured nor running.
   */
  async stderrTail(name: string, lines: number): Promise<{ server: string; entries: { entryIndex: number; lines: string[] }[] }> {
    const running = Object.hasOwn(this.pool.getSnapshot().servers, name);
    if (this.#config.server(name) === undefined && this.#config.unavailable(name) === undefined && !running) throw new PoolError(ErrorCode.NOT_FOUND, `no server named ${JSON.stringify(name)}`);
    const entries = running ? await this.pool.stderrTail(name, { lines }) : [];
    return { server: name, entries: entries.map((entry) => ({ entryIndex: entry.entryIndex, lines: entry.lines.map((line) => this.#redactor.scrubText(line)) })) };
  }

  // --- Authorization --------------------------------------------------------------------------

  /**
   * `POST /workspace/mcp/:server/auth`: starts an OAuth flow for a configured remote server and
   * answers where its user goes. `principal` is the caller: the grant is the caller's own, used
   * for the caller's connections only, unless the server's config says `oauth.shared`.
   *
   * @throws PoolError NOT_FOUND (unknown server), INVALID_ARGUMENT (not remote, or no OAuth client), AUTH_FAILED
   */
  async authorize(name: string, principal: string, options: { device?: boolean } = {}): Promise<AuthStartResponse> {
    this.#assertAccepting();
    const config = this.#config.server(name);
    if (config === undefined) throw new PoolError(ErrorCode.NOT_FOUND, `no server named ${JSON.stringify(name)}`);
    if (this.oauth === undefined) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'this daemon runs without an OAuth client (no state directory)');
    if (config.oauth?.enabled === false) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `${name} has oauth.enabled: false in its config`);
    return this.oauth.start(name, config, grantOwner(config, principal), options);
  }

  /** A server was authorized: the holds that failed on its 401 acquire it again, and the gateway is told. */
  #onAuthorized(name: string): void {
    // The warm start failed on the 401; it runs again now (and with it the `ready` status): an
    // eager server's hold comes back; one started on first use with no catalog yet is started
    // once to learn it (with a catalog it is ready as it is, cold).
    if (this.#warm.startsOnUse(name)) void this.#serialize(() => this.#warm.warmAndCount(name));
    else if (!this.#warm.held(name)) void this.#warm.rewarm(name);
    void this.sessions.rejoin(name);
    for (const listener of [...this.#authorizedListeners]) listener(name);
  }

  // --- Restart --------------------------------------------------------------------------------

  /**
   * Restarts the entries of `name`: the legacy `{restarted, durationMs}` when the name
   * has one entry and no `entryIndex` was given, else `{entries}`. A configured server with no
   * live entry is started again through the warm hold.
   *
   * @throws PoolError NOT_FOUND for an unknown server or entry.
   */
  async restart(name: string, entryIndex?: number): Promise<RestartResponse> {
    this.#assertAccepting();
    if (this.#config.server(name) === undefined && this.#config.unavailable(name) !== undefined) return this.#retryUnavailable(name);
    const snapshot = this.pool.getSnapshot();
    const configured = this.#config.server(name) !== undefined;
    // Own properties only: `__proto__` or `constructor` is an unknown name, not Object's.
    const live = Object.hasOwn(snapshot.servers, name) ? snapshot.servers[name] : undefined;
    if (!configured && live === undefined) throw new PoolError(ErrorCode.NOT_FOUND, `no server named ${JSON.stringify(name)}`);
    if (entryIndex !== undefined && !live?.entrySummary.some((entry) => entry.entryIndex === entryIndex)) {
      throw new PoolError(ErrorCode.NOT_FOUND, `server ${JSON.stringify(name)} has no entry ${entryIndex}`);
    }
    let results: RestartResult[] = [];
    if (live !== undefined) results = await this.pool.restartByName(name, entryIndex === undefined ? {} : { entryIndex });
    if (results.length === 0) {
      if (entryIndex !== undefined) throw new PoolError(ErrorCode.NOT_FOUND, `server ${JSON.stringify(name)} has no entry ${entryIndex}`);
      if (!configured || !this.#config.settings.keepWarm) return { restarted: false, durationMs: 0, skipped: true, reason: 'not_running' };
      const started = Date.now();
      const ok = await this.#warm.warmOne(name);
      results = [{ entryIndex: this.#warm.entryIndexOf(name) ?? -1, restarted: ok, durationMs: Date.now() - started, ...(ok ? {} : { reason: 'start_failed' }) }];
    }
    // A restart that brought a failed key back (past its restart intensity, or its actor died)
    // left an entry nobody holds: the warm hold goes back on it, or it would drain away.
    if (results.some((result) => result.restarted) && !this.#warm.held(name)) await this.#warm.rewarm(name);
    for (const result of results) {
      this.metrics.restarts.inc({ server: name, result: result.restarted ? 'restarted' : 'skipped' });
      this.#logger.info({ server: name, entryIndex: result.entryIndex, restarted: result.restarted, ms: result.durationMs, reason: result.reason }, result.restarted ? 'entry restarted' : 'entry restart skipped');
    }
    this.events.publish({ type: 'server_restarted', serverName: name, entries: results.map((r) => ({ ...r })) });
    if (entryIndex === undefined && results.length === 1) {
      const [only] = results as [RestartResult];
      return only.restarted ? { restarted: true, durationMs: only.durationMs } : { restarted: false, durationMs: only.durationMs, skipped: true, ...(only.reason ? { reason: only.reason } : {}) };
    }
    return { entries: results };
  }

  /**
   * A restart of an unavailable server: one whose command was not found looks for it again (it may
   * have been installed since) and starts when it is there; any other reason needs the config
   * fixed and reloaded.
   *
   * @throws PoolError SERVER_UNAVAILABLE (503) with `data.reason`, when it still cannot run.
   */
  async #retryUnavailable(name: string): Promise<RestartResponse> {
    const problem = this.#config.unavailable(name)!;
    const config = problem.code === ErrorCode.COMMAND_NOT_FOUND && problem.config !== undefined && missingCommand(problem.config) === undefined ? canonicalCommand(problem.config) : undefined;
    if (config === undefined) {
      const fix = problem.code === ErrorCode.COMMAND_NOT_FOUND ? 'install it (or fix the config), then restart it again' : 'fix the config, then reload';
      throw new PoolError(ErrorCode.SERVER_UNAVAILABLE, `${name} is unavailable: ${problem.message}; ${fix}`, { data: { reason: problem.code } });
    }
    this.#config.makeAvailable(name, config);
    const started = Date.now();
    await this.#warm.warmAndCount(name);
    this.#announceAdded([name]);
    const ok = this.#warm.lastError(name) === undefined;
    this.#logger.info({ server: name, restarted: ok }, `${name}: its command is there now`);
    const result: RestartResult = { entryIndex: this.#warm.entryIndexOf(name) ?? 0, restarted: ok, durationMs: Date.now() - started, ...(ok ? {} : { reason: 'start_failed' }) };
    this.events.publish({ type: 'server_restarted', serverName: name, entries: [{ ...result }] });
    return ok ? { restarted: true, durationMs: result.durationMs } : { restarted: false, durationMs: result.durationMs, skipped: true, reason: 'start_failed' };
  }

  /**
   * Calls `listener` with the names of servers that became available (a reload added or fixed
   * them, or a restart found a missing command): the `/mcp` gateway's open sessions join them.
   * Returns the function that removes it.
   */
  onServersAdded(listener: (names: readonly string[]) => void): () => void {
    this.#addedListeners.add(listener);
    return () => this.#addedListeners.delete(listener);
  }

  #announceAdded(names: readonly string[]): void {
    if (names.length === 0) return;
    for (const listener of [...this.#addedListeners]) listener(names);
  }

  /** One warning and one `server_unavailable` event for each server of the config that cannot run. */
  #reportUnavailable(rejected: readonly { name: string; code: string; message: string; keptRunning: boolean }[]): void {
    for (const { name, code, message, keptRunning } of rejected) {
      const what = keptRunning ? `${name}: the config's new entry cannot run, so it keeps its running config` : `${name} is unavailable (the other servers run)`;
      this.#logger.warn({ server: name, code, keptRunning }, `${what}: ${message}`);
      this.events.publish({ type: 'server_unavailable', serverName: name, code, message, keptRunning });
    }
  }

  // --- Reload ---------------------------------------------------------------------------------

  /**
   * Re-reads the config, server by server (see `config/reloadMerge.ts`). Changed fingerprints get
   * a new entry for new acquires (the warm hold moves to it); the old entry keeps its sessions and
   * drains as they leave; a server whose new entry cannot run is reported in `rejected` (a running
   * one keeps its last good config). Client tokens, allowed hosts and origins apply at once; other
   * daemon settings are reported in `needsRestart`. A file that cannot be read as a whole changes nothing.
   *
   * @throws PoolError CONFIG_REJECTED when the file cannot be read as a whole, NOT_IMPLEMENTED with no config source.
   */
  reload(trigger: 'api' | 'signal' | 'file'): Promise<ReloadResult> {
    this.#assertAccepting();
    return this.#serialize(() => this.#reload(trigger));
  }

  async #reload(trigger: 'api' | 'signal' | 'file'): Promise<ReloadResult> {
    if (this.#reloadConfig === undefined) throw new PoolError(ErrorCode.NOT_IMPLEMENTED, 'this daemon has no config source to reload');
    const previousDigest = this.#config.config.digest;
    let next: LoadedConfig;
    try {
      next = await this.#reloadConfig();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      this.metrics.reloads.inc({ result: 'rejected' });
      this.#logger.error({ trigger, code: error.code }, `config rejected, the running config is unchanged: ${error.message}`);
      this.events.publish({ type: 'config_rejected', trigger, message: error.message });
      throw new PoolError(ErrorCode.CONFIG_REJECTED, `${error.message}\n(the running config is unchanged)`, { data: { file: error.data.file } });
    }
    const merged = mergeReload(this.#config.config, next);
    next = merged.config;
    const diff = this.#config.changeTo(next);
    // A server kept on its running config is reported as rejected, not as unchanged.
    const change = { ...diff, unchanged: diff.unchanged.filter((name) => !merged.rejected.some((r) => r.name === name)), rejected: merged.rejected };
    if (trigger === 'file' && next.digest === previousDigest) return change;
    this.#config.adopt(next);
    // The warm hold follows the config: off the old entries, onto the new ones.
    await Promise.all([...change.changed, ...change.removed].map((name) => this.#warm.drop(name, change.removed.includes(name))));
    await Promise.all([...change.changed, ...change.added].map((name) => this.#warm.warmAndCount(name)));
    this.metrics.reloads.inc({ result: change.rejected.length > 0 ? 'partial' : 'applied' });
    const rejected = change.rejected.map((r) => r.name);
    this.#logger.info({ trigger, added: change.added, removed: change.removed, changed: change.changed, needsRestart: change.needsRestart, ...(rejected.length > 0 ? { rejected } : {}) }, 'config reloaded');
    if (change.needsRestart.length > 0) this.#logger.warn({ settings: change.needsRestart }, 'these daemon settings changed but apply only after a restart of the daemon');
    this.#reportUnavailable(change.rejected);
    this.events.publish({ type: 'config_reloaded', trigger, added: change.added, removed: change.removed, changed: change.changed, ...(rejected.length > 0 ? { rejected } : {}) });
    this.#announceAdded(change.added);
    return change;
  }

  // --- Shutdown -------------------------------------------------------------------------------

  /**
   * The first step of a stop, for a balancer: `/readyz` answers 503 from now on (before anything
   * else, so the balancer's next probe moves new work away), new sessions (REST and legacy `/mcp`)
   * are refused with 503, and everything else is still served while the calls in flight finish,
   * for at most `drainTimeoutMs`. Resolves with whether they all did (`left`: those still under
   * way, which the shutdown then cancels). Idempotent.
   */
  drain(): Promise<{ drained: boolean; left: number }> {
    this.#draining ??= (async () => {
      const timeoutMs = this.#config.settings.drainTimeoutMs;
      // Draining is off unless configured (a single daemon has no balancer to move work away).
      if (timeoutMs > 0) this.#logger.info({ calls: this.callsInFlight, timeoutMs }, 'draining: not ready, no new sessions, calls in flight finish');
      const deadline = Date.now() + timeoutMs;
      // Polled: the calls end in several places (REST, both eras of `/mcp`), and a stop is rare.
      while (this.callsInFlight > 0 && Date.now() < deadline) {
        await new Promise<void>((resolve) => setTimeout(resolve, Math.min(25, Math.max(1, deadline - Date.now()))).unref());
      }
      const left = this.callsInFlight;
      if (left > 0) this.#logger.warn({ left, timeoutMs }, 'drain deadline passed with calls in flight: they are cancelled');
      return { drained: left === 0, left };
    })();
    return this.#draining;
  }

  /** Registers an open event stream so shutdown can end it; returns the unregister function. */
  trackStream(close: () => void): () => void {
    this.#streams.add(close);
    return () => this.#streams.delete(close);
  }

  /**
   * Shuts down in this order: stop accepting; cancel in-flight calls and end event
   * streams; release every session; `drainAll()`: each server gets stdin EOF, then SIGTERM, then
   * SIGKILL, and only what is still alive when `shutdownTimeoutMs` (counted from here) runs out
   * is killed at once. Idempotent. The HTTP server is closed by the caller around this (it stops
   * listening first, and closes last).
   */
  shutdown(reason: string): Promise<DrainAllResult> {
    this.#closing ??= (async () => {
      const deadline = Date.now() + this.#config.settings.shutdownTimeoutMs;
      // 1. Stop accepting: new sessions, calls, restarts and reloads get 503 from here on.
      this.#accepting = false;
      this.oauth?.close();
      this.#logger.info({ reason, sessions: this.sessions.size, calls: this.sessions.inFlightCalls }, 'shutting down');
      this.events.publish({ type: 'shutdown', signal: reason });
      // 2. Cancel in-flight calls (each sends notifications/cancelled upstream) and wait for them.
      await this.sessions.cancelCalls();
      for (const close of [...this.#streams]) close();
      // 3. Release every session (the warm hold too).
      const ids = this.sessions.closeAll();
      await Promise.all([...ids, WARM_SESSION_ID].map((id) => this.pool.releaseSession(id).catch((error: unknown) => this.#logger.warn({ err: error, sessionId: id }, 'releasing a session at shutdown failed'))));
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

  /** @throws PoolError SHUTTING_DOWN once draining: a new session would be cut by the stop that follows. */
  assertOpening(): void {
    this.#assertAccepting();
    if (this.draining) throw new PoolError(ErrorCode.SHUTTING_DOWN, 'the daemon is draining before it stops: open the session on another replica');
  }

  #assertAccepting(): void {
    if (!this.#accepting) throw new PoolError(ErrorCode.SHUTTING_DOWN, 'the daemon is shutting down');
  }

  /** Runs reloads (and the first warm-up) one at a time. */
  #serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(task, task);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}
