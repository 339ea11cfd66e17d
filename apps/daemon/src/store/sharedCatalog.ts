/**
 * The catalog in the shared store, when it is Redis (replicas): what a server offers is the same
 * record on every replica, so each one lists a lazy server another replica learned without
 * starting it.
 * - Each record the pool writes is also set in the store's `catalog` namespace, under its
 *   fingerprint, as the same text (in the background: a store that is away loses that write, and
 *   the record stays in the replica's own memory and state directory).
 * - At start, before any server is warmed, every record in the store is given to the pool, which
 *   takes the ones of its format and version (`adoptCatalog`): a lazy server found there is not
 *   started to learn it. A store that is away at start leaves the replica to its own catalog.
 * - Nothing else is read back while the replica runs: a server's lists change rarely, and a
 *   replica that starts the server records its live lists itself.
 * The file store keeps no catalog: one machine's daemon has its catalog directory.
 */
import type { McpTransportPool } from '@mcpool/core';
import type { Logger } from 'pino';
import type { SharedStore } from './sharedStore.js';

/** What the pool tells of each record it writes, set in the store. */
export function catalogWriter(store: SharedStore, logger: Pick<Logger, 'debug'>): (fingerprint: string, text: string) => void {
  return (fingerprint, text) => {
    store.set('catalog', fingerprint, text).catch((error: unknown) => logger.debug({ err: error, fingerprint }, 'a catalog record was not kept in the shared store'));
  };
}

/** Gives the pool every record of the store; resolves with how many it took. */
export async function loadCatalog(store: SharedStore, pool: Pick<McpTransportPool, 'adoptCatalog'>, logger: Pick<Logger, 'info' | 'warn'>): Promise<number> {
  let taken = 0;
  try {
    const fingerprints = await store.keys('catalog');
    const texts = await Promise.all(fingerprints.map((fingerprint) => store.get('catalog', fingerprint)));
    for (const [i, fingerprint] of fingerprints.entries()) {
      const text = texts[i];
      if (text !== undefined && pool.adoptCatalog(fingerprint, text)) taken++;
    }
  } catch (error) {
    logger.warn({ err: error }, 'the shared store’s catalog could not be read: servers without a catalog here are started to learn them');
    return taken;
  }
  logger.info({ records: taken }, 'catalog read from the shared store');
  return taken;
}
