/**
 * One connection per worker thread, always: every entry (unpooled and per-session ones too) has a
 * thread of its own, counted through the real thread ids its actor logs with. A thread's death is
 * its own connection's: a victim whose thread is killed again and again trips its own restart
 * limit while a healthy neighbour never leaves `active`. A booted spare takes the next connection;
 * a host process that drained its pool exits by itself. Real threads (the crashable worker exits
 * on a broadcast order), real children, the shipped defaults.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ErrorCode, type Logger, type PoolEvent } from '@mcpool/core';
import { FIXTURES, fixtureConfig, pidFromResult, textOf } from '../../../test/helpers/processes.js';
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

describe('one connection per thread', () => {
  it('every entry has its own thread, unpooled and per-session ones too', async () => {
    const lines: Line[] = [];
    const pool = newPool({ logger: collecting(lines), logLevel: 'debug' });
    const mark = newMark('threads-own');
    await pool.acquire('alpha', fixtureConfig('echo.mjs', mark, { env: { ROLE: 'alpha' } }), 's1');
    await pool.acquire('beta', fixtureConfig('echo.mjs', mark, { env: { ROLE: 'beta' }, sharing: 'per-session' }), 's1');
    await pool.acquire('beta', fixtureConfig('echo.mjs', mark, { env: { ROLE: 'beta' }, sharing: 'per-session' }), 's2');
    // A transport the pool does not share by default: one entry per acquire.
    const gamma = fixtureConfig('echo.mjs', mark, { env: { ROLE: 'gamma' } });
    const unpooled = newPool({ logger: collecting(lines, { pool: 'unpooled' }), logLevel: 'debug', pooledTransports: [] });
    await unpooled.acquire('gamma', gamma, 's1');
    await unpooled.acquire('gamma', gamma, 's2');
    expect(pool.getSnapshot().liveActors).toBe(3);
    expect(unpooled.getSnapshot().liveActors).toBe(2);
    const ids = [...threadsOf(lines.filter((line) => line.pool === undefined), 'alpha'), ...threadsOf(lines.filter((line) => line.pool === undefined), 'beta')];
    const unpooledIds = [...threadsOf(lines.filter((line) => line.pool === 'unpooled'), 'gamma')];
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
    expect(unpooledIds).toHaveLength(2);
  });

  it('a connection whose thread is killed six times trips its own restart limit; its healthy neighbour never leaves active', async () => {
    const events: PoolEvent[] = [];
    const pool = newPool({ actorHost: { workerUrl: CRASHABLE }, onEvent: (event) => events.push(event) });
    const mark = newMark('threads-trip');
    const victim = await pool.acquire('victim', fixtureConfig('echo.mjs', mark, { env: { ROLE: 'victim' } }), 's1');
    const neighbour = await pool.acquire('neighbour', fixtureConfig('echo.mjs', mark, { env: { ROLE: 'neighbour' } }), 's1');
    const neighbourPid = pidFromResult(await neighbour.callTool('pid'));
    const neighbourSeen: string[] = [];
    neighbour.on('disconnected', () => neighbourSeen.push('disconnected'));
    neighbour.on('failed', () => neighbourSeen.push('failed'));

    // 1. The victim's thread dies five times within the intensity (5 in 30 s): each time its held
    // entry is brought back and its view moves there.
    for (let death = 1; death <= 5; death++) {
      const back = new Promise<void>((resolve) => {
        const off = victim.on('reconnected', () => (off(), resolve()));
      });
      crashes.postMessage({ serverName: 'victim', kind: 'exit', sentAt: Date.now() });
      await back;
      expect(textOf(await victim.callTool('echo', { text: `after ${death}` }))).toBe(`after ${death}`);
      // The neighbour answers between the deaths, on its first process.
      expect(pidFromResult(await neighbour.callTool('pid'))).toBe(neighbourPid);
    }
    // 2. The sixth trips the victim's key: failed until restarted, nothing brought back.
    const failed = new Promise<void>((resolve) => victim.on('failed', () => resolve()));
    crashes.postMessage({ serverName: 'victim', kind: 'exit', sentAt: Date.now() });
    await failed;
    await expect(pool.acquire('victim', fixtureConfig('echo.mjs', mark, { env: { ROLE: 'victim' } }), 's2')).rejects.toMatchObject({
      code: ErrorCode.SERVER_FAILED,
      data: { serverName: 'victim', lastError: { code: ErrorCode.ACTOR_DIED } },
    });
    expect(pool.getSnapshot().servers.victim).toMatchObject({ status: 'failed', entrySummary: [{ status: 'failed' }] });

    // 3. Six deaths, each counted once and for the victim alone.
    const diedFor = (name: string): number => events.filter((event) => event.type === 'disconnected' && event.serverName === name && event.reason === 'actor_died').length;
    expect(diedFor('victim')).toBe(6);
    expect(diedFor('neighbour')).toBe(0);
    // The neighbour's status never left active, its view never saw a loss, its process is the first.
    expect(events.filter((event) => event.type === 'statusChanged' && event.serverName === 'neighbour').map((event) => (event as { status: string }).status)).toEqual(['spawning', 'active']);
    expect(neighbourSeen).toEqual([]);
    expect(pool.getSnapshot().servers.neighbour).toMatchObject({ status: 'active', entrySummary: [{ entryIndex: 0, status: 'active', refs: 1 }] });
    expect(textOf(await neighbour.callTool('echo', { text: 'unharmed' }))).toBe('unharmed');
    expect(pidFromResult(await neighbour.callTool('pid'))).toBe(neighbourPid);
  });

  it('the booted spare takes the next connection, also after the last entry ended', async () => {
    const lines: Line[] = [];
    const pool = newPool({ drainDelayMs: 50, logger: collecting(lines), logLevel: 'debug' });
    const mark = newMark('threads-spare');
    pool.start();
    expect(pool.getSnapshot().spareThread).toBe(true);
    const view = await pool.acquire('alpha', fixtureConfig('echo.mjs', mark), 's1');
    const [first] = threadsOf(lines, 'alpha');
    // A spare is booted again beside the entry's thread.
    expect(pool.getSnapshot()).toMatchObject({ liveActors: 1, spareThread: true });
    await view.release();
    await vi.waitFor(() => expect(pool.getSnapshot()).toMatchObject({ liveActors: 0, spareThread: true }), { timeout: 15_000, interval: 20 });
    lines.length = 0;
    const again = await pool.acquire('alpha', fixtureConfig('echo.mjs', mark), 's2');
    expect(textOf(await again.callTool('echo', { text: 'on the spare' }))).toBe('on the spare');
    // Thread ids are handed out in creation order: the spare booted right after the first
    // thread, and the emptied thread is not reused.
    expect([...threadsOf(lines, 'alpha')]).toEqual([first! + 1]);
  });

  it('a host exits by itself once its pool drained: no thread, port or timer is left', async () => {
    const mark = newMark('threads-exit');
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-threads-'));
    dirs.push(dir);
    const script = join(dir, 'host.mjs');
    const server = (name: string): string => `{ command: process.execPath, args: [${JSON.stringify(FIXTURES + 'echo.mjs')}, ${JSON.stringify(mark)}], env: { ROLE: '${name}' } }`;
    writeFileSync(
      script,
      [
        `import { McpTransportPool } from ${JSON.stringify(CORE)};`,
        `const pool = new McpTransportPool({ stateDir: false, shutdownStepMs: 300 });`,
        ...SERVERS.map((name) => `await (await pool.acquire('${name}', ${server(name)}, 's1')).callTool('echo', { text: 'x' });`),
        `process.stdout.write('actors ' + pool.getSnapshot().liveActors + '\\n');`,
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
    expect(stdout).toContain('actors 3\n');
    expect(stdout).toContain('drained\n');
    // Nothing keeps the host alive once drained: it exits at once, not at some timer's end.
    expect(exitedAt - drainedAt).toBeLessThan(1500);
  });
});
