/**
 * The local socket, `<state dir>/mcpool.sock`, with real daemon processes:
 * - it is 0600 in a 0700 directory and serves the same REST and `/mcp` without a token: the CLI
 *   (`status`, `sessions`, `stop`), `mcpool bridge` and `@mcpool/client/node` use it with no token
 *   anywhere (the daemon's own comes from `MCPOOL_TOKEN`, so no token file exists), while TCP
 *   still wants one;
 * - another user cannot connect: a probe run as `nobody` (setpriv) gets EACCES, from the
 *   directory and, with the directory opened, from the socket file's own mode;
 * - a socket left by a killed daemon is replaced; one a live daemon answers on is left to it;
 *   a path too long for a socket leaves TCP alone; nothing is left after a stop.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { connectLocal, socketAnswers } from '@mcpool/client/node';
import { main, startDaemon } from 'mcpool';
import { fixtureConfig, killMarked, marker, textOf } from '../../../test/helpers/processes.js';
import { memoryDestination } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/mcpool.js', import.meta.url));
const LONG = 120_000;
const TOKEN = 'local-socket-test-token-0123456789';
const mark = marker('socket');

const dirs: string[] = [];
const daemons: ChildProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  for (const daemon of daemons.splice(0)) {
    if (daemon.exitCode !== null || daemon.signalCode !== null) continue;
    const exited = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    await exited;
  }
  killMarked(mark);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A work directory (0755, so that only the state directory inside it keeps others out) with a config of one echo server. */
