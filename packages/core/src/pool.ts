/**
 * `McpTransportPool`, the supervisor's router: which entry a session gets (`acquire`), when an
 * entry is let go (`release`), restarted (`restartByName`) or drained (`drainAll`). It never
 * proxies a call: each session's `PooledConnection` talks to its entry's actor directly.
 * The decisions live beside it, one per file: the pool key (`./poolKey.ts`), the spawn deadline
 * and backoff (`./spawnPolicy.ts`), starting an entry (`./entryStart.ts`), the supervision of
 * connection threads with their liveness, deaths and restart intensity (`./threadSupervisor.ts`),
 * authorization (`./authGates.ts`), views (`./viewBinding.ts`), per-session bookkeeping
 * (`./sessionIndex.ts`) and the snapshot (`./poolSnapshot.ts`).
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
import {
  ErrorCode,
  PoolError,
  connectionIdOf,
  fingerprint,
  isPoolable,
  normalizeServerConfig,
  sessionFieldsOf,
  type ActorEvents,
  type BudgetEvent,
  type ConnectionId,
  type EntryStatus,
  type Logger,
  type PoolEvent,
  type Root,
  type ServerConfig,
  type ServerConfigInput,
  type SharingPolicy,
  type WireError,
} from '@mcpool/protocol';
import { countZombieChildren } from '@mcpool/protocol/processTree';
import { ActorHost, DEFAULT_RESOURCE_LIMITS } from './actorHost.js';
import { shareRefusal } from './actorShares.js';
import { actorHeapMb } from './actorHeap.js';
import { AuthGates, authRequiredError } from './authGates.js';
import { WorkspaceBudget } from './budget.js';
import { withDeadline } from './deadline.js';
import { PoolEntry, type EntryKey } from './entry.js';
import { EntryStarter } from './entryStart.js';
import { EraCache } from './eraCache.js';
import { ServerCatalog, changedLists, type CatalogChange, type CatalogRecord } from './catalog.js';
import { CatalogShown } from './catalogShown.js';
import { factsOfRequest } from './catalogFacts.js';
import { GroupLedger, defaultStateDir } from './groupLedger.js';
import { SILENT_LOGGER } from './logging.js';
import { PoolKeys } from './poolKey.js';
import { assertSharingPolicy, resolvePoolOptions, type ResolvedPoolOptions } from './poolOptions.js';
import { buildSnapshot } from './poolSnapshot.js';
import type { AcquireOptions, DrainAllOptions, DrainAllResult, McpTransportPoolOptions, PoolSnapshot, RestartResult } from './poolTypes.js';
import type { PooledConnection } from './pooledConnection.js';
import type { TrippedKey } from './restartIntensity.js';
import { SessionIndex } from './sessionIndex.js';
import { SpawnBackoff, spawnTimeoutFor } from './spawnPolicy.js';
import { ThreadSupervisor } from './threadSupervisor.js';
import { ViewBinding, shareView } from './viewBinding.js';

/** How often the group ledger records the members of the groups it holds (one `ps`). */
const LEDGER_REFRESH_MS = 5_000;
/** Extra time the supervisor gives an actor past its own deadline before declaring it hung. */
const ACTOR_SLACK_MS = 5_000;
/** How many times an acquire retries when the entry it found was closing under it. */
const ATTACH_ATTEMPTS = 3;

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
  readonly #options: ResolvedPoolOptions;
  readonly #logger: Logger;
  readonly #onEvent: ((event: PoolEvent) => void) | undefined;
  readonly #host: ActorHost;
  readonly #budget: WorkspaceBudget;
  readonly #keys = new PoolKeys();
  /** Routing: the live entry of each key. An entry leaves it (by identity) when it closes or fails. */
  readonly #entries = new Map<ConnectionId, PoolEntry>();
  readonly #sessions: SessionIndex;
  readonly #auth: AuthGates;
  readonly #backoff: SpawnBackoff;
  readonly #supervisor: ThreadSupervisor;
  readonly #starter: EntryStarter;
  readonly #views: ViewBinding;
  /** Teardowns under way per key: a replacement spawns only once the old tree is gone. */
  readonly #retiring = new Map<ConnectionId, Promise<void>>();
  readonly #nextEntryIndex = new Map<string, number>();
  readonly #ledger: GroupLedger | undefined;
  #ledgerRefresh: NodeJS.Timeout | undefined;
  /** Era verdicts by config fingerprint (in the state dir when there is one). */
  readonly #eras: EraCache;
  /** What each config offers, by fingerprint (in `catalogDir` when the host gives one). */
  readonly #catalog: ServerCatalog;
  /** What each config object shows of the catalog, computed once per config and record. */
  readonly #shown: CatalogShown;
  readonly #catalogListeners = new Set<(change: CatalogChange) => void>();
  #started = false;
  #draining = false;

  /**
   * Checks the options and does nothing else: no disk, no signal, no thread, no timer. The pool's
   * background work begins at {@link start} (or the first acquire).
   */
  constructor(options: McpTransportPoolOptions = {}) {
    this.#options = resolvePoolOptions(options);
    this.#logger = (options.logger ?? SILENT_LOGGER).child({ component: 'pool' });
    this.#onEvent = options.onEvent;
    this.#budget = new WorkspaceBudget(options.budget ?? {}, (event) => this.#emitBudget(event));
    // Threads are sized for the messages they take, unless the host sized them itself.
    const { sizesHeaps, maxMessageBytes } = this.#options;
    this.#host = new ActorHost(sizesHeaps ? { ...options.actorHost, resourceLimits: { ...DEFAULT_RESOURCE_LIMITS, maxOldGenerationSizeMb: actorHeapMb(maxMessageBytes) } } : options.actorHost);
    this.#backoff = new SpawnBackoff(this.#options.spawnBackoff);
    this.#sessions = new SessionIndex(this.#options.maxParallelSpawns);
    this.#auth = new AuthGates(options.credentials, this.#logger, (event) => this.#emit(event));
    // No I/O here: the ledger makes its directory when it records its first group.
    const stateDir = typeof options.stateDir === 'string' ? options.stateDir : this.#options.reapLeftovers ? defaultStateDir() : undefined;
    this.#ledger = stateDir === undefined ? undefined : new GroupLedger(stateDir);
    this.#eras = new EraCache(stateDir);
    this.#catalog = new ServerCatalog({ dir: typeof options.catalogDir === 'string' ? options.catalogDir : undefined, written: options.onCatalogRecord });
    this.#shown = new CatalogShown(this.#catalog);
    const { heartbeat } = this.#options;
    this.#supervisor = new ThreadSupervisor(
      { intervalMs: heartbeat.intervalMs, liveness: { misses: heartbeat.misses, timeoutMs: heartbeat.timeoutMs }, intensity: this.#options.restartIntensity, logger: this.#logger },
      {
        entries: () => this.#entries.values(),
        draining: () => this.#draining,
        setStatus: (entry, status) => this.#setStatus(entry, status),
        evict: (entry) => this.#evict(entry),
        retire: (entry, teardown) => void this.#retire(entry, teardown),
        closeEntry: (entry, reason) => this.#closeEntry(entry, reason),
        dropViews: (entry) => this.#views.drop(entry),
        replace: (dead, lost) => this.#bringBack(dead, lost),
        orphan: (dead, error) => this.#views.orphan(dead, error),
        emit: (event) => this.#emit(event),
      },
    );
    this.#views = new ViewBinding({
      callTimeoutMs: this.#options.callTimeoutMs,
      sessions: this.#sessions,
      draining: () => this.#draining,
      release: (view) => this.#releaseView(view),
      idleIfUnused: (entry) => this.#idleIfUnused(entry),
      logger: this.#logger,
    });
    this.#starter = new EntryStarter({
      options: this.#options,
      rootLogger: options.logger,
      logger: this.#logger,
      auth: this.#auth,
      backoff: this.#backoff,
      eras: this.#eras,
      askingToolsOf: (fp) => this.#catalog.get(fp)?.learned.askingTools,
      ledger: this.#ledger,
      retiring: this.#retiring,
      actorSlackMs: ACTOR_SLACK_MS,
      setStatus: (entry, status) => this.#setStatus(entry, status),
      evict: (entry) => this.#evict(entry),
    });
  }

  /**
   * Starts the pool's background work now rather than at the first acquire: the crash-leftover
   * reap (with `reapLeftovers`), the warm spare thread and the liveness checks (an unref'd timer).
   * Idempotent, synchronous; a no-op once `drainAll()` began.
   */
  start(): void {
    if (this.#started || this.#draining) return;
    this.#started = true;
    if (this.#options.reapLeftovers && this.#ledger !== undefined) {
      const reaped = this.#ledger.reapLeftovers();
      if (reaped.killed > 0) this.#logger.warn(reaped, 'killed process groups left by a crashed run');
    }
    this.#supervisor.start();
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
   * `MCPOOL_ACTOR_CAP_REACHED` (`maxActors` live threads, any budget mode, or only the threads
   * `actorShares` keeps for exempt principals are left), `MCPOOL_CLIENT_LIMIT_REACHED` (the
   * principal's share of `actorShares`),
   * `MCPOOL_CONFIG_INVALID`, `MCPOOL_INVALID_ARGUMENT` (a `per-principal` server acquired without
   * a principal), `MCPOOL_SERVER_FAILED` (the key is past its restart intensity),
   * `MCPOOL_AUTH_REQUIRED`, `MCPOOL_SPAWN_FAILED` / `MCPOOL_SPAWN_TIMEOUT` (every waiter of that
   * spawn gets the same error; acquires of that config fail at once with it while `spawnBackoff`
   * lasts, then one spawns again; the host's credentials are a step of the spawn, under the same
   * deadline), or `MCPOOL_CONNECTION_RELEASED` when `releaseSession(sessionId)` ran meanwhile.
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
  async acquire(name: string, cfg: ServerConfigInput | ServerConfig | Record<string, unknown>, sessionId: string, options: AcquireOptions = {}): Promise<PooledConnection> {
    this.#assertOpen();
    if (typeof name !== 'string' || name.length === 0) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'name must be a non-empty string');
    if (typeof sessionId !== 'string' || sessionId.length === 0) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'sessionId must be a non-empty string');
    if (typeof options !== 'object' || options === null) throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options must be an object');
    const { principal, client, roots, countsAgainstShare = true } = options;
    if (principal !== undefined && (typeof principal !== 'string' || principal.length === 0)) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.principal must be a non-empty string');
    }
    if (client !== undefined && (typeof client !== 'object' || client === null || Array.isArray(client) || !isCloneable(client))) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.client must be a plain object of JSON-like values (it is sent to the actor thread)');
    }
    if (typeof countsAgainstShare !== 'boolean') throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.countsAgainstShare must be a boolean');
    if (roots !== undefined && !isRootList(roots)) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'options.roots must be an array of { uri: string, name?: string }');
    }
    this.start();
    const config = normalizeServerConfig(cfg, { path: name }).config;
    const fields = sessionFieldsOf(config);
    const pooled = isPoolable(config, this.#options.pooledTransports);
    const fp = fingerprint(config);
    const key = this.#keys.keyOf({ name, fingerprint: fp, pooled, sharing: pooled ? this.#sharingOf(name, config, fp) : 'per-session', sessionId, principal, roots });
    const spawnKey = connectionIdOf(name, fp);

    const tripped = this.#supervisor.intensity.tripped(key.id);
    if (tripped !== undefined) throw this.#trippedError(tripped);
    if (this.#auth.isClosed(key.authKey)) throw authRequiredError(name);
    let authRetried = false;
    const { token, done } = this.#sessions.begin(sessionId);
    try {
      for (let attempt = 0; attempt < ATTACH_ATTEMPTS; attempt++) {
        let entry = this.#live(key.id);
        if (entry === undefined) {
          this.#backoff.check(spawnKey, name);
          // A new entry waits for one of the session's spawn slots; the slot is held until it started or failed.
          const slot = await this.#sessions.spawnSlot(sessionId);
          try {
            // A drainAll that started meanwhile wins over the release it implies.
            this.#assertOpen();
            if (token.cancelled) throw released(sessionId, name);
            // Another acquire spawned it while this one waited: attach to that one.
            entry = this.#live(key.id);
            if (entry === undefined) {
              // A spawn that failed while this one waited for its slot set a backoff.
              this.#backoff.check(spawnKey, name);
              const chargedTo = countsAgainstShare ? principal : undefined;
              const refusal = shareRefusal(this.#options.actorShares, { serverName: name, principal: chargedTo, liveActors: this.#host.liveCount, maxActors: this.#options.maxActors, started: () => this.#startedBy(chargedTo!) });
              if (refusal !== undefined) throw refusal;
              entry = this.#spawn(name, key, config, pooled, sessionId, chargedTo);
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
        this.#sessions.index(sessionId, entry);
        try {
          await entry.ready;
        } catch (error) {
          // The token was refused at connect and the host has a refreshed one: one more try.
          if (!authRetried && error instanceof PoolError && error.code === ErrorCode.AUTH_REQUIRED && !this.#auth.isClosed(key.authKey)) {
            authRetried = true;
            attempt -= 1;
            continue;
          }
          throw error;
        } finally {
          if (!entry.views.has(sessionId)) this.#sessions.unindex(sessionId, entry);
        }
        // A drainAll that started meanwhile wins over the release it implies.
        if (token.cancelled) {
          this.#idleIfUnused(entry);
          this.#assertOpen();
          throw released(sessionId, name);
        }
        this.#assertOpen();
        if (entry.terminal) continue;
        // Another acquire of this session attached while we waited: share its view.
        const attached = entry.views.get(sessionId);
        if (attached !== undefined) return await shareView(attached, fields);
        try {
          return await this.#views.attach(entry, sessionId, fields, { client, principal });
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
      done();
      this.#vacated(sessionId);
    }
  }

  /** Releases one session's view of one entry. Unknown ids are ignored. */
  async release(connectionId: ConnectionId | string, sessionId: string): Promise<void> {
    for (const entry of this.#sessions.heldBy(sessionId)) {
      if (entry.id !== connectionId) continue;
      const view = entry.views.get(sessionId);
      if (view !== undefined) await this.#releaseView(view);
    }
    this.#vacated(sessionId);
  }

  /** Releases everything `sessionId` holds and cancels its acquires under way. O(refs of that session). */
  async releaseSession(sessionId: string): Promise<void> {
    this.#sessions.cancel(sessionId);
    await Promise.all(
      this.#sessions.heldBy(sessionId).map((entry) => {
        const view = entry.views.get(sessionId);
        return view === undefined ? Promise.resolve() : this.#releaseView(view);
      }),
    );
    this.#vacated(sessionId);
  }

  /**
   * What `config` offered when a connection of it last discovered or changed its lists (this
   * pool's, or one before it with the same `catalogDir` and mcpool version), or undefined when
   * none did: a host lists a server from it without starting it. Its tools and prompts are the
   * ones a view of `cfg` would show (its `includeTools`/`excludeTools` applied, its `trust` on
   * each tool). `name` only names the config in a config error.
   *
   * A config object is read once (a changed config is a new object), and the same record is
   * returned until the catalog records the config's lists anew: it is shared, not to be changed.
   */
  catalogOf(name: string, cfg: ServerConfigInput | ServerConfig | Record<string, unknown>): CatalogRecord | undefined {
    return this.#shown.of(name, cfg);
  }

  /**
   * Takes a catalog record another process wrote (the text `onCatalogRecord` gave there) as the
   * one of `fingerprint`, when it is of this mcpool's format and version; it is then listed as if
   * this pool had written it. @returns whether it was taken
   */
  adoptCatalog(fingerprint: string, text: string): boolean {
    return this.#catalog.adopt(fingerprint, text);
  }

  /**
   * Calls `listener` whenever a config's catalog lists change from what was recorded before (a
   * server started or announced `list_changed` with other lists): whoever listed the config from
   * its catalog was shown stale lists. Returns the function that removes it.
   */
  onCatalogChange(listener: (change: CatalogChange) => void): () => void {
    this.#catalogListeners.add(listener);
    return () => void this.#catalogListeners.delete(listener);
  }

  /** A fresh, plain snapshot: per server name, its entries with refs and status; the budget cell. */
  getSnapshot(): PoolSnapshot {
    const { heartbeat } = this.#options;
    return buildSnapshot({
      entries: this.#entries.values(),
      tripped: this.#supervisor.intensity.trippedKeys(),
      gates: this.#auth.gates(),
      backoffs: this.#backoff.active(),
      budget: this.#budget.cell(),
      liveActors: this.#host.liveCount,
      spareThread: this.#host.hasSpare,
      maxActors: this.#options.maxActors,
      maxParallelSpawnsPerSession: this.#options.maxParallelSpawns,
      heartbeat: { intervalMs: heartbeat.intervalMs, timeoutMs: heartbeat.timeoutMs, misses: heartbeat.misses },
    });
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
    this.#backoff.clearServer(name);
    const wanted = (entryIndex: number): boolean => options.entryIndex === undefined || options.entryIndex === entryIndex;
    const work: Promise<RestartResult>[] = [];
    for (const entry of this.#entries.values()) {
      if (entry.serverName !== name || !wanted(entry.entryIndex) || entry.terminal) continue;
      entry.restarting ??= this.#restartEntry(entry).finally(() => {
        entry.restarting = undefined;
      });
      work.push(entry.restarting);
    }
    for (const tripped of [...this.#supervisor.intensity.trippedKeys()]) {
      if (tripped.serverName === name && wanted(tripped.entryIndex)) work.push(this.#resetTripped(tripped));
    }
    return Promise.all(work);
  }

  /**
   * The host has a token for `serverName` now: its keys leave `auth_required` (the next acquire
   * connects, with the token from `credentials`), and live entries of it take the current token.
   * Emits `authorized`.
   */
  authorized(serverName: string): void {
    this.#auth.open(serverName);
    this.#emit({ type: 'authorized', serverName });
    void this.refreshAuthorization(serverName);
  }

  /** Hands the current token from `credentials` to every live entry of `serverName` whose token changed (after a refresh). */
  async refreshAuthorization(serverName: string): Promise<void> {
    await this.#auth.refresh([...this.#entries.values()].filter((entry) => entry.serverName === serverName && entry.status !== 'spawning' && !entry.terminal));
  }

  /**
   * Health figures, some of which need a process listing: zombie children of this process (0
   * expected: the supervisor spawns every stdio server and reaps it, whatever becomes of its actor
   * thread), keys past their restart intensity (`trippedKeys`) and keys with a failure inside
   * its window (`failingKeys`; a key leaves it when its failures age out, its unpooled entry ends or
   * its session lets go).
   */
  async getHealth(): Promise<{ liveActors: number; zombies: number; trippedKeys: number; failingKeys: number }> {
    const { tripped, failing } = this.#supervisor.intensity.size;
    return { liveActors: this.#host.liveCount, zombies: await countZombieChildren(), trippedKeys: tripped, failingKeys: failing };
  }

  /**
   * The last lines the live entries of `name` wrote to stderr, oldest first: at most `lines` per
   * entry (the actor keeps 100), across the entry's reconnects, with the values of the entry's
   * own env and headers replaced by `[redacted]`. Remote servers have none. An entry whose actor
   * does not answer within `timeoutMs` is left out; an unknown name gives `[]`.
   */
  async stderrTail(name: string, options: { lines?: number; timeoutMs?: number } = {}): Promise<{ entryIndex: number; lines: string[] }[]> {
    const { lines = 50, timeoutMs = 2000 } = options;
    const entries = [...this.#entries.values()].filter((entry) => entry.serverName === name && entry.thread.alive).sort((a, b) => a.entryIndex - b.entryIndex);
    const tails = await Promise.all(
      entries.map(async (entry) => {
        try {
          const tail = await entry.thread.request<{ lines: string[] }>('stderrTail', null, { timeoutMs });
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
    this.#sessions.cancel();
    const result: DrainAllResult = { drained: 0, forced: 0, errors: [] };
    await Promise.all(
      [...this.#entries.values()].map(async (entry) => {
        // Spawns in flight end within the same deadline.
        await withDeadline(entry.ready.catch(() => undefined), left());
        for (const view of entry.views.values()) view.dispose(new PoolError(ErrorCode.POOL_DRAINING, 'the pool is draining'));
        entry.views.clear();
        try {
          if (force) {
            this.#setStatus(entry, 'closed');
            await entry.thread.terminate();
            result.forced += 1;
          } else if ((await withDeadline(this.#closeEntry(entry, 'drainAll').then(() => true), left())) === true) {
            result.drained += 1;
          } else {
            // Still alive at the deadline: kill the thread and the whole tree.
            await entry.thread.terminate();
            result.forced += 1;
          }
        } catch (error) {
          result.errors.push({ code: ErrorCode.INTERNAL, message: `${entry.serverName}#${entry.entryIndex}: ${(error as Error).message}` });
        } finally {
          this.#evict(entry);
        }
      }),
    );
    this.#sessions.clear();
    this.#supervisor.stop();
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
      const outcome = await entry.thread.request<{ restarted: boolean; reason?: string }>('restart', null, {
        timeoutMs: spawnTimeoutFor(entry.config, this.#options.spawnTimeoutMs) + this.#options.shutdownStepMs * 3 + ACTOR_SLACK_MS,
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

  async #resetTripped(tripped: TrippedKey): Promise<RestartResult> {
    const started = Date.now();
    const result = (restarted: boolean, reason: string): RestartResult => ({ entryIndex: tripped.entryIndex, restarted, durationMs: Date.now() - started, reason });
    if (this.#budget.wouldRefuse()) return result(false, 'budget_would_exceed');
    this.#supervisor.intensity.reset(tripped.key.id);
    if (this.#entries.has(tripped.key.id)) return result(true, 'reset');
    try {
      const entry = this.#spawn(tripped.serverName, tripped.key, tripped.config, tripped.pooled, 'restart', undefined);
      await entry.ready;
      this.#idleIfUnused(entry);
      return result(true, 'reset');
    } catch (error) {
      return result(false, error instanceof PoolError ? error.code : 'failed');
    }
  }

  #assertOpen(): void {
    if (this.#draining) throw new PoolError(ErrorCode.POOL_DRAINING, 'the pool is draining and accepts no new acquire');
  }

  /** The live entry of `id`, evicting one that ended meanwhile. */
  #live(id: ConnectionId): PoolEntry | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined || !entry.terminal) return entry;
    this.#evict(entry);
    return undefined;
  }

  /** The policy of `config`: its own `sharing`, else the pool's default for it. */
  #sharingOf(name: string, config: ServerConfig, fp: string): SharingPolicy {
    if (config.sharing !== undefined) return config.sharing;
    const fallback = this.#options.defaultSharing;
    if (typeof fallback !== 'function') return fallback;
    // The era last settled for this fingerprint, or `undefined` before any connection settled one:
    // a default that depends on it takes its safe branch.
    return assertSharingPolicy(fallback({ serverName: name, fingerprintEra: this.#eras.get(fp)?.era, config }), 'options.defaultSharing()');
  }

  #trippedError(tripped: TrippedKey): PoolError {
    const { maxRestarts, periodMs } = this.#supervisor.intensity.limit;
    return new PoolError(ErrorCode.SERVER_FAILED, `${tripped.serverName} failed more than ${maxRestarts} times in ${periodMs} ms and stays failed until restarted: ${tripped.lastError.message}`, {
      data: { serverName: tripped.serverName, entryIndex: tripped.entryIndex, lastError: tripped.lastError },
    });
  }

  /** Creates the entry on a thread of its own and starts its actor. Synchronous up to the point the entry is visible. */
  /** Live entries the acquires of `principal` started (bounded by `maxActors`). */
  #startedBy(principal: string): number {
    let count = 0;
    for (const entry of this.#entries.values()) if (entry.startedBy === principal && !entry.terminal) count += 1;
    return count;
  }

  #spawn(name: string, key: EntryKey, config: ServerConfig, pooled: boolean, sessionId: string, startedBy: string | undefined): PoolEntry {
    // Before the budget: a refusal here reserves nothing. The host counts a thread from its
    // creation (synchronous, below) to its exit, so concurrent spawns cannot overshoot.
    if (this.#host.liveCount >= this.#options.maxActors) {
      throw new PoolError(ErrorCode.ACTOR_CAP_REACHED, `${name} was refused: the pool already runs ${this.#host.liveCount} actor threads, its cap (maxActors ${this.#options.maxActors}); release sessions, or raise maxActors`, {
        data: { serverName: name, liveActors: this.#host.liveCount, maxActors: this.#options.maxActors },
      });
    }
    if (!this.#budget.tryReserve(name, sessionId)) {
      throw new PoolError(ErrorCode.BUDGET_EXHAUSTED, `the workspace budget of ${this.#budget.clientBudget} live connections is used up; ${name} was refused`, {
        data: { serverName: name, liveCount: this.#budget.liveCount, clientBudget: this.#budget.clientBudget },
      });
    }
    const entryIndex = this.#nextEntryIndex.get(name) ?? 0;
    this.#nextEntryIndex.set(name, entryIndex + 1);
    let thread;
    try {
      const heapMb = this.#options.sizesHeaps ? actorHeapMb(config.maxMessageBytes ?? this.#options.maxMessageBytes) : undefined;
      thread = this.#host.create(undefined, { heapMb });
    } catch (error) {
      // No thread, no entry: the reservation goes back.
      this.#budget.release();
      throw error;
    }
    const entry = new PoolEntry({ key, serverName: name, entryIndex, config, pooled, thread, startedBy });
    this.#entries.set(key.id, entry);
    this.#emit({ type: 'statusChanged', serverName: name, entryIndex, generation: entry.generation, status: 'spawning' });
    thread.onEvent((ev, data) => this.#onActorEvent(entry, ev, data));
    this.#supervisor.watch(entry);
    this.#starter.start(entry);
    return entry;
  }

  async #releaseView(view: PooledConnection): Promise<void> {
    const entry = this.#views.entryOf(view);
    if (entry === undefined) return;
    view.dispose(new PoolError(ErrorCode.CONNECTION_RELEASED, `this connection to ${view.serverName} was released`));
    if (entry.views.get(view.sessionId) !== view) return;
    entry.views.delete(view.sessionId);
    this.#sessions.unindex(view.sessionId, entry);
    // Unpooled connections close at once on release.
    if (!entry.pooled && entry.views.size === 0) await this.#closeEntry(entry, 'released');
    else this.#idleIfUnused(entry);
  }

  /** A session that let go of everything: the restart records kept for it alone go. */
  #vacated(sessionId: string): void {
    if (this.#sessions.holdsNothing(sessionId)) this.#supervisor.intensity.forgetOwner(sessionId);
  }

  /** refs 1 → 0: the actor starts its drain grace (or an unpooled entry closes). */
  #idleIfUnused(entry: PoolEntry): void {
    if (entry.views.size > 0 || entry.idle || entry.terminal || entry.status === 'spawning') return;
    if (!entry.pooled) {
      void this.#closeEntry(entry, 'released');
      return;
    }
    entry.idle = true;
    // Nobody holds it: it must not keep the host alive (a host that exits kills its group).
    entry.thread.unref();
    void entry.thread.request('setIdle', { idle: true }).catch(() => undefined);
  }

  #closeEntry(entry: PoolEntry, reason: string): Promise<void> {
    if (entry.closing === undefined) {
      // Terminal state first, synchronously: no attach can reach this entry from now on.
      if (!entry.terminal) this.#setStatus(entry, 'closed');
      this.#evict(entry);
      entry.closing = this.#retire(entry, entry.thread.shutdown(reason, this.#options.shutdownStepMs * 2 + 2000));
    }
    return entry.closing;
  }

  /** Tracks an entry's teardown so its replacement waits for it. */
  #retire(entry: PoolEntry, teardown: Promise<void>): Promise<void> {
    const done = teardown.catch(() => undefined).finally(() => {
      if (this.#retiring.get(entry.id) === done) this.#retiring.delete(entry.id);
      if (entry.thread.pgid !== undefined) this.#ledger?.remove(entry.thread.pgid);
      // The spare took the place of a connection's thread at its start; one is booted again if it was used meanwhile.
      if (!this.#draining) this.#host.prewarm();
    });
    this.#retiring.set(entry.id, done);
    return done;
  }

  /** Removes an entry from routing, by identity, and gives back its budget slot once. */
  #evict(entry: PoolEntry): void {
    if (this.#entries.get(entry.id) === entry) {
      this.#entries.delete(entry.id);
      // An unpooled key has one entry ever: nothing can acquire it again.
      if (!entry.pooled) this.#supervisor.intensity.forget(entry.id);
    }
    if (entry.budgetHeld) {
      entry.budgetHeld = false;
      this.#budget.release();
    }
  }

  #onActorEvent(entry: PoolEntry, ev: string, data: unknown): void {
    switch (ev) {
      case 'spawned':
        this.#ledger?.add((data as ActorEvents['spawned']).pgid);
        return;
      case 'reaped':
        this.#ledger?.remove((data as ActorEvents['reaped']).pgid);
        return;
      case 'throttle':
        entry.throttled = (data as ActorEvents['throttle']).throttled;
        return;
      case 'unattributed':
        this.#emit({ type: 'notificationsDropped', serverName: entry.serverName, entryIndex: entry.entryIndex, generation: entry.generation, dropped: (data as ActorEvents['unattributed']).dropped });
        return;
      case 'authRejected': {
        const { challenge, status } = data as ActorEvents['authRejected'];
        void this.#auth.callRefused(
          entry,
          challenge,
          status,
          // Every entry on that authorization (unpooled ones each have their own connection) holds the same dead token.
          () => [...this.#entries.values()].filter((other) => other.key.authKey === entry.key.authKey && !other.terminal),
          (holder) => this.#closeEntry(holder, 'auth_required'),
        );
        return;
      }
      case 'lists': {
        const fp = fingerprint(entry.config);
        const before = this.#catalog.get(fp);
        const after = this.#catalog.record(fp, data as ActorEvents['lists']);
        const lists = before === undefined ? [] : changedLists(before, after);
        if (lists.length === 0) return;
        for (const listener of [...this.#catalogListeners]) {
          try {
            listener({ fingerprint: fp, lists });
          } catch (error) {
            this.#logger.warn({ err: error }, 'a catalog listener threw');
          }
        }
        return;
      }
      case 'asked': {
        const { method, tool } = data as ActorEvents['asked'];
        const fp = fingerprint(entry.config);
        const listed = (name: string): boolean => this.#catalog.get(fp)?.tools.some((offered) => offered.name === name) === true;
        this.#catalog.learn(fp, factsOfRequest(method, tool, listed));
        return;
      }
      case 'era': {
        const { era, protocolVersion, probed } = data as ActorEvents['era'];
        entry.era = era;
        if (probed) this.#eras.set(fingerprint(entry.config), { era, protocolVersion });
        return;
      }
      case 'status': {
        const { status, error, generation } = data as ActorEvents['status'];
        entry.seenGeneration(generation);
        if (entry.status === 'spawning' && status === 'active') return; // settled by `ready`
        if (entry.terminal && status !== 'closed' && status !== 'failed') return;
        this.#setStatus(entry, status);
        if (status === 'closed') {
          this.#evict(entry);
          void this.#retire(entry, entry.thread.shutdown('closed', this.#options.shutdownStepMs + 1000));
        } else if (status === 'failed') {
          entry.lastError = error;
          this.#evict(entry);
        }
        return;
      }
      case 'connection':
        this.#onConnection(entry, data as ActorEvents['connection']);
        return;
      default:
    }
  }

  /** The actor's connection was lost, came back, or failed for good: pool events, and the loss counted against the key. */
  #onConnection(entry: PoolEntry, payload: ActorEvents['connection']): void {
    const base = { serverName: entry.serverName, entryIndex: entry.entryIndex, generation: entry.seenGeneration(payload.generation) };
    if (payload.status === 'disconnected') {
      this.#emit({ ...base, type: 'disconnected', reason: payload.reason ?? 'transport_closed' });
      if (payload.reason !== 'restart') this.#supervisor.lost(entry, { code: ErrorCode.ENTRY_LOST, message: `the transport of ${entry.serverName} was lost` });
    } else if (payload.status === 'reconnected') {
      this.#emit({ ...base, type: 'reconnected', clientGeneration: payload.clientGeneration });
    } else {
      const lastError: WireError = payload.error ?? { code: ErrorCode.SERVER_FAILED, message: 'failed' };
      entry.lastError = lastError;
      // A reconnect met a refused token: the key waits for a token like a first connect would.
      // (A first connect's refusal is judged by its spawn, which asks the credentials first.)
      if (lastError.code === ErrorCode.AUTH_REQUIRED && entry.started) this.#auth.close(entry, (lastError.data as { challenge?: string } | undefined)?.challenge);
      this.#emit({ ...base, type: 'failed', lastError });
      this.#views.drop(entry);
      void this.#retire(entry, entry.thread.shutdown('failed', this.#options.shutdownStepMs * 2 + 1000));
    }
  }

  /**
   * Starts a replacement for a held entry whose actor died (OTP's permanent child), and moves the
   * dead entry's views to it: each gets `disconnected`, then the replacement's snapshot and
   * `reconnected`; calls in flight when it died fail as interrupted (never replayed).
   */
  #bringBack(dead: PoolEntry, lost: PoolError): void {
    const log = this.#logger.child({ server: dead.serverName });
    let replacement = this.#entries.get(dead.id);
    try {
      if (replacement === undefined || replacement.terminal) {
        replacement = this.#spawn(dead.serverName, dead.key, dead.config, dead.pooled, 'restart', dead.startedBy);
        log.info({ entryIndex: replacement.entryIndex, replaces: dead.entryIndex }, 'a held entry died: started its replacement');
      }
    } catch (error) {
      log.warn({ err: error }, 'a held entry died and could not be replaced');
      this.#views.orphan(dead, error instanceof PoolError ? error : lost);
      return;
    }
    const target = replacement;
    target.ready.then(
      async () => {
        await this.#views.adopt(dead, target, lost);
        this.#idleIfUnused(target);
      },
      (error: unknown) => {
        log.warn({ entryIndex: target.entryIndex, err: error }, 'the replacement of a dead entry failed to start');
        this.#views.orphan(dead, error instanceof PoolError ? error : lost);
      },
    );
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

function released(sessionId: string, name: string): PoolError {
  return new PoolError(ErrorCode.CONNECTION_RELEASED, `session ${sessionId} was released while acquiring ${name}`);
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

/** Whether `value` is a list of roots as `roots/list` answers them: a string `uri` each, a string `name` where given. */
function isRootList(value: unknown): value is readonly Root[] {
  return Array.isArray(value) && value.every((root: unknown) => typeof root === 'object' && root !== null && typeof (root as Root).uri === 'string' && ((root as Root).name === undefined || typeof (root as Root).name === 'string'));
}
