/**
 * processTree against real processes (one snapshot of the process table — `/proc` on Linux, `ps`
 * elsewhere — walked in memory, fallback BFS, graceful degradation; never signal a recycled pid).
 *
 * Every tree is a `bash -c …` started detached (its own process group), with a marker unique to
 * the test as `$0`. Each pid a test sees is recorded with its start time and killed by pid in
 * `afterEach` (only if it is still the same process), then proven gone.
 *
 * PID 1 of this machine may not reap orphans: a killed orphan can stay a zombie, which every
 * check here (`isRunning`, `isSameProcess`, `pidsWithMarker`) counts as gone.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  commandOf,
  countZombieChildren,
  descendantsIn,
  groupExists,
  isRunning,
  parsePs,
  parseProcStat,
  pgidOf,
  processExists,
  readProcessTable,
  readProcessTableSync,
  setProcessTableSource,
  isSameProcess,
  signalTracked,
  snapshotTree,
  startTimeOf,
  sweepTracked,
  type TrackedProcess,
} from '@mcpool/protocol/processTree';
import { marker, pidsWithMarker, treeOf } from '../../../test/helpers/processes.js';

const WAIT = { timeout: 20_000, interval: 20 };

interface Started {
  child: ChildProcess;
  pid: number;
  mark: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Every process a test started or saw in its trees, pinned by start time. */
const owned: TrackedProcess[] = [];
const marks: string[] = [];

function own(pid: number): void {
  if (owned.some((p) => p.pid === pid)) return;
  owned.push({ pid, ppid: 0, pgid: 0, startTime: startTimeOf(pid) });
}

