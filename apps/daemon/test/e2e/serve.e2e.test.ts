/**
 * End to end: the real `mcpool serve` process (compiled JS, `bin/mcpool.js`) on a temporary
 * config with two servers from npm (`@modelcontextprotocol/server-memory`,
 * `@modelcontextprotocol/server-filesystem`, run with this node from their installed bin files)
 * and a fixture, driven with `@mcpool/client`. No sleeps: every wait is on a log line, an event
 * or a bounded `vi.waitFor`.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { McpoolClient, McpoolHttpError, isRestartEntries, type DaemonEvent, type DaemonEventPayload, type WorkspaceMcpStatus } from '@mcpool/client';
import { FIXTURES, isAlive, killMarked, marker, pidFromResult, pidsWithMarker } from '../../../../test/helpers/processes.js';

const BIN = fileURLToPath(new URL('../../bin/mcpool.js', import.meta.url));
const require = createRequire(import.meta.url);

/** The JS file an npm package's bin points at, run with this node (never npx, never the network). */
function binOf(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> };
  return join(dirname(manifest), Object.values(bin)[0]!);
}

const mark = marker('e2e');
const CANARY = `canary-e2e-${randomUUID()}`;
const VIEWER_TOKEN = `viewer-${randomUUID()}`;
let dir: string;
let configPath: string;
let daemon: ChildProcess;
let client: McpoolClient;
let url: string;
const stdout: string[] = [];
const stderr: string[] = [];
const bodies: string[] = [];
const events: DaemonEvent[] = [];
const streamStop = new AbortController();
let streamDone: Promise<void>;

function config(echoFlavour: string): Record<string, unknown> {
  return {
    mcpServers: {
      memory: { command: process.execPath, args: [binOf('@modelcontextprotocol/server-memory'), mark], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
      files: { command: process.execPath, args: [binOf('@modelcontextprotocol/server-filesystem'), join(dir, 'files'), mark] },
      echo: { command: process.execPath, args: [join(FIXTURES, 'echo.mjs'), mark], env: { FLAVOUR: echoFlavour, CANARY } },
    },
    // Every server warm from the start, held across reloads: servers that start with the daemon
    // (`start: "eager"`; the default starts them on first use, see lazyStart.e2e.test.ts).
    daemon: { port: 0, start: 'eager', drainDelayMs: 300, clients: [{ id: 'viewer', tokenEnv: 'E2E_VIEWER_TOKEN', rights: ['read'] }] },
  };
}

/** Resolves with the first stdout log line (parsed) that `match` accepts. */
function logLine(match: (line: { msg: string; [key: string]: unknown }) => boolean, timeoutMs = 20_000): Promise<{ msg: string; [key: string]: unknown }> {
  return vi.waitFor(
    () => {
      for (const text of stdout) {
        const line = JSON.parse(text) as { msg: string };
        if (match(line)) return line;
      }
      throw new Error('not logged yet');
    },
    { timeout: timeoutMs, interval: 20 },
  );
}

const ofType = <T extends DaemonEventPayload['type']>(type: T) => events.filter((e) => e.data.type === type).map((e) => e.data as Extract<DaemonEventPayload, { type: T }>);
const waitForEvent = (predicate: (event: DaemonEventPayload) => boolean) =>
  vi.waitFor(() => expect(events.some((e) => predicate(e.data))).toBe(true), { timeout: 10_000, interval: 20 });

async function status(): Promise<WorkspaceMcpStatus> {
  const result = await client.getWorkspaceMcp();
  bodies.push(JSON.stringify(result));
  return result;
}

const entries = (s: WorkspaceMcpStatus, name: string) => s.servers.find((server) => server.name === name)?.entrySummary.map(({ entryIndex, refs, status }) => ({ entryIndex, refs, status }));

/** A raw request with headers fetch would not send as given (Origin, Host). */
function raw(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-e2e-'));
  mkdirSync(join(dir, 'files'));
  writeFileSync(join(dir, 'files', 'hello.txt'), 'hello from e2e');
  configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify(config('one')));
  daemon = spawn(process.execPath, [BIN, 'serve', '--config', configPath], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, XDG_STATE_HOME: join(dir, 'xdg-state'), MCPOOL_STATE_DIR: join(dir, 'state'), E2E_VIEWER_TOKEN: VIEWER_TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let pending = '';
  daemon.stdout!.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    stdout.push(...lines.filter((line) => line.length > 0));
  });
  daemon.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const listening = await logLine((line) => line.msg.startsWith('listening on '));
  url = listening.msg.slice('listening on '.length);
  const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
  client = new McpoolClient({ baseUrl: url, token });
  // Generous: on a loaded machine the npm servers alone take many seconds to start.
  await vi.waitFor(async () => expect((await client.ready()).ready).toBe(true), { timeout: 90_000, interval: 50 });
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  streamDone = (async () => {
    for await (const event of client.events({ signal: streamStop.signal, retryMs: 50, onOpen: () => opened() })) events.push(event);
  })();
  await open;
}, 150_000);

