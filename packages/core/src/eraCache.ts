/**
 * The protocol era each server config settled on, by fingerprint, with the date it was decided:
 * a new entry of a config skips the era probe when the verdict says legacy (a modern server is
 * asked `server/discover` anyway, which is its opening), and a verdict that fails is dropped so
 * the next spawn probes again. A stale legacy verdict is not silent: a modern-only server refuses
 * the `initialize`, and the actor probes then.
 *
 * Kept in memory, and in `<stateDir>/eras.json` when the pool has a state dir, so a new pool (a
 * restarted daemon) reuses it. Read on first use, never at construction; written whole to a
 * temporary file and renamed, so a reader never sees half a file. A file that cannot be read or
 * written is ignored; the copy in memory keeps working.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface EraVerdict {
  era: 'legacy' | 'modern';
  protocolVersion: string;
  /** ISO 8601 date of the probe that decided it. */
  decidedAt: string;
}

/** Entries kept at most: the file stays small however many configs come and go. */
const MAX_ENTRIES = 1000;

export class EraCache {
  readonly file: string | undefined;
  #verdicts: Map<string, EraVerdict> | undefined;

  constructor(dir?: string  ) {
    this.file = dir === undefined ? undefined : join(dir, 'eras.json');
  }

  get(fingerprint: string): EraVerdict | undefined {
    return this.#load().get(fingerprint);
  }

  set(fingerprint: string, verdict: Omit<EraVerdict, 'decidedAt'> & { decidedAt?: string }): void {
    const verdicts = this.#load();
    verdicts.delete(fingerprint);
    verdicts.set(fingerprint, { era: verdict.era, protocolVersion: verdict.protocolVersion, decidedAt: verdict.decidedAt ?? new Date().toISOString() });
    // Oldest first in insertion order: drop from the front.
    for (const key of verdicts.keys()) {
      if (verdicts.size <= MAX_ENTRIES) break;
      verdicts.delete(key);
    }
    this.#save();
  }

  /** Drops a verdict that failed: the next spawn of that config probes again. */
  forget(fingerprint: string): void {
    if (this.#load().delete(fingerprint)) this.#save();
  }

  #load(): Map<string, EraVerdict> {
    if (this.#verdicts !== undefined) return this.#verdicts;
    this.#verdicts = new Map();
    if (this.file === undefined) return this.#verdicts;
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.file, 'utf8'));
    } catch {
      return this.#verdicts;
    }
    const entries = (raw as { verdicts?: unknown } | null)?.verdicts;
    if (typeof entries !== 'object' || entries === null) return this.#verdicts;
    for (const [key, value] of Object.entries(entries as Record<string, unknown>)) {
      const v = value as Partial<EraVerdict> | null;
      if ((v?.era === 'legacy' || v?.era === 'modern') && typeof v.protocolVersion === 'string' && typeof v.decidedAt === 'string') {
        this.#verdicts.set(key, { era: v.era, protocolVersion: v.protocolVersion, decidedAt: v.decidedAt });
      }
    }
    return this.#verdicts;
  }

  #save(): void {
    if (this.file === undefined || this.#verdicts === undefined) return;
    const dir = join(this.file, '..');
    const temp = `${this.file}.${process.pid}.tmp`;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(temp, JSON.stringify({ version: 1, verdicts: Object.fromEntries(this.#verdicts) }), { mode: 0o600 });
      renameSync(temp, this.file);
    } catch {
      // Persistence is a convenience: the verdicts in memory still apply.
    }
  }
}
