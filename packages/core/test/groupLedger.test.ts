/**
 * Crash leftovers with real processes: the pool records the process groups it owns
 * in `<stateDir>/pool-<pid>-<hex>.json`; the next pool kills the groups a dead owner left, and
 * only when the leader's pid, start time and command line still match the record.
 *
 * Every test uses its own `stateDir` under the OS temp dir (never the real default), processes
 * carry a marker unique to the test, and everything started is killed by pid in `afterEach`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { McpTransportPool } from '@mcpool/core';
import { commandOf, isRunning, startTimeOf } from '@mcpool/protocol/processTree';
import { FIXTURES, fixtureConfig, marker, pidFromResult, pidsWithMarker } from '../../../test/helpers/processes.js';
import { SPAWN_TIMEOUT_MS } from '../../../test/helpers/pools.js';

const WAIT = { timeout: 20_000, interval: 20 };
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const pools: McpTransportPool[] = [];
const children: ChildProcess[] = [];
const marks: string[] = [];
const dirs: string[] = [];
const onTeardown: (() => void)[] = [];

interface GroupRecord {
  pgid: number;
  startTime?: string | undefined;
  command?: string | undefined;
  members?: { pid: number; startTime: string | undefined }[];
}

interface LedgerFile {
  ownerPid: number;
  ownerStartTime?: string | undefined;
  groups: GroupRecord[];
}

function newMark(label: string): string {
  const mark = marker(label);
  marks.push(mark);
  return mark;
}

function newStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-ledger-'));
  dirs.push(dir);
  return dir;
}

/** A started pool that reaps: reaping is opt-in and happens at start, not at construction. */
function newPool(options: ConstructorParameters<typeof McpTransportPool>[0]): McpTransportPool {
  const pool = new McpTransportPool({ drainDelayMs: 30_000, reapLeftovers: true, spawnTimeoutMs: SPAWN_TIMEOUT_MS, ...options });
  pools.push(pool);
  pool.start();
  return pool;
}

