/**
 * The warm hold: one pool session (`mcpool:warm`) that acquires every configured server, so the
 * servers are up before any client asks and stay up with no client session (`keepWarm`). With
 * `keepWarm: false` each server is still started once (then released), so readiness can be
 * reached. The hold follows the config across reloads and goes back onto an entry the pool
 * brought back after its actor died or after a restart. It keeps the entry of whoever uses a
 * server (see `serverSharing.ts`): the operator's until another client's session uses a
 * per-client server alone, and a shared one once the server's tools show it may be shared.
 *
 * A server started on first use (`start: "lazy"`, its own or the daemon's) is never held: with a
 * catalog of its current config it is ready as it is (cold: sessions list it from the catalog and
 * start it when a request needs it); without one it is started once to learn it, then released.
 */
import type { Logger } from 'pino';
import type { McpTransportPool, PooledConnection, ServerConfig } from '@mcpool/core';
import { isPoolable } from '@mcpool/protocol';
import type { DaemonEventPayload, ReadyResponse } from '@mcpool/client';
import type { DaemonMetrics } from '../metrics.js';
import type { ConfigState } from './configState.js';
import { isSpawnFailure, plainError, type PlainError } from './failures.js';
import { readiness, type WarmState } from './readiness.js';
import type { ServerSharing } from './serverSharing.js';

/** The pool session that keeps configured servers warm. Not a daemon session: never listed. */
export const WARM_SESSION_ID = 'mcpool:warm';

export interface WarmHoldOptions {
  pool: McpTransportPool;
  config: ConfigState;
  logger: Logger;
  metrics: DaemonMetrics;
  publish: (payload: DaemonEventPayload) => void;
  /** True once the daemon is shutting down: nothing is acquired any more. */
  closing: () => boolean;
  /** What is learned about sharing the servers, and whose entry the hold keeps. */
  sharing: ServerSharing;
  /** Runs a move of the hold after what runs now (reloads, warm-ups), never beside it. */
  serialize: (task: () => Promise<unknown>) => void;
}

export class WarmHold {
  readonly #pool: McpTransportPool;
  readonly #config: ConfigState;
  readonly #logger: Logger;
  readonly #metrics: DaemonMetrics;
  readonly #publish: (payload: DaemonEventPayload) => void;
  readonly #closing: () => boolean;
  readonly #sharing: ServerSharing;
  readonly #serialize: (task: () => Promise<unknown>) => void;
  readonly #views = new Map<string, PooledConnection>();
  readonly #errors = new Map<string, PlainError>();
  /** Per configured server, its warm start: readiness follows the current config, reloads included. */
  readonly #state = new Map<string, WarmState>();
  #begun = false;

  constructor(options: WarmHoldOptions) {
    this.#pool = options.pool;
    this.#config = options.config;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#publish = options.publish;
    this.#closing = options.closing;
    this.#sharing = options.sharing;
    this.#serialize = options.serialize;
  }

