/**
 * Starting an entry's connection on its thread, every step under one deadline (the spawn
 * timeout of its config): the host's credentials for a remote server (the token request gets the
 * deadline's signal), then the actor's `start` (spawn or connect, the era probe, initialize,
 * discovery) with what is left of it. It begins once the process tree of a predecessor under the
 * same key is gone (a wait bounded on its own). Its outcome settles `entry.ready`, which every
 * acquire of the entry awaits: one error for every waiter, and a failed start leaves no entry.
 */
import { ErrorCode, PoolError, connectionIdOf, fingerprint, type ActorStartArgs, type ActorStartResult, type ConnectionId, type EntryStatus, type Logger } from '@mcpool/protocol';
import type { AuthGates } from './authGates.js';
import { withDeadline } from './deadline.js';
import type { PoolEntry } from './entry.js';
import type { EraCache } from './eraCache.js';
import type { GroupLedger } from './groupLedger.js';
import { SILENT_LOGGER, actorLogLevel } from './logging.js';
import type { ResolvedPoolOptions } from './poolOptions.js';
import { spawnTimeoutFor, type SpawnBackoff } from './spawnPolicy.js';

export interface EntryStarterOptions {
  options: ResolvedPoolOptions;
  /** The host's own logger: actors log to a `component: 'actor'` child of it. */
  rootLogger: Logger | undefined;
  /** The pool's logger. */
  logger: Logger;
  auth: AuthGates;
  backoff: SpawnBackoff;
  eras: EraCache;
  /** The tools the catalog of a config (by fingerprint) knows to send their client requests, with their methods. */
  askingToolsOf(fingerprint: string): Readonly<Record<string, readonly string[]>> | undefined;
  ledger: GroupLedger | undefined;
  /** Teardowns under way per key (a start waits for its predecessor's). */
  retiring: ReadonlyMap<ConnectionId, Promise<void>>;
  /** Extra time given to the actor past the deadline it was told, before its start counts as hung. */
  actorSlackMs: number;
  setStatus(entry: PoolEntry, status: EntryStatus): void;
  evict(entry: PoolEntry): void;
}

export class EntryStarter {
  readonly #o: EntryStarterOptions;

  constructor(options: EntryStarterOptions) {
    this.#o = options;
  }

  /** Starts `entry` (just created, `spawning`) and sets its `ready`. */
  start(entry: PoolEntry): void {
    const { options, auth, backoff, eras, ledger, retiring, logger, rootLogger } = this.#o;
    const { serverName: name, entryIndex, config, thread } = entry;
    thread.bind(rootLogger?.child({ component: 'actor', server: name, entryIndex }) ?? SILENT_LOGGER);
    const log = logger.child({ server: name, entryIndex });
    const spawnTimeoutMs = spawnTimeoutFor(config, options.spawnTimeoutMs);
    const args: ActorStartArgs = {
      serverName: name,
      entryIndex,
      config,
      spawnTimeoutMs,
      callTimeoutMs: options.callTimeoutMs,
      drainDelayMs: options.drainDelayMs,
      maxIdleMs: options.maxIdleMs,
      shutdownStepMs: options.shutdownStepMs,
      maxMessageBytes: config.maxMessageBytes ?? options.maxMessageBytes,
      logLevel: actorLogLevel(rootLogger, options.logLevel),
      reconnect: config.transport === 'stdio' ? options.reconnect.stdio : options.reconnect.remote,
      era: eras.get(fingerprint(config))?.era,
    };
    if (entry.key.roots !== undefined) args.roots = entry.key.roots;
    // What earlier connections of this config learned: their asking tools are serialised from the first call.
    const askingTools = this.#o.askingToolsOf(fingerprint(config));
    if (askingTools !== undefined) args.askingTools = askingTools;
    const started = Date.now();
    const spawnKey = connectionIdOf(name, fingerprint(config));
    // A replacement starts only once its predecessor's process tree is gone (bounded).
    const previous = retiring.get(entry.id);
    entry.ready = (previous === undefined ? Promise.resolve() : withDeadline(previous, options.shutdownStepMs * 2 + 3000))
      .then(async () => {
        const deadlineAt = performance.now() + spawnTimeoutMs;
        if (auth.usesCredentials(config)) {
          entry.authorization = await credentialsWithin(auth, entry, spawnTimeoutMs);
          if (entry.authorization !== undefined) args.authorization = entry.authorization;
        }
        // The actor gets what is left of the deadline.
        args.spawnTimeoutMs = Math.max(1, Math.floor(deadlineAt - performance.now()));
        return thread.request<ActorStartResult>('start', args, { timeoutMs: args.spawnTimeoutMs + this.#o.actorSlackMs });
      })
      .then((result) => {
        entry.seenGeneration(result.snapshot.generation);
        entry.started = true;
        // The server is up: the helpers it started by now join its group's record.
        void ledger?.refresh();
        if (entry.status === 'spawning') this.#o.setStatus(entry, 'active');
        backoff.succeeded(spawnKey);
        entry.era = result.era ?? entry.era;
        log.info({ pid: result.pid, era: result.era, ms: Date.now() - started, tools: result.snapshot.tools.length }, 'entry ready');
      })
      .catch(async (error: unknown) => {
        let failure = error instanceof PoolError ? error : new PoolError(ErrorCode.SPAWN_FAILED, String(error), { cause: error });
        // The connection's channel closed under its start: its actor thread ended, which is the
        // actor's death, not the server's failure.
        if (failure.code === ErrorCode.PORT_CLOSED) failure = new PoolError(ErrorCode.ACTOR_DIED, `the actor thread of ${name}#${entryIndex} ended during its start: ${failure.message}`, { cause: failure });
        if (failure.code === ErrorCode.AUTH_REQUIRED) failure = await auth.spawnRefused(entry, failure);
        entry.lastError = failure.toWire();
        backoff.failed(spawnKey, name, entry.lastError);
        // The cached era may be what failed: the next spawn of this config probes again.
        eras.forget(fingerprint(config));
        this.#o.setStatus(entry, 'failed');
        this.#o.evict(entry);
        // The error goes to every waiter of this spawn; whoever acquired decides what to log.
        log.debug({ code: failure.code, error: failure.message }, 'spawn failed');
        await thread.shutdown('spawn failed', options.shutdownStepMs * 2 + 1000);
        throw failure;
      });
  }
}

/**
 * The host's token for `entry`, or `MCPOOL_SPAWN_TIMEOUT` once `timeoutMs` passed: the token
 * request is told by its signal and is not waited for (a token endpoint that never answers holds
 * no acquire past the spawn deadline).
 */
async function credentialsWithin(auth: AuthGates, entry: PoolEntry, timeoutMs: number): Promise<string | undefined> {
  const controller = new AbortController();
  const timedOut = new PoolError(ErrorCode.SPAWN_TIMEOUT, `${entry.serverName} did not start within ${timeoutMs} ms: its host's credentials were not ready`, {
    data: { serverName: entry.serverName, timeoutMs, step: 'credentials' },
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(timedOut);
      reject(timedOut);
    }, timeoutMs);
  });
  try {
    return await Promise.race([auth.authorization(entry, controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
