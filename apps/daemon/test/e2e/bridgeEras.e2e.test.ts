/**
 * `mcpool bridge` serves both protocol eras to its stdio client, end to end: a real `mcpool serve`
 * (its `/mcp`, which speaks 2025-11-25 with sessions) with the listChanged fixture server, and the
 * real `mcpool bridge` process. A 2026-07-28 client opens with `server/discover` (as Claude Code
 * does) or sends modern requests with no discover at all (as the SDK v2 client does after probing
 * a sibling process); a legacy client opens with `initialize`; a request before either gets a
 * -32022 error at once. Only processes this file started are killed (by pid, or by its marker).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { fixtureConfig, killMarked, marker } from '../../../../test/helpers/processes.js';
import { BIN, spawnBridge, type BridgeProcess } from './bridgeProcess.js';

const mark = marker('bridge-eras');
const MODERN = '2026-07-28';
let dir: string;

interface Serve {
  child: ChildProcess;
  exited: Promise<number | null>;
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
  return { child, exited, port: Number(new URL(listening.slice('listening on '.length)).port) };
}

async function stop(daemon: Serve): Promise<void> {
  if (daemon.child.exitCode === null) daemon.child.kill('SIGTERM');
  await daemon.exited;
}

/** A daemon on a port of its own with the listChanged fixture as `lc`; `restart()` brings it back on the same port. */
async function daemonFor(name: string): Promise<{ base: string; url: string; tokenFile: string; daemon: () => Serve; restart: () => Promise<void>; stop: () => Promise<void> }> {
  const base = join(dir, name);
  mkdirSync(base);
  const configPath = join(base, 'mcpool.json');
  const writeConfig = (port: number): void => writeFileSync(configPath, JSON.stringify({ mcpServers: { lc: fixtureConfig('listChanged.mjs', mark) }, daemon: { port, drainDelayMs: 100 } }));
  writeConfig(0);
  let daemon = await serve(configPath, base);
  writeConfig(daemon.port);
  return {
    base,
    url: `http://127.0.0.1:${daemon.port}/mcp`,
    tokenFile: join(base, 'state', 'token'),
    daemon: () => daemon,
    restart: async () => {
      await stop(daemon);
      daemon = await serve(configPath, base);
    },
    stop: () => stop(daemon),
  };
}

/** The `_meta` a 2026-07-28 client puts on every request. */
const meta = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {} },
  'io.modelcontextprotocol/clientInfo': { name: 'probe-like-claude-code', version: '2.1.317' },
  ...extra,
});
const request = (id: string | number, method: string, params: Record<string, unknown> = {}, extraMeta?: Record<string, unknown>): Record<string, unknown> => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { ...params, _meta: meta(extraMeta) },
});
const answer = (bridge: BridgeProcess, id: string | number, timeout?: number): Promise<Record<string, unknown>> => bridge.waitForMessage((m) => m.id === id && m.method === undefined, timeout);
const resultOf = async (bridge: BridgeProcess, id: string | number): Promise<Record<string, unknown>> => {
  const message = await answer(bridge, id);
  if (message.error !== undefined) throw new Error(`request ${id} failed: ${JSON.stringify(message.error)}`);
  return message.result as Record<string, unknown>;
};
const toolNames = (result: Record<string, unknown>): string[] => (result.tools as { name: string }[]).map((tool) => tool.name);
const textOf = (result: unknown): string => (result as { content: { text: string }[] }).content[0]!.text;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-bridge-eras-'));
});
afterAll(() => {
  killMarked(mark);
  rmSync(dir, { recursive: true, force: true });
});

