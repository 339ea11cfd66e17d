/**
 * Redis as the shared store (every replica reaches the same values), through `ioredis`.
 * - Keys are `<keyPrefix><namespace>:<key>`; values are written whole (`SET`).
 * - Never a queue that grows while Redis is away: a command sent while the connection is down
 *   fails at once, one that gets no answer fails after `commandTimeoutMs`, each as
 *   `MCPOOL_STORE_UNAVAILABLE`; the connection is retried in the background (backoff to 5 s),
 *   and an outage is logged once when it starts and once when it ends.
 * - The URL (it may hold a password) comes from an environment variable and is never logged.
 */
import { Redis } from 'ioredis';
import { ErrorCode, PoolError } from '@mcpool/protocol';
import type { Logger } from 'pino';
import { assertKey, type SharedStore, type StoreNamespace } from './sharedStore.js';

export interface RedisStoreOptions {
  url: string;
  /** @default 'mcpool:' */
  keyPrefix?: string;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** @default 2000 */
  commandTimeoutMs?: number;
}

/** A glob pattern matching `text` literally (SCAN's MATCH). */
const literal = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

export class RedisStore implements SharedStore {
  readonly kind = 'redis' as const;
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #logger: RedisStoreOptions['logger'];
  #down = false;
  #closed = false;

  constructor(options: RedisStoreOptions) {
    this.#prefix = options.keyPrefix ?? 'mcpool:';
    this.#logger = options.logger;
    this.#client = new Redis(options.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 2000,
      connectTimeout: 5000,
      retryStrategy: (times) => Math.min(times * 200, 5000),
    });
    // Without a listener ioredis writes each error to the host's console.
    this.#client.on('error', (error: Error) => {
      if (this.#down || this.#closed) return;
      this.#down = true;
      this.#logger.warn({ err: { message: error.message } }, 'the Redis store cannot be reached; retrying in the background');
    });
    this.#client.on('ready', () => {
      if (!this.#down) return;
      this.#down = false;
      this.#logger.info('the Redis store is reachable again');
    });
  }

  /** Connects; resolves once connected or once the first attempt failed (commands then fail until it is back). */
  async open(): Promise<void> {
    try {
      await this.#client.connect();
    } catch {
      // Logged by the error listener; the client keeps retrying.
    }
  }

  get(namespace: StoreNamespace, key: string): Promise<string | undefined> {
    return this.#run(async () => (await this.#client.get(this.#key(namespace, key))) ?? undefined);
  }

  set(namespace: StoreNamespace, key: string, value: string): Promise<void> {
    return this.#run(async () => {
      await this.#client.set(this.#key(namespace, key), value);
    });
  }

  delete(namespace: StoreNamespace, key: string): Promise<void> {
    return this.#run(async () => {
      await this.#client.del(this.#key(namespace, key));
    });
  }

  keys(namespace: StoreNamespace): Promise<string[]> {
    const start = `${this.#prefix}${namespace}:`;
    return this.#run(async () => {
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await this.#client.scan(cursor, 'MATCH', `${literal(start)}*`, 'COUNT', 200);
        for (const key of batch) found.push(key.slice(start.length));
        cursor = next;
      } while (cursor !== '0');
      return found;
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // QUIT lets the answers in flight arrive; a connection that is down is just dropped.
    if (this.#client.status === 'ready') await this.#client.quit().catch(() => undefined);
    this.#client.disconnect();
  }

  #key(namespace: StoreNamespace, key: string): string {
    assertKey(key);
    return `${this.#prefix}${namespace}:${key}`;
  }

  async #run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new PoolError(ErrorCode.STORE_UNAVAILABLE, 'the Redis store is closed');
    try {
      return await operation();
    } catch (error) {
      if (error instanceof TypeError) throw error;
      throw new PoolError(ErrorCode.STORE_UNAVAILABLE, `the Redis store did not answer: ${(error as Error).message}`, { cause: error });
    }
  }
}
