/**
 * Session views and the entries they are bound to: a new view's attach (seeded with a live view's
 * lists when the entry has one, so it is usable before the actor's thread answers), the move of a
 * dead entry's views to its replacement, and the failure of views nobody replaces. Each view has
 * its own MessageChannel to its entry's actor; this is where one is made and handed over.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { randomUUID } from 'node:crypto';
import { ErrorCode, PoolError, type AttachArgs, type Logger, type ServerSnapshot, type ViewClientInfo } from '@mcpool/protocol';
import type { PoolEntry } from './entry.js';
import { PooledConnection } from './pooledConnection.js';
import type { SessionFields } from './sessionFilter.js';
import type { SessionIndex } from './sessionIndex.js';

export interface ViewBindingOptions {
  callTimeoutMs: number;
  sessions: SessionIndex;
  draining(): boolean;
  /** A view's own `release()`. */
  release(view: PooledConnection): Promise<void>;
  /** refs may have fallen to 0: the entry starts its drain grace. */
  idleIfUnused(entry: PoolEntry): void;
  logger: Logger;
}

/** Whom a view acts for: its client's declaration, and the principal the actor attributes the server's own messages by. */
export interface ViewOwner {
  client?: ViewClientInfo | undefined;
  principal?: string | undefined;
}

function attachArgs(sessionId: string, port: MessagePort, { client, principal }: ViewOwner): AttachArgs {
  return { viewId: randomUUID(), sessionId, port, ...(client === undefined ? {} : { client }), ...(principal === undefined ? {} : { principal }) };
}

/** How long an actor may take to take a view's port. */
const ATTACH_TIMEOUT_MS = 10_000;

export class ViewBinding {
  readonly #options: ViewBindingOptions;
  /** The entry each view is on now (a view moves to a replacement entry). */
  readonly #viewEntry = new WeakMap<PooledConnection, PoolEntry>();
  /** What each view declared about its client, and whom it acts for, for its attach to a replacement entry. */
  readonly #viewOwner = new WeakMap<PooledConnection, ViewOwner>();

  constructor(options: ViewBindingOptions) {
    this.#options = options;
  }

  /** The entry `view` is bound to now. */
  entryOf(view: PooledConnection): PoolEntry | undefined {
    return this.#viewEntry.get(view);
  }

