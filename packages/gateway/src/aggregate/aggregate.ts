/**
 * The views one gateway caller holds: a slot per server of its endpoint, each with the server's
 * view or the failure that left it without one, over one pool session. Both era fronts keep one
 * per caller — a legacy session for its life, the modern router per (principal, endpoint) it
 * holds between stateless requests — and read what the caller sees through `directory.ts`.
 *
 * Rules:
 * - A view is acquired on first use with the server's current config, the caller's principal
 *   and what its client declared; readiness is awaited. A view that comes after its caller went
 *   away is given back at once (the pool may have released the session before it was indexed).
 * - A server the host starts on first use and that has a catalog is listed from its catalog (the
 *   slot is cold: nothing runs for it) until a request needs it (a call, a read, a get, a
 *   subscription, a completion: {@link Aggregate.viewOf}); then its view replaces the catalog.
 *   When the pool finds a config's lists changed from its catalog (a start or a `list_changed`
 *   of its server, for whichever caller), each caller shown that catalog is told those lists
 *   changed; a server that joins from cold is not announced otherwise.
 * - A view idle past its server's `idleStopMs` is given back and the slot is cold again, listed
 *   from the catalog (see `idleStop.ts`); the next request that needs the server acquires it
 *   again, and its new view is wired as the old one was: list changes and resource updates reach
 *   the caller's streams as before.
 * - A server that did not start is tried again on use, at most every {@link RETRY_ACQUIRE_MS};
 *   its failure stays in its slot meanwhile. A view that fails is released and its slot retried
 *   the same way.
 * - What a view tells (its lists changed, a resource changed, a notification no call owns, a
 *   reconnect) goes to the front through {@link AggregateEvents}; a server that joins, or fails,
 *   changes every list.
 * - A `per-workspace` server is acquired with the caller's roots: while its front has not learnt
 *   them yet ({@link AggregateOptions.rootsPending}) its slot waits, and when they change
 *   ({@link Aggregate.setRoots}) its view moves to the entry of the new roots.
 * - Server→client requests are not wired here: the pool attributes each to a call, and the
 *   front answers it through that call's own `onServerRequest`.
 */
import { ErrorCode, PoolError, type CatalogChange, type CatalogRecord, type ConnectionStatus, type Logger, type McpTransportPool, type PooledConnection, type Root, type ServerConfig, type UpstreamNotification, type ViewClientInfo } from '@mcpool/core';
import { fingerprint } from '@mcpool/protocol';
import { serverUnavailable } from '@mcpool/protocol/refusals';
import type { GatewayAccess } from './access.js';
import { IdleStops, SYSTEM_IDLE_CLOCK, type IdleClock } from './idleStop.js';

/** A server that failed to start for a caller is tried again on use, at most this often. */
export const RETRY_ACQUIRE_MS = 5_000;

export const LIST_KINDS = ['tools', 'prompts', 'resources'] as const;
export type ListKind = (typeof LIST_KINDS)[number];

/** A server's failure to start, as a slot keeps it until its next try. */
export interface AcquireFailure {
  code: ErrorCode;
  message: string;
}

/** A server of the caller with a live view. */
export interface Live {
  readonly name: string;
  readonly view: PooledConnection;
}

/** What a caller's lists read of a server: its live view, or its catalog while it is cold. */
export type Listing = Pick<CatalogRecord, 'tools' | 'prompts' | 'resources' | 'resourceTemplates' | 'capabilities' | 'instructions' | 'serverInfo'>;

/** A server the caller's lists show: live, or `cold` (listed from its catalog, not started). */
export interface Listed {
  readonly name: string;
  readonly view: Listing;
  readonly cold: boolean;
}

interface Slot {
  readonly name: string;
  view: PooledConnection | undefined;
  error: AcquireFailure | undefined;
  retryAt: number;
  acquiring: Promise<PooledConnection | undefined> | undefined;
  /** The catalog the caller was last shown while the slot had no view (cold). */
  shown: Listing | undefined;
  /** Its view was given back for idleness: listed from the catalog until a request needs it. */
  stopped: boolean;
  detach: (() => void)[];
}