function track(child: ChildProcess): ChildProcess & { pid: number } {
  if (child.pid === undefined) throw new Error('spawn failed');
  children.push(child);
  return child as ChildProcess & { pid: number };
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** A detached `sleep 60` (its own group) whose argv[0] carries the marker. */
function leftoverSleep(mark: string): ChildProcess & { pid: number } {
  return track(spawn('sleep', ['60'], { detached: true, stdio: 'ignore', argv0: `sleep${mark}` }));
}

/** A detached bash that answers each stdin line with `pong <line>`: alive means it answers. */
function responder(mark: string): ChildProcess & { pid: number } {
  return track(spawn('bash', ['--norc', '-c', 'while read -r line; do echo "pong $line"; done', mark], { detached: true, stdio: ['pipe', 'pipe', 'ignore'] }));
}

/** Resolves with the answer; a killed process cannot give one. */
function ping(child: ChildProcess, text = 'ping'): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pid ${child.pid} did not answer`)), 5000);
    child.stdout!.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      resolve(chunk.toString().trim());
    });
    child.stdin!.write(`${text}\n`);
  });
}

/** A pid that has just exited (a node that ran nothing). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await exitOf(child);
  expect(isRunning(child.pid!)).toBe(false);
  return child.pid!;
}

/** The record a pool would have written for the group led by `pid`. */
function recordOf(pid: number): GroupRecord {
  return { pgid: pid, startTime: startTimeOf(pid), command: commandOf(pid) };
}

function writeLedger(dir: string, ownerPid: number, groups: GroupRecord[], ownerStartTime: string | undefined = '1'): string {
  const path = join(dir, `pool-${ownerPid}-${randomBytes(4).toString('hex')}.json`);
  const ledger: LedgerFile = { ownerPid, ownerStartTime, groups };
  writeFileSync(path, JSON.stringify(ledger));
  return path;
}

/** This process's ledger files in `dir` other than `except`. */
function ownLedgers(dir: string, except: string[] = []): string[] {
  return readdirSync(dir)
    .filter((name) => name.startsWith(`pool-${process.pid}-`) && name.endsWith('.json'))
    .map((name) => join(dir, name))
    .filter((path) => !except.includes(path));
}

function readLedger(path: string): LedgerFile {
  return JSON.parse(readFileSync(path, 'utf8')) as LedgerFile;
}

afterEach(async () => {
  try {
    await Promise.all(pools.splice(0).map((pool) => pool.drainAll({ timeoutMs: 10_000 })));
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exitOf(child);
    }
    for (const teardown of onTeardown.splice(0)) teardown();
    // What a test left (group members included) is gone.
    for (const mark of marks.splice(0)) await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), WAIT);
  } finally {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
});

describe('reaping what a crashed run left', () => {
  it('kills a group whose leader still matches the record of a dead owner, and deletes the file', async () => {
    const dir = newStateDir();
    const mark = newMark('reap');
    // 1. A "crashed previous run": a detached sleep (own group) and a bash group with a member.
    const sleeper = leftoverSleep(mark);
    const leader = track(spawn('bash', ['--norc', '-c', '(exec -a "$0-member" sleep 60) & wait', mark], { detached: true, stdio: 'ignore' }));
    let member = 0;
    await vi.waitFor(() => {
      const pids = pidsWithMarker(mark).filter((pid) => pid !== sleeper.pid && pid !== leader.pid);
      expect(pids).toHaveLength(1);
      member = pids[0]!;
    }, WAIT);
    await vi.waitFor(() => expect(commandOf(sleeper.pid)).toContain(mark), WAIT);
    const owner = await deadPid();
    const file = writeLedger(dir, owner, [recordOf(sleeper.pid), recordOf(leader.pid)]);
    expect(commandOf(sleeper.pid)).toBe(`sleep${mark} 60`);

    // 2. The next pool starts on that state dir.
    newPool({ stateDir: dir });

    // 3. Both groups died by SIGKILL (the member with its leader) and the file is gone.
    expect(await exitOf(sleeper)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await exitOf(leader)).toEqual({ code: null, signal: 'SIGKILL' });
    await vi.waitFor(() => expect(isRunning(member)).toBe(false), WAIT);
    expect(existsSync(file)).toBe(false);
    expect(pidsWithMarker(mark)).toEqual([]);
  });

  it('never kills a record whose start time or command does not match the live process; the dead owner’s file goes anyway', async () => {
    const dir = newStateDir();
    const mark = newMark('mismatch');
    const wrongStart = responder(mark);
    const wrongCommand = responder(mark);
    const noCommand = responder(mark);
    const gone = await deadPid();
    // Each answers before anything happens (so it has exec'd: its command line is final).
    expect(await ping(wrongStart)).toBe('pong ping');
    expect(await ping(wrongCommand)).toBe('pong ping');
    expect(await ping(noCommand)).toBe('pong ping');
    const owner = await deadPid();
    const file = writeLedger(dir, owner, [
      { ...recordOf(wrongStart.pid), startTime: String(Number(startTimeOf(wrongStart.pid)) + 1) },
      { ...recordOf(wrongCommand.pid), command: `${commandOf(wrongCommand.pid)} --other` },
      { pgid: noCommand.pid, startTime: startTimeOf(noCommand.pid) },
      { pgid: gone, startTime: '12345', command: 'sleep 60' },
    ]);

    newPool({ stateDir: dir });

    // Each still answers: none got a SIGKILL.
    expect(await ping(wrongStart, 'again')).toBe('pong again');
    expect(await ping(wrongCommand, 'again')).toBe('pong again');
    expect(await ping(noCommand, 'again')).toBe('pong again');
    expect(isRunning(wrongStart.pid) && isRunning(wrongCommand.pid) && isRunning(noCommand.pid)).toBe(true);
    expect(existsSync(file)).toBe(false);
  });

  it('never signals a recorded member whose pid now belongs to another process, nor its group', async () => {
    const dir = newStateDir();
    const mark = newMark('memberreuse');
    // A live process holding a pid (and a group) that a record names, with another start time:
    // what a recycled pid looks like.
    const reused = responder(mark);
    expect(await ping(reused)).toBe('pong ping');
    const wrong = String(Number(startTimeOf(reused.pid)) + 1);
    const gone = await deadPid();
    const owner = await deadPid();
    writeLedger(dir, owner, [
      // The leader is gone; the member's pid (and group) were taken by `reused`.
      { pgid: gone, startTime: '12345', command: 'node server.mjs', members: [{ pid: reused.pid, startTime: wrong }] },
      { pgid: reused.pid, startTime: wrong, command: 'node server.mjs', members: [{ pid: reused.pid, startTime: wrong }, { pid: reused.pid, startTime: undefined }] },
    ]);

    newPool({ stateDir: dir });

    expect(await ping(reused, 'again')).toBe('pong again');
    expect(isRunning(reused.pid)).toBe(true);
  });

  it('reaps the group member a crashed host’s server left behind after its leader exited', async () => {
    const dir = newStateDir();
    const mark = newMark('orphan');
    // 1. A host runs a pool whose server (withGrandchild.mjs) has a helper in its group; the host
    //    reports both pids once its ledger lists the helper, then is SIGKILLed.
    const script = join(dir, 'orphaningHost.mjs');
    writeFileSync(
      script,
      [
        `import { readFileSync, readdirSync } from 'node:fs';`,
        `import { McpTransportPool } from ${JSON.stringify(pathToFileURL(join(ROOT, 'packages/core/dist/index.js')).href)};`,
        `const dir = ${JSON.stringify(dir)};`,
        `const pool = new McpTransportPool({ stateDir: dir });`,
        `const view = await pool.acquire('family', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'withGrandchild.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
        `const family = JSON.parse((await view.callTool('family')).content[0].text);`,
        `const recorded = () => readdirSync(dir).filter((n) => n.startsWith('pool-' + process.pid + '-') && n.endsWith('.json'))`,
        `  .some((n) => JSON.parse(readFileSync(dir + '/' + n, 'utf8')).groups.some((g) => (g.members ?? []).some((m) => m.pid === family.grandchildPid)));`,
        `for (let i = 0; i < 400 && !recorded(); i++) await new Promise((r) => setTimeout(r, 50));`,
        `process.stdout.write(family.pid + ' ' + family.grandchildPid + ' ' + recorded() + '\\n');`,
        `setInterval(() => {}, 1e9);`,
      ].join('\n'),
    );
    const host = track(spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] }));
    const [serverPid, grandchildPid, recorded] = await new Promise<string[]>((resolve, reject) => {
      host.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim().split(' ')));
      host.once('exit', () => reject(new Error('the host exited before reporting its server')));
    });
    const helper = Number(grandchildPid);
    const helperStart = startTimeOf(helper);
    onTeardown.push(() => {
      // Only the helper this test's server started, and only while it is still that process.
      if (helperStart !== undefined && startTimeOf(helper) === helperStart) process.kill(helper, 'SIGKILL');
    });
    expect(recorded).toBe('true');
    host.kill('SIGKILL');
    await exitOf(host);
    // 2. The leader exits on stdin EOF; its helper stays, re-parented, in the leader's group.
    await vi.waitFor(() => expect(isRunning(Number(serverPid))).toBe(false), WAIT);
    expect(isRunning(helper)).toBe(true);

    // 3. The next pool on the same state dir kills it.
    newPool({ stateDir: dir });
    await vi.waitFor(() => expect(isRunning(helper)).toBe(false), WAIT);
  });

  it('leaves alone the file of a live owner: this process, or another live process with the recorded start time', async () => {
    const dir = newStateDir();
    const mark = newMark('liveowner');
    const victim = responder(mark);
    expect(await ping(victim)).toBe('pong ping');
    const otherOwner = leftoverSleep(newMark('owner'));
    await vi.waitFor(() => expect(startTimeOf(otherOwner.pid)).toBeDefined(), WAIT);
    const mine = writeLedger(dir, process.pid, [recordOf(victim.pid)], startTimeOf(process.pid));
    const theirs = writeLedger(dir, otherOwner.pid, [recordOf(victim.pid)], startTimeOf(otherOwner.pid));
    const before = [readFileSync(mine, 'utf8'), readFileSync(theirs, 'utf8')];

    newPool({ stateDir: dir });

    expect(await ping(victim, 'again')).toBe('pong again');
    expect([readFileSync(mine, 'utf8'), readFileSync(theirs, 'utf8')]).toEqual(before);
  });

  it('treats an owner pid now held by another process (start time differs) as dead, and reaps its groups', async () => {
    const dir = newStateDir();
    const leftover = leftoverSleep(newMark('recycledowner'));
    await vi.waitFor(() => expect(commandOf(leftover.pid)).toContain('sleep'), WAIT);
    // The "owner" pid is alive, but it is some other process than the one that wrote the file.
    const impostor = leftoverSleep(newMark('impostor'));
    await vi.waitFor(() => expect(startTimeOf(impostor.pid)).toBeDefined(), WAIT);
    const file = writeLedger(dir, impostor.pid, [recordOf(leftover.pid)], String(Number(startTimeOf(impostor.pid)) + 1));

    newPool({ stateDir: dir });

    expect((await exitOf(leftover)).signal).toBe('SIGKILL');
    expect(existsSync(file)).toBe(false);
    expect(isRunning(impostor.pid)).toBe(true);
  });

  it('ignores files in the state dir that are not ledgers', () => {
    const dir = newStateDir();
    writeFileSync(join(dir, 'notes.txt'), 'keep');
    writeFileSync(join(dir, 'pool-abc.json'), '{}');
    writeFileSync(join(dir, 'pool-1x-00.json.tmp'), '{}');
    newPool({ stateDir: dir });
    expect(readdirSync(dir).sort()).toEqual(['notes.txt', 'pool-1x-00.json.tmp', 'pool-abc.json']);
  });

  // Regression: dispose() on a disabled ledger threw ENOTDIR, so drainAll rejected.
  it('a state dir that cannot be created does not break the pool, drainAll included', async () => {
    const parent = newStateDir();
    const file = join(parent, 'not-a-dir');
    writeFileSync(file, 'a regular file');
    const mark = newMark('badstate');
    // 1. The ledger cannot live under a regular file: it turns itself off.
    const pool = newPool({ stateDir: join(file, 'groups') });
    // 2. The pool still serves…
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 's1');
    expect(pidFromResult(await view.callTool('pid'))).toBeGreaterThan(1);
    // 3. …and drains cleanly, leaving no process.
    await expect(pool.drainAll()).resolves.toMatchObject({ drained: 1, errors: [] });
    expect(pidsWithMarker(mark)).toEqual([]);
  });
});

