/**
 * The daemon on a real socket (one `listen({port: 0, host: '127.0.0.1'})` smoke test, fastify
 * docs/Guides/Testing.md), driven by `@mcpool/client`: the event stream with Last-Event-ID, the
 * config file watch, the built-in default config, and the start failures (bad config → exit
 * code 2, port in use → 3), each with a clear message.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { McpoolClient, McpoolHttpError, type DaemonEvent, type EventStream } from '@mcpool/client';
import { StartError, startDaemon, type RunningDaemon } from 'mcpool';
import { fixtureConfig, killMarked, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { memoryDestination } from './helpers.js';

// Each test starts a real daemon and real servers: on a loaded machine that alone takes seconds.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-listen-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Started {
  running: RunningDaemon;
  client: McpoolClient;
  logs: string[];
  dir: string;
  configPath: string;
}

async function start(doc: unknown, mark: string, extraEnv: Record<string, string> = {}): Promise<Started> {
  const dir = tempDir();
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify(doc));
  const logs: string[] = [];
  const env = { MCPOOL_STATE_DIR: join(dir, 'state'), ...extraEnv };
  const running = await startDaemon({ configPath, env, cwd: dir, overrides: { port: 0 }, destination: memoryDestination(logs) });
  cleanups.push(async () => {
    await running.stop('test');
    killMarked(mark);
  });
  await running.warmed;
  const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
  return { running, client: new McpoolClient({ baseUrl: running.url, token }), logs, dir, configPath };
}

/** Collects the stream's events until `until` holds for the list. */
async function collect(stream: EventStream, until: (events: DaemonEvent[]) => boolean): Promise<DaemonEvent[]> {
  const events: DaemonEvent[] = [];
  for await (const event of stream) {
    events.push(event);
    if (until(events)) break;
  }
  return events;
}