  /** Readiness of the current config (see `readiness.ts`). */
  readiness(): ReadyResponse {
    return readiness(Object.keys(this.#config.config.servers), (name) => this.#state.get(name), this.#begun, Object.keys(this.#config.config.unavailable).length);
  }

  /** Whether configured server `name` starts on first use (its own `start`, else the daemon's). */
  startsOnUse(name: string): boolean {
    const config = this.#config.server(name);
    return config !== undefined && (config.start ?? this.#config.settings.start) === 'lazy';
  }

  /** Whether configured server `name` starts on first use and is listed from its catalog meanwhile. */
  cold(name: string): boolean {
    const config = this.#config.server(name);
    return config !== undefined && this.startsOnUse(name) && this.#pool.catalogOf(name, config) !== undefined;
  }

  /** Why the last warm start of `name` failed, while it stands. */
  lastError(name: string): PlainError | undefined {
    return this.#errors.get(name);
  }

  /** The entry the hold is on, if any. */
  entryIndexOf(name: string): number | undefined {
    return this.#views.get(name)?.entryIndex;
  }

  /** Warms every configured server; resolves when all have settled (a failed start is logged, not thrown). */
  async warmAll(): Promise<void> {
    const names = Object.keys(this.#config.config.servers);
    for (const name of names) this.#state.set(name, 'starting');
    this.#begun = true;
    if (names.length === 0) this.#logger.info('no servers configured');
    await Promise.all(names.map((name) => this.warmAndCount(name)));
  }

  /** Warms one server and says where the warm-up of the current config stands ("N/M servers ready"). */
  async warmAndCount(name: string): Promise<void> {
    this.#state.set(name, 'starting');
    await this.warmOne(name);
    if (this.#closing()) return;
    const { ready, failed, total } = this.readiness().servers;
    this.#logger.info({ ready, failed, total }, `${ready}/${total} servers ready${failed > 0 ? ` (${failed} failed)` : ''}`);
    this.#publish({ type: 'servers_progress', ready, failed, total });
  }

  /** Takes the hold off `name` (a reload changed or removed it; `removed`: whose entry it kept is forgotten too). */
  async drop(name: string, removed = false): Promise<void> {
    if (removed) this.#sharing.forget(name);
    const view = this.#views.get(name);
    this.#views.delete(name);
    this.#errors.delete(name);
    this.#state.delete(name);
    await view?.release();
  }

  /** True when the hold on `name` is a live view (not failed with its entry, not released). */
  held(name: string): boolean {
    const view = this.#views.get(name);
    return view !== undefined && view.status !== 'failed' && view.status !== 'released';
  }

  /** Puts the hold of a configured server back after its entry died or was restarted (keepWarm only). */
  async rewarm(name: string): Promise<void> {
    if (!this.#config.settings.keepWarm || this.startsOnUse(name) || this.#closing() || this.#config.server(name) === undefined) return;
    // Let the failure settle in the views first (their ports close after the pool's event).
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.held(name)) return;
    this.#views.delete(name);
    if (await this.warmOne(name)) this.#logger.info({ server: name, entryIndex: this.#views.get(name)?.entryIndex }, `${name}: warm hold restored`);
  }

  /** Acquires `name`'s current config under the warm session; false when it fails (the entry watcher logged why). */
  async warmOne(name: string): Promise<boolean> {
    const config = this.#config.server(name);
    if (config === undefined || this.#closing()) return false;
    const lazy = this.startsOnUse(name);
    if (lazy && this.cold(name)) {
      // Nothing to start: sessions list it from its catalog until a request needs it.
      this.#errors.delete(name);
      this.#state.set(name, 'ready');
      return true;
    }
    const keepWarm = this.#config.settings.keepWarm && !lazy;
    try {
      // The warm hold makes no calls, so it may share the process of a per-principal server with
      // the principal that uses it (the operator's until another client's session uses it alone).
      // The daemon's own hold: no client's share of the live servers pays for it.
      const view = await this.#pool.acquire(name, config, WARM_SESSION_ID, { principal: this.#sharing.holderOf(name), countsAgainstShare: false });
      this.#learnSharing(name, config, view);
      const previous = this.#views.get(name);
      this.#errors.delete(name);
      if (keepWarm) this.#views.set(name, view);
      if (previous !== undefined && previous !== view) await previous.release();
      if (!keepWarm) await view.release();
      if (this.#config.server(name) === config) this.#state.set(name, 'ready');
      return true;
    } catch (error) {
      if (this.#closing()) return false;
      const wire = plainError(error);
      this.#errors.set(name, wire);
      if (this.#config.server(name) === config) this.#state.set(name, 'failed');
      this.#metrics.failures.inc({ server: name, kind: 'spawn' });
      // A failed spawn has its one log line from the entry watcher (with the server's stderr).
      (isSpawnFailure(wire.code) ? this.#logger.debug : this.#logger.warn).call(this.#logger, { server: name, code: wire.code, error: wire.message }, `${name} failed to start`);
      return false;
    }
  }

  /**
   * Remembers what the tools of a start of `config` declare; when that makes the default policy
   * differ from the held entry's (every tool turned out read-only: one process may serve
   * everyone), the hold moves to an entry of the new policy and the old one drains.
   */
  #learnSharing(name: string, config: ServerConfig, view: PooledConnection): void {
    this.#sharing.learnTools(config, view.tools);
    if (config.sharing !== undefined || !this.#config.settings.keepWarm || this.startsOnUse(name)) return;
    // A transport the pool does not pool gets an entry of its own per acquire, per-session whatever
    // the policy: there is no entry of another policy to move to, and each move would open one more.
    if (!isPoolable(config, this.#config.settings.pooledTransports)) return;
    const entry = this.#pool.getSnapshot().servers[name]?.entrySummary.find((e) => e.entryIndex === view.entryIndex);
    if (entry === undefined || entry.sharing === this.#sharing.decision(config, entry.era).policy) return;
    this.#logger.info({ server: name, from: entry.sharing }, `${name}: its tools declare they change nothing; moving the warm hold to a shared entry`);
    this.#serialize(() => this.warmOne(name));
  }

  /**
   * A session of `principal` holds a view of configured server `name` now. When the hold keeps
   * another principal's entry and nothing else uses that one, the hold moves to this principal's
   * entry (it exists: no process starts) and the other drains: the one process kept warm is the
   * one in use.
   */
  follow(name: string, principal: string): void {
    if (!this.#config.settings.keepWarm || this.startsOnUse(name) || this.#closing() || this.#sharing.holderOf(name) === principal) return;
    const held = this.#views.get(name);
    if (held === undefined || this.#config.server(name) === undefined) return;
    const entry = this.#pool.getSnapshot().servers[name]?.entrySummary.find((e) => e.entryIndex === held.entryIndex);
    // Used by someone besides the hold (the same entry as this session's, for a shared server): it stays.
    if (entry === undefined || entry.refs > 1) return;
    this.#sharing.setHolder(name, principal);
    this.#logger.debug({ server: name, entryIndex: held.entryIndex }, `${name}: the warm hold follows the client that uses it`);
    this.#serialize(() => this.warmOne(name));
  }

  /** Forgets the views (the daemon released the warm session with every other at shutdown). */
  clear(): void {
    this.#views.clear();
  }
}
