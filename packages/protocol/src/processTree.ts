/**
 * Finding and ending a server's process tree (seed §6.4, DESIGN §4 "Processes"). Node-only; kept
 * off the package root so a browser never loads it (`@mcpool/protocol/processTree`).
 *
 * One `ps -A -o pid=,ppid=,pgid=` snapshot is walked in memory (fallback: `pgrep -P` breadth
 * first; on failure: the caller is told, and only the root/group is signalled). Each pid is
 * recorded with its start time, and checked again before it is signalled, so a recycled pid is
 * never hit. The walk must happen before the root is closed: once a wrapper exits, its children
 * are re-parented to init and can only be found by their process group.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

/** One process of a tree, pinned by its start time (clock ticks since boot, /proc/<pid>/stat). */
export interface TrackedProcess {
  pid: number;
  ppid: number;
  pgid: number;
  startTime: string | undefined;
}

export interface TreeSnapshot {
  root: number;
  pgid: number | undefined;
  processes: TrackedProcess[];
  /** How the tree was found: one `ps` snapshot, a `pgrep` walk, or nothing (only root/group known). */
  method: 'ps' | 'pgrep' | 'none';
  warning?: string;
}

/** Limits of the walk (a runaway tree must not make the sweep unbounded). */
const MAX_PROCESSES = 512;
const MAX_DEPTH = 16;
const QUERY_TIMEOUT_MS = 2000;

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: QUERY_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024, encoding: 'utf8' }, (error, stdout) => {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an ExecFileException is an Error; @types/node builds its type with Omit
      if (error && !(typeof error.code === 'number' && error.code === 1 && command === 'pgrep')) reject(error);
      else resolve(stdout);
    });
  });
}

/** The start time of `pid` (field 22 of /proc/<pid>/stat), or undefined where /proc is absent. */
export function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

/** The command line of `pid` (NUL-separated args joined by spaces), where /proc has it. */
export function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return undefined;
  }
}

/** True while `pid` runs (a zombie counts as gone). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

interface PsRow {
  pid: number;
  ppid: number;
  pgid: number;
}

function parsePs(text: string): PsRow[] {
  const rows: PsRow[] = [];
  for (const line of text.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts.length < 3) continue;
    const [pid, ppid, pgid] = parts.map(Number) as [number, number, number];
    if (Number.isInteger(pid) && Number.isInteger(ppid) && Number.isInteger(pgid)) rows.push({ pid, ppid, pgid });
  }
  return rows;
}

/**
 * Everything under `root` (its descendants by parent pid) plus every member of its process group
 * `pgid` (which finds grandchildren already re-parented to init). `root` itself is included.
 */
export async function snapshotTree(root: number, pgid?: number): Promise<TreeSnapshot> {
  if (!Number.isInteger(root) || root <= 1) throw new RangeError(`root must be a pid > 1, got ${root}`);
  let rows: PsRow[] | undefined;
  let warning: string | undefined;
  try {
    rows = parsePs(await run('ps', ['-A', '-o', 'pid=,ppid=,pgid=']));
    if (rows.length === 0) rows = undefined; // e.g. a BusyBox ps without -o
  } catch (error) {
    warning = `ps failed: ${(error as Error).message}`;
  }
  if (rows !== undefined) return { root, pgid, processes: track(walk(rows, root, pgid)), method: 'ps' };
  try {
    return { root, pgid, processes: track(await walkWithPgrep(root)), method: 'pgrep', ...(warning ? { warning } : {}) };
  } catch (error) {
    const message = `${warning ? `${warning}; ` : ''}pgrep failed: ${(error as Error).message}`;
    return { root, pgid, processes: track([{ pid: root, ppid: 0, pgid: pgid ?? root }]), method: 'none', warning: message };
  }
}

function walk(rows: PsRow[], root: number, pgid: number | undefined): PsRow[] {
  const children = new Map<number, PsRow[]>();
  for (const row of rows) {
    let list = children.get(row.ppid);
    if (list === undefined) children.set(row.ppid, (list = []));
    list.push(row);
  }
  const found = new Map<number, PsRow>();
  const rootRow = rows.find((row) => row.pid === root);
  if (rootRow) found.set(root, rootRow);
  let frontier = [root];
  for (let depth = 0; depth < MAX_DEPTH && frontier.length > 0 && found.size < MAX_PROCESSES; depth++) {
    const next: number[] = [];
    for (const pid of frontier) {
      for (const child of children.get(pid) ?? []) {
        if (found.has(child.pid) || child.pid === process.pid) continue;
        found.set(child.pid, child);
        next.push(child.pid);
      }
    }
    frontier = next;
  }
  if (pgid !== undefined && pgid > 1 && pgid !== process.pid) {
    for (const row of rows) if (row.pgid === pgid && !found.has(row.pid) && found.size < MAX_PROCESSES) found.set(row.pid, row);
  }
  return [...found.values()];
}

