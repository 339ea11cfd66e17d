/**
 * What each server config offers, by fingerprint: its tools, prompts, resources and templates,
 * instructions, server info, capabilities, era, and what the pool learned about it. Recorded
 * after every discovery (a connection's start, a reconnect) and every change of its lists, so a
 * host can list a server it has not started (lazy start) and an editor can show its tools.
 *
 * Rules:
 * - A record names its fingerprint, the catalog's format and the mcpool version that wrote it; a
 *   record any of which differs from the reader's is not returned (a changed config has another
 *   fingerprint; a newer mcpool may list otherwise), so nobody reads a stale one.
 * - Kept in memory, and one file per fingerprint in the catalog's dir when it has one, so a new
 *   pool (a restarted daemon) lists without starting anything. Read on first use, never at
 *   construction; written whole to a temporary file and renamed, so a reader never sees half a
 *   file. A file that cannot be read or written is ignored; the copy in memory keeps working.
 * - A host that shares records between processes (replicas over one store) is told each record
 *   written (`written`), and gives the ones it read back with `adopt`, checked as a file is: a
 *   record adopted wins over the file, being the shared one.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PromptInfo, ResourceInfo, ResourceTemplateInfo, ServerSnapshot, ToolInfo } from '@mcpool/protocol';
import { mergeFacts, sameFacts, type CatalogFacts } from './catalogFacts.js';

export type { CatalogFacts } from './catalogFacts.js';

/**
 * Bumped when a record's shape or meaning changes so that an older reader would misread it: an
 * older record is then ignored. A new optional field is not such a change (a reader that does
 * not know it passes it over, one that does takes its absence as nothing learned), so it keeps
 * the format and the records already written.
 */
export const CATALOG_FORMAT = 1;

/** This package's version, read once from its package.json: a record written by another is ignored. */
const MCPOOL_VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** One server config's catalog. */
export interface CatalogRecord {
  format: number;
  mcpoolVersion: string;
  fingerprint: string;
  /** ISO 8601 time of the discovery or list change it was taken from. */
  recordedAt: string;
  era: 'legacy' | 'modern' | undefined;
  serverInfo: ServerSnapshot['serverInfo'];
  capabilities: Record<string, unknown>;
  instructions: string | undefined;
  tools: ToolInfo[];
  prompts: PromptInfo[];
  resources: ResourceInfo[];
  resourceTemplates: ResourceTemplateInfo[];
  learned: CatalogFacts;
}

/** What a record is taken from: a connection's snapshot (its counters are not kept). */
export type CatalogSource = Pick<ServerSnapshot, 'tools' | 'prompts' | 'resources' | 'resourceTemplates' | 'serverInfo' | 'capabilities' | 'instructions' | 'era'>;

/** The lists a catalog holds, as `list_changed` names them. */
export type CatalogList = 'tools' | 'prompts' | 'resources';

/** A config's catalog lists changed (a discovery or a list change found them otherwise than recorded). */
export interface CatalogChange {
  fingerprint: string;
  lists: CatalogList[];
}

/** The lists `after` holds otherwise than `before` (resources with their templates). */
export function changedLists(before: CatalogSource, after: CatalogSource): CatalogList[] {
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
  const out: CatalogList[] = [];
  if (!same(before.tools, after.tools)) out.push('tools');
  if (!same(before.prompts, after.prompts)) out.push('prompts');
  if (!same(before.resources, after.resources) || !same(before.resourceTemplates, after.resourceTemplates)) out.push('resources');
  return out;
}

export interface ServerCatalogOptions {
  /** Where records are kept, one file per fingerprint; undefined: in memory only. */
  dir?: string | undefined;
  /** The version records are written with and must match. @default this package's version */
  version?: string | undefined;
  /** Told each record written, as the text a file holds (a host keeps it in a shared store). */
  written?: ((fingerprint: string, text: string) => void) | undefined;
}

export class ServerCatalog {
  readonly dir: string | undefined;
  readonly version: string;
  readonly #records = new Map<string, CatalogRecord | null>();
  readonly #written: ((fingerprint: string, text: string) => void) | undefined;

