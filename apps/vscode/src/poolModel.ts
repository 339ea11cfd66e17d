/**
 * One window's picture of the pool: which servers it shows, each with its tools' metadata and
 * `version`, and the pool's figures for the status bar. It follows the daemon's event stream
 * (`GET /workspace/mcp/events`): each event says which servers to read again
 * ({@link effectOf}); reads are coalesced (one runs at a time, and what arrives meanwhile is
 * merged into the next), and listeners hear of a change only when the definitions differ — a
 * server came or went, or its tools did.
 *
 * Losing the daemon is a state, not an error: the stream reconnects on its own for a while, then
 * the model links again with a backoff, without starting a daemon (a daemon someone stopped stays
 * stopped until a window needs a server: {@link ensureLinked} with `start`).
 */
import type { DaemonEvent, ServerStatus, WorkspaceMcpStatus } from '@mcpool/client';
import type { DaemonLink } from './daemonLink.js';
import { effectOf } from './eventEffects.js';
import type { MetadataSource, ServerMetadata } from './serverMetadata.js';
import { toolsVersion } from './toolsVersion.js';

/** Whether a server can be asked for its tools now: not one that failed, waits for authorization, or cannot run at all. */
export function isRunnable(status: ServerStatus): boolean {
  return status !== 'failed' && status !== 'auth_required' && status !== 'unavailable';
}

export interface PooledServer {
  name: string;
  status: ServerStatus;
  /** Of its tools, once read; kept from the last read while a new one fails. */
  version: string | undefined;
  metadata: ServerMetadata | undefined;
  /** Why its metadata could not be read the last time. */
  error: string | undefined;
}

export interface PoolView {
  link: DaemonLink | undefined;
  /** The daemon's address, kept while it is away: the definitions stay as they were. */
  baseUrl: string | undefined;
  servers: readonly PooledServer[];
  status: WorkspaceMcpStatus | undefined;
  /** Why there is no daemon, when there is none. */
  error: string | undefined;
}

/** A timer the model arms (backoff before linking again); injectable so a test runs it at once. */
export type Schedule = (run: () => void, ms: number) => { cancel(): void };

export interface PoolModelOptions {
  /** Links to the daemon; `start`: start one when none answers. */
  link(start: boolean): Promise<DaemonLink>;
  metadata(link: DaemonLink): MetadataSource;
  /** The servers of `names` this window shows (its workspace folders' bindings applied). */
  visible(names: readonly string[], link: DaemonLink): Promise<readonly string[]>;
  log(level: 'info' | 'warn' | 'error', message: string): void;
  /** @default setTimeout */
  schedule?: Schedule;
  /** Backoff between attempts to link again. @default [1000, 2000, 5000, 10000, 30000] */
  relinkDelaysMs?: readonly number[];
}

type Listener = () => void;

const signature = (view: PoolView): string => JSON.stringify([view.baseUrl, view.servers.map((server) => [server.name, server.version, server.metadata !== undefined])]);

export class PoolModel {
  readonly #options: PoolModelOptions;
  readonly #changeListeners = new Set<Listener>();
  readonly #statusListeners = new Set<Listener>();
  #view: PoolView = { link: undefined, baseUrl: undefined, servers: [], status: undefined, error: undefined };
  #closed = false;
  #stream: { close(): void } | undefined;
  #linking: Promise<DaemonLink | undefined> | undefined;
  #relinkTimer: { cancel(): void } | undefined;
  #relinkAttempt = 0;
  #pending: Set<string> | 'all' | undefined;
  /** Servers whose config changed since the last read (see {@link MetadataSource.forget}). */
  readonly #replaced = new Set<string>();
  #running: Promise<void> | undefined;
  readonly #firstLoad: Promise<void>;
  #firstLoaded!: () => void;

  constructor(options: PoolModelOptions) {
    this.#options = options;
    this.#firstLoad = new Promise((resolve) => (this.#firstLoaded = resolve));
  }

  get view(): PoolView {
    return this.#view;
  }

  /** Resolves once the first attempt to link and read the pool has ended, however it ended. */
  ready(): Promise<void> {
    return this.#firstLoad;
  }

  /** `listener` runs when the definitions change (servers came or went, tools changed). */
  onChange(listener: Listener): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /** `listener` runs when the pool's figures were read again, or the daemon came or went. */
  onStatus(listener: Listener): () => void {
    this.#statusListeners.add(listener);
    return () => this.#statusListeners.delete(listener);
  }

