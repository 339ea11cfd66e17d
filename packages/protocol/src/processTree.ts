/**
 * The one place mcpool reads the process table and asks whether a process lives: finding and
 * ending a server's process tree, the forced exit of the daemon, zombie counts, the liveness of
 * a ledger's owner. Node-only and POSIX-only; kept off the package root so a browser never loads
 * it (`@mcpool/protocol/processTree`).
 *
 * One snapshot of the process table ({@link readProcessTable}: `/proc` on Linux, else one
 * `ps -A -o pid=,ppid=,pgid=,stat=,comm=`, each read by one parser) is walked in memory
 * ({@link descendantsIn}; fallback: `pgrep -P` breadth first; on failure: the caller is told,
 * and only the root/group is signalled). Each pid is recorded with
 * its start time, and checked again before it is signalled, so a recycled pid is never hit. Start
 * times come from `/proc`: where there is none (macOS), a pid is pinned by liveness alone. The walk
 * must happen before the root is closed: once a wrapper exits, its children are re-parented to
 * init and can only be found by their process group.
 */
import { execFile, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
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
  /** How the tree was found: one snapshot of `/proc` or of `ps`, a `pgrep` walk, or nothing (only root/group known). */
  method: 'proc' | 'ps' | 'pgrep' | 'none';
  warning?: string;
}

/** Limits of the walk (a runaway tree must not make the sweep unbounded). */
const MAX_PROCESSES = 512;
const MAX_DEPTH = 16;
const QUERY_TIMEOUT_MS = 2000;

const PS_ARGS = ['-A', '-o', 'pid=,ppid=,pgid=,stat=,comm='];

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: QUERY_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024, encoding: 'utf8' }, (error, stdout) => {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an ExecFileException is an Error; @types/node builds its type with Omit
      if (error && !(typeof error.code === 'number' && error.code === 1 && command === 'pgrep')) reject(error);
      else resolve(stdout);
    });
  });
}

/**
 * The fields of a `/proc/<pid>/stat` line after the command name, from the state (field 3) on.
 * The name (field 2) may contain spaces and parentheses: it ends at the last `)`.
 */