describe('the daemon on a socket', () => {
  it('serves the client over 127.0.0.1, streams events, and resumes after Last-Event-ID', async () => {
    const mark = marker('listen');
    const { running, client, dir } = await start({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: { heartbeatMs: 50 } }, mark);
    // Servers start on first use: a session holds echo, so the sessions followed below change no entry.
    await client.createSession({ label: 'holder' });
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(running.app.server.address()).toMatchObject({ address: '127.0.0.1' });
    expect((await client.getWorkspaceMcp()).servers.map((s) => [s.name, s.entryCount])).toEqual([['echo', 1]]);
    expect(await client.ready()).toEqual({ ready: true, servers: { total: 1, ready: 1, failed: 0, unavailable: 0 } });

    // 1. Follow the stream while a session comes and goes.
    const stream = client.events({ retryMs: 10 });
    const first = collect(stream, (events) => events.some((e) => e.data.type === 'session_closed'));
    await vi.waitFor(() => expect(running.daemon.events.subscribers).toBe(1), { timeout: 2000, interval: 10 });
    const session = await client.createSession({ label: 'listen' });
    await client.deleteSession(session.id);
    const seen = await first;
    expect(seen.map((e) => e.data.type)).toEqual(['session_created', 'session_closed']);
    expect(seen.every((e) => e.id?.startsWith(`${running.daemon.events.epoch}-`))).toBe(true);
    const resumeFrom = stream.lastEventId!;
    expect(resumeFrom).toBe(seen[1]!.id);

    // 2. Events happen while nobody listens; a new stream from Last-Event-ID gets exactly those.
    await client.restartServer('echo');
    const resumed = await collect(client.events({ lastEventId: resumeFrom }), (events) => events.some((e) => e.data.type === 'server_restarted'));
    expect(resumed.map((e) => e.data.type)).not.toContain('session_closed');
    expect(resumed.at(-1)!.data).toMatchObject({ type: 'server_restarted', serverName: 'echo', entries: [{ entryIndex: 0, restarted: true }] });

    // 3. An id from another daemon run: an events_lost event first, then the buffer.
    const lost = await collect(client.events({ lastEventId: 'deadbeef-3' }), (events) => events.length >= 2);
    expect(lost[0]).toMatchObject({ data: { type: 'events_lost', reason: 'daemon_restarted' } });
    expect(lost[0]!.id).toBeUndefined();

    // 4. Heartbeats flow (raw socket, so the comment lines are visible).
    const raw = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${running.url}/workspace/mcp/events`, { headers: { authorization: `Bearer ${readFileSync(join(dir, 'state', 'token'), 'utf8').trim()}` } }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString();
          if (text.includes(': heartbeat')) {
            req.destroy();
            resolve(text);
          }
        });
      });
      req.on('error', reject);
      req.end();
    });
    expect(raw).toContain('retry: 1000');
    expect(raw).toContain(': connected');
  });

  it('ends open streams with a shutdown event when it stops, and leaves no server process', async () => {
    const mark = marker('listen-stop');
    const { running, client } = await start({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) } }, mark);
    expect(pidsWithMarker(mark)).toHaveLength(1);
    const events: DaemonEvent[] = [];
    const done = (async () => {
      for await (const event of client.events({ reconnect: false })) events.push(event);
    })();
    await vi.waitFor(() => expect(running.daemon.events.subscribers).toBe(1), { timeout: 2000, interval: 10 });
    expect(await running.stop('test')).toBe(0);
    await done;
    expect(events.map((e) => e.data.type)).toContain('shutdown');
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 5000, interval: 50 });
    await expect(client.health()).rejects.toMatchObject({ code: 'MCPOOL_UNREACHABLE' });
  });

  it('reloads when the config file changes (watch), and says so on the stream', async () => {
    const mark = marker('listen-watch');
    const { running, client, configPath } = await start({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) } }, mark);
    const stream = client.events();
    const reloaded = collect(stream, (events) => events.some((e) => e.data.type === 'config_reloaded'));
    await vi.waitFor(() => expect(running.daemon.events.subscribers).toBe(1), { timeout: 2000, interval: 10 });
    writeFileSync(configPath, JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark), prompts: fixtureConfig('promptsOnly.mjs', mark) } }));
    const events = await reloaded;
    expect(events.at(-1)!.data).toEqual({ type: 'config_reloaded', trigger: 'file', added: ['prompts'], removed: [], changed: [] });
    expect((await client.getWorkspaceMcp()).servers.map((s) => s.name)).toEqual(['echo', 'prompts']);
  });

  it('runs the bundled demo server when no config exists anywhere, and its first log line says so', async () => {
    const dir = tempDir();
    const logs: string[] = [];
    const env = { MCPOOL_STATE_DIR: join(dir, 'state'), XDG_CONFIG_HOME: join(dir, 'config') };
    const running = await startDaemon({ env, cwd: dir, overrides: { port: 0 }, destination: memoryDestination(logs) });
    cleanups.push(async () => void (await running.stop('test')));
    await running.warmed;
    expect(JSON.parse(logs[0]!).msg).toMatch(/^no config file found: running the built-in default config \(the bundled demo server\)/);
    const client = new McpoolClient({ baseUrl: running.url, token: readFileSync(join(dir, 'state', 'token'), 'utf8').trim() });
    const session = await client.createSession();
    expect(session.servers).toEqual([expect.objectContaining({ name: 'demo', status: 'connected', tools: ['hello', 'add', 'time'] })]);
    const { result } = await client.callTool(session.id, { server: 'demo', name: 'hello', arguments: { name: 'mcpool' } });
    expect((result.content as { text: string }[])[0]!.text).toMatch(/^Hello, mcpool!/);
    expect(logs.some((line) => JSON.parse(line).msg === '1/1 servers ready')).toBe(true);
  });
});

describe('start failures', () => {
  it('a bad config: exit code 2 and a message naming the file and the path, nothing listening', async () => {
    const dir = tempDir();
    const configPath = join(dir, 'bad.json');
    writeFileSync(configPath, JSON.stringify({ mcpServers: { echo: { command: 'node', args: 'x' } }, daemon: { port: 'x' } }));
    const logs: string[] = [];
    const error = await startDaemon({ configPath, env: { MCPOOL_STATE_DIR: join(dir, 'state') }, destination: memoryDestination(logs) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartError);
    expect((error as StartError).exitCode).toBe(2);
    const fatal = JSON.parse(logs.at(-1)!) as { level: number; msg: string };
    expect(fatal.level).toBe(60);
    expect(fatal.msg).toContain(configPath);
    expect(fatal.msg).toContain('daemon.port');
    expect(fatal.msg).toContain('mcpServers.echo.args');
  });

  it('a port in use: exit code 3 and a message saying so, and the servers it never needed are not started', async () => {
    const mark = marker('listen-inuse');
    const { running, dir } = await start({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) } }, mark);
    const configPath = join(dir, 'second.json');
    const mark2 = marker('listen-inuse-2');
    writeFileSync(configPath, JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark2) } }));
    const logs: string[] = [];
    const error = await startDaemon({ configPath, env: { MCPOOL_STATE_DIR: join(dir, 'state') }, overrides: { port: running.port }, destination: memoryDestination(logs) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartError);
    expect((error as StartError).exitCode).toBe(3);
    expect(JSON.parse(logs.at(-1)!).msg).toBe(`cannot start: 127.0.0.1:${running.port} is already in use (another mcpool?); choose another port with --port or MCPOOL_PORT`);
    expect(pidsWithMarker(mark2)).toEqual([]);
  });

  it('a read-only client cannot restart over the wire either (403), and an unknown id is a 404', async () => {
    const mark = marker('listen-rights');
    const { running } = await start({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: { clients: [{ id: 'viewer', tokenEnv: 'VIEWER_TOKEN', rights: ['read'] }] } }, mark, {
      VIEWER_TOKEN: 'viewer-token-0123456789',
    });
    const viewer = new McpoolClient({ baseUrl: running.url, token: 'viewer-token-0123456789' });
    expect((await viewer.getWorkspaceMcp()).initialized).toBe(true);
    const error = await viewer.restartServer('echo').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpoolHttpError);
    expect(error).toMatchObject({ statusCode: 403, code: 'MCPOOL_FORBIDDEN' });
    await expect(viewer.getSession('nope')).rejects.toMatchObject({ statusCode: 404 });
  });
});
