/**
 * What a server config shows of its catalog: the record of its fingerprint with the config's own
 * `includeTools`/`excludeTools` applied and its `trust` on each tool — what a view of the config
 * would list. A host lists every cold server this way for every session it opens, so the work is
 * done once, not per session.
 *
 * Rules:
 * - A config object is normalized and fingerprinted once, on first use: a host that changes a
 *   config hands over a new object (the daemon's reload does), and a config's `${VAR}`s are read
 *   when it is first shown.
 * - The shown record is computed again only when the catalog holds another record for the
 *   fingerprint (a discovery or a list change replaced it), so every caller gets the same object
 *   until then: it is shared and must not be changed.
 */
import { fingerprint, normalizeServerConfig, sessionFieldsOf, type ServerConfig, type ServerConfigInput } from '@mcpool/protocol';
import type { CatalogRecord, ServerCatalog } from './catalog.js';
import { SessionFilter } from './sessionFilter.js';

interface Shown {
  readonly fingerprint: string;
  readonly filter: SessionFilter;
  /** The record `shown` was made from (the catalog's current one, while it is the same object). */
  record: CatalogRecord | undefined;
  shown: CatalogRecord | undefined;
}

export class CatalogShown {
  readonly #catalog: ServerCatalog;
  readonly #byConfig = new WeakMap<object, Shown>();

  constructor(catalog: ServerCatalog) {
    this.#catalog = catalog;
  }

  /** The catalog `cfg` shows, or undefined when its fingerprint has none. @throws the config error of an invalid `cfg` */
  of(name: string, cfg: ServerConfigInput | ServerConfig | Record<string, unknown>): CatalogRecord | undefined {
    const key = typeof cfg === 'object' && cfg !== null ? cfg : undefined;
    let shown = key === undefined ? undefined : this.#byConfig.get(key);
    if (shown === undefined) {
      const config = normalizeServerConfig(cfg, { path: name }).config;
      shown = { fingerprint: fingerprint(config), filter: new SessionFilter(sessionFieldsOf(config)), record: undefined, shown: undefined };
      if (key !== undefined) this.#byConfig.set(key, shown);
    }
    const record = this.#catalog.get(shown.fingerprint);
    if (record !== shown.record) {
      shown.record = record;
      shown.shown = record === undefined ? undefined : { ...record, tools: shown.filter.tools(record.tools), prompts: shown.filter.prompts(record.prompts) };
    }
    return shown.shown;
  }
}
