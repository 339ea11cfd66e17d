/**
 * The backups `mcpool import` keeps so `--undo` can put every file back byte for byte.
 *
 * One folder per import under `<state dir>/import-backups/<stamp>/`: a copy of each file as it
 * was (or a note that it did not exist) and a manifest with the hash of what the import wrote.
 * Undo restores a file only while it still holds exactly what the import wrote, so it never
 * throws away an edit made since; such a file is reported and left as it is.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FileChange } from './plan.js';

interface ManifestEntry {
  file: string;
  /** The copy of the original in the backup folder; absent when the file did not exist. */
  copy?: string;
  /** The original's permission bits. */
  mode?: number;
  /** sha256 of what the import wrote. */
  written: string;
}

interface Manifest {
  createdAt: string;
  entries: ManifestEntry[];
}

export interface UndoResult {
  /** The backup folder that was undone, or `undefined` when there is none. */
  backup: string | undefined;
  restored: string[];
  removed: string[];
  /** Files changed since the import: left alone. */
  changedSince: string[];
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

export function backupRoot(stateDir: string): string {
  return join(stateDir, 'import-backups');
}

/** Writes the changes, after copying every original into a new backup folder; returns that folder. */
export async function applyChanges(stateDir: string, changes: readonly FileChange[], now: Date = new Date()): Promise<string> {
  const root = backupRoot(stateDir);
  await mkdir(root, { recursive: true, mode: 0o700 });
  let folder = join(root, now.toISOString().replace(/[:.]/g, '-'));
  for (let n = 2; await exists(folder); n++) folder = join(root, `${now.toISOString().replace(/[:.]/g, '-')}-${n}`);
  await mkdir(folder, { mode: 0o700 });
  const manifest: Manifest = { createdAt: now.toISOString(), entries: [] };
  for (const [index, change] of changes.entries()) {
    const entry: ManifestEntry = { file: change.file, written: sha256(change.after) };
    if (change.before !== undefined) {
      const original = await readFile(change.file);
      entry.copy = `${index}.orig`;
      entry.mode = (await stat(change.file)).mode & 0o7777;
      // The copy may hold secrets the client file held: only its owner reads it.
      await writeFile(join(folder, entry.copy), original, { mode: 0o600 });
    }
    manifest.entries.push(entry);
  }
  // The manifest lands before any file changes, so a crash mid-way can still be undone.
  await writeFile(join(folder, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  for (const change of changes) {
    await mkdir(dirname(change.file), { recursive: true });
    // Write beside, then rename: a client reading its file never sees half of it.
    const temp = `${change.file}.mcpool-${process.pid}.tmp`;
    const mode = change.before === undefined ? (change.mode ?? 0o644) : (await stat(change.file)).mode & 0o7777;
    await writeFile(temp, change.after, { mode });
    await chmod(temp, mode);
    await rename(temp, change.file);
  }
  return folder;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Undoes the newest import that is not undone yet. */
export async function undoLastImport(stateDir: string): Promise<UndoResult> {
  const root = backupRoot(stateDir);
  const folders = (await readdir(root).catch(() => [] as string[])).filter((name) => !name.startsWith('undone-')).sort();
  const result: UndoResult = { backup: undefined, restored: [], removed: [], changedSince: [] };
  const last = folders.at(-1);
  if (last === undefined) return result;
  const folder = join(root, last);
  result.backup = folder;
  const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
  for (const entry of manifest.entries) {
    const current = await readFile(entry.file).catch(() => undefined);
    if (current === undefined ? entry.copy !== undefined : sha256(current) !== entry.written) {
      result.changedSince.push(entry.file);
      continue;
    }
    if (entry.copy === undefined) {
      await rm(entry.file, { force: true });
      result.removed.push(entry.file);
      continue;
    }
    const temp = `${entry.file}.mcpool-${process.pid}.tmp`;
    await writeFile(temp, await readFile(join(folder, entry.copy)), { mode: entry.mode ?? 0o644 });
    await chmod(temp, entry.mode ?? 0o644);
    await rename(temp, entry.file);
    result.restored.push(entry.file);
  }
  await rename(folder, join(root, `undone-${last}`));
  return result;
}
