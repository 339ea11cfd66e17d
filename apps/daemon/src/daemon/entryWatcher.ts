/**
 * The entry watcher: the pool's events, as they happen, become the daemon's events and one log
 * line per lifecycle change (never by polling the pool's snapshot). An entry event older than what
 * was applied for that entry (a lower generation) is dropped, as the pool's event contract says.
 * The pool tells a failure twice (a `failed` event and a `failed` status); it is logged once, with
 * the end of the server's stderr.
 */
import type { Logger } from 'pino';
import { ErrorCode, type EntryStatus, type PoolEvent } from '@mcpool/core';
import type { DaemonEventPayload } from '@mcpool/client';
import type { DaemonMetrics } from '../metrics.js';

/** How many ended entries the watcher remembers (so a late event of one is not taken for a new entry). */
const ENDED_ENTRIES_KEPT = 256;
/** Lines of a server's stderr a failure log line keeps. */
const STDERR_TAIL_LINES = 3;
const STDERR_TAIL_CHARS = 400;

/** What the entry watcher knows of one pool entry. */
interface WatchedEntry {
  status: EntryStatus;
  generation: number;
  /** Its failure has been logged (the pool tells a failure twice: a `failed` event and a status). */
  failureLogged: boolean;
}

export interface EntryWatcherOptions {
  logger: Logger;
  metrics: DaemonMetrics;
  publish: (payload: DaemonEventPayload) => void;
  /** The refs of an entry now (an `entry_status` event carries them). */
  refsOf: (server: string, entryIndex: number) => number;
  /** A server was just authorized (the holds that waited for it acquire it again). */
  onAuthorized: (server: string) => void;
  /** An entry's actor died (the pool brings a held entry back; holds on it go onto the replacement). */
  onActorDied: (server: string, entryIndex: number) => void;
}

export class EntryWatcher {
  readonly #logger: Logger;
  readonly #metrics: DaemonMetrics;
  readonly #publish: (payload: DaemonEventPayload) => void;
  readonly #refsOf: EntryWatcherOptions['refsOf'];
  readonly #onAuthorized: EntryWatcherOptions['onAuthorized'];
  readonly #onActorDied: EntryWatcherOptions['onActorDied'];
  readonly #entries = new Map<string, WatchedEntry>();
  readonly #ended = new Set<string>();

  constructor(options: EntryWatcherOptions) {
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#publish = options.publish;
    this.#refsOf = options.refsOf;
    this.#onAuthorized = options.onAuthorized;
    this.#onActorDied = options.onActorDied;
  }

  /** The pool's `onEvent`. */
  onPoolEvent(event: PoolEvent): void {
    if (event.type === 'authRequired') {
      this.#publish({ type: 'auth_required', serverName: event.serverName, command: `mcpool auth ${event.serverName}` });
      return;
    }
    if (event.type === 'authorized') {
      this.#publish({ type: 'auth_completed', serverName: event.serverName });
      this.#onAuthorized(event.serverName);
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
    if (event.type === 'notificationsDropped') {
      this.#metrics.unattributed.inc({ server: event.serverName }, event.dropped);
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
        if (event.lastError.code === ErrorCode.ACTOR_DIED) this.#onActorDied(event.serverName, event.entryIndex);
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
    if (known === undefined) this.#metrics.spawns.inc({ server });
    const refs = this.#refsOf(server, entryIndex);
    const fields = { server, entryIndex, status, previous, refs };
    if (status === 'failed') {
      this.#metrics.failures.inc({ server, kind: 'entry' });
      this.#logFailure(entry, server, entryIndex, lastError ?? { code: ErrorCode.SERVER_FAILED, message: 'failed' });
    } else if (status === 'closed') {
      this.#logger.info({ ...fields, status: 'gone' }, `${server}#${entryIndex} gone`);
    } else if ((previous === 'active' && status === 'draining') || (previous === 'draining' && status === 'active')) {
      // An entry goes draining when its last session leaves and active when one comes back: that
      // is session churn (two lines per session on a per-principal server), so it is logged at
      // debug; birth, failure and end stay lifecycle lines at info.
      this.#logger.debug(fields, `${server}#${entryIndex} ${status}`);
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
