/**
 * When a spawn may run and for how long: the wall-clock deadline of a spawn (credentials, connect,
 * initialize, discovery), and the backoff that keeps a config whose spawn failed from being spawned
 * again for every acquire. Time comes from an injectable clock.
 */
import { ErrorCode, PoolError, type ServerConfig, type WireError } from '@mcpool/protocol';
import type { SpawnBackoffSummary } from './poolTypes.js';

const SPAWN_TIMEOUT_STDIO_MS = 30_000;
const SPAWN_TIMEOUT_PACKAGE_RUNNER_MS = 120_000;
const SPAWN_TIMEOUT_REMOTE_MS = 10_000;
const SPAWN_TIMEOUT_MIN_MS = 100;
const SPAWN_TIMEOUT_MAX_MS = 300_000;

/** Commands that may download a package before the server starts. */
const PACKAGE_RUNNERS = /(^|[/\\])(npx|uvx|bunx|pnpx)(\.cmd|\.exe)?$/;

/**
 * The spawn deadline of `config`: the host's `spawnTimeoutMs`, else 30 s for stdio, 120 s for a
 * command that may download its package first (`npx`, `uvx`, `pnpm dlx`…), 10 s for a remote
 * server; clamped to 100 ms – 300 s.
 */
export function spawnTimeoutFor(config: ServerConfig, override: number | undefined): number {
  let timeout = override;
  if (timeout === undefined) {
    if (config.transport !== 'stdio') timeout = SPAWN_TIMEOUT_REMOTE_MS;
    else if (PACKAGE_RUNNERS.test(config.command ?? '') || (/^(pnpm|yarn)$/.test(config.command ?? '') && config.args?.[0] === 'dlx')) timeout = SPAWN_TIMEOUT_PACKAGE_RUNNER_MS;
    else timeout = SPAWN_TIMEOUT_STDIO_MS;
  }
  return Math.min(SPAWN_TIMEOUT_MAX_MS, Math.max(SPAWN_TIMEOUT_MIN_MS, timeout));
}

/** Codes that say nothing about the server: the next acquire may spawn it at once. */
const NOT_THE_SERVERS_FAULT: ReadonlySet<string> = new Set([
  ErrorCode.CONNECTION_RELEASED,
  ErrorCode.POOL_DRAINING,
  // An auth refusal has its own gate, lifted by a token, not by time.
  ErrorCode.AUTH_REQUIRED,
  // A dead actor thread is the restart intensity's to bound, not a reason to hold the server back.
  ErrorCode.ACTOR_DIED,
]);

/** A config whose spawns failed in a row (keyed by name and fingerprint, whoever owned the entry). */
interface SpawnFailure {
  serverName: string;
  failures: number;
  /** Clock time from which an acquire spawns it again. */
  retryAt: number;
  lastError: WireError;
}

/**
 * After a config's spawn fails, acquires of it fail at once with that error until `retryAt`:
 * `initialMs`, doubling per consecutive failure up to `maxMs`. A successful spawn or an operator's
 * restart ends it. The map holds one record per config that failed; a success, a restart, or
 * `maxMs` past its `retryAt` with no new failure removes it.
 */
export class SpawnBackoff {
  readonly #policy: { initialMs: number; maxMs: number } | false;
  readonly #now: () => number;
  readonly #failures = new Map<string, SpawnFailure>();

  constructor(policy: { initialMs: number; maxMs: number } | false, now: () => number = Date.now) {
    this.#policy = policy;
    this.#now = now;
  }

  /** Throws the last spawn's error (its code, `data.retryAt`) while `key` (`name::fingerprint`) backs off. */
  check(key: string, name: string): void {
    const failure = this.#failures.get(key);
    if (failure === undefined) return;
    const waitMs = failure.retryAt - this.#now();
    if (waitMs <= 0) return;
    const { code, message } = failure.lastError;
    throw new PoolError(
      code,
      `${name} failed to start ${failure.failures === 1 ? 'once' : `${failure.failures} times in a row`} and is not tried again for ${Math.ceil(waitMs / 1000)} s (restart it to try now): ${message}`,
      { data: { serverName: name, failures: failure.failures, retryAt: new Date(Date.now() + waitMs).toISOString(), lastError: failure.lastError } },
    );
  }

  /** A spawn of `key` failed with `lastError`. */
  failed(key: string, name: string, lastError: WireError): void {
    if (this.#policy === false || NOT_THE_SERVERS_FAULT.has(lastError.code)) return;
    this.#prune();
    const failures = (this.#failures.get(key)?.failures ?? 0) + 1;
    const delay = Math.min(this.#policy.maxMs, this.#policy.initialMs * 2 ** Math.min(failures - 1, 30));
    this.#failures.set(key, { serverName: name, failures, retryAt: this.#now() + delay, lastError });
  }

  /** A spawn of `key` succeeded. */
  succeeded(key: string): void {
    this.#failures.delete(key);
  }

  /** An operator's restart of `name` is the "try now" a backing-off server waits for. */
  clearServer(name: string): void {
    for (const [key, failure] of this.#failures) if (failure.serverName === name) this.#failures.delete(key);
  }

  /** The configs still backing off now, for the snapshot. */
  *active(): Iterable<{ serverName: string; summary: SpawnBackoffSummary }> {
    this.#prune();
    const now = this.#now();
    for (const failure of this.#failures.values()) {
      if (failure.retryAt <= now) continue;
      yield { serverName: failure.serverName, summary: { failures: failure.failures, retryAt: new Date(Date.now() + failure.retryAt - now).toISOString(), lastError: failure.lastError } };
    }
  }

  /** The number of configs with a record (for health figures and leak tests). */
  get size(): number {
    return this.#failures.size;
  }

  /** A record `maxMs` past its `retryAt` is forgotten: a config failing again after that starts over. */
  #prune(): void {
    if (this.#policy === false) return;
    const before = this.#now() - this.#policy.maxMs;
    for (const [key, failure] of this.#failures) if (failure.retryAt < before) this.#failures.delete(key);
  }
}