async function walkWithPgrep(root: number): Promise<PsRow[]> {
  const found: PsRow[] = [{ pid: root, ppid: 0, pgid: root }];
  const visited = new Set([root]);
  let frontier = [root];
  for (let depth = 0; depth < MAX_DEPTH && frontier.length > 0 && found.length < MAX_PROCESSES; depth++) {
    const next: number[] = [];
    for (const pid of frontier) {
      const out = await run('pgrep', ['-P', String(pid)]);
      for (const line of out.split('\n')) {
        const child = Number(line.trim());
        if (!Number.isInteger(child) || child <= 1 || visited.has(child)) continue;
        visited.add(child);
        found.push({ pid: child, ppid: pid, pgid: 0 });
        next.push(child);
      }
    }
    frontier = next;
  }
  return found;
}

function track(rows: PsRow[]): TrackedProcess[] {
  return rows.map((row) => ({ ...row, startTime: startTimeOf(row.pid) }));
}

/** Still the same process as when it was tracked (not exited, pid not recycled)? */
export function isSameProcess(tracked: TrackedProcess): boolean {
  if (!isRunning(tracked.pid)) return false;
  if (tracked.startTime === undefined) return true;
  return startTimeOf(tracked.pid) === tracked.startTime;
}

/** Signals every tracked process that is still the same process. Returns how many were signalled. */
export function signalTracked(processes: readonly TrackedProcess[], signal: NodeJS.Signals): number {
  let count = 0;
  for (const tracked of processes) {
    if (tracked.pid === process.pid || !isSameProcess(tracked)) continue;
    try {
      process.kill(tracked.pid, signal);
      count += 1;
    } catch {
      // exited between the check and the signal
    }
  }
  return count;
}

export interface SweepResult {
  /** Processes found in the tree (root included). */
  found: number;
  /** Processes that got SIGTERM. */
  terminated: number;
  /** Processes still alive after the grace that got SIGKILL. */
  killed: number;
  /** Still alive after SIGKILL and the final wait (should be 0). */
  survivors: number;
  method: TreeSnapshot['method'];
  warning?: string;
}

/**
 * Ends what `snapshot` tracked: SIGTERM, wait up to `graceMs`, SIGKILL the survivors, wait a
 * little. Pass `skipRoot` to leave the root to its transport's own close sequence.
 */
export async function sweepTracked(snapshot: TreeSnapshot, options: { graceMs?: number; skipRoot?: boolean } = {}): Promise<SweepResult> {
  const { graceMs = 1000, skipRoot = false } = options;
  const targets = snapshot.processes.filter((p) => !(skipRoot && p.pid === snapshot.root));
  const terminated = signalTracked(targets, 'SIGTERM');
  const alive = (): TrackedProcess[] => targets.filter(isSameProcess);
  const deadline = Date.now() + graceMs;
  for (let i = 0; i < 1000 && alive().length > 0 && Date.now() < deadline; i++) await delay(20);
  const killed = signalTracked(alive(), 'SIGKILL');
  for (let i = 0; i < 50 && alive().length > 0; i++) await delay(10);
  return {
    found: snapshot.processes.length,
    terminated,
    killed,
    survivors: alive().length,
    method: snapshot.method,
    ...(snapshot.warning ? { warning: snapshot.warning } : {}),
  };
}

/** Zombie children of this process (a killed child whose thread died: Node cannot reap it). */
export async function countZombieChildren(): Promise<number> {
  try {
    const out = await run('ps', ['-A', '-o', 'ppid=,stat=,comm=']);
    let count = 0;
    for (const line of out.split('\n')) {
      const [ppid, stat, comm] = line.trim().split(/\s+/);
      // Our own ps/pgrep queries are zombies for an instant before Node reaps them: not a leak.
      if (Number(ppid) === process.pid && stat?.startsWith('Z') && comm !== 'ps' && comm !== 'pgrep') count += 1;
    }
    return count;
  } catch {
    return 0;
  }
}