/** What the caller's views tell, for its front to pass on. */
export interface AggregateEvents {
  /** A list the caller sees may have changed (a server announced it, joined, failed or came back). */
  listChanged(kind: ListKind): void;
  /** A resource a view subscribed to changed. */
  resourceUpdated(server: string, uri: string): void;
  /** A server's notification that no call of the caller can be blamed for. */
  notification?(server: string, notification: UpstreamNotification): void;
  /** A server's process was replaced (it knows nothing of what the last one was told). */
  reconnected?(server: string, view: PooledConnection): void;
  /** A server's view was acquired after the first request of the caller. */
  joined?(server: string): void;
}

export interface AggregateOptions {
  pool: McpTransportPool;
  /** The current config of a server (it may change on reload); undefined when no longer configured. */
  config(name: string): ServerConfig | undefined;
  /** The pool session the views belong to. */
  poolSessionId: string;
  /** Who the caller acts for: a `per-principal` server is shared by this principal's callers only. */
  principal: string;
  /** `/mcp/<server>`: that one server, unprefixed; undefined for the aggregating endpoint. */
  scope: string | undefined;
  /** The aggregating endpoint's servers behind the tool-search view's two tools (`search.ts`). @default false */
  search?: boolean | undefined;
  /** What the caller's client declared about itself: each view carries it upstream. */
  client: ViewClientInfo | undefined;
  /**
   * The caller's servers, fixed for its life (a legacy session's, chosen at `initialize`);
   * undefined: the servers its access allows, read per request (a modern caller's).
   */
  servers?: readonly string[] | undefined;
  events: AggregateEvents;
  /**
   * Whether the host starts `name` on first use: with a catalog of its current config in the pool,
   * the caller is shown the catalog until a request needs the server; without one, the server is
   * started to learn it. False (or absent): acquired as soon as the caller's lists are read.
   */
  startsOnUse?(name: string): boolean;
  /** Told when an acquire of `name` settled (ready or failed): the host's join window for it can close. */
  settled?(name: string): void;
  /**
   * After how long without a request of the caller its view of `name` (of that era) is given back,
   * the caller shown the catalog meanwhile; undefined or 0: never. @default never
   */
  idleStopMs?(name: string, era: 'legacy' | 'modern' | undefined): number | undefined;
  /** The clock of the idle rule. @default the system clock */
  clock?: IdleClock | undefined;
  /**
   * The front will learn the caller's roots ({@link Aggregate.setRoots}): `per-workspace` servers
   * wait for them. Otherwise the caller has no roots. @default false
   */
  rootsPending?: boolean | undefined;
  /** Silent unless given. */
  logger?: Logger | undefined;
}

export class Aggregate {
  readonly scope: string | undefined;
  /** The tool-search view: its tools are the two of `search.ts`; servers, prompts and resources the aggregating endpoint's. */
  readonly search: boolean;
  readonly #options: AggregateOptions;
  readonly #slots = new Map<string, Slot>();
  readonly #fixed: Set<string> | undefined;
  /** The caller's roots; undefined while its front has not learnt them. */
  #roots: readonly Root[] | undefined;
  readonly #offCatalog: () => void;
  readonly #idle: IdleStops | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: AggregateOptions) {
    this.#options = options;
    this.#roots = options.rootsPending === true ? undefined : [];
    this.scope = options.scope;
    this.search = options.scope === undefined && options.search === true;
    this.#idle = options.idleStopMs === undefined ? undefined : new IdleStops({ idleStopMs: (name, era) => options.idleStopMs?.(name, era), clock: options.clock ?? SYSTEM_IDLE_CLOCK, stop: (name, view) => this.#stopIdle(name, view) });
    this.#offCatalog = options.startsOnUse === undefined && this.#idle === undefined ? () => undefined : options.pool.onCatalogChange((change) => this.#catalogChanged(change));
    if (options.servers !== undefined) {
      this.#fixed = new Set(options.servers);
      for (const name of [...options.servers].sort()) this.#slot(name);
    }
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * Whether the caller is told that its `kind` list changed. A search view's tools are its own
   * two, whatever the servers behind it list (a search reads their lists when it runs), so their
   * changes are not announced; the other lists are the servers'.
   */
  announces(kind: ListKind): boolean {
    return !(kind === 'tools' && this.search);
  }

