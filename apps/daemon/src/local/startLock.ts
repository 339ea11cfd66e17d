/**
 * One start of the daemon at a time per state directory, across processes: ten editor windows
 * activating at once must start one `mcpool serve`, not ten that race for the port.
 *
 * The lock is a file created with O_EXCL (`wx`) holding `{pid, nonce, at}`. It is stale when its
 * holder's process is gone (a window killed while starting) or it is older than `staleMs` (a
 * start that hung); a stale lock is moved aside with an atomic rename and deleted only when what
 * was moved is the very record judged stale — if a fresh lock was taken in between, it is linked
 * back (link never overwrites). Release deletes the file only while it still holds our nonce.
 */
import { randomUUID } from 'node:crypto';
import { link, open, readFile, rename, stat, unlink } from 'node:fs/promises';

export interface StartLockOptions {
  /** The lock file, in the state directory. */
  file: string;
  /** A lock older than this is stale, whoever holds it. @default 60000 */
  staleMs?: number;
  /** @default Date.now */
  now?: () => number;
  /** Whether a process is alive on this machine. @default `process.kill(pid, 0)` */
  isAlive?: (pid: number) => boolean;
}

/** A held lock: `release` it when the start is over, whatever its outcome. */
export interface HeldStartLock {
  release(): Promise<void>;
}

interface LockRecord {
  pid: number;
  nonce: string;
  at: number;
}

/** What the lock file holds: a record, `torn` (being written, or not ours to parse) with its age source, or `gone`. */
type Seen = { kind: 'record'; record: LockRecord } | { kind: 'torn'; mtimeMs: number } | { kind: 'gone' };

/** Whether a process runs on this machine (one of another user's counts: it exists). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, it is someone else's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isRecord(value: unknown): value is LockRecord {
  if (typeof value !== 'object' || value === null) return false;
  const { pid, nonce, at } = value as Record<string, unknown>;
  return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 && typeof nonce === 'string' && typeof at === 'number';
}

async function look(file: string): Promise<Seen> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'gone' };
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed)) return { kind: 'record', record: parsed };
  } catch {
    // torn: created, not written yet
  }
  try {
    return { kind: 'torn', mtimeMs: (await stat(file)).mtimeMs };
  } catch {
    return { kind: 'gone' };
  }
}

/**
 * Takes the lock, or answers undefined when a live holder has it. Bounded: a few attempts, each
 * after a stale lock was cleared or the holder released it between two reads.
 */
export async function tryStartLock(options: StartLockOptions): Promise<HeldStartLock | undefined> {
  const { file } = options;
  const now = options.now ?? Date.now;
  const staleMs = options.staleMs ?? 60_000;
  const isAlive = options.isAlive ?? isProcessAlive;
  const nonce = randomUUID();
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      try {
        await handle.writeFile(JSON.stringify({ pid: process.pid, nonce, at: now() } satisfies LockRecord));
      } finally {
        await handle.close();
      }
      return {
        release: async () => {
          const seen = await look(file);
          if (seen.kind === 'record' && seen.record.nonce === nonce) await unlink(file).catch(() => undefined);
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const seen = await look(file);
    if (seen.kind === 'gone') continue;
    const stale = seen.kind === 'record' ? !isAlive(seen.record.pid) || now() - seen.record.at > staleMs : now() - seen.mtimeMs > staleMs;
    if (!stale) return undefined;
    await breakStale(file, seen);
  }
  return undefined;
}

async function breakStale(file: string, judged: Seen): Promise<void> {
  const aside = `${file}.${randomUUID()}.stale`;
  try {
    await rename(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = await look(aside);
  const same = judged.kind === 'record' ? moved.kind === 'record' && moved.record.nonce === judged.record.nonce : moved.kind === 'torn';
  if (!same) {
    // A fresh lock was taken between our read and the rename: give it back, unless yet another exists.
    await link(aside, file).catch(() => undefined);
  }
  await unlink(aside).catch(() => undefined);
}
