/**
 * Several pool entries share one actor thread (`connectionsPerThread`): counted through the
 * snapshot and through the real thread ids their actors log with. A crash of the shared thread
 * brings every entry on it back with its views; `connectionsPerThread: 1` gives each entry its
 * own thread; the last connection of a thread ending ends the thread, and a host process that
 * closed its pool then exits by itself. Real threads (the crashable worker exits on a broadcast
 * order), real children.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ErrorCode, type Logger, type PoolEvent } from '@mcpool/core';
import { FIXTURES, fixtureConfig, isRunning, pidFromResult, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const CRASHABLE = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url);
const CORE = pathToFileURL(fileURLToPath(new URL('../dist/index.js', import.meta.url))).href;
const crashes = new BroadcastChannel('mcpool-test-crash');
crashes.unref();
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

type Line = Record<string, unknown>;

/** A logger keeping every line with its bindings (the actors' lines carry their thread's id). */
function collecting(lines: Line[], bindings: Line = {}): Logger {
  const at =
    (level: string) =>
    (fields: object | string, msg?: string): void => {
      lines.push(typeof fields === 'string' ? { level, ...bindings, msg: fields } : { level, ...bindings, ...fields, msg });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => collecting(lines, { ...bindings, ...more }) };
}

/** The thread ids the actors of `server` logged from. */
function threadsOf(lines: Line[], server: string): Set<number> {
  return new Set(lines.filter((line) => line.server === server && typeof line.threadId === 'number').map((line) => line.threadId as number));
}

const SERVERS = ['alpha', 'beta', 'gamma'];