  /** A new view of `entry` for `sessionId`: counted as a ref at once, usable once the actor has its port (or at once, seeded). */
  async attach(entry: PoolEntry, sessionId: string, fields: SessionFields, owner: ViewOwner): Promise<PooledConnection> {
    const { sessions } = this.#options;
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
      onRelease: (released) => this.#options.release(released),
      logger: this.#options.logger,
      // The view may move to a replacement entry: outcomes count for the one it is on now.
      onCallOutcome: (outcome) => {
        const current = this.#viewEntry.get(view);
        if (current !== undefined) this.#callOutcome(current, outcome);
      },
      onPortLost: (lost) => this.#willReattach(lost),
    });
    this.#viewEntry.set(view, entry);
    this.#viewOwner.set(view, owner);
    // Refs and index change synchronously, so the drain decision never sees a stale count.
    entry.views.set(sessionId, view);
    sessions.index(sessionId, entry);
    try {
      const wake = entry.idle;
      if (wake) {
        entry.idle = false;
        entry.thread.ref();
      }
      const attach = attachArgs(sessionId, port2, owner);
      // An idle entry's actor may be ending it (its drain timer): only an answered attach tells,
      // and a refused one sends this acquire to a fresh entry. An entry in use is not drained, so
      // its attach is refused only when the entry fails, and its other views with it.
      const seed = wake ? undefined : seedOf(entry);
      if (seed !== undefined) {
        // The entry's lists are known here already (a live view of it has them): the new
        // view starts from them and is usable now, without waiting for the actor's thread. The
        // port keeps its order: the actor's replay (the lists at attach time) is its first
        // message, then every change after it; a request sent meanwhile waits in the port.
        view.seed(seed);
        // Told after this turn: waking the actor's thread now lets it take the CPU from the
        // caller's own work on a busy machine (a woken thread may preempt its waker).
        setImmediate(() => this.#attachSeeded(entry, view, attach));
        return view;
      }
      // Same channel as the attach below, so the actor leaves `draining` before it attaches.
      if (wake) void entry.thread.request('setIdle', { idle: false }).catch(() => undefined);
      await entry.thread.request('attach', attach, { transfer: [port2], timeoutMs: ATTACH_TIMEOUT_MS });
      await view.ready;
      return view;
    } catch (error) {
      const failure = error instanceof PoolError ? error : new PoolError(ErrorCode.INTERNAL, String(error), { cause: error });
      if (entry.views.get(sessionId) === view) {
        entry.views.delete(sessionId);
        sessions.unindex(sessionId, entry);
        view.dispose(failure);
        this.#options.idleIfUnused(entry);
      }
      throw failure;
    }
  }

  /** Moves the live views of `dead` onto `target`: a new port each, attached like a new view. */
  async adopt(dead: PoolEntry, target: PoolEntry, lost: PoolError): Promise<void> {
    const { sessions } = this.#options;
    for (const view of [...dead.views.values()]) {
      const sessionId = view.sessionId;
      dead.views.delete(sessionId);
      sessions.unindex(sessionId, dead);
      if (view.status === 'released' || view.status === 'failed') continue;
      if (target.terminal || target.views.has(sessionId)) {
        view.fail(lost);
        continue;
      }
      const { port1, port2 } = new MessageChannel();
      view.reattach(port1, target.entryIndex);
      this.#viewEntry.set(view, target);
      target.views.set(sessionId, view);
      sessions.index(sessionId, target);
      if (target.idle) {
        target.idle = false;
        target.thread.ref();
        void target.thread.request('setIdle', { idle: false }).catch(() => undefined);
      }
      const attach = attachArgs(sessionId, port2, this.#viewOwner.get(view) ?? {});
      try {
        await target.thread.request('attach', attach, { transfer: [port2], timeoutMs: ATTACH_TIMEOUT_MS });
      } catch (error) {
        if (target.views.get(sessionId) === view) {
          target.views.delete(sessionId);
          sessions.unindex(sessionId, target);
        }
        view.fail(error instanceof PoolError ? error : lost);
      }
    }
  }

  /** The views of an entry that is not replaced fail with `error`. */
  orphan(dead: PoolEntry, error: PoolError): void {
    for (const view of dead.views.values()) {
      this.#options.sessions.unindex(view.sessionId, dead);
      view.fail(error);
    }
    dead.views.clear();
  }

  /** The entry's views leave the session index (they learn of the end from their own port). */
  drop(entry: PoolEntry): void {
    for (const view of entry.views.values()) this.#options.sessions.unindex(view.sessionId, entry);
    entry.views.clear();
  }

  /** Tells the actor of a view that was seeded, unless the view was released meanwhile (its port then closes and the actor never sees it). */
  #attachSeeded(entry: PoolEntry, view: PooledConnection, attach: AttachArgs): void {
    if (entry.views.get(attach.sessionId) !== view) {
      attach.port.close();
      return;
    }
    entry.thread.request('attach', attach, { transfer: [attach.port], timeoutMs: ATTACH_TIMEOUT_MS }).catch((error: unknown) => this.#attachRefused(entry, view, error));
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
      this.#options.sessions.unindex(view.sessionId, entry);
      this.#options.idleIfUnused(entry);
    }
    if (this.#viewEntry.get(view) === entry) view.fail(failure);
  }

  /**
   * Whether a view whose actor port closed under it will be attached to a replacement: when its
   * entry is pooled and was not being ended on purpose (a close, a drain). The death itself (the
   * thread's exit) may be seen before or after the port closes; either way the replacement comes.
   */
  #willReattach(view: PooledConnection): boolean {
    const entry = this.#viewEntry.get(view);
    return entry !== undefined && entry.pooled && !this.#options.draining() && entry.closing === undefined && entry.status !== 'closed' && entry.views.get(view.sessionId) === view;
  }

  /** A view saw a call to its entry end: a deadline marks the entry unresponsive, an answer clears it. */
  #callOutcome(entry: PoolEntry, outcome: 'answered' | 'timeout'): void {
    const timingOut = outcome === 'timeout';
    if (entry.callsTimingOut === timingOut) return;
    entry.callsTimingOut = timingOut;
    const fields = { server: entry.serverName, entryIndex: entry.entryIndex };
    if (timingOut) this.#options.logger.warn(fields, 'a call hit its deadline: the entry is unresponsive until a call is answered');
    else this.#options.logger.info(fields, 'the entry answers calls again');
  }
}

/** The newest snapshot a new view of `entry` may start from: a connected view's, when it has one. */
function seedOf(entry: PoolEntry): ServerSnapshot | undefined {
  let seed: ServerSnapshot | undefined;
  for (const other of entry.views.values()) {
    const snapshot = other.seedSnapshot;
    if (snapshot !== undefined && (seed === undefined || snapshot.generation > seed.generation)) seed = snapshot;
  }
  return seed;
}

/** A second acquire by the same session gets its existing view, with the latest per-session fields. */
export async function shareView(view: PooledConnection, fields: SessionFields): Promise<PooledConnection> {
  view.updateSessionFields(fields);
  await view.ready;
  return view;
}