  constructor(options: ServerCatalogOptions = {}) {
    this.dir = options.dir;
    this.version = options.version ?? MCPOOL_VERSION;
    this.#written = options.written;
  }

  /**
   * Takes `text` (a record another process wrote) as the record of `fingerprint`, when it is one
   * of this format and version for that fingerprint. @returns whether it was taken
   */
  adopt(fingerprint: string, text: string): boolean {
    const record = this.#parse(fingerprint, text);
    if (record === null) return false;
    this.#records.set(fingerprint, record);
    return true;
  }

  /** The record of `fingerprint` written by this format and version, else undefined. */
  get(fingerprint: string): CatalogRecord | undefined {
    let record = this.#records.get(fingerprint);
    if (record === undefined) this.#records.set(fingerprint, (record = this.#read(fingerprint)));
    return record ?? undefined;
  }

  /** Records what a connection of `fingerprint` offers now, keeping the facts learned before. */
  record(fingerprint: string, source: CatalogSource, learned: CatalogFacts = {}): CatalogRecord {
    const before = this.get(fingerprint);
    const record: CatalogRecord = {
      format: CATALOG_FORMAT,
      mcpoolVersion: this.version,
      fingerprint,
      recordedAt: new Date().toISOString(),
      era: source.era ?? before?.era,
      serverInfo: source.serverInfo,
      capabilities: source.capabilities,
      instructions: source.instructions,
      tools: source.tools,
      prompts: source.prompts,
      resources: source.resources,
      resourceTemplates: source.resourceTemplates,
      learned: mergeFacts(before?.learned, learned),
    };
    this.#records.set(fingerprint, record);
    this.#write(record);
    return record;
  }

  /** Adds facts to the record of `fingerprint`, written only when it learned something (none without a record: nothing to attach them to). */
  learn(fingerprint: string, facts: CatalogFacts): void {
    const before = this.get(fingerprint);
    if (before === undefined) return;
    const learned = mergeFacts(before.learned, facts);
    if (sameFacts(learned, mergeFacts(undefined, before.learned))) return;
    const record = { ...before, learned };
    this.#records.set(fingerprint, record);
    this.#write(record);
  }

  #file(fingerprint: string): string | undefined {
    // A fingerprint is hex; anything else never names a file.
    return this.dir === undefined || !/^[0-9a-f]+$/.test(fingerprint) ? undefined : join(this.dir, `${fingerprint}.json`);
  }

  #read(fingerprint: string): CatalogRecord | null {
    const file = this.#file(fingerprint);
    if (file === undefined) return null;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return null;
    }
    return this.#parse(fingerprint, text);
  }

  #parse(fingerprint: string, text: string): CatalogRecord | null {
    let raw: Partial<CatalogRecord> | null;
    try {
      raw = JSON.parse(text) as Partial<CatalogRecord> | null;
    } catch {
      return null;
    }
    if (raw?.format !== CATALOG_FORMAT || raw.mcpoolVersion !== this.version || raw.fingerprint !== fingerprint) return null;
    if (![raw.tools, raw.prompts, raw.resources, raw.resourceTemplates].every(Array.isArray)) return null;
    // Facts as a merge leaves them: whatever a file holds, a reader gets only the known, bounded ones.
    const learned = typeof raw.learned === 'object' && raw.learned !== null ? mergeFacts(undefined, raw.learned) : {};
    return { ...(raw as CatalogRecord), learned, capabilities: raw.capabilities ?? {} };
  }

  #write(record: CatalogRecord): void {
    const text = JSON.stringify(record);
    this.#written?.(record.fingerprint, text);
    const file = this.#file(record.fingerprint);
    if (file === undefined || this.dir === undefined) return;
    const temp = `${file}.${process.pid}.tmp`;
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      writeFileSync(temp, text, { mode: 0o600 });
      renameSync(temp, file);
    } catch {
      // Persistence is a convenience: the record in memory still serves.
    }
  }
}