describe('connections share actor threads', () => {
  it('three entries on one thread; its crash brings all three back with their views, on one thread again', async () => {
    const lines: Line[] = [];
    const events: PoolEvent[] = [];
    const pool = newPool({ logger: collecting(lines), logLevel: 'debug', actorHost: { workerUrl: CRASHABLE }, onEvent: (event) => events.push(event) });
    const mark = newMark('cohost');
    const views = [];
    for (const name of SERVERS) views.push(await pool.acquire(name, fixtureConfig('echo.mjs', mark, { env: { ROLE: name } }), 's1'));
    expect(pool.getSnapshot()).toMatchObject({ liveActors: 3, actorThreads: 1 });
    const ids = SERVERS.map((name) => [...threadsOf(lines, name)]);
    for (const seen of ids) expect(seen).toHaveLength(1);
    expect(new Set(ids.flat()).size).toBe(1);
    const oldPids = await Promise.all(views.map(async (view) => pidFromResult(await view.callTool('pid'))));

    const reconnected = Promise.all(views.map((view) => new Promise<void>((resolve) => view.on('reconnected', () => resolve()))));
    const seen: string[] = [];
    for (const [i, view] of views.entries()) view.on('disconnected', (event) => seen.push(`${SERVERS[i]}:${event.reason}`));
    // One entry's thread dies: the others on it die with it.
    crashes.postMessage({ serverName: 'alpha', kind: 'exit', sentAt: Date.now() });
    await reconnected;
    expect(seen.sort()).toEqual(SERVERS.map((name) => `${name}:actor_died`).sort());
    expect(events.filter((event) => event.type === 'failed').map((event) => (event as { lastError: { code: string } }).lastError.code)).toEqual(SERVERS.map(() => ErrorCode.ACTOR_DIED));

    // The same views serve again, on new children, and the replacements share a thread again.
    for (const [i, view] of views.entries()) {
      expect(textOf(await view.callTool('echo', { text: SERVERS[i]! }))).toBe(SERVERS[i]);
      expect(pidFromResult(await view.callTool('pid'))).not.toBe(oldPids[i]);
    }
    for (const pid of oldPids) await vi.waitFor(() => expect(isRunning(pid)).toBe(false), { timeout: 15_000, interval: 20 });
    expect(pool.getSnapshot()).toMatchObject({ liveActors: 3, actorThreads: 1 });
  });

  it('connectionsPerThread: 1 gives every entry its own thread', async () => {
    const lines: Line[] = [];
    const pool = newPool({ logger: collecting(lines), logLevel: 'debug', actorHost: { connectionsPerThread: 1 } });
    const mark = newMark('cohost-one');
    for (const name of SERVERS) await pool.acquire(name, fixtureConfig('echo.mjs', mark, { env: { ROLE: name } }), 's1');
    expect(pool.getSnapshot()).toMatchObject({ liveActors: 3, actorThreads: 3 });
    const ids = SERVERS.map((name) => [...threadsOf(lines, name)]);
    for (const seen of ids) expect(seen).toHaveLength(1);
    expect(new Set(ids.flat()).size).toBe(3);
  });

  it('a thread with room takes the next entry, and ends when its last entry closes', async () => {
    const pool = newPool({ drainDelayMs: 50, actorHost: { connectionsPerThread: 2 } });
    const mark = newMark('cohost-room');
    const views = [];
    for (const name of SERVERS) views.push(await pool.acquire(name, fixtureConfig('echo.mjs', mark, { env: { ROLE: name } }), 's1'));
    // Two on the first thread, the third on a second one.
    expect(pool.getSnapshot()).toMatchObject({ liveActors: 3, actorThreads: 2 });
    await views[2]!.release();
    await vi.waitFor(() => expect(pool.getSnapshot()).toMatchObject({ liveActors: 2, actorThreads: 1 }), { timeout: 15_000, interval: 20 });
    await views[0]!.release();
    await vi.waitFor(() => expect(pool.getSnapshot()).toMatchObject({ liveActors: 1, actorThreads: 1 }), { timeout: 15_000, interval: 20 });
    await views[1]!.release();
    await vi.waitFor(() => expect(pool.getSnapshot()).toMatchObject({ liveActors: 0, actorThreads: 0 }), { timeout: 15_000, interval: 20 });
  });

  it('a spare thread is booted once the last entry ended, and the next acquire is placed on it', async () => {
    const pool = newPool({ drainDelayMs: 50 });
    const mark = newMark('cohost-spare');
    const view = await pool.acquire('alpha', fixtureConfig('echo.mjs', mark), 's1');
    // The thread has room for more: no spare is kept beside it.
    expect(pool.getSnapshot()).toMatchObject({ liveActors: 1, actorThreads: 1, spareThread: false });
    await view.release();
    // Its thread ended with its last entry and is not reused; a spare takes its place.
    await vi.waitFor(() => expect(pool.getSnapshot()).toMatchObject({ liveActors: 0, actorThreads: 0, spareThread: true }), { timeout: 15_000, interval: 20 });
    const again = await pool.acquire('alpha', fixtureConfig('echo.mjs', mark), 's2');
    expect(textOf(await again.callTool('echo', { text: 'on the spare' }))).toBe('on the spare');
    // The spare became the entry's thread; a new thread would have left the spare in place.
    expect(pool.getSnapshot()).toMatchObject({ liveActors: 1, actorThreads: 1, spareThread: false });
  });

  it('a host whose entries shared a thread exits by itself once its pool drained: no thread, port or timer is left', async () => {
    const mark = newMark('cohost-exit');
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-cohost-'));
    dirs.push(dir);
    const script = join(dir, 'host.mjs');
    const server = (name: string): string => `{ command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}], env: { ROLE: '${name}' } }`;
    writeFileSync(
      script,
      [
        `import { McpTransportPool } from ${JSON.stringify(CORE)};`,
        `const pool = new McpTransportPool({ stateDir: false, shutdownStepMs: 300 });`,
        ...SERVERS.map((name) => `await (await pool.acquire('${name}', ${server(name)}, 's1')).callTool('echo', { text: 'x' });`),
        `process.stdout.write('threads ' + pool.getSnapshot().actorThreads + '\\n');`,
        `await pool.drainAll();`,
        `process.stdout.write('drained\\n');`,
      ].join('\n'),
    );
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let drainedAt = 0;
    child.stdout.on('data', () => {
      if (drainedAt === 0 && stdout.includes('drained')) drainedAt = Date.now();
    });
    const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    const exitedAt = Date.now();
    clearTimeout(deadline);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('threads 1\n');
    expect(stdout).toContain('drained\n');
    // Nothing keeps the host alive once drained: it exits at once, not at some timer's end.
    expect(exitedAt - drainedAt).toBeLessThan(1500);
  });
});