describe('mcpool bridge serves both protocol eras (real daemon, real bridge process)', () => {
  it('Claude Code’s sequence: server/discover, tools/list, tools/call, subscriptions/listen that gets a tagged tools list_changed', async () => {
    const daemon = await daemonFor('probe');
    const bridge = spawnBridge(['--url', daemon.url, '--token-file', daemon.tokenFile], env(daemon.base));
    try {
      bridge.send(request(0, 'server/discover'));
      const discovered = await resultOf(bridge, 0);
      expect(discovered.supportedVersions).toContain(MODERN);
      expect(discovered).toMatchObject({ resultType: 'complete', capabilities: { tools: { listChanged: true } }, ttlMs: 0, cacheScope: 'private' });
      expect((discovered._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: expect.any(String) });
      // The daemon session was opened with the client's own info.
      expect(bridge.logged('the client speaks 2026-07-28')).toHaveLength(1);

      bridge.send(request(1, 'tools/list'));
      const listed = await resultOf(bridge, 1);
      expect(listed).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
      expect(toolNames(listed)).toContain('lc__base');

      bridge.send(request(2, 'tools/call', { name: 'lc__base', arguments: {} }, { progressToken: 'p-2' }));
      const called = await resultOf(bridge, 2);
      expect(called.resultType).toBe('complete');
      expect(textOf(called)).toBe('base');

      bridge.send(request('listen-1', 'subscriptions/listen', { notifications: { toolsListChanged: true, promptsListChanged: false } }));
      const ack = await bridge.waitForMessage((m) => m.method === 'notifications/subscriptions/acknowledged');
      expect(ack.params).toEqual({ notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } });

      // The upstream adds a tool: the listen gets the list_changed, tagged with its id.
      bridge.send(request(3, 'tools/call', { name: 'lc__add_tool', arguments: { name: 'late' } }));
      expect(textOf(await resultOf(bridge, 3))).toBe('added tool late');
      const changed = await bridge.waitForMessage((m) => m.method === 'notifications/tools/list_changed');
      expect(changed.params).toEqual({ _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } });
      bridge.send(request(4, 'tools/list'));
      expect(toolNames(await resultOf(bridge, 4))).toContain('lc__late');

      // Nothing answers the listen while it is open; no un-requested kind was sent; no server→client request came through.
      const messages = bridge.messages();
      expect(messages.filter((m) => m.id === 'listen-1')).toEqual([]);
      expect(messages.filter((m) => m.method === 'notifications/prompts/list_changed' || m.method === 'notifications/resources/list_changed')).toEqual([]);
      expect(messages.filter((m) => m.method !== undefined && m.id !== undefined)).toEqual([]);

      // Cancelled: no more notifications for it.
      bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'listen-1', _meta: meta() } });
      bridge.send(request(5, 'tools/call', { name: 'lc__add_tool', arguments: { name: 'later' } }));
      expect(textOf(await resultOf(bridge, 5))).toBe('added tool later');
      bridge.send(request(6, 'tools/list'));
      expect(toolNames(await resultOf(bridge, 6))).toContain('lc__later');
      expect(bridge.messages().filter((m) => m.method === 'notifications/tools/list_changed')).toHaveLength(1);

      // stdin EOF ends the bridge even with nothing open.
      bridge.child.stdin!.end();
      expect((await bridge.exited).code).toBe(0);
    } finally {
      bridge.child.kill('SIGKILL');
      await daemon.stop();
    }
  });

  it('a request before any handshake gets -32022 at once, and the bridge keeps serving', async () => {
    const daemon = await daemonFor('early');
    const bridge = spawnBridge(['--url', daemon.url, '--token-file', daemon.tokenFile], env(daemon.base));
    try {
      bridge.send({ jsonrpc: '2.0', id: 'early', method: 'tools/list', params: {} });
      const early = await answer(bridge, 'early');
      expect(early.error).toMatchObject({ code: -32022, data: { code: 'MCPOOL_BRIDGE_UNSUPPORTED_PROTOCOL_VERSION', supported: [MODERN] } });
      // A modern request naming a version the bridge does not speak: -32022 with what it asked for.
      bridge.send(request('future', 'tools/list', {}, { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }));
      expect((await answer(bridge, 'future')).error).toMatchObject({ code: -32022, data: { supported: [MODERN], requested: '2099-01-01' } });
      expect(bridge.child.exitCode).toBeNull();

      // A modern request with no server/discover before it is served (the modern era has no handshake).
      bridge.send(request('lazy', 'tools/list'));
      expect(toolNames(await resultOf(bridge, 'lazy'))).toContain('lc__base');
      expect(bridge.child.exitCode).toBeNull();
    } finally {
      bridge.child.kill('SIGKILL');
      await daemon.stop();
    }
  });

  it('a legacy client right after a pre-handshake error is served as before', async () => {
    const daemon = await daemonFor('legacy-after');
    const bridge = spawnBridge(['--url', daemon.url, '--token-file', daemon.tokenFile], env(daemon.base));
    try {
      bridge.send({ jsonrpc: '2.0', id: 'early', method: 'tools/list' });
      expect((await answer(bridge, 'early')).error).toMatchObject({ code: -32022 });
      bridge.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
      const init = await resultOf(bridge, 'init');
      expect(init.protocolVersion).toBe('2025-11-25');
      expect(init.resultType).toBeUndefined();
      bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      bridge.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      const listed = await resultOf(bridge, 1);
      expect(toolNames(listed)).toContain('lc__base');
      // Legacy answers are relayed as the daemon sent them: no modern fields added.
      expect(listed.resultType).toBeUndefined();
    } finally {
      bridge.child.kill('SIGKILL');
      await daemon.stop();
    }
  });

  for (const [label, mode] of [
    ['pinned to 2026-07-28', { pin: MODERN }],
    ["in 'auto' mode (probes a sibling process first)", 'auto'],
  ] as const) {
    it(`an SDK v2 Client ${label} over StdioClientTransport lists and calls tools in the modern era, and its listen sees a tools change`, async () => {
      const daemon = await daemonFor(`sdk-v2-${typeof mode === 'string' ? mode : 'pin'}`);
      const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'bridge', '--url', daemon.url, '--token-file', daemon.tokenFile], env: env(daemon.base), cwd: daemon.base, stderr: 'pipe' });
      transport.stderr!.on('data', () => undefined);
      const refreshed: string[][] = [];
      const client = new Client(
        { name: 'bridge-eras-v2', version: '1.0.0' },
        { versionNegotiation: { mode }, listChanged: { tools: { onChanged: (error, tools) => void (error ? undefined : refreshed.push((tools ?? []).map((tool) => tool.name))) } } },
      );
      try {
        await client.connect(transport);
        expect(client.getProtocolEra()).toBe('modern');
        const { tools } = await client.listTools();
        expect(tools.map((tool) => tool.name)).toContain('lc__base');
        expect(textOf(await client.callTool({ name: 'lc__base', arguments: {} }))).toBe('base');
        // The SDK opened a subscriptions/listen itself; a tools change upstream reaches its handler.
        expect(client.autoOpenedSubscription).toBeDefined();
        expect(textOf(await client.callTool({ name: 'lc__add_tool', arguments: { name: 'seen_by_v2' } }))).toBe('added tool seen_by_v2');
        await vi.waitFor(() => expect(refreshed.some((names) => names.includes('lc__seen_by_v2'))).toBe(true), { timeout: 20_000, interval: 20 });
      } finally {
        await client.close().catch(() => undefined);
        await daemon.stop();
      }
    });
  }

  it('an SDK v1 (legacy) Client still lists and calls tools', async () => {
    const daemon = await daemonFor('sdk-v1');
    const transport = new StdioTransportV1({ command: process.execPath, args: [BIN, 'bridge', '--url', daemon.url, '--token-file', daemon.tokenFile], env: env(daemon.base), cwd: daemon.base, stderr: 'pipe' });
    transport.stderr!.on('data', () => undefined);
    const client = new ClientV1({ name: 'bridge-eras-v1', version: '1.0.0' });
    try {
      await client.connect(transport);
      expect(client.getServerVersion()).toBeDefined();
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('lc__base');
      expect(textOf(await client.callTool({ name: 'lc__base', arguments: {} }))).toBe('base');
    } finally {
      await client.close().catch(() => undefined);
      await daemon.stop();
    }
  });

  it('a modern client survives a daemon restart: its next request works, and its open listen is told to re-list', async () => {
    const daemon = await daemonFor('restart');
    const bridge = spawnBridge(['--url', daemon.url, '--token-file', daemon.tokenFile], env(daemon.base));
    try {
      bridge.send(request(0, 'server/discover'));
      await resultOf(bridge, 0);
      bridge.send(request('listen', 'subscriptions/listen', { notifications: { toolsListChanged: true } }));
      await bridge.waitForMessage((m) => m.method === 'notifications/subscriptions/acknowledged');
      bridge.send(request(1, 'tools/call', { name: 'lc__base', arguments: {} }));
      expect(textOf(await resultOf(bridge, 1))).toBe('base');

      await daemon.restart();

      bridge.send(request(2, 'tools/call', { name: 'lc__base', arguments: {} }));
      const after = await resultOf(bridge, 2);
      expect(after.resultType).toBe('complete');
      expect(textOf(after)).toBe('base');
      expect(bridge.logged('re-initialized: a new daemon session').length).toBeGreaterThanOrEqual(1);
      // The re-init's "lists may have changed" reaches the listen, tagged.
      const changed = await bridge.waitForMessage((m) => m.method === 'notifications/tools/list_changed');
      expect(changed.params).toEqual({ _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen' } });
      bridge.send(request(3, 'tools/list'));
      expect(toolNames(await resultOf(bridge, 3))).toContain('lc__base');
    } finally {
      bridge.child.kill('SIGKILL');
      await daemon.stop();
    }
  });
});
