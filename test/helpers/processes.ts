/**
 * Process helpers for tests that run real children. Test files run in parallel, so processes are
 * always counted by a marker unique to the test (an argument), never globally.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { isProcessAlive } from 'mcpool/local';

export const FIXTURES = fileURLToPath(new URL('../fixtures/servers/', import.meta.url));

/** A marker argument unique to one test. */
export function marker(label = 'm'): string {
  return `--marker=${label}-${randomUUID()}`;
}

/** A stdio config running a fixture under node, tagged with `mark`. */
export function fixtureConfig(fixture: string, mark: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [FIXTURES + fixture, mark], ...extra };
}

/** Pids of live (non-zombie) processes whose command line contains `mark`. */
export function pidsWithMarker(mark: string): number[] {
  const out = execFileSync('ps', ['-A', '-o', 'pid=,stat=,args='], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const pids: number[] = [];
  for (const line of out.split('\n')) {
    const match = /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line);
    if (!match) continue;
    const [, pid, stat, args] = match;
    if (stat!.startsWith('Z') || !args!.includes(mark) || args!.startsWith('ps ')) continue;
    pids.push(Number(pid));
  }
  return pids;
}

/** Whether `pid` runs (mcpool/local's check, which the start lock relies on). */
export const isAlive = isProcessAlive;

/** Kills (SIGKILL) what a test left with its marker; returns how many it found. */
export function killMarked(mark: string): number {
  const pids = pidsWithMarker(mark);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return pids.length;
}

/** The pid a fixture reports through its `pid` tool. */
export function pidFromResult(result: Record<string, unknown>): number {
  const content = result.content as { type: string; text: string }[];
  return (JSON.parse(content[0]!.text) as { pid: number }).pid;
}

export function textOf(result: Record<string, unknown>): string {
  const content = result.content as { type: string; text: string }[];
  return content.map((part) => part.text).join('');
}

/** Every descendant of `root` (by parent pid) and every member of its process group, root excluded. */
export function treeOf(root: number): number[] {
  const out = execFileSync('ps', ['-A', '-o', 'pid=,ppid=,pgid=,stat='], { encoding: 'utf8' });
  const rows = out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((parts) => parts.length >= 4 && !parts[3]!.startsWith('Z'))
    .map(([pid, ppid, pgid]) => ({ pid: Number(pid), ppid: Number(ppid), pgid: Number(pgid) }));
  const found = new Set<number>();
  let frontier = [root];
  for (let depth = 0; depth < 16 && frontier.length > 0; depth++) {
    const next: number[] = [];
    for (const row of rows) {
      if (!frontier.includes(row.ppid) || found.has(row.pid)) continue;
      found.add(row.pid);
      next.push(row.pid);
    }
    frontier = next;
  }
  for (const row of rows) if (row.pgid === root && row.pid !== root) found.add(row.pid);
  return [...found];
}

/** Alive and not a zombie. */
export function isRunning(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return !execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).trim().startsWith('Z');
  } catch {
    return false;
  }
}

/**
 * Asserts that no process with `mark` survives: one SIGKILLed a moment ago may take a little
 * while to die on a loaded machine, so this waits (bounded) before calling it a survivor, and
 * kills whatever is left either way.
 */
export async function expectNoSurvivors(mark: string): Promise<void> {
  const { expect, vi } = await import('vitest');
  try {
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 15_000, interval: 20 });
  } finally {
    killMarked(mark);
  }
}
