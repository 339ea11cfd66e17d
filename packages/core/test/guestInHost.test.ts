/**
 * A library is a guest in its host's process. Each test runs a real host script as a child
 * process (so its stderr, its home directory, its threads and its exit can be watched) against
 * the built `dist/` of `@mcpool/core`, with real fixture servers:
 * - the host's own logger gets every line, the actor threads' included; stderr gets nothing;
 * - constructing (and draining) a pool touches no disk, boots no thread and starts no timer;
 * - a host that releases and forgets `drainAll()` exits at once and leaves no server behind,
 *   one that ignores SIGTERM and stdin EOF included;
 * - a host started with node flags a worker thread refuses still gets its actor threads.
 * Processes carry a marker unique to the test and are counted by it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { McpTransportPool } from '@mcpool/core';
import { commandOf, isRunning, startTimeOf } from '@mcpool/protocol/processTree';
import { FIXTURES, expectNoSurvivors, marker, pidsWithMarker } from '../../../test/helpers/processes.js';

vi.setConfig({ testTimeout: 90_000 });

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CORE = pathToFileURL(join(ROOT, 'packages/core/dist/index.js')).href;
const WAIT = { timeout: 10_000, interval: 20 };

const dirs: string[] = [];
const marks: string[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  try {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
  } finally {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
});

function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `mcpool-${label}-`));
  dirs.push(dir);
  return dir;
}

function newMark(label: string): string {
  const mark = marker(label);
  marks.push(mark);
  return mark;
}

interface HostRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** `Date.now()` when the child exited (same clock as the child's own timestamps). */
  exitedAt: number;
}

/**
 * Runs `lines` as an ES module in a fresh node (from a file: worker threads inherit the host's
 * flags, and `--input-type` would break them). Killed at `deadlineMs`; the caller asserts.
 */
async function runHost(lines: string[], options: { env?: NodeJS.ProcessEnv; deadlineMs?: number; nodeArgs?: string[] } = {}): Promise<HostRun> {
  const dir = tempDir('host');
  const script = join(dir, 'host.mjs');
  writeFileSync(script, [`import { McpTransportPool } from ${JSON.stringify(CORE)};`, ...lines].join('\n'));
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script], { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = setTimeout(() => child.kill('SIGKILL'), options.deadlineMs ?? 60_000);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  const exitedAt = Date.now();
  clearTimeout(deadline);
  // The pipes may still hold the last lines.
  await Promise.all([new Promise((resolve) => child.stdout.once('close', resolve)), new Promise((resolve) => child.stderr.once('close', resolve))].map((p) => Promise.race([p, delayMs(2000)])));
  return { code, signal, stdout, stderr, exitedAt };
}

function delayMs(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The JSON value a host script printed on the stdout line starting with `tag `. */
function tagged<T>(run: HostRun, tag: string): T {
  const line = run.stdout.split('\n').find((l) => l.startsWith(`${tag} `));
  if (line === undefined) throw new Error(`no "${tag}" line; stdout: ${run.stdout}; stderr: ${run.stderr}`);
  return JSON.parse(line.slice(tag.length + 1)) as T;
}

/** Every path under `dir`, with its mtime: a directory left untouched compares equal. */
function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (path: string): void => {
    for (const name of readdirSync(path)) {
      const full = join(path, name);
      const stat = statSync(full);
      out.push(`${full.slice(dir.length)} ${stat.mtimeMs}`);
      if (stat.isDirectory()) walk(full);
    }
  };
  walk(dir);
  return out.sort();
}

/** A host-side logger that keeps every line as a plain object (no pino): the interface is all a pool needs. */
const COLLECTING_LOGGER = [
  `const lines = [];`,
  `function collecting(bindings) {`,
  `  const at = (level) => (fields, msg) => lines.push(typeof fields === 'string' ? { level, ...bindings, msg: fields } : { level, ...bindings, ...fields, msg });`,
  `  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => collecting({ ...bindings, ...more }) };`,
  `}`,
  `async function until(test, what) {`,
  `  for (const started = Date.now(); !test(); await new Promise((r) => setTimeout(r, 20))) {`,
  `    if (Date.now() - started > 15000) throw new Error('timed out waiting for ' + what + ': ' + JSON.stringify(lines));`,
  `  }`,
  `}`,
];