  /** Links (starting the daemon when none answers) and reads the pool; follows its events from then on. */
  start(): void {
    void this.ensureLinked(true).finally(() => this.#firstLoaded());
  }

  /**
   * The current link, or a new one. `start`: start the daemon when none answers (what a window
   * does when it needs a server). Undefined when there is no daemon; the view says why.
   */
  ensureLinked(start: boolean): Promise<DaemonLink | undefined> {
    if (this.#view.link !== undefined) return Promise.resolve(this.#view.link);
    this.#linking ??= this.#link(start).finally(() => (this.#linking = undefined));
    return this.#linking;
  }

  /** Forgets the link and links again now (the user asked, or the daemon went away). */
  async reconnect(start: boolean): Promise<DaemonLink | undefined> {
    this.#drop('reconnecting');
    return this.ensureLinked(start);
  }

  /** Reads the pool again: `servers`' metadata, or every server's. */
  refresh(servers: 'all' | readonly string[] = 'all'): Promise<void> {
    if (servers === 'all') this.#pending = 'all';
    else if (this.#pending !== 'all') {
      this.#pending ??= new Set();
      for (const name of servers) this.#pending.add(name);
    }
    this.#running ??= this.#drain().finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** Stops following the daemon; nothing runs afterwards. */
  close(): void {
    this.#closed = true;
    this.#relinkTimer?.cancel();
    this.#stream?.close();
    this.#changeListeners.clear();
    this.#statusListeners.clear();
  }

  async #link(start: boolean): Promise<DaemonLink | undefined> {
    if (this.#closed) return undefined;
    let link: DaemonLink;
    try {
      link = await this.#options.link(start);
    } catch (error) {
      this.#setView({ ...this.#view, link: undefined, status: undefined, error: (error as Error).message });
      this.#options.log('warn', (error as Error).message);
      this.#scheduleRelink();
      return undefined;
    }
    if (this.#closed) return undefined;
    this.#relinkAttempt = 0;
    this.#setView({ ...this.#view, link, baseUrl: link.baseUrl, error: undefined });
    // The first read alone decides when the definitions are ready; the stream opens after it, and
    // its open reads once more what changed in between.
    await this.refresh('all');
    if (this.#view.link === link && !this.#closed) this.#follow(link);
    return this.#view.link;
  }

  /** Follows the event stream until it ends for good; then links again, with a backoff. */
  #follow(link: DaemonLink): void {
    const stream = link.client.events({ onOpen: () => void this.refresh('all') });
    this.#stream = stream;
    void (async () => {
      try {
        for await (const event of stream) this.#apply(event);
        if (!this.#closed && this.#stream === stream) this.#lost('the daemon ended its event stream');
      } catch (error) {
        if (!this.#closed && this.#stream === stream) this.#lost(`lost the daemon: ${(error as Error).message}`);
      }
    })();
  }

  #apply(event: DaemonEvent): void {
    const effect = effectOf(event.data);
    for (const name of effect.replaced ?? []) this.#replaced.add(name);
    if (effect.reread === 'all' || effect.reread.length > 0 || effect.status) void this.refresh(effect.reread);
  }

  #lost(why: string): void {
    this.#options.log('warn', why);
    this.#drop(why);
    this.#scheduleRelink();
  }

  #drop(why: string): void {
    this.#stream?.close();
    this.#stream = undefined;
    this.#relinkTimer?.cancel();
    this.#relinkTimer = undefined;
    this.#setView({ ...this.#view, link: undefined, status: undefined, error: why });
  }

  #scheduleRelink(): void {
    if (this.#closed) return;
    const delays = this.#options.relinkDelaysMs ?? [1000, 2000, 5000, 10_000, 30_000];
    const ms = delays[Math.min(this.#relinkAttempt, delays.length - 1)]!;
    this.#relinkAttempt += 1;
    const schedule: Schedule =
      this.#options.schedule ??
      ((run, delay) => {
        const timer = setTimeout(run, delay);
        return { cancel: () => clearTimeout(timer) };
      });
    this.#relinkTimer?.cancel();
    this.#relinkTimer = schedule(() => {
      this.#relinkTimer = undefined;
      void this.ensureLinked(false);
    }, ms);
  }

  async #drain(): Promise<void> {
    while (this.#pending !== undefined && !this.#closed) {
      const which = this.#pending;
      this.#pending = undefined;
      const link = this.#view.link;
      if (link === undefined) return;
      try {
        await this.#read(link, which);
      } catch (error) {
        // The daemon did not answer its status: the stream's end (or its reconnect) says what next.
        this.#options.log('warn', `could not read the pool: ${(error as Error).message}`);
      }
    }
  }

  async #read(link: DaemonLink, which: Set<string> | 'all'): Promise<void> {
    const status = await link.client.getWorkspaceMcp();
    if (this.#view.link !== link) return;
    const configured = status.servers.filter((server) => server.configured).map((server) => server.name);
    const shown = new Set(await this.#options.visible(configured, link));
    const before = new Map(this.#view.servers.map((server) => [server.name, server]));
    const source = this.#options.metadata(link);
    if (this.#replaced.size > 0) {
      const replaced = [...this.#replaced];
      this.#replaced.clear();
      await source.forget?.(replaced).catch((error: Error) => this.#options.log('warn', `could not let go of the old config of ${replaced.join(', ')}: ${error.message}`));
    }
    const servers = await Promise.all(
      status.servers
        .filter((server) => server.configured && shown.has(server.name))
        .map(async (server): Promise<PooledServer> => {
          const known = before.get(server.name);
          // A server that cannot run now is not asked (its endpoint would list nothing): what was
          // known of it stays, and VS Code learns why when it starts it.
          if (!isRunnable(server.status)) {
            return { name: server.name, status: server.status, version: known?.version, metadata: known?.metadata, error: server.lastError?.message ?? server.status };
          }
          const stale = which === 'all' || which.has(server.name) || known?.metadata === undefined;
          if (!stale) return { ...known, status: server.status };
          try {
            const metadata = await source.read(server.name);
            return { name: server.name, status: server.status, version: toolsVersion(metadata.tools), metadata, error: undefined };
          } catch (error) {
            return { name: server.name, status: server.status, version: known?.version, metadata: known?.metadata, error: (error as Error).message };
          }
        }),
    );
    if (this.#view.link !== link || this.#closed) return;
    this.#setView({ link, baseUrl: link.baseUrl, servers, status, error: undefined });
  }

  #setView(view: PoolView): void {
    const changed = signature(view) !== signature(this.#view);
    this.#view = view;
    if (changed) for (const listener of [...this.#changeListeners]) listener();
    for (const listener of [...this.#statusListeners]) listener();
  }
}