/** `bash -c script` in its own process group, `$0` = a fresh marker (`--norc`: no user rc file, even with socket stdin). */
function startBash(script: string, label: string, stdio: 'ignore' | 'pipe' = 'ignore'): Started {
  const mark = marker(label);
  marks.push(mark);
  const child = spawn('bash', ['--norc', '-c', script, mark], { detached: true, stdio: [stdio, stdio, 'ignore'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  if (child.pid === undefined) throw new Error(`bash did not start for ${label}`);
  own(child.pid);
  return { child, pid: child.pid, mark, exited };
}

/** Waits until `root` has `count` live descendants/group members, and owns them. */
async function descendants(root: number, count: number): Promise<number[]> {
  let pids: number[] = [];
  await vi.waitFor(() => {
    pids = treeOf(root);
    expect(pids).toHaveLength(count);
  }, WAIT);
  for (const pid of pids) own(pid);
  return pids;
}

function pidsOf(processes: readonly TrackedProcess[]): number[] {
  return processes.map((p) => p.pid).sort((a, b) => a - b);
}

function sorted(pids: readonly number[]): number[] {
  return [...pids].sort((a, b) => a - b);
}

afterEach(async () => {
  // Kill by pid what is still the same process, then prove every one of them gone.
  const all = owned.splice(0);
  signalTracked(all, 'SIGKILL');
  await vi.waitFor(() => expect(all.filter((p) => isSameProcess(p)).map((p) => p.pid)).toEqual([]), WAIT);
  for (const mark of marks.splice(0)) expect(pidsWithMarker(mark)).toEqual([]);
});

describe('pgidOf', () => {
  it('reads the process group /proc gives, as ps reports it; undefined for a pid that is gone', async () => {
    const detached = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    try {
      const viaPs = (pid: number): number => Number(execFileSync('ps', ['-o', 'pgid=', '-p', String(pid)], { encoding: 'utf8' }).trim());
      expect(pgidOf(process.pid)).toBe(viaPs(process.pid));
      expect(pgidOf(detached.pid!)).toBe(detached.pid);
    } finally {
      detached.kill('SIGKILL');
    }
    await new Promise((resolve) => detached.once('exit', resolve));
    expect(pgidOf(detached.pid!)).toBeUndefined();
  });
});

describe('snapshotTree', () => {
  it('finds the root and both sleeps of `bash -c "sleep 60 & sleep 60"` with one snapshot of /proc', async () => {
    const root = startBash('sleep 60 & sleep 60', 'tree');
    const sleeps = await descendants(root.pid, 2);

    const snapshot = await snapshotTree(root.pid, root.pid);

    expect(snapshot.method).toBe('proc');
    expect(snapshot.warning).toBeUndefined();
    expect(snapshot.root).toBe(root.pid);
    expect(pidsOf(snapshot.processes)).toEqual(sorted([root.pid, ...sleeps]));
    for (const tracked of snapshot.processes) {
      expect(tracked.pgid).toBe(root.pid);
      expect(tracked.startTime).toMatch(/^\d+$/);
      expect(isSameProcess(tracked)).toBe(true);
    }
    for (const pid of sleeps) expect(snapshot.processes.find((p) => p.pid === pid)!.ppid).toBe(root.pid);
  });

  it('still finds the sleeps through the process group once the root was SIGKILLed and they were re-parented', async () => {
    const root = startBash('sleep 60 & sleep 60', 'orphans');
    const sleeps = await descendants(root.pid, 2);

    // 1. The root dies; its children are re-parented (to init or a subreaper).
    process.kill(root.pid, 'SIGKILL');
    expect((await root.exited).signal).toBe('SIGKILL');
    await vi.waitFor(() => {
      const ps = execFileSync('ps', ['-o', 'ppid=', '-p', sleeps.join(',')], { encoding: 'utf8' });
      expect(ps.split('\n').filter(Boolean).map(Number)).not.toContain(root.pid);
    }, WAIT);

    // 2. By parent pid alone nothing is left to find; by group, both sleeps are.
    const byParent = await snapshotTree(root.pid);
    expect(pidsOf(byParent.processes)).toEqual([]);
    const byGroup = await snapshotTree(root.pid, root.pid);
    expect(byGroup.method).toBe('proc');
    expect(pidsOf(byGroup.processes)).toEqual(sorted(sleeps));
    for (const tracked of byGroup.processes) {
      expect(tracked.ppid).not.toBe(root.pid);
      expect(tracked.pgid).toBe(root.pid);
    }
  });

  it('finds a `setsid` grandchild (another group) by the ppid walk while the root lives', async () => {
    const root = startBash('setsid sleep 60 & sleep 60', 'setsid');
    const kids = await descendants(root.pid, 2);
    const groups = new Map(
      execFileSync('ps', ['-o', 'pid=,pgid=', '-p', kids.join(',')], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]),
    );
    const escaped = kids.find((pid) => groups.get(pid) !== root.pid);
    expect(escaped).toBeDefined();
    expect(groups.get(escaped!)).toBe(escaped);

    // 1. While the root lives, the walk by parent pid reaches it although it left the group.
    const snapshot = await snapshotTree(root.pid, root.pid);
    expect(pidsOf(snapshot.processes)).toEqual(sorted([root.pid, ...kids]));
    expect(snapshot.processes.find((p) => p.pid === escaped)).toMatchObject({ ppid: root.pid, pgid: escaped });

    // 2. Why the walk must come before the root is closed: afterwards it is unreachable.
    process.kill(root.pid, 'SIGKILL');
    await root.exited;
    const late = await snapshotTree(root.pid, root.pid);
    expect(pidsOf(late.processes)).not.toContain(escaped);
  });

  it('rejects a root that is not a pid > 1', async () => {
    await expect(snapshotTree(1)).rejects.toThrow(RangeError);
    await expect(snapshotTree(0)).rejects.toThrow(RangeError);
    await expect(snapshotTree(1.5)).rejects.toThrow(RangeError);
  });
});

describe('sweepTracked', () => {
  it('ends a whole tree: SIGTERM, then SIGKILL for the processes that trap TERM; no survivor', async () => {
    // root bash → sleep, a setsid sleep, and a bash that ignores TERM (its sleep inherits that).
    const root = startBash(`sleep 60 & setsid sleep 60 & bash -c 'trap "" TERM; sleep 60; :' & wait`, 'sweep');
    const kids = await descendants(root.pid, 4);
    const snapshot = await snapshotTree(root.pid, root.pid);
    expect(pidsOf(snapshot.processes)).toEqual(sorted([root.pid, ...kids]));

    const result = await sweepTracked(snapshot, { graceMs: 500 });

    expect(result).toMatchObject({ found: 5, terminated: 5, survivors: 0, method: 'proc' });
    // The TERM-ignoring bash and its sleep needed the SIGKILL.
    expect(result.killed).toBe(2);
    expect((await root.exited).signal).toBe('SIGTERM');
    for (const tracked of snapshot.processes) expect(isRunning(tracked.pid)).toBe(false);
    expect(pidsWithMarker(root.mark)).toEqual([]);
  });

  it('`skipRoot` leaves the root to its owner and ends the rest', async () => {
    // The root blocks on its stdin, so it outlives its children.
    const root = startBash('sleep 60 & sleep 60 & read -r _ || exit 0', 'skiproot', 'pipe');
    const kids = await descendants(root.pid, 2);
    const snapshot = await snapshotTree(root.pid, root.pid);

    const result = await sweepTracked(snapshot, { graceMs: 2000, skipRoot: true });

    expect(result).toMatchObject({ found: 3, terminated: 2, killed: 0, survivors: 0 });
    for (const pid of kids) expect(isRunning(pid)).toBe(false);
    expect(isRunning(root.pid)).toBe(true);
    expect(root.child.exitCode).toBeNull();
    // The owner closes it its own way: stdin ends, `read` returns, bash exits 0.
    root.child.stdin!.end();
    expect(await root.exited).toEqual({ code: 0, signal: null });
  });
});

describe('never a recycled pid', () => {
  it('a tracked process that exited is not the same process any more and is not signalled', async () => {
    const root = startBash('read -r _ || exit 0', 'exited', 'pipe');
    const snapshot = await snapshotTree(root.pid, root.pid);
    expect(pidsOf(snapshot.processes)).toEqual([root.pid]);
    const [tracked] = snapshot.processes;
    expect(isSameProcess(tracked!)).toBe(true);

    root.child.stdin!.end();
    expect((await root.exited).code).toBe(0);

    expect(isSameProcess(tracked!)).toBe(false);
    expect(signalTracked([tracked!], 'SIGKILL')).toBe(0);
    const sweep = await sweepTracked(snapshot, { graceMs: 100 });
    expect(sweep).toMatchObject({ found: 1, terminated: 0, killed: 0, survivors: 0 });
  });

  it('a live pid whose start time differs from the record (a recycled pid) is never signalled', async () => {
    // A process that answers on stdout: a SIGKILL it had received could not answer.
    const root = startBash('while read -r line; do echo "pong $line"; done', 'recycled', 'pipe');
    const snapshot = await snapshotTree(root.pid, root.pid);
    const [tracked] = snapshot.processes;
    const recycled: TrackedProcess = { ...tracked!, startTime: String(Number(tracked!.startTime) + 1) };

    expect(isSameProcess(recycled)).toBe(false);
    expect(signalTracked([recycled], 'SIGKILL')).toBe(0);
    expect((await sweepTracked({ ...snapshot, processes: [recycled] }, { graceMs: 100 })).terminated).toBe(0);

    // Still alive and answering after both attempts.
    const answer = new Promise<string>((resolve) => root.child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString())));
    root.child.stdin!.write('ping\n');
    expect(await answer).toBe('pong ping\n');
    expect(isRunning(root.pid)).toBe(true);

    // The genuine record is signalled.
    expect(signalTracked([tracked!], 'SIGKILL')).toBe(1);
    expect((await root.exited).signal).toBe('SIGKILL');
  });

  it('never signals this process itself', async () => {
    const self: TrackedProcess = { pid: process.pid, ppid: process.ppid, pgid: 0, startTime: startTimeOf(process.pid) };
    expect(isSameProcess(self)).toBe(true);
    expect(signalTracked([self], 'SIGKILL')).toBe(0);
  });
});

