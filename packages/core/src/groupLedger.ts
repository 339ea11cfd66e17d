/**
 * The process groups a pool owns, recorded on disk so that the next start can end what a crashed
 * run left behind (detached children outlive their parent: that is what the group is for).
 *
 * One file per pool instance (`pool-<pid>-<random>.json`), so pools that run side by side never
 * touch each other's records. Nothing touches the disk until the first group is recorded (the
 * directory is made then) or a reap is asked for. A reap ends the files whose owner is gone: each
 * recorded group is killed when its leader's pid, start time and command line all still match the
 * record — a recycled pid is never signalled. The match needs `/proc` (Linux); where it is absent
 * nothing matches, so nothing is reaped.
 *
 * A group outlives its leader: a server that exits on stdin EOF leaves its helpers behind,
 * re-parented to init but still in its group. So each record also lists the group's members (and
 * the leader's other descendants), each pinned by pid and start time, refreshed from one process
 * table snapshot at each spawn and periodically ({@link GroupLedger.refresh}). With the leader
 * gone, a reap SIGKILLs each recorded member that is still the same process (same start time),
 * and the whole group when one of them is still in it (a group id is not reused while any member
 * lives): never a process that merely got a recorded pid again.
 */
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { commandOf, descendantsIn, pgidOf, processExists, readProcessTable, startTimeOf } from '@mcpool/protocol/processTree';

/** A process of a group (or a descendant of its leader), pinned by its start time. */
interface MemberRecord {
  pid: number;
  startTime: string | undefined;
}

interface GroupRecord {
  pgid: number;
  startTime: string | undefined;
  command: string | undefined;
  /** Members other than the leader, as last seen; absent in files of older versions. */
  members?: MemberRecord[];
}

/** Members kept per group (a runaway tree must not make the file unbounded). */
const MAX_MEMBERS = 256;

interface LedgerFile {
  ownerPid: number;
  ownerStartTime: string | undefined;
  groups: GroupRecord[];
}

export interface ReapResult {
  /** Ledger files of dead owners that were read. */
  files: number;
  /** Groups killed: the leader still matched its record, or (leader gone) a recorded member did. */
  killed: number;
  /** Recorded members killed one by one because they were still the same process. */
  membersKilled: number;
  /** Records skipped: nothing of the group is left, or its pids now belong to other processes. */
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
  #refreshing: Promise<void> | undefined;

  constructor(dir: string) {
    this.dir = dir;
    this.file = join(dir, `pool-${process.pid}-${randomBytes(4).toString('hex')}.json`);
  }

  /** Ends the groups that crashed previous runs left, then forgets their files. Never throws. */
  reapLeftovers(): ReapResult {
    const result: ReapResult = { files: 0, killed: 0, membersKilled: 0, skipped: 0 };
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
        // Checked before any signal: a member killed first could let its pid be taken.
        const members = (Array.isArray(group.members) ? group.members : []).filter(memberMatches);
        const leader = leaderMatches(group);
        // With the leader gone, the group is still ours while a pinned member is in it.
        const groupOurs = leader || (Number.isInteger(group.pgid) && group.pgid > 1 && members.some((member) => pgidOf(member.pid) === group.pgid));
        let killed = false;
        if (groupOurs) {
          try {
            process.kill(-group.pgid, 'SIGKILL');
            killed = true;
          } catch {
            // the group is gone already
          }
        }
        // Members that left the group (setsid) or outlived it, each still the recorded process.
        for (const member of members) {
          if (!memberMatches(member)) continue;
          try {
            process.kill(member.pid, 'SIGKILL');
            result.membersKilled += 1;
            killed = true;
          } catch {
            // exited meanwhile
          }
        }
        if (killed) result.killed += 1;
        else result.skipped += 1;
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

  /**
   * Records the current members of every group (and the other descendants of its leader) from one
   * process-table snapshot; members seen before and still the same process are kept, so a helper
   * re-parented to init stays recorded. Writes the file only when something changed. One refresh
   * at a time; never throws (a failed `ps` changes nothing).
   */
  refresh(): Promise<void> {
    if (this.#groups.size === 0 || this.#disabled) return Promise.resolve();
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #refresh(): Promise<void> {
    let rows: Awaited<ReturnType<typeof readProcessTable>>;
    try {
      rows = await readProcessTable();
    } catch {
      return;
    }
    let changed = false;
    for (const group of this.#groups.values()) {
      const known = new Map((group.members ?? []).map((member) => [member.pid, member]));
      const next = new Map<number, MemberRecord>();
      for (const row of descendantsIn(rows, group.pgid, { pgid: group.pgid })) {
        if (row.pid === group.pgid || next.size >= MAX_MEMBERS) continue;
        const startTime = startTimeOf(row.pid);
        if (startTime === undefined) continue; // exited since the snapshot
        const before = known.get(row.pid);
        next.set(row.pid, before !== undefined && before.startTime === startTime ? before : { pid: row.pid, startTime });
      }
      // Seen before, not in this snapshot's tree, still the same process: keep it.
      for (const member of known.values()) if (!next.has(member.pid) && next.size < MAX_MEMBERS && memberMatches(member)) next.set(member.pid, member);
      if (next.size !== known.size || [...next.keys()].some((pid) => !known.has(pid))) changed = true;
      group.members = [...next.values()];
    }
    if (changed) this.#flush();
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

/** Still the recorded process: same pid and same start time (an unknown start time never matches). */
function memberMatches(member: MemberRecord): boolean {
  if (typeof member !== 'object' || member === null || !Number.isInteger(member.pid) || member.pid <= 1 || member.pid === process.pid) return false;
  if (typeof member.startTime !== 'string') return false;
  return startTimeOf(member.pid) === member.startTime;
}

function leaderMatches(group: GroupRecord): boolean {
  if (!Number.isInteger(group.pgid) || group.pgid <= 1) return false;
  const startTime = startTimeOf(group.pgid);
  if (startTime === undefined || startTime !== group.startTime) return false;
  return group.command !== undefined && commandOf(group.pgid) === group.command;
}
