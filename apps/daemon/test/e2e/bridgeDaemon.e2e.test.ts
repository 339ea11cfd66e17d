/**
 * End to end against the real daemon: `mcpool serve` (its `/mcp` gateway) and `mcpool bridge` as
 * real processes, an SDK `Client` on the bridge's stdio. The daemon restarts on its port under a
 * working client; closing the client's stdin releases the daemon session; `--autostart` starts a
 * daemon on a temporary config and state dir, which this test then stops by its pid. Only
 * processes this file started are counted or killed (by pid, or by this file's marker).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpoolClient } from '@mcpool/client';
import { fixtureConfig, isAlive, killMarked, marker } from '../../../../test/helpers/processes.js';
import { BIN } from './bridgeProcess.js';
import { freePort } from '../../../../test/helpers/ports.js';

const mark = marker('bridge-daemon');
let dir: string;

interface Serve {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  /** The port it listens on, from its 'listening on <url>' line. */
  port: number;
}

function env(base: string): Record<string, string> {
  return { PATH: process.env.PATH!, HOME: base, XDG_STATE_HOME: join(base, 'xdg-state'), XDG_CONFIG_HOME: join(base, 'xdg-config'), MCPOOL_STATE_DIR: join(base, 'state'), MCPOOL_LOG_LEVEL: 'info' };
}

async function serve(configPath: string, base: string): Promise<Serve> {
  const child = spawn(process.execPath, [BIN, 'serve', '--config', configPath], { cwd: base, env: env(base), stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop()!;
    lines.push(...parts.filter(Boolean));
  });
  child.stderr.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = await vi.waitFor(
    () => {
      const line = lines.map((text) => JSON.parse(text) as { msg: string }).find((entry) => entry.msg.startsWith('listening on '));
      if (line === undefined) throw new Error(`not listening yet (exit code ${child.exitCode})`);
      return line.msg;
    },
    { timeout: 30_000, interval: 20 },
  );
  const port = Number(new URL(listening.slice('listening on '.length)).port);
  return { child, lines, exited, port };
}

async function stop(daemon: Serve): Promise<void> {
  if (daemon.child.exitCode === null) daemon.child.kill('SIGTERM');
  await daemon.exited;
}

function bridgeClient(args: string[], base: string): { client: Client; transport: StdioClientTransport; stderr: string[] } {
  const stderr: string[] = [];
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'bridge', ...args], env: env(base), cwd: base, stderr: 'pipe' });
  transport.stderr!.on('data', (chunk: Buffer) => stderr.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  return { client: new Client({ name: 'bridge-daemon-e2e', version: '1.0.0' }), transport, stderr };
}

const text = (result: unknown): string => (result as { content: { text: string }[] }).content[0]!.text;
const logged = (lines: string[], text: string): number => lines.filter((line) => line.includes(text)).length;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-bridge-daemon-'));
});
afterAll(() => {
  killMarked(mark);
  rmSync(dir, { recursive: true, force: true });
});

describe('mcpool bridge ↔ mcpool serve (real processes)', () => {
  it('keeps its stdio client working across a daemon restart (one re-init), and releases the session on stdin EOF', async () => {
    const base = join(dir, 'restart');
    mkdirSync(base);
    const configPath = join(base, 'mcpool.json');
    const writeConfig = (port: number): void =>
      writeFileSync(configPath, JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: { port, drainDelayMs: 100 } }));
    // The first daemon takes a port the kernel picks; it comes back on that one.
    writeConfig(0);
    let daemon = await serve(configPath, base);
    const port = daemon.port;
    writeConfig(port);
    const tokenFile = join(base, 'state', 'token');
    const rest = new McpoolClient({ baseUrl: `http://127.0.0.1:${port}`, token: readFileSync(tokenFile, 'utf8').trim() });
    const refs = async (): Promise<number> => (await rest.getWorkspaceMcp()).servers.find((s) => s.name === 'echo')!.entrySummary.reduce((sum, entry) => sum + entry.refs, 0);

    const { client, transport, stderr } = bridgeClient(['--url', `http://127.0.0.1:${port}/mcp`, '--token-file', tokenFile], base);
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('echo__echo');
      expect(text(await client.callTool({ name: 'echo__echo', arguments: { text: 'before' } }))).toBe('before');

      // 1. The daemon restarts on the same port (same state dir, so the same token).
      await stop(daemon);
      daemon = await serve(configPath, base);
      // 2. The next call works after exactly one re-init.
      expect(text(await client.callTool({ name: 'echo__echo', arguments: { text: 'after' } }))).toBe('after');
      expect(logged(stderr, 're-initialized: a new daemon session')).toBe(1);
      expect(errors).toEqual([]);

      // 3. Closing the client's stdin: the bridge DELETEs its session, the daemon lets go of its ref.
      const held = await refs();
      const pid = transport.pid!;
      const closedAt = Date.now();
      await client.close();
      await vi.waitFor(() => expect(isAlive(pid)).toBe(false), { timeout: 15_000, interval: 10 });
      // Promptly (a generous bound: the machine may be busy).
      expect(Date.now() - closedAt).toBeLessThan(10_000);
      await vi.waitFor(async () => expect(await refs()).toBe(held - 1), { timeout: 15_000, interval: 20 });
    } finally {
      await client.close().catch(() => undefined);
      await stop(daemon);
    }
  });

  it('--autostart starts a daemon on a temporary config and state dir when none answers', async () => {
    const base = join(dir, 'autostart');
    mkdirSync(base);
    const port = await freePort();
    const configPath = join(base, 'mcpool.json');
    writeFileSync(configPath, JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: { port } }));
    const { client, transport, stderr } = bridgeClient(['--autostart', '--config', configPath], base);
    let daemonPid: number | undefined;
    try {
      await client.connect(transport);
      const started = stderr.map((line) => JSON.parse(line) as { msg: string; pid?: number }).find((line) => line.msg.startsWith('no daemon answered: started'));
      daemonPid = started?.pid;
      expect(daemonPid).toBeGreaterThan(0);
      expect(text(await client.callTool({ name: 'echo__echo', arguments: { text: 'autostarted' } }))).toBe('autostarted');
      // Its log went to the state dir, not to the bridge's stdout.
      expect(readFileSync(join(base, 'state', 'daemon.log'), 'utf8')).toContain('listening on');
      await client.close();
      // Detached: it outlives the bridge.
      expect(isAlive(daemonPid!)).toBe(true);
    } finally {
      await client.close().catch(() => undefined);
      if (daemonPid !== undefined && isAlive(daemonPid)) {
        process.kill(daemonPid, 'SIGTERM');
        await vi.waitFor(() => expect(isAlive(daemonPid!)).toBe(false), { timeout: 15_000, interval: 20 });
      }
    }
  });
});
