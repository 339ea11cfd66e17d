/**
 * The process groups a pool owns, recorded on disk so that the next start can end what a crashed
 * run left behind (detached children outlive their parent: that is what the group is for).
 *
 * One file per pool instance (`pool-<pid>-<random>.json`), so pools that run side by side never
 * touch each other's records. Nothing touches the disk until the first group is recorded (the
 * directory is made then) or a reap is asked for. A reap ends the files whose owner is gone: each
 * recorded group is killed only when its leader's pid, start time and command line all still
 * match the record — a recycled pid is never signalled. The match needs `/proc` (Linux); where it
 * is absent no leader matches, so nothing is reaped.
 */
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { commandOf, processExists, startTimeOf } from '@mcpool/protocol/processTree';

interface GroupRecord {
  pgid: number;
  startTime: string | undefined;
  command: string | undefined;
}

interface LedgerFile {
  ownerPid: number;
  ownerStartTime: string | undefined;
  groups: GroupRecord[];
}

export interface ReapResult {
  /** Ledger files of dead owners that were read. */
  files: number;
  /** Groups killed because their leader still matched its record. */
  killed: number;
  /** Records skipped: the leader is gone, or its pid now belongs to another process. */
  skipped: number;
}

/** `$XDG_STATE_HOME/mcpool/groups`, else `~/.local/state/mcpool/groups`. */
export function defaultStateDir(): string {
  const base = process.env.XDG_STATE_HOME ?? join(homedir(), '.local', 'state');
  return join(base, 'mcpool', 'groups');
}

export class GroupLedger {
  readonly dir: string;
  readonly file: string;
  readonly #groups = new Map<number, GroupRecord>();
  #disabled = false;
  #dirMade = false;

  constructor(dir: string) {
    this.dir = dir;
    this.file = join(dir, `pool-${process.pid}-${randomBytes(4).toString('hex')}.json`);
  }

  /** Ends the groups that crashed previous runs left, then forgets their files. Never throws. */
  reapLeftovers(): ReapResult {
    const result: ReapResult = { files: 0, killed: 0, skipped: 0 };
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      // No directory: no run has left anything. Unreadable: the first write will tell.
      return result;
    }
    for (const name of names) {
      if (!/^pool-\d+-[0-9a-f]+\.json$/.test(name)) continue;
      const path = join(this.dir, name);
      let ledger: LedgerFile;
      try {
        ledger = JSON.parse(readFileSync(path, 'utf8')) as LedgerFile;
      } catch {
        continue;
      }
      if (ownerAlive(ledger)) continue;
      result.files += 1;
      for (const group of ledger.groups ?? []) {
        if (leaderMatches(group)) {
          try {
            process.kill(-group.pgid, 'SIGKILL');
            result.killed += 1;
          } catch {
            result.skipped += 1;
          }
        } else {
          result.skipped += 1;
        }
      }
      rmSync(path, { force: true });
    }
    return result;
  }

  /** Records a group this pool now owns. */
  add(pgid: number): void {
    this.#groups.set(pgid, { pgid, startTime: startTimeOf(pgid), command: commandOf(pgid) });
    this.#flush();
  }

  /** Forgets a group that was ended. */
  remove(pgid: number): void {
    if (this.#groups.delete(pgid)) this.#flush();
  }

  /** Removes this pool's file (clean shutdown). */
  dispose(): void {
    this.#groups.clear();
    if (this.#disabled || !this.#dirMade) return;
    try {
      rmSync(this.file, { force: true });
    } catch {
      // an unusable state dir was already reported by being disabled; never fail a drain on it
    }
  }

  #flush(): void {
    if (this.#disabled) return;
    const ledger: LedgerFile = { ownerPid: process.pid, ownerStartTime: startTimeOf(process.pid), groups: [...this.#groups.values()] };
    try {
      if (!this.#dirMade) mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      this.#dirMade = true;
      // Write then rename: a crash mid-write never leaves a truncated ledger.
      const temp = `${this.file}.tmp`;
      writeFileSync(temp, JSON.stringify(ledger), { mode: 0o600 });
      renameSync(temp, this.file);
    } catch {
      // A read-only state dir must not break the pool: leftovers then rely on the OS.
      this.#disabled = true;
    }
  }
}

function ownerAlive(ledger: LedgerFile): boolean {
  if (ledger.ownerPid === process.pid) return true;
  if (!processExists(ledger.ownerPid)) return false;
  return ledger.ownerStartTime === undefined || startTimeOf(ledger.ownerPid) === ledger.ownerStartTime;
}

function leaderMatches(group: GroupRecord): boolean {
  if (!Number.isInteger(group.pgid) || group.pgid <= 1) return false;
  const startTime = startTimeOf(group.pgid);
  if (startTime === undefined || startTime !== group.startTime) return false;
  return group.command !== undefined && commandOf(group.pgid) === group.command;
}