afterAll(async () => {
  // E2E_DEBUG=1 prints what the daemon logged above info, to see why a run failed.
  if (process.env.E2E_DEBUG) for (const line of [...stdout, ...stderr]) if (!/"level":[23]0,/.test(line)) process.stderr.write(`${line.slice(0, 600)}\n`);
  streamStop.abort();
  if (daemon.exitCode === null) daemon.kill('SIGKILL');
  killMarked(mark);
  rmSync(dir, { recursive: true, force: true });
});

describe('mcpool serve (real process)', () => {
  it('says which config it runs first, listens on 127.0.0.1, and reads status with every server warm', async () => {
    expect(JSON.parse(stdout[0]!).msg).toBe(`config ${configPath}: 3 server(s) (memory, files, echo)`);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(stdout.some((line) => JSON.parse(line).msg === '3/3 servers ready')).toBe(true);
    const s = await status();
    expect(s.initialized).toBe(true);
    expect(s.servers.map((server) => [server.name, server.status, server.entryCount])).toEqual([
      ['echo', 'active', 1],
      ['files', 'active', 1],
      ['memory', 'active', 1],
    ]);
    expect(s.budget).toMatchObject({ kind: 'mcp_budget', scope: 'workspace', liveCount: 3 });
    expect(pidsWithMarker(mark)).toHaveLength(3);
  });

  it('runs tools of the npm servers and the fixture through a session', async () => {
    const session = await client.createSession({ label: 'e2e' });
    bodies.push(JSON.stringify(session));
    expect(session.servers.map((s) => [s.name, s.status])).toEqual([
      ['echo', 'connected'],
      ['files', 'connected'],
      ['memory', 'connected'],
    ]);
    const created = await client.callTool(session.id, { server: 'memory', name: 'create_entities', arguments: { entities: [{ name: 'mcpool', entityType: 'project', observations: ['pools MCP servers'] }] } });
    expect(JSON.stringify(created.result)).toContain('mcpool');
    const file = await client.callTool(session.id, { server: 'files', name: 'read_text_file', arguments: { path: join(dir, 'files', 'hello.txt') } });
    expect(JSON.stringify(file.result)).toContain('hello from e2e');
    await client.deleteSession(session.id);
  });

  it('restarts a server: the legacy shape for one entry, a new process behind it', async () => {
    const session = await client.createSession({ servers: ['echo'] });
    const before = pidFromResult((await client.callTool(session.id, { server: 'echo', name: 'pid' })).result);
    const response = await client.restartServer('echo');
    expect(response).toEqual({ restarted: true, durationMs: expect.any(Number) });
    const after = pidFromResult((await client.callTool(session.id, { server: 'echo', name: 'pid' })).result);
    expect(after).not.toBe(before);
    expect(isAlive(before)).toBe(false);
    await client.deleteSession(session.id);
  });

  it('reloads a changed config: old and new entries coexist, restart answers per entry, the old one drains', async () => {
    // 1. A session holds today's echo (entry 0).
    const old = await client.createSession({ label: 'old' });
    expect(old.servers.find((s) => s.name === 'echo')!.entryIndex).toBe(0);
    // 2. The file changes: the daemon notices by itself (watch) and says so on the stream.
    writeFileSync(configPath, JSON.stringify(config('two')));
    await waitForEvent((e) => e.type === 'config_reloaded' && e.trigger === 'file');
    expect(ofType('config_reloaded').at(-1)).toMatchObject({ changed: ['echo'], added: [], removed: [] });
    // An explicit reload now finds nothing new.
    expect(await client.reloadAll()).toMatchObject({ source: configPath, changed: [], unchanged: ['echo', 'files', 'memory'] });
    // 3. Both echo entries live: the old for its session, the new for everyone after.
    expect(entries(await status(), 'echo')).toEqual([
      { entryIndex: 0, refs: 1, status: 'active' },
      { entryIndex: 1, refs: 1, status: 'active' },
    ]);
    const fresh = await client.createSession({ servers: ['echo'] });
    expect(fresh.servers[0]!.entryIndex).toBe(1);
    const flavour = await client.callTool(fresh.id, { server: 'echo', name: 'env', arguments: { name: 'FLAVOUR' } });
    expect((flavour.result.content as { text: string }[])[0]!.text).toBe('two');
    // 4. Two fingerprints share the name: restart answers per entry.
    const restarted = await client.restartServer('echo');
    expect(isRestartEntries(restarted) && restarted.entries.map((e) => [e.entryIndex, e.restarted])).toEqual([
      [0, true],
      [1, true],
    ]);
    expect(await client.restartServer('echo', { entryIndex: 1 })).toEqual({ entries: [{ entryIndex: 1, restarted: true, durationMs: expect.any(Number) }] });
    // 5. The old session leaves: entry 0 drains and goes.
    await client.deleteSession(old.id);
    await waitForEvent((e) => e.type === 'entry_status' && e.serverName === 'echo' && e.entryIndex === 0 && e.status === 'gone');
    expect(entries(await status(), 'echo')).toEqual([{ entryIndex: 1, refs: 2, status: 'active' }]);
    await client.deleteSession(fresh.id);
  });

  it('refuses bad input 400, a bad token 401, a missing right or a foreign Origin/Host 403, an unknown id 404', async () => {
    const expectHttp = async (promise: Promise<unknown>, statusCode: number, code: string): Promise<void> => {
      const error = await promise.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpoolHttpError);
      expect(error).toMatchObject({ statusCode, code });
    };
    await expectHttp(client.createSession({ mcpServers: 5 } as never), 400, 'MCPOOL_BAD_REQUEST');
    await expectHttp(client.createSession({ mcpServers: { x: { command: 5 } } }), 400, 'MCPOOL_CONFIG_INVALID');
    await expectHttp(new McpoolClient({ baseUrl: url, token: 'not-the-token-0123456789' }).getWorkspaceMcp(), 401, 'MCPOOL_UNAUTHORIZED');
    const viewer = new McpoolClient({ baseUrl: url, token: VIEWER_TOKEN });
    expect((await viewer.getWorkspaceMcp()).initialized).toBe(true);
    await expectHttp(viewer.restartServer('echo'), 403, 'MCPOOL_FORBIDDEN');
    await expectHttp(viewer.createSession({ mcpServers: { evil: { command: 'sh', args: ['-c', 'id'] } } }), 403, 'MCPOOL_FORBIDDEN');
    await expectHttp(client.deleteSession('no-such-session'), 404, 'MCPOOL_NOT_FOUND');
    await expectHttp(client.restartServer('no-such-server'), 404, 'MCPOOL_NOT_FOUND');
    const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
    const origin = await raw('/workspace/mcp', { authorization: `Bearer ${token}`, origin: 'http://evil.example.com' });
    expect(origin.status).toBe(403);
    expect(JSON.parse(origin.body)).toMatchObject({ statusCode: 403, code: 'MCPOOL_FORBIDDEN', error: 'Forbidden' });
    expect((await raw('/workspace/mcp', { authorization: `Bearer ${token}`, host: 'evil.example.com' })).status).toBe(403);
  });

  it('followed the event stream all along: lifecycle, restarts, sessions', () => {
    const types = new Set(events.map((e) => e.data.type));
    for (const type of ['entry_status', 'server_restarted', 'session_created', 'session_closed', 'config_reloaded']) expect(types, type).toContain(type);
    expect(events.every((e, i) => i === 0 || e.id === undefined || events[i - 1]!.id === undefined || Number(e.id.split('-')[1]) > Number(events[i - 1]!.id!.split('-')[1]))).toBe(true);
  });

  it('stops on SIGTERM with exit code 0, ends the stream, and leaves no child process behind', async () => {
    const exited = new Promise<number | null>((resolve) => daemon.once('exit', (code) => resolve(code)));
    daemon.kill('SIGTERM');
    expect(await exited).toBe(0);
    // The client would reconnect (to a daemon that may come back); this test is done with it.
    await vi.waitFor(() => expect(ofType('shutdown')).toHaveLength(1), { timeout: 2000, interval: 10 });
    streamStop.abort();
    await streamDone;
    expect(ofType('shutdown')).toEqual([{ type: 'shutdown', signal: 'SIGTERM' }]);
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 5000, interval: 50 });
    expect(isAlive(daemon.pid!)).toBe(false);
    // The daemon's own lines (actor threads' records come through the same logger, tagged `actor`).
    const messages = stdout.map((line) => JSON.parse(line) as { msg: string; component?: string }).filter((record) => record.component !== 'actor').map((record) => record.msg);
    // (each server's end is one `<name>#<i> gone` line among them)
    expect(messages.filter((msg) => !msg.endsWith(' gone')).slice(-4)).toEqual(['SIGTERM: shutting down', 'shutting down', 'pool drained', 'stopped']);
    // Nothing the daemon printed or answered holds the env secret.
    expect([...stdout, ...stderr, ...bodies, JSON.stringify(events)].join('\n')).not.toContain(CANARY);
  });
});
