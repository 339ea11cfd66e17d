/**
 * Holds: a modern caller has no session, so the router keeps one pool session per (principal,
 * endpoint) — a hold — with its views (an {@link Aggregate}) and its listen streams, between its
 * stateless requests. A hold lives while a request, a call forwarded upstream or a listen uses
 * it, and is released `idleMs` after its last use (an unref'd timer: it never keeps the host
 * alive). The first request's client declaration is the views' default; each request's own
 * `_meta` wins upstream.
 */
import { randomUUID } from 'node:crypto';
import type { ConnectionStatus, Logger, McpTransportPool, ServerConfig, ViewClientInfo } from '@mcpool/core';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import { Aggregate, LIST_KINDS } from '../aggregate/aggregate.js';
import type { IdleClock } from '../aggregate/idleStop.js';
import { Listens } from './listen.js';
import { asRecord, type Params } from '../json.js';


/** A (principal, endpoint)'s held views as a host lists them (never a token or a declared capability). */
export interface ModernHoldInfo {
  /** Stable while the hold lives; ends it through `ModernRouter.closeHold`. */
  id: string;
  principal: string;
  /** `/mcp/<server>`: that server; undefined for the aggregating endpoint. */
  scope: string | undefined;
  createdAt: number;
  lastActivityAt: number;
  /** Requests under way. */
  active: number;
  /** Open `subscriptions/listen` streams. */
  listens: number;
  servers: { name: string; status: ConnectionStatus | 'connecting' | 'failed' | 'cold' }[];
  /** The MCP client its first request named (`_meta` client info), when it named one. */
  clientInfo?: { name: string; version: string } | undefined;
}

export interface HoldsOptions {
  pool: McpTransportPool;
  config(name: string): ServerConfig | undefined;
  /** Whether the host starts `name` on first use (listed from its catalog until then). @default never */
  startsOnUse?(name: string): boolean;
  /**
   * After how long without a request of a caller its view of `name` (of that era) is given back,
   * the caller shown the catalog meanwhile (see `aggregate/idleStop.ts`); undefined or 0: never. @default never
   */
  idleStopMs?(name: string, era: 'legacy' | 'modern' | undefined): number | undefined;
  /** The clock of the idle rule. @default the system clock */
  idleClock?: IdleClock | undefined;
  /** How long a hold stays without a request, a call or a listen. */
  idleMs: number;
  /** Told when an acquire of `name` settled (the host's join window for it can close). */
  joined?(name: string): void;
  /** Told when a view of `name` was acquired for `principal`. */
  viewAcquired?(name: string, principal: string): void;
  logger?: Logger | undefined;
}

export class Hold {
  readonly id = randomUUID();
  readonly createdAt = Date.now();
  lastSeen = this.createdAt;
  /** Requests and forwarded calls using the hold now. */
  users = 0;
  timer: NodeJS.Timeout | undefined;
  released = false;
  readonly aggregate: Aggregate;
  readonly listens: Listens;

  constructor(
    readonly key: string,
    readonly principal: string,
    readonly scope: string | undefined,
    readonly client: ViewClientInfo | undefined,
    options: HoldsOptions,
    onIdle: (hold: Hold) => void,
    search = false,
  ) {
    this.aggregate = new Aggregate({
      pool: options.pool,
      config: (name) => options.config(name),
      startsOnUse: (name) => options.startsOnUse?.(name) === true,
      ...(options.idleStopMs === undefined ? {} : { idleStopMs: (name: string, era: 'legacy' | 'modern' | undefined) => options.idleStopMs?.(name, era) }),
      clock: options.idleClock,
      poolSessionId: `mcp-modern:${this.id}`,
      principal,
      scope,
      search,
      client,
      logger: options.logger,
      settled: (name) => options.joined?.(name),
      events: {
        joined: (name) => options.viewAcquired?.(name, principal),
        listChanged: (kind) => this.listens.listChanged(kind),
        resourceUpdated: (_server, uri) => this.listens.updated(uri),
        // A new server process may list other things than the one before it.
        reconnected: () => {
          for (const kind of LIST_KINDS) this.listens.listChanged(kind);
        },
      },
    });
    this.listens = new Listens(this.aggregate, () => onIdle(this), options.logger);
  }
}

export class Holds {
  readonly #options: HoldsOptions;
  readonly #holds = new Map<string, Hold>();