describe('graceful degradation', () => {
  /**
   * Runs `fn` as on a system without `/proc` (macOS), with PATH set to a temp dir holding only
   * `tools` (symlinks to the real ones).
   */
  async function withPath<T>(tools: string[], fn: () => Promise<T>): Promise<T> {
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-path-'));
    const saved = process.env.PATH;
    setProcessTableSource('ps');
    try {
      for (const tool of tools) symlinkSync(execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), join(dir, tool));
      process.env.PATH = dir;
      return await fn();
    } finally {
      setProcessTableSource('auto');
      process.env.PATH = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('without /proc one ps snapshot finds the tree', async () => {
    const root = startBash('sleep 60 & sleep 60', 'ps');
    const kids = await descendants(root.pid, 2);

    const snapshot = await withPath(['ps'], () => snapshotTree(root.pid, root.pid));

    expect(snapshot.method).toBe('ps');
    expect(snapshot.warning).toBeUndefined();
    expect(pidsOf(snapshot.processes)).toEqual(sorted([root.pid, ...kids]));
  });

  it('without ps it falls back to a pgrep walk and still finds the tree', async () => {
    const root = startBash('sleep 60 & sleep 60', 'pgrep');
    const kids = await descendants(root.pid, 2);

    const snapshot = await withPath(['pgrep'], () => snapshotTree(root.pid, root.pid));

    expect(snapshot.method).toBe('pgrep');
    expect(snapshot.warning).toMatch(/^ps failed/);
    expect(pidsOf(snapshot.processes)).toEqual(sorted([root.pid, ...kids]));
    for (const tracked of snapshot.processes) expect(tracked.startTime).toMatch(/^\d+$/);
    // The sweep works from that snapshot as well.
    const result = await sweepTracked(snapshot, { graceMs: 2000 });
    expect(result).toMatchObject({ found: 3, terminated: 3, survivors: 0, method: 'pgrep' });
  });

  it('with neither ps nor pgrep it returns method none, a warning and only the root; it never throws', async () => {
    const root = startBash('sleep 60 & sleep 60', 'none');
    await descendants(root.pid, 2);

    const [snapshot, zombies] = await withPath([], async () => [await snapshotTree(root.pid, root.pid), await countZombieChildren()] as const);

    expect(snapshot.method).toBe('none');
    expect(snapshot.warning).toMatch(/ps failed.*pgrep failed/s);
    expect(snapshot.processes).toEqual([{ pid: root.pid, ppid: 0, pgid: root.pid, startTime: startTimeOf(root.pid) }]);
    expect(zombies).toBe(0);
    // Only the root is known; the sweep ends it and reports honestly.
    const result = await sweepTracked(snapshot, { graceMs: 2000 });
    expect(result).toMatchObject({ found: 1, terminated: 1, survivors: 0, method: 'none' });
    expect(result.warning).toBe(snapshot.warning);
  });
});

describe('process facts', () => {
  it('startTimeOf / commandOf / isRunning on this process', () => {
    expect(startTimeOf(process.pid)).toMatch(/^\d+$/);
    // /proc's argv: the script vitest forked this worker with is in it.
    expect(commandOf(process.pid)).toContain(process.argv[1]!);
    expect(isRunning(process.pid)).toBe(true);
  });

  it('startTimeOf / commandOf / isRunning on a pid that exited', async () => {
    const child = spawn(process.execPath, ['-e', '']);
    const pid = child.pid!;
    await new Promise((resolve) => child.once('exit', resolve));
    // Linux hands out pids in increasing order up to pid_max before it wraps: this one is not
    // reused within the few milliseconds below.
    expect(isRunning(pid)).toBe(false);
    expect(processExists(pid)).toBe(false);
    expect(startTimeOf(pid)).toBeUndefined();
    expect(commandOf(pid)).toBeUndefined();
  });

  it('a zombie counts as not running, keeps its start time, has an empty command line', async () => {
    // bash forks `sleep 0.2` and execs `sleep 60`, which never reaps it: a zombie under the root.
    const root = startBash('sleep 0.2 & exec sleep 60', 'zombie');
    let zombie = 0;
    await vi.waitFor(() => {
      const rows = execFileSync('ps', ['-o', 'pid=,stat=', '--ppid', String(root.pid)], { encoding: 'utf8' })
        .split('\n')
        .map((line) => line.trim().split(/\s+/))
        .filter(([, stat]) => stat?.startsWith('Z'));
      expect(rows).toHaveLength(1);
      zombie = Number(rows[0]![0]);
    }, WAIT);

    expect(isRunning(zombie)).toBe(false);
    // It still exists (its pid is not free) and so does its group, until it is reaped.
    expect(processExists(zombie)).toBe(true);
    expect(groupExists(root.pid)).toBe(true);
    expect(startTimeOf(zombie)).toMatch(/^\d+$/);
    expect(commandOf(zombie)).toBe('');
    expect(isSameProcess({ pid: zombie, ppid: root.pid, pgid: root.pid, startTime: startTimeOf(zombie) })).toBe(false);
    expect(isRunning(root.pid)).toBe(true);
  });

  it('countZombieChildren counts a child of this process that exited and was never reaped', async () => {
    // libuv reaps only the children of a live loop's process handles: a child spawned by a worker
    // thread that is then terminated is never waited for, so once killed it stays a zombie child
    // of this process (until the test process exits; a zombie holds no resources but its pid).
    const worker = new Worker(
      `const { spawn } = require('node:child_process');
       const { parentPort } = require('node:worker_threads');
       const child = spawn('sleep', ['60'], { stdio: 'ignore' });
       child.once('spawn', () => parentPort.postMessage(child.pid));`,
      { eval: true },
    );
    const pid = await new Promise<number>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    process.kill(pid, 'SIGKILL');
    await vi.waitFor(() => expect(execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).trim()).toMatch(/^Z/), WAIT);

    // Counted against the other zombie children seen at the same moment, not a count taken before:
    // a child an earlier test ended may be a zombie for an instant, until its loop reaps it.
    const otherZombies = async (): Promise<number> =>
      (await readProcessTable()).filter((row) => row.ppid === process.pid && row.stat.startsWith('Z') && row.pid !== pid && row.comm !== 'ps' && row.comm !== 'pgrep').length;
    await expect.poll(async () => (await countZombieChildren()) - (await otherZombies()), WAIT).toBe(1);
  });
});