function fieldsAfterName(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** {@link fieldsAfterName} of `pid`'s stat file; undefined where /proc is absent or the pid is gone. */
function statFieldsOf(pid: number): string[] | undefined {
  try {
    return fieldsAfterName(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The start time of `pid` (field 22 of /proc/<pid>/stat), or undefined where /proc is absent. */
export function startTimeOf(pid: number): string | undefined {
  return statFieldsOf(pid)?.[19];
}

/** The process group of `pid` (field 5 of /proc/<pid>/stat), or undefined where /proc is absent or the pid is gone. */
export function pgidOf(pid: number): number | undefined {
  const fields = statFieldsOf(pid);
  const pgid = fields === undefined ? Number.NaN : Number(fields[2]);
  return Number.isInteger(pgid) ? pgid : undefined;
}

/** The command line of `pid` (NUL-separated args joined by spaces), where /proc has it. */
export function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return undefined;
  }
}

/** Signal 0 to `target` (a pid, or minus a group id): true when it exists, zombies included. */
function probe(target: number): boolean {
  try {
    process.kill(target, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True until `pid` is reaped: a zombie still exists (its pid cannot be reused yet). */
export function processExists(pid: number): boolean {
  return Number.isInteger(pid) && pid > 0 && probe(pid);
}

/** True while any process (zombies included) is in group `pgid`. */
export function groupExists(pgid: number): boolean {
  return Number.isInteger(pgid) && pgid > 1 && probe(-pgid);
}

/** True while `pid` runs (a zombie counts as gone). */
export function isRunning(pid: number): boolean {
  if (!processExists(pid)) return false;
  // No /proc (macOS): it exists, so it runs.
  return statFieldsOf(pid)?.[0] !== 'Z';
}

/** One row of the process table. */
export interface PsRow {
  pid: number;
  ppid: number;
  pgid: number;
  /** `ps`'s state letters (`S`, `R`, `Z`, ...); '' where this `ps` did not give them. */
  stat: string;
  /** The executable's name; '' where this `ps` did not give it. */
  comm: string;
}

/** Parses the output of `ps -A -o pid=,ppid=,pgid=,stat=,comm=` (the name may hold spaces). */
export function parsePs(text: string): PsRow[] {
  const rows: PsRow[] = [];
  for (const line of text.split('\n')) {
    const match = /^\s*(\d+)\s+(\d+)\s+(\d+)(?:\s+(\S+))?(?:\s+(.*))?$/.exec(line);
    if (match === null) continue;
    rows.push({ pid: Number(match[1]), ppid: Number(match[2]), pgid: Number(match[3]), stat: match[4] ?? '', comm: (match[5] ?? '').trim() });
  }
  return rows;
}

/**
 * Parses `/proc/<pid>/stat` into a row: `pid (comm) state ppid pgrp …`, the name counted from
 * the first `(` to the last `)` (it may hold spaces and parentheses). Undefined when malformed.
 */
export function parseProcStat(text: string): PsRow | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open <= 0 || close < open) return undefined;
  const fields = fieldsAfterName(text);
  const pid = Number(text.slice(0, open).trim());
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  if (!Number.isInteger(pid) || !Number.isInteger(ppid) || !Number.isInteger(pgid)) return undefined;
  return { pid, ppid, pgid, stat: fields[0] ?? '', comm: text.slice(open + 1, close) };
}

/** Where the table is read from: `/proc` when there is one, else `ps` ({@link setProcessTableSource}). */
let tableSource: 'auto' | 'ps' = 'auto';

/**
 * For tests: `'ps'` reads the table as on a system without `/proc`, so the `ps`, `pgrep` and
 * degraded paths can be exercised on Linux; `'auto'` (the default) uses `/proc` where there is one.
 */
export function setProcessTableSource(source: 'auto' | 'ps'): void {
  tableSource = source;
}

const useProcFs = (): boolean => tableSource === 'auto' && process.platform === 'linux';

/** How many processes are read from `/proc` between two turns of the event loop (65 took ~0.5 ms here). */
const PROC_CHUNK = 256;

/** The names of `/proc`'s process entries, or undefined where there is no `/proc` (macOS). */
function procPids(): string[] | undefined {
  if (!useProcFs()) return undefined;
  try {
    return readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
}

/** One process's row from `/proc/<pid>/stat`; undefined once it exited. */
function procRow(pid: string): PsRow | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * The process table from `/proc`, where there is one. Reading it runs no program: `ps` is a child
 * process, and starting one forks this process, which holds up every thread of it (the fork
 * copies the memory map under its lock) at the moment a lost server's calls are being failed.
 * What `ps` itself reads, file by file (a process that exits meanwhile is left out); read
 * synchronously, which costs a tenth of as many asynchronous reads, and a turn of the event loop
 * is let go every {@link PROC_CHUNK} processes so a crowded machine never holds it long.
 */
async function readProcFs(): Promise<PsRow[] | undefined> {
  const pids = procPids();
  if (pids === undefined) return undefined;
  const found: PsRow[] = [];
  for (let i = 0; i < pids.length; i++) {
    if (i > 0 && i % PROC_CHUNK === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const row = procRow(pids[i]!);
    if (row !== undefined) found.push(row);
  }
  return found.length > 0 ? found : undefined;
}

/** {@link readProcFs}, synchronously. */
function readProcFsSync(): PsRow[] | undefined {
  const pids = procPids();
  if (pids === undefined) return undefined;
  const found = pids.map(procRow).filter((row): row is PsRow => row !== undefined);
  return found.length > 0 ? found : undefined;
}

/**
 * One snapshot of the process table: `/proc` where there is one, else `ps`. Rejects when `ps`
 * fails, or gives nothing (a BusyBox `ps` without `-o`).
 */
export async function readProcessTable(): Promise<PsRow[]> {
  return (await readTable()).rows;
}

async function readTable(): Promise<{ rows: PsRow[]; source: 'proc' | 'ps' }> {
  const fromProc = await readProcFs();
  if (fromProc !== undefined) return { rows: fromProc, source: 'proc' };
  const rows = parsePs(await run('ps', PS_ARGS));
  if (rows.length === 0) throw new Error('ps listed no process');
  return { rows, source: 'ps' };
}

/** {@link readProcessTable}, synchronously (for an exit path that has no time for the event loop); undefined when neither works. */
export function readProcessTableSync(): PsRow[] | undefined {
  const fromProc = readProcFsSync();
  if (fromProc !== undefined) return fromProc;
  try {
    const rows = parsePs(execFileSync('ps', PS_ARGS, { encoding: 'utf8', timeout: QUERY_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] }));
    return rows.length === 0 ? undefined : rows;
  } catch {
    return undefined;
  }
}

/**
 * Everything under `root` (its descendants by parent pid) plus every member of its process group
 * `pgid` (which finds grandchildren already re-parented to init). `root` itself is included.
 */
export async function snapshotTree(root: number, pgid?: number): Promise<TreeSnapshot> {
  if (!Number.isInteger(root) || root <= 1) throw new RangeError(`root must be a pid > 1, got ${root}`);
  let table: Awaited<ReturnType<typeof readTable>> | undefined;
  let warning: string | undefined;
  try {
    table = await readTable();
  } catch (error) {
    warning = `ps failed: ${(error as Error).message}`;
  }
  if (table !== undefined) return { root, pgid, processes: track(descendantsIn(table.rows, root, { pgid })), method: table.source };
  try {
    return { root, pgid, processes: track(await walkWithPgrep(root)), method: 'pgrep', ...(warning ? { warning } : {}) };
  } catch (error) {
    const message = `${warning ? `${warning}; ` : ''}pgrep failed: ${(error as Error).message}`;
    return { root, pgid, processes: track([{ pid: root, ppid: 0, pgid: pgid ?? root }]), method: 'none', warning: message };
  }
}

/**
 * The rows under `root` in a snapshot (its descendants by parent pid, `root` itself included when
 * listed) plus every member of the process group `pgid` (which finds grandchildren already
 * re-parented to init). This process is never part of it. Bounded in depth and count.
 */
export function descendantsIn(rows: readonly PsRow[], root: number, options: { pgid?: number | undefined; maxDepth?: number; maxProcesses?: number } = {}): PsRow[] {
  const { pgid, maxDepth = MAX_DEPTH, maxProcesses = MAX_PROCESSES } = options;
  const children = new Map<number, PsRow[]>();
  for (const row of rows) {
    let list = children.get(row.ppid);
    if (list === undefined) children.set(row.ppid, (list = []));
    list.push(row);
  }
  const found = new Map<number, PsRow>();
  const rootRow = rows.find((row) => row.pid === root);
  if (rootRow && root !== process.pid) found.set(root, rootRow);
  let frontier = [root];
  for (let depth = 0; depth < maxDepth && frontier.length > 0 && found.size < maxProcesses; depth++) {
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
    for (const row of rows) if (row.pgid === pgid && row.pid !== process.pid && !found.has(row.pid) && found.size < maxProcesses) found.set(row.pid, row);
  }
  return [...found.values()];
}

type TreeRow = Pick<PsRow, 'pid' | 'ppid' | 'pgid'>;

async function walkWithPgrep(root: number): Promise<TreeRow[]> {
  const found: TreeRow[] = [{ pid: root, ppid: 0, pgid: root }];
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

function track(rows: readonly TreeRow[]): TrackedProcess[] {
  return rows.map(({ pid, ppid, pgid }) => ({ pid, ppid, pgid, startTime: startTimeOf(pid) }));
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
    // Our own ps/pgrep queries are zombies for an instant before Node reaps them: not a leak.
    return (await readProcessTable()).filter((row) => row.ppid === process.pid && row.stat.startsWith('Z') && row.comm !== 'ps' && row.comm !== 'pgrep').length;
  } catch {
    return 0;
  }
}