describe('the ledger a pool keeps', () => {
  it('records the group of each entry while it lives, and removes its file on drainAll', async () => {
    const dir = newStateDir();
    const mark = newMark('own');
    const pool = newPool({ stateDir: dir });
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 's1');
    const pid = pidFromResult(await view.callTool('pid'));

    const [file] = ownLedgers(dir);
    expect(file).toBeDefined();
    expect(readLedger(file!)).toMatchObject({ ownerPid: process.pid, groups: [{ pgid: pid, startTime: startTimeOf(pid), command: commandOf(pid) }] });

    await pool.drainAll();
    expect(ownLedgers(dir)).toEqual([]);
  });

  it('a pool whose process was SIGKILLed leaves its groups to the next pool, which kills them', async () => {
    const dir = newStateDir();
    const mark = newMark('crashed');
    // 1. A separate process runs a pool (from a script file: workers inherit the host's flags) and
    //    is killed without any chance to clean up. Its server keeps running after its stdin ends
    //    (a well-behaved one would exit then, on its own, and prove nothing here).
    const script = join(dir, 'crashingHost.mjs');
    writeFileSync(
      script,
      [
        `import { McpTransportPool } from ${JSON.stringify(pathToFileURL(join(ROOT, 'packages/core/dist/index.js')).href)};`,
        `const pool = new McpTransportPool({ stateDir: ${JSON.stringify(dir)} });`,
        `const view = await pool.acquire('stubborn', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'sigtermIgnoring.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
        `await view.callTool('echo', { text: 'up' });`,
        `process.stdout.write('ready\\n');`,
        `setInterval(() => {}, 1e9);`,
      ].join('\n'),
    );
    const host = track(spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] }));
    await new Promise<void>((resolve, reject) => {
      host.stdout!.once('data', () => resolve());
      host.once('exit', () => reject(new Error('the host exited before reporting its server')));
    });
    const [serverPid] = pidsWithMarker(mark);
    expect(serverPid).toBeDefined();
    // Should the reap fail, the stubborn server is still ended (it ignores SIGTERM).
    onTeardown.push(() => {
      try {
        process.kill(serverPid!, 'SIGKILL');
      } catch {
        // reaped, as it should be
      }
    });
    host.kill('SIGKILL');
    await exitOf(host);
    expect(isRunning(serverPid!)).toBe(true);

    // 2. The next pool on the same state dir reaps it.
    newPool({ stateDir: dir });
    // The dead pool's ledger goes with the kill (one reap); waited for together.
    await vi.waitFor(() => {
      expect(isRunning(serverPid!)).toBe(false);
      expect(readdirSync(dir).filter((name) => name.startsWith('pool-') && name.endsWith('.json'))).toEqual(ownLedgers(dir).map((path) => path.slice(dir.length + 1)));
    }, WAIT);
  });
});