describe('logging goes to the host logger only', () => {
  it("a host with its own logger gets the actor's 'transport lost' line, bound to its entry, and nothing reaches stderr", async () => {
    const mark = newMark('hostlog');
    const run = await runHost([
      ...COLLECTING_LOGGER,
      `const pool = new McpTransportPool({ logger: collecting({ host: 'test' }), shutdownStepMs: 500 });`,
      `const view = await pool.acquire('echo', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
      `const { pid } = JSON.parse((await view.callTool('pid')).content[0].text);`,
      // The server dies under the actor: it logs the loss (and reconnects).
      `process.kill(pid, 'SIGKILL');`,
      `await until(() => lines.some((line) => line.msg === 'transport lost'), "'transport lost'");`,
      `await pool.drainAll();`,
      `process.stdout.write('lines ' + JSON.stringify(lines) + '\\n');`,
    ]);

    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = tagged<Record<string, unknown>[]>(run, 'lines');
    const lost = lines.find((line) => line.msg === 'transport lost');
    // Written by the supervisor to the host's logger, with the host's and the entry's bindings.
    expect(lost).toMatchObject({ level: 'warn', host: 'test', component: 'actor', server: 'echo', entryIndex: 0 });
    expect(typeof lost!.threadId).toBe('number');
    // The pool's own lines come through the same logger.
    expect(lines.some((line) => line.component === 'pool' && line.msg === 'entry ready')).toBe(true);
  });

  it("an actor thread's fatal error reaches the host logger as its last line, not stderr", async () => {
    const mark = newMark('fatallog');
    const worker = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url).href;
    const run = await runHost([
      `import { BroadcastChannel } from 'node:worker_threads';`,
      ...COLLECTING_LOGGER,
      `const pool = new McpTransportPool({ logger: collecting({}), shutdownStepMs: 500, actorHost: { workerUrl: new URL(${JSON.stringify(worker)}) } });`,
      `await pool.acquire('echo', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
      // The test worker throws from a timer: an uncaught exception in the actor thread.
      `const crashes = new BroadcastChannel('mcpool-test-crash');`,
      `crashes.postMessage({ serverName: 'echo', kind: 'throw', sentAt: Date.now() });`,
      `await until(() => lines.some((line) => line.component === 'actor' && line.msg === 'actor died'), "'actor died'");`,
      `crashes.close();`,
      `await pool.drainAll();`,
      `process.stdout.write('lines ' + JSON.stringify(lines) + '\\n');`,
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const died = tagged<Record<string, unknown>[]>(run, 'lines').find((line) => line.component === 'actor' && line.msg === 'actor died');
    expect(died).toMatchObject({ level: 'error', server: 'echo', entryIndex: 0, err: { message: 'crashable worker: thrown on purpose' } });
  });

  it('without a logger the pool writes nothing anywhere, even with MCPOOL_LOG_LEVEL set and a server dying under it', async () => {
    const mark = newMark('nolog');
    const run = await runHost(
      [
        `const pool = new McpTransportPool({ shutdownStepMs: 500 });`,
        `const view = await pool.acquire('echo', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
        `const { pid } = JSON.parse((await view.callTool('pid')).content[0].text);`,
        `process.kill(pid, 'SIGKILL');`,
        // The actor reconnects: a call succeeds again once it did.
        `for (let i = 0; ; i++) { try { await view.callTool('echo', { text: 'back' }); break; } catch (error) { if (i > 300) throw error; await new Promise((r) => setTimeout(r, 50)); } }`,
        `await pool.drainAll();`,
        `process.stdout.write('done\\n');`,
      ],
      { env: { ...process.env, MCPOOL_LOG_LEVEL: 'debug' } },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('done\n');
    expect(run.code).toBe(0);
  });
});

describe('construction has no side effects', () => {
  it('constructing and draining a pool in a fresh HOME leaves it untouched, boots no thread, starts no timer, and the host exits at once', async () => {
    const home = tempDir('home');
    const before = listing(home);
    const mark = newMark('freshhome');
    const run = await runHost(
      [
        `import { readdirSync } from 'node:fs';`,
        `const threads = () => readdirSync('/proc/self/task').length;`,
        `const handles = () => process.getActiveResourcesInfo().filter((type) => type !== 'PipeWrap' && type !== 'TTYWrap').sort();`,
        `const base = { threads: threads(), handles: handles() };`,
        `const pool = new McpTransportPool();`,
        `const made = { threads: threads(), handles: handles() };`,
        `const drained = await pool.drainAll();`,
        `process.stdout.write('counts ' + JSON.stringify({ base, made, drained, after: { threads: threads(), handles: handles() } }) + '\\n');`,
        // Used and drained in the same HOME: still nothing written there.
        `const used = new McpTransportPool();`,
        `const view = await used.acquire('echo', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
        `await view.callTool('echo', { text: 'hi' });`,
        `await used.drainAll();`,
        `process.stdout.write('finished ' + Date.now() + '\\n');`,
      ],
      { env: { PATH: process.env.PATH!, HOME: home, XDG_STATE_HOME: join(home, 'state'), MCPOOL_LOG_LEVEL: 'debug' } },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const counts = tagged<{ base: { threads: number; handles: string[] }; made: { threads: number; handles: string[] }; drained: unknown }>(run, 'counts');
    // No worker thread (each is an OS thread of the process) and no timer or port at construction.
    expect(counts.made).toEqual(counts.base);
    expect(counts.drained).toEqual({ drained: 0, forced: 0, errors: [] });
    expect(listing(home)).toEqual(before);
    expect(existsSync(join(home, 'state'))).toBe(false);
    // Nothing held the host after its last drain (loaded machines are slow to tear a process down).
    expect(run.exitedAt - tagged<number>(run, 'finished')).toBeLessThan(5000);
  });

  it('reaping crash leftovers is opt-in and happens at start(), never at construction', async () => {
    const dir = tempDir('reap');
    const mark = newMark('reapoptin');
    // A "crashed run": a detached sleep in its own group, recorded by an owner that is gone.
    const leftover = spawn('sleep', ['60'], { detached: true, stdio: 'ignore', argv0: `sleep${mark}` });
    children.push(leftover);
    const pid = leftover.pid!;
    await vi.waitFor(() => expect(commandOf(pid)).toContain(mark), WAIT);
    const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await new Promise((resolve) => dead.once('exit', resolve));
    const file = join(dir, `pool-${dead.pid}-${randomBytes(4).toString('hex')}.json`);
    writeFileSync(file, JSON.stringify({ ownerPid: dead.pid, ownerStartTime: '1', groups: [{ pgid: pid, startTime: startTimeOf(pid), command: commandOf(pid) }] }));

    // 1. A started pool with a state dir but without the option reaps nothing.
    const recordingOnly = new McpTransportPool({ stateDir: dir });
    recordingOnly.start();
    await recordingOnly.drainAll();
    // 2. Constructing one with the option reaps nothing yet.
    const reaping = new McpTransportPool({ stateDir: dir, reapLeftovers: true });
    expect(isRunning(pid)).toBe(true);
    expect(existsSync(file)).toBe(true);
    // 3. start() reaps.
    reaping.start();
    await vi.waitFor(() => expect(isRunning(pid)).toBe(false), WAIT);
    expect(existsSync(file)).toBe(false);
    await reaping.drainAll();
    expect(pidsWithMarker(mark)).toEqual([]);
  });
});

describe('idle entries do not keep the host alive', () => {
  it('a host that releases and forgets drainAll() exits at once and leaves no server, a SIGTERM-ignoring one included', async () => {
    const mark = newMark('forgetdrain');
    const run = await runHost([
      // The default drain grace (30 s) would keep an entry warm that long; idle, it must not hold the host.
      `const pool = new McpTransportPool();`,
      `const echo = await pool.acquire('echo', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
      `const stubborn = await pool.acquire('stubborn', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'sigtermIgnoring.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
      `await echo.callTool('echo', { text: 'hi' });`,
      `await stubborn.callTool('echo', { text: 'hi' });`,
      `await echo.release();`,
      `await pool.release(stubborn.id, 's1');`,
      `process.stdout.write('released ' + Date.now() + '\\n');`,
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const exitMs = run.exitedAt - tagged<number>(run, 'released');
    console.info(`host exited ${exitMs} ms after its last release`);
    // About a second on an idle machine; the bound leaves room for a loaded one (the default
    // drain grace, 30 s, is what a held host would wait).
    expect(exitMs).toBeLessThan(5000);
    // Both servers were SIGKILLed at the host's exit: none is left (waited for, bounded).
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), WAIT);
  });
});

describe("the host's node flags", () => {
  it('a host started with flags a worker refuses (--trace-gc, --stack-trace-limit) still gets its actor threads', async () => {
    const mark = newMark('hostflags');
    const run = await runHost(
      [
        `const pool = new McpTransportPool({ shutdownStepMs: 500 });`,
        `const echo = await pool.acquire('echo', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
        `const result = await echo.callTool('echo', { text: 'flags' });`,
        // One thread per entry: each thread after the first refusal starts without the refused flags.
        `const other = await pool.acquire('other', { command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}] }, 's1');`,
        `await other.callTool('echo', { text: 'again' });`,
        `process.stdout.write('result ' + JSON.stringify(result.content[0].text) + '\\n');`,
        `await pool.drainAll();`,
      ],
      // --trace-gc and --stack-trace-limit are V8 options, which a worker refuses on every Node;
      // --enable-source-maps and --no-deprecation are taken.
      { nodeArgs: ['--enable-source-maps', '--trace-gc', '--stack-trace-limit=50', '--no-deprecation'] },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(tagged<string>(run, 'result')).toBe('flags');
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), WAIT);
  });
});
