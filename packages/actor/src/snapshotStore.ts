/**
 * The actor's snapshot of its server's lists, and the refresh that `list_changed` triggers.
 *
 * Guards (a stale snapshot never replaces a newer one): a refresh started under an older
 * transport incarnation, or overtaken by a newer refresh of the same list, never overwrites;
 * a failed list call keeps the old list; refreshes of one list are coalesced (one in flight,
 * one more queued at most).
 */
import type { ServerSnapshot } from '@mcpool/protocol';
import type { ListKind, Lists, ServerConnection } from './serverConnection.js';

type Discover = Pick<ServerConnection, 'discover'>;

export class SnapshotStore {
  #snapshot: ServerSnapshot = {
    generation: 0,
    clientGeneration: 0,
    tools: [],
    prompts: [],
    resources: [],
    resourceTemplates: [],
    serverInfo: undefined,
    capabilities: {},
    instructions: undefined,
  };
  readonly #started: Record<ListKind, number> = { tools: 0, prompts: 0, resources: 0 };
  readonly #applied: Record<ListKind, number> = { tools: 0, prompts: 0, resources: 0 };
  readonly #inFlight = new Map<ListKind, Promise<void>>();
  /** The latest request that arrived while a refresh of that list ran: it runs next, with its own connection. */
  readonly #queued = new Map<ListKind, { connection: Discover; clientGeneration: number; run: Promise<void>; start: () => void }>();
  readonly #onChange: (snapshot: ServerSnapshot) => void;

  constructor(onChange: (snapshot: ServerSnapshot) => void) {
    this.#onChange = onChange;
  }

  get snapshot(): ServerSnapshot {
    return this.#snapshot;
  }

  /** A new transport incarnation: its discovered lists replace everything. */
  reset(lists: Lists, clientGeneration: number, info: Pick<ServerSnapshot, 'serverInfo' | 'capabilities' | 'instructions' | 'era'>): void {
    this.#snapshot = { ...this.#snapshot, ...lists, ...info, clientGeneration, generation: this.#snapshot.generation + 1 };
    this.#onChange(this.#snapshot);
  }

  /**
   * Re-lists `kind` from `connection`. Resolves when this refresh (and any coalesced follow-up)
   * is applied or dropped. Never rejects: a failed list keeps the previous one.
   */
  refresh(kind: ListKind, connection: Discover, clientGeneration: number): Promise<void> {
    if (!this.#inFlight.has(kind)) return this.#start(kind, connection, clientGeneration);
    const queued = this.#queued.get(kind);
    if (queued !== undefined) {
      // Coalesce: one follow-up at most, run with the newest connection asked for.
      queued.connection = connection;
      queued.clientGeneration = clientGeneration;
      return queued.run;
    }
    let start!: () => void;
    const gate = new Promise<void>((resolve) => {
      start = resolve;
    });
    const entry = { connection, clientGeneration, start, run: Promise.resolve() };
    entry.run = gate.then(() => this.#start(kind, entry.connection, entry.clientGeneration));
    this.#queued.set(kind, entry);
    return entry.run;
  }

  #start(kind: ListKind, connection: Discover, clientGeneration: number): Promise<void> {
    const run = this.#refreshOnce(kind, connection, clientGeneration).finally(() => {
      this.#inFlight.delete(kind);
      const next = this.#queued.get(kind);
      this.#queued.delete(kind);
      next?.start();
    });
    this.#inFlight.set(kind, run);
    return run;
  }

  async #refreshOnce(kind: ListKind, connection: Discover, clientGeneration: number): Promise<void> {
    const seq = ++this.#started[kind];
    let lists: Partial<Lists>;
    try {
      lists = await connection.discover(kind);
    } catch {
      return;
    }
    this.apply(kind, lists, clientGeneration, seq);
  }

  /**
   * Applies a list result if it is still current: same transport incarnation and no newer
   * result of this list already applied. Returns whether it was applied.
   */
  apply(kind: ListKind, lists: Partial<Lists>, clientGeneration: number, seq: number): boolean {
    if (clientGeneration !== this.#snapshot.clientGeneration || seq <= this.#applied[kind]) return false;
    this.#applied[kind] = seq;
    this.#snapshot = { ...this.#snapshot, ...lists, generation: this.#snapshot.generation + 1 };
    this.#onChange(this.#snapshot);
    return true;
  }

  /** Starts a sequence number for a list result obtained outside {@link refresh}. */
  nextSeq(kind: ListKind): number {
    return ++this.#started[kind];
  }
}