function workDir(): { dir: string; stateDir: string; socket: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-sock-'));
  dirs.push(dir);
  chmodSync(dir, 0o755);
  const config = join(dir, 'mcpool.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: { port: 0, keepWarm: false } }));
  const stateDir = join(dir, 'state');
  return { dir, stateDir, socket: join(stateDir, 'mcpool.sock'), config };
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** `mcpool serve` as its own process, its token from MCPOOL_TOKEN only; resolves once the socket answers, with its TCP URL. */
async function serve(w: ReturnType<typeof workDir>): Promise<{ child: ChildProcess; url: string; output: string[] }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--config', w.config], {
    env: { PATH: process.env.PATH, HOME: w.dir, MCPOOL_STATE_DIR: w.stateDir, MCPOOL_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  daemons.push(child);
  const output: string[] = [];
  child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  await until('the daemon to listen on its socket', async () => {
    if (child.exitCode !== null) throw new Error(`the daemon exited: ${output.join('')}`);
    return /listening on http/.test(output.join('')) && (await socketAnswers(w.socket));
  });
  const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output.join(''))![1]!;
  return { child, url, output };
}

/** The CLI in process, with no token anywhere: only the state directory is known. */
async function cli(stateDir: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['node', 'mcpool', ...args], { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: { MCPOOL_STATE_DIR: stateDir }, cwd: tmpdir() });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('the local socket', () => {
  it('is 0600 in a 0700 directory; the CLI and the bridge use it with no token anywhere while TCP still wants one; a stop leaves nothing', async () => {
    const w = workDir();
    const daemon = await serve(w);
    expect(statSync(w.socket).mode & 0o777).toBe(0o600);
    expect(statSync(w.stateDir).mode & 0o777).toBe(0o700);
    // The daemon's token came from the environment: there is no token file for anyone to read.
    expect(existsSync(join(w.stateDir, 'token'))).toBe(false);

    const status = await cli(w.stateDir, ['status', '--json']);
    expect(status.code, status.err).toBe(0);
    expect((JSON.parse(status.out) as { servers: { name: string }[] }).servers.map((server) => server.name)).toEqual(['echo']);

    // The bridge finds the socket too: /mcp through it, no token.
    const client = new Client({ name: 'socket-test', version: '1.0.0' });
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'bridge'], env: { PATH: process.env.PATH ?? '', MCPOOL_STATE_DIR: w.stateDir }, stderr: 'pipe' });
    await client.connect(transport);
    cleanups.push(() => client.close());
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('echo__echo');
    expect(textOf(await client.callTool({ name: 'echo__echo', arguments: { text: 'over the socket' } }))).toContain('over the socket');

    const sessions = await cli(w.stateDir, ['sessions']);
    expect(sessions.code, sessions.err).toBe(0);
    // The socket is the operator's: the daemon-wide routes (restart, reload) need `admin`, and it has it.
    const restart = await cli(w.stateDir, ['restart', 'echo']);
    expect(restart.code, restart.err).toBe(0);

    // TCP is unchanged: no token, no answer.
    expect((await fetch(`${daemon.url}/workspace/mcp`)).status).toBe(401);

    await client.close();
    const exited = new Promise<number | null>((resolve) => daemon.child.once('exit', (code) => resolve(code)));
    const stop = await cli(w.stateDir, ['stop']);
    expect(stop.code, stop.err).toBe(0);
    expect(stop.out).toContain(`the daemon at ${w.socket} stopped`);
    expect(await exited).toBe(0);
    expect(existsSync(w.socket)).toBe(false);
    // With no daemon, the CLI has neither a socket nor a token: it says so.
    expect((await cli(w.stateDir, ['status'])).code).toBe(2);
  }, LONG);

  it('@mcpool/client/node: connectLocal gives a client (requests and the event stream) without a token, and nothing without a daemon', async () => {
    const w = workDir();
    expect(await connectLocal({ stateDir: w.stateDir })).toBeUndefined();
    await serve(w);
    const client = await connectLocal({ stateDir: w.stateDir });
    expect(client).toBeDefined();
    expect((await client!.getWorkspaceMcp()).servers.map((server) => server.name)).toEqual(['echo']);
    const controller = new AbortController();
    const stream = client!.events({ signal: controller.signal });
    const created = client!.createSession({ label: 'over-socket' });
    for await (const event of stream) {
      if (event.data.type === 'session_created') break;
    }
    await client!.deleteSession((await created).id);
    controller.abort();
  }, LONG);

  const canSwitchUser = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;
  it.skipIf(!canSwitchUser)('is refused to another user: a probe run as nobody gets EACCES from the directory, and from the socket file itself', async () => {
    const w = workDir();
    await serve(w);
    const probe = (): string =>
      execFileSync(
        'setpriv',
        ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', `require('node:net').connect(${JSON.stringify(w.socket)}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`],
        { encoding: 'utf8', timeout: 30_000 },
      ).trim();
    // The 0700 state directory.
    expect(probe()).toBe('EACCES');
    // Opened for the test: the socket's own 0600 still refuses.
    chmodSync(w.stateDir, 0o755);
    try {
      expect(probe()).toBe('EACCES');
      // The probe itself can connect to a socket it may write to: the refusal is the mode's.
      chmodSync(w.socket, 0o666);
      expect(probe()).toBe('CONNECTED');
    } finally {
      chmodSync(w.socket, 0o600);
      chmodSync(w.stateDir, 0o700);
    }
  }, LONG);

  it('replaces a socket left by a killed daemon, and leaves a live daemon its own', async () => {
    const w = workDir();
    const first = await serve(w);
    const killed = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await killed;
    killMarked(mark);
    // Left behind, and dead: nothing accepts on it.
    expect(statSync(w.socket).isSocket()).toBe(true);
    expect(await socketAnswers(w.socket)).toBe(false);

    const second = await serve(w);
    expect(second.output.join('')).toContain('removed a stale local socket');
    expect((await cli(w.stateDir, ['status'])).code).toBe(0);

    // Another daemon on the same state directory: it runs on TCP only, and leaves the socket alone.
    const logs: string[] = [];
    const third = await startDaemon({ configPath: w.config, env: { MCPOOL_STATE_DIR: w.stateDir, MCPOOL_TOKEN: TOKEN }, destination: memoryDestination(logs) });
    cleanups.push(() => third.stop('test'));
    expect(third.socketPath).toBeUndefined();
    expect(logs.join('\n')).toContain('another daemon answers on');
    expect(await third.stop('test')).toBe(0);
    expect(await socketAnswers(w.socket)).toBe(true);
  }, LONG);

  it('a state directory whose path is too long for a socket: a warning, and TCP alone', async () => {
    const w = workDir();
    const deep = join(w.dir, 'x'.repeat(60), 'y'.repeat(60));
    mkdirSync(deep, { recursive: true });
    const logs: string[] = [];
    const running = await startDaemon({ configPath: w.config, env: { MCPOOL_STATE_DIR: deep, MCPOOL_TOKEN: TOKEN }, destination: memoryDestination(logs) });
    cleanups.push(() => running.stop('test'));
    expect(running.socketPath).toBeUndefined();
    expect(logs.join('\n')).toContain('longer than a Unix socket path may be');
    expect((await fetch(`${running.url}/workspace/mcp`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  }, LONG);
});