  constructor(options: HoldsOptions) {
    this.#options = options;
  }

  /** Pool sessions held (one per principal and endpoint in use). */
  get size(): number {
    return this.#holds.size;
  }

  /** Open listen streams, of one principal or of all. */
  listens(principal?: string): number {
    let count = 0;
    for (const hold of this.#holds.values()) if (principal === undefined || hold.principal === principal) count += hold.listens.size;
    return count;
  }

  /** The hold of (principal, endpoint), made on first use; in use until {@link leave}. `search`: the endpoint is the tool-search view. */
  enter(principal: string, scope: string | undefined, meta: Params, search = false): Hold {
    const key = `${principal}\u0000${scope ?? ''}\u0000${search ? 'search' : ''}`;
    let hold = this.#holds.get(key);
    if (hold === undefined) {
      hold = new Hold(key, principal, scope, declared(meta), this.#options, (idle) => this.#idle(idle), search);
      this.#holds.set(key, hold);
    }
    clearTimeout(hold.timer);
    hold.timer = undefined;
    hold.lastSeen = Date.now();
    hold.users += 1;
    return hold;
  }

  /** One more use of a hold already entered (a call forwarded upstream, until its answer). */
  retain(hold: Hold): void {
    clearTimeout(hold.timer);
    hold.timer = undefined;
    hold.users += 1;
  }

  /** One use of `hold` ended: it is released once idle for `idleMs`. */
  leave(hold: Hold): void {
    hold.users -= 1;
    this.#idle(hold);
  }

  /** The host's servers changed: every open listen is told its lists changed (the next list acquires what the caller may now use). */
  serversChanged(): void {
    for (const hold of this.#holds.values()) for (const kind of LIST_KINDS) hold.listens.listChanged(kind);
  }

  info(): ModernHoldInfo[] {
    return [...this.#holds.values()].map((hold) => ({
      id: hold.id,
      principal: hold.principal,
      scope: hold.scope,
      createdAt: hold.createdAt,
      lastActivityAt: hold.lastSeen,
      active: hold.users,
      listens: hold.listens.size,
      ...(hold.client?.clientInfo === undefined ? {} : { clientInfo: { name: hold.client.clientInfo.name, version: hold.client.clientInfo.version } }),
      servers: hold.aggregate.states().map(({ name, status }) => ({ name, status })),
    }));
  }

  /** Ends the hold `id` when `may` allows its principal. False when there is none, or `may` refused it. */
  async close(id: string, may: (principal: string) => boolean): Promise<boolean> {
    for (const hold of this.#holds.values()) {
      if (hold.id !== id) continue;
      if (!may(hold.principal)) return false;
      await this.#release(hold);
      return true;
    }
    return false;
  }

  /** Ends every listen (each gets its result) and releases every view. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.#holds.values()].map((hold) => this.#release(hold)));
  }

  #idle(hold: Hold): void {
    if (hold.users > 0 || hold.listens.size > 0 || hold.released) return;
    hold.lastSeen = Date.now();
    clearTimeout(hold.timer);
    hold.timer = setTimeout(() => void this.#release(hold), this.#options.idleMs);
    hold.timer.unref();
  }

  async #release(hold: Hold): Promise<void> {
    if (hold.released) return;
    hold.released = true;
    clearTimeout(hold.timer);
    if (this.#holds.get(hold.key) === hold) this.#holds.delete(hold.key);
    hold.listens.endAll();
    await hold.aggregate.close();
  }
}

/** What a modern request declares about its client, as a view's defaults. */
function declared(meta: Params): ViewClientInfo | undefined {
  const version = meta[MODERN_META.protocolVersion];
  const capabilities = asRecord(meta[MODERN_META.clientCapabilities]);
  const info = asRecord(meta[MODERN_META.clientInfo]);
  const clientInfo = typeof info?.name === 'string' && typeof info.version === 'string' ? (info as ViewClientInfo['clientInfo']) : undefined;
  if (typeof version !== 'string' && capabilities === undefined && clientInfo === undefined) return undefined;
  return {
    ...(typeof version === 'string' ? { protocolVersion: version } : {}),
    ...(capabilities === undefined ? {} : { capabilities }),
    ...(clientInfo === undefined ? {} : { clientInfo }),
  };
}