describe('one ps parser, one walk, one liveness check', () => {
  it('parses pid, ppid, pgid, state and a name that may hold spaces; skips what is not a row', () => {
    const rows = parsePs('  1     0     1 Ss   systemd\n 4242  1 4242 S+   my server (v2)\nPID PPID\n\n 7 1 7\n');
    expect(rows).toEqual([
      { pid: 1, ppid: 0, pgid: 1, stat: 'Ss', comm: 'systemd' },
      { pid: 4242, ppid: 1, pgid: 4242, stat: 'S+', comm: 'my server (v2)' },
      { pid: 7, ppid: 1, pgid: 7, stat: '', comm: '' },
    ]);
  });

  it('the table, async and sync, holds this process with its parent and group', async () => {
    const own = (rows: readonly { pid: number }[] | undefined) => rows?.find((row) => row.pid === process.pid);
    const expected = { pid: process.pid, ppid: process.ppid, pgid: expect.any(Number), stat: expect.stringMatching(/^[A-Z]/), comm: expect.any(String) };
    expect(own(await readProcessTable())).toEqual(expected);
    expect(own(readProcessTableSync())).toEqual(expected);
  });

  it('without /proc and without ps the sync table is undefined and the async one rejects; /proc needs no program', async () => {
    const saved = process.env.PATH;
    process.env.PATH = mkdtempSync(join(tmpdir(), 'mcpool-nops-'));
    try {
      // /proc is read without running anything: no PATH needed.
      expect(readProcessTableSync()?.some((row) => row.pid === process.pid)).toBe(true);
      expect((await readProcessTable()).some((row) => row.pid === process.pid)).toBe(true);
      setProcessTableSource('ps');
      expect(readProcessTableSync()).toBeUndefined();
      await expect(readProcessTable()).rejects.toThrow();
    } finally {
      setProcessTableSource('auto');
      rmSync(process.env.PATH, { recursive: true, force: true });
      process.env.PATH = saved;
    }
  });

  it('/proc and ps give the same rows for a tree: pid, parent, group, state and name', async () => {
    // A name with a space and parentheses: the kernel names a process after the file it runs.
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-comm-'));
    symlinkSync(execFileSync('bash', ['-c', 'command -v sleep'], { encoding: 'utf8' }).trim(), join(dir, 'my (odd) nm'));
    const root = startBash(`sleep 60 & '${join(dir, 'my (odd) nm')}' 60 & sleep 60 & wait`, 'agree');
    let kids: number[];
    try {
      kids = await descendants(root.pid, 3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const ours = new Set([root.pid, ...kids]);
    const pick = (rows: readonly { pid: number; ppid: number; pgid: number; stat: string; comm: string }[]) =>
      rows
        .filter((row) => ours.has(row.pid))
        .map((row) => ({ pid: row.pid, ppid: row.ppid, pgid: row.pgid, state: row.stat.slice(0, 1), comm: row.comm }))
        .sort((a, b) => a.pid - b.pid);
    const fromProc = pick(await readProcessTable());
    setProcessTableSource('ps');
    let fromPs;
    try {
      fromPs = pick(await readProcessTable());
    } finally {
      setProcessTableSource('auto');
    }
    expect(fromProc).toHaveLength(4);
    expect(fromProc.map((row) => row.comm)).toContain('my (odd) nm');
    expect(fromProc).toEqual(fromPs);
  });

  it('parses /proc/<pid>/stat, a name with spaces and parentheses included; refuses what is not one', () => {
    expect(parseProcStat('4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 99')).toEqual({ pid: 4242, ppid: 1, pgid: 4242, stat: 'S', comm: 'my (odd) name' });
    expect(parseProcStat('7 (z) Z 3 7 7')).toEqual({ pid: 7, ppid: 3, pgid: 7, stat: 'Z', comm: 'z' });
    expect(parseProcStat('garbage')).toBeUndefined();
    expect(parseProcStat('x (y) S a b c')).toBeUndefined();
  });

  it('walks descendants and group members, bounded in depth and count, never this process', () => {
    const row = (pid: number, ppid: number, pgid: number) => ({ pid, ppid, pgid, stat: 'S', comm: 'x' });
    // 100 → 101 → 102 → 103 (a chain); 200 is an orphan in group 100; this process is a child of 101.
    const rows = [row(100, 1, 100), row(101, 100, 100), row(102, 101, 100), row(103, 102, 100), row(200, 1, 100), row(process.pid, 101, 100), row(300, 1, 300)];
    const pids = (found: readonly { pid: number }[]) => found.map((r) => r.pid).sort((a, b) => a - b);
    expect(pids(descendantsIn(rows, 100))).toEqual([100, 101, 102, 103]);
    expect(pids(descendantsIn(rows, 100, { pgid: 100 }))).toEqual([100, 101, 102, 103, 200]);
    expect(pids(descendantsIn(rows, 100, { maxDepth: 1 }))).toEqual([100, 101]);
    expect(descendantsIn(rows, 100, { pgid: 100, maxProcesses: 2 })).toHaveLength(2);
    expect(pids(descendantsIn(rows, 999))).toEqual([]);
  });

  it('processExists and groupExists refuse what is not a pid or a group', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(processExists(bad)).toBe(false);
    for (const bad of [0, 1, -5]) expect(groupExists(bad)).toBe(false);
    expect(processExists(process.pid)).toBe(true);
  });
});