  /** The endpoint's servers `access` allows, by name: the scope alone on a server's endpoint. */
  servers(access: GatewayAccess): string[] {
    if (this.scope !== undefined) return access.servers.has(this.scope) && (this.#fixed?.has(this.scope) ?? true) ? [this.scope] : [];
    const names = this.#fixed === undefined ? [...access.servers] : [...this.#fixed].filter((name) => access.servers.has(name));
    return names.sort();
  }

  /**
   * The live views of the servers `access` allows, by server name; a missing one whose retry time
   * has come is acquired in the background (it joins with `listChanged`).
   */
  live(access: GatewayAccess): Live[] {
    const out: Live[] = [];
    const now = Date.now();
    for (const name of this.servers(access)) {
      const slot = this.#slot(name);
      if (slot.view !== undefined) out.push({ name, view: slot.view });
      else if (now >= slot.retryAt && !this.closed && this.#coldListing(slot) === undefined) void this.#acquire(slot);
    }
    return out;
  }

  /**
   * What the caller's lists show of the servers `access` allows: each live view, and the catalog
   * of each cold server (started by {@link viewOf} when a request needs it). A missing server
   * without a catalog is acquired in the background, as by {@link live}.
   */
  listed(access: GatewayAccess): Listed[] {
    const live = new Map(this.live(access).map(({ name, view }) => [name, view]));
    const out: Listed[] = [];
    for (const name of this.servers(access)) {
      const view = live.get(name);
      if (view !== undefined) {
        out.push({ name, view, cold: false });
        continue;
      }
      const listing = this.#coldListing(this.#slot(name));
      if (listing !== undefined) out.push({ name, view: listing, cold: true });
    }
    return out;
  }

  /** Every live view the caller holds, whoever may use it now. */
  held(): Live[] {
    const out: Live[] = [];
    for (const slot of this.#slots.values()) if (slot.view !== undefined) out.push({ name: slot.name, view: slot.view });
    return out;
  }

  /**
   * Acquires the missing views of the servers `access` allows (those whose retry time has come),
   * waiting for each until `deadlineOf(name)` (epoch ms) at most: a server not ready by then is
   * left to join later. Without `deadlineOf`, waits for every one.
   */
  async join(access: GatewayAccess, deadlineOf?: (name: string) => number): Promise<void> {
    const timers: NodeJS.Timeout[] = [];
    const now = Date.now();
    try {
      await Promise.all(
        this.servers(access)
          .map((name) => this.#slot(name))
          .filter((slot) => slot.view === undefined && now >= slot.retryAt && this.#coldListing(slot) === undefined)
          .map((slot): Promise<unknown> => {
            const acquired = this.#acquire(slot);
            if (deadlineOf === undefined) return acquired;
            const waitMs = deadlineOf(slot.name) - Date.now();
            if (waitMs <= 0) return Promise.resolve();
            return Promise.race([acquired, new Promise<void>((resolve) => timers.push(setTimeout(resolve, waitMs)))]);
          }),
      );
    } finally {
      for (const timer of timers) clearTimeout(timer);
    }
  }

  /** The view of `name`, acquired now when it has none. @throws the server-unavailable refusal. */
  async viewOf(name: string): Promise<PooledConnection> {
    const slot = this.#slot(name);
    const view = slot.view ?? (await this.#acquire(slot));
    if (view === undefined) throw serverUnavailable(name, slot.error);
    this.#idle?.touch(name);
    return view;
  }

  /** Acquires `name` again now if the caller has it and it has no view (it was just authorized). */
  retry(name: string): void {
    const slot = this.#slots.get(name);
    if (slot !== undefined && slot.view === undefined && !this.closed) void this.#acquire(slot);
  }

  /**
   * A server that became available while the caller is here (a reload added or fixed it) joins
   * when `access` allows it: acquired now, announced with `listChanged` once ready; one started on
   * first use that has a catalog is listed from it, nothing started, and announced at once (the
   * caller was never shown it). A server's own endpoint keeps its one server.
   */
  add(name: string, access: GatewayAccess): void {
    if (this.closed || this.scope !== undefined || !access.servers.has(name)) return;
    this.#fixed?.add(name);
    const slot = this.#slot(name);
    if (slot.view !== undefined) return;
    if (this.#coldListing(slot) !== undefined) for (const kind of LIST_KINDS) this.#options.events.listChanged(kind);
    else void this.#acquire(slot);
  }

  /**
   * The caller's roots, learnt or changed: the `per-workspace` servers that waited for them are
   * acquired, and a view held under other roots is given back for one of the new roots' entry
   * (announced with `listChanged`). Resolves once those acquires settled.
   */
  async setRoots(roots: readonly Root[]): Promise<void> {
    const before = this.#roots;
    this.#roots = roots;
    if (this.closed || (before !== undefined && sameWorkspace(before, roots))) return;
    const moving: Promise<unknown>[] = [];
    for (const slot of this.#slots.values()) {
      if (this.#options.config(slot.name)?.sharing !== 'per-workspace') continue;
      moving.push(
        (async () => {
          // An acquire under the old roots gives its view back when it settles.
          await slot.acquiring;
          const old = slot.view;
          if (old !== undefined) {
            this.#idle?.unwatch(slot.name);
            unwire(slot);
            slot.view = undefined;
            void old.release().catch(() => undefined);
          }
          slot.retryAt = 0;
          await this.#acquire(slot);
        })(),
      );
    }
    await Promise.all(moving);
  }

  /** Servers being acquired now (they join when ready). */
  get joining(): number {
    let count = 0;
    for (const slot of this.#slots.values()) if (slot.view === undefined && slot.acquiring !== undefined) count += 1;
    return count;
  }

  /** Each server the caller has met and where its view stands: `connecting` while it is acquired or retried. */
  states(): { name: string; status: ConnectionStatus | 'connecting' | 'failed' | 'cold'; error?: AcquireFailure }[] {
    return [...this.#slots.values()].map((slot) => {
      if (slot.view !== undefined) return { name: slot.name, status: slot.view.status };
      if (slot.acquiring === undefined && this.#coldListing(slot) !== undefined) return { name: slot.name, status: 'cold' };
      if (slot.error === undefined) return { name: slot.name, status: 'connecting' };
      return { name: slot.name, status: 'failed', error: slot.error };
    });
  }

  /** Stops listening to the views and releases the pool session (every view with it). Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#offCatalog();
      this.#idle?.close();
      for (const slot of this.#slots.values()) unwire(slot);
      await this.#options.pool.releaseSession(this.#options.poolSessionId).catch((error: unknown) => {
        this.#options.logger?.warn({ poolSessionId: this.#options.poolSessionId, err: error }, 'gateway: releasing a caller’s pool session failed');
      });
    })();
    return this.#closing;
  }

  #slot(name: string): Slot {
    let slot = this.#slots.get(name);
    if (slot === undefined) this.#slots.set(name, (slot = { name, view: undefined, error: undefined, retryAt: 0, acquiring: undefined, shown: undefined, stopped: false, detach: [] }));
    return slot;
  }

  /**
   * The catalog the caller is shown for `slot` while it has no view: the current one while it is
   * cold, the one it was shown while it is acquired from cold.
   */
  #coldListing(slot: Slot): Listing | undefined {
    if (slot.view !== undefined || slot.error !== undefined) return undefined;
    if (slot.acquiring !== undefined) return slot.shown;
    if (this.#options.startsOnUse?.(slot.name) !== true && !slot.stopped) return (slot.shown = undefined);
    const config = this.#options.config(slot.name);
    return (slot.shown = config === undefined ? undefined : this.#options.pool.catalogOf(slot.name, config));
  }

  /** A config's catalog lists changed: the callers shown that catalog are told. */
  #catalogChanged(change: CatalogChange): void {
    if (this.closed) return;
    const kinds = new Set<ListKind>();
    for (const slot of this.#slots.values()) {
      if (slot.view !== undefined || slot.shown === undefined) continue;
      const config = this.#options.config(slot.name);
      if (config !== undefined && fingerprint(config) === change.fingerprint) for (const kind of change.lists) kinds.add(kind);
    }
    for (const kind of kinds) this.#options.events.listChanged(kind);
  }

  #acquire(slot: Slot): Promise<PooledConnection | undefined> {
    if (slot.view !== undefined) return Promise.resolve(slot.view);
    // It waits for the roots the front is learning: started without them, it would serve none.
    if (this.#roots === undefined && this.#options.config(slot.name)?.sharing === 'per-workspace') return Promise.resolve(undefined);
    // A cold server joins without an announcement: what changed from its catalog is told by the pool.
    const cold = this.#coldListing(slot) !== undefined;
    slot.acquiring ??= (async () => {
      const { pool, poolSessionId, principal, client, logger } = this.#options;
      try {
        const settings = this.#options.config(slot.name);
        if (settings === undefined) throw new PoolError(ErrorCode.SERVER_FAILED, `${slot.name} is no longer configured`);
        const roots = this.#roots;
        const view = await pool.acquire(slot.name, settings, poolSessionId, { principal, ...(client === undefined ? {} : { client }), ...(roots === undefined ? {} : { roots }) });
        await view.ready;
        // Gone, or its roots changed while it started: given back (the new roots' acquire follows).
        if (this.closed || (settings.sharing === 'per-workspace' && roots !== this.#roots)) {
          void view.release().catch(() => undefined);
          return undefined;
        }
        slot.view = view;
        slot.shown = undefined;
        slot.stopped = false;
        slot.error = undefined;
        this.#wire(slot, view);
        this.#idle?.watch(slot.name, view);
        this.#options.events.joined?.(slot.name);
        if (!cold) for (const kind of LIST_KINDS) this.#options.events.listChanged(kind);
        return view;
      } catch (error) {
        slot.error = error instanceof PoolError ? { code: error.code, message: error.message } : { code: ErrorCode.INTERNAL, message: String(error) };
        slot.retryAt = Date.now() + RETRY_ACQUIRE_MS;
        // A failed spawn has its one log line from the pool's host already.
        const spawnFailure = slot.error.code === ErrorCode.SPAWN_FAILED || slot.error.code === ErrorCode.SPAWN_TIMEOUT;
        if (!this.closed) logger?.[spawnFailure ? 'debug' : 'warn']({ poolSessionId, server: slot.name, code: slot.error.code, error: slot.error.message }, 'gateway session could not acquire a server');
        return undefined;
      } finally {
        slot.acquiring = undefined;
        this.#options.settled?.(slot.name);
      }
    })();
    return slot.acquiring;
  }

  /**
   * The caller's view of `name` was idle past its time: given back, the slot cold (listed from the
   * catalog, which the view's start recorded). Without a catalog the view is kept: nothing could
   * list the server meanwhile.
   */
  #stopIdle(name: string, view: PooledConnection): void {
    const slot = this.#slots.get(name);
    const config = this.#options.config(name);
    if (slot?.view !== view || this.closed || config === undefined || this.#options.pool.catalogOf(name, config) === undefined) return;
    unwire(slot);
    slot.view = undefined;
    slot.stopped = true;
    this.#options.logger?.debug({ poolSessionId: this.#options.poolSessionId, server: name, entryIndex: view.entryIndex }, 'gateway: an idle view was given back');
    void view.release().catch(() => undefined);
  }

  #wire(slot: Slot, view: PooledConnection): void {
    const events = this.#options.events;
    const name = slot.name;
    slot.detach.push(
      view.on('toolsChanged', () => events.listChanged('tools')),
      view.on('promptsChanged', () => events.listChanged('prompts')),
      view.on('resourcesChanged', () => events.listChanged('resources')),
      view.on('resourceUpdated', ({ uri }) => events.resourceUpdated(name, uri)),
      view.on('notification', (notification) => events.notification?.(name, notification)),
      view.on('reconnected', () => events.reconnected?.(name, view)),
      view.on('failed', () => {
        if (slot.view !== view) return;
        this.#idle?.unwatch(name);
        unwire(slot);
        slot.view = undefined;
        slot.error = { code: ErrorCode.SERVER_FAILED, message: `${name} failed` };
        slot.retryAt = Date.now() + RETRY_ACQUIRE_MS;
        void view.release().catch(() => undefined);
        for (const kind of LIST_KINDS) events.listChanged(kind);
      }),
    );
  }
}

/** Whether two lists of roots name the same folders (a `per-workspace` key is their URIs). */
function sameWorkspace(a: readonly Root[], b: readonly Root[]): boolean {
  const uris = (roots: readonly Root[]): string => JSON.stringify([...new Set(roots.map((root) => root.uri))].sort());
  return uris(a) === uris(b);
}

function unwire(slot: Slot): void {
  for (const off of slot.detach) off();
  slot.detach = [];
}
