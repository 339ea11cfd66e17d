/**
 * A pool entry: one connection (one actor on its own thread, one server process or remote
 * connection) under one pool key, and the views sessions hold on it. The supervisor's record of
 * it; the connection's own state lives in its actor.
 */
import type { ConnectionId, EntryStatus, Root, ServerConfig, SharingPolicy, WireError } from '@mcpool/protocol';
import type { ConnectionThread } from './connectionThread.js';
import type { PooledConnection } from './pooledConnection.js';
import type { RestartResult } from './poolTypes.js';

/** Which sessions an entry may serve: its policy and, when narrower than shared, whose it is. */
export interface Placement {
  readonly sharing: SharingPolicy;
  readonly ownerLabel: string | undefined;
}

/** What a pool key says about the entries made under it (see `./poolKey.ts`). */
export interface EntryKey {
  /** The pool key: the connection id, plus the owner for entries that are not shared. */
  readonly id: ConnectionId;
  readonly placement: Placement;
  /** The principal whose sessions alone use the entry (`per-principal`, `per-session`, unpooled), for its credentials; undefined for an entry principals share. */
  readonly principal: string | undefined;
  /** Which authorization the entry needs: its server and, for an entry of one principal, whose. */
  readonly authKey: string;
  /**
   * The session a key is kept for when no other can reach it: an unpooled key (one entry ever)
   * or a `per-session` one. Its restart record ends with that session's use of it.
   */
  readonly ownerSession: string | undefined;
  /** A `per-workspace` entry's roots (what the pool answers its server's `roots/list` with); undefined otherwise. */
  readonly roots?: readonly Root[] | undefined;
}

export class PoolEntry {
  readonly key: EntryKey;
  readonly serverName: string;
  readonly entryIndex: number;
  readonly config: ServerConfig;
  readonly pooled: boolean;
  readonly thread: ConnectionThread;
  status: EntryStatus = 'spawning';
  /** What the actor was last told: no refs (`true`) or some. */
  idle = false;
  /** The views sessions hold, by session id. */
  readonly views = new Map<string, PooledConnection>();
  /** The spawn in flight, then settled: every acquire of the entry waits for it. */
  ready: Promise<void> = Promise.resolve();
  budgetHeld = true;
  closing: Promise<void> | undefined;
  lastError: WireError | undefined;
  restarting: Promise<RestartResult> | undefined;
  /** The protocol era the actor settled on. */
  era: 'legacy' | 'modern' | undefined;
  /** Set when the liveness check gave up on the thread (its exit is then a death, whatever the code). */
  unresponsive = false;
  /** A call hit its deadline and none has been answered since. */
  callsTimingOut = false;
  /** The actor holds back reading the server (it floods). */
  throttled = false;
  /** The highest snapshot generation the actor reported; every event of the entry carries it, so it never goes down. */
  generation = 0;
  /** The `Authorization` value the actor holds, when the host's credentials supply one. */
  authorization: string | undefined;
  /** A refusal of the token being handled (one at a time per entry). */
  authRefusal: Promise<void> | undefined;
  /** The actor's start succeeded: a later failure is its reconnect's, not the start's (which the spawn reports). */
  started = false;
  /** The principal whose acquire started the entry (its share of the actor cap counts it); a replacement keeps it. */
  readonly startedBy: string | undefined;

  constructor(init: { key: EntryKey; serverName: string; entryIndex: number; config: ServerConfig; pooled: boolean; thread: ConnectionThread; startedBy?: string | undefined }) {
    this.startedBy = init.startedBy;
    this.key = init.key;
    this.serverName = init.serverName;
    this.entryIndex = init.entryIndex;
    this.config = init.config;
    this.pooled = init.pooled;
    this.thread = init.thread;
  }

  get id(): ConnectionId {
    return this.key.id;
  }

  get placement(): Placement {
    return this.key.placement;
  }

  /** Closed or failed: no attach reaches it any more. */
  get terminal(): boolean {
    return isTerminal(this.status);
  }

  /** Records a generation the actor reported; the entry's never goes down (a late event cannot lower it). */
  seenGeneration(generation: number | undefined): number {
    if (typeof generation === 'number' && generation > this.generation) this.generation = generation;
    return this.generation;
  }
}

export function isTerminal(status: EntryStatus): boolean {
  return status === 'closed' || status === 'failed';
}
