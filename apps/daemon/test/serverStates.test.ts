/**
 * Each configured server's life state — `cold` (listed from its catalog, not started), `starting`,
 * `running`, `stopped` (let go while unused) — with the cost of its last start, on every surface
 * that shows servers: `GET /workspace/mcp` (and so `mcpool status`), the `mcpool_servers{state}`
 * gauge of `/metrics`, and the `server_state` events. A daemon restarted over a catalog its first
 * run wrote; real processes. Both runs use the default config: servers start on first use, so the
 * first run starts echo once to learn its catalog and lets it go, and the second starts nothing.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { DaemonEventPayload, ServerStateEvent, WorkspaceMcpStatus } from '@mcpool/client';
import { main } from 'mcpool';
import { fixtureConfig, marker, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { connectClient } from './gatewayHelpers.js';
import { harness, type Harness } from './helpers.js';

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

const mark = marker('server-states');
// No `daemon` section: the default start mode (lazy) is what is under test.
const doc = { mcpServers: { echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }) } };
const options = { marks: [mark], poolOptions: { drainDelayMs: 50 } };
let h: Harness;
let base: string;
const events: DaemonEventPayload[] = [];
const clients: Client[] = [];

async function echo(): Promise<WorkspaceMcpStatus['servers'][number]> {
  const body = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
  return body.servers.find((server) => server.name === 'echo')!;
}

/** `mcpool_servers{state="…"}` values. */
async function gauge(): Promise<Record<string, number>> {
  const text = (await h.request({ method: 'GET', url: '/metrics' })).body;
  return Object.fromEntries([...text.matchAll(/^mcpool_servers\{state="(\w+)"\} (\d+)$/gm)].map(([, state, value]) => [state!, Number(value)]));
}

async function statusTable(): Promise<string> {
  const out: string[] = [];
  expect(await main(['node', 'mcpool', 'status'], { stdout: (t) => out.push(t), stderr: (t) => out.push(t), env: { MCPOOL_URL: base, MCPOOL_TOKEN: h.token }, cwd: h.dir })).toBe(0);
  return out.join('\n');
}

const stateEvents = (): Omit<ServerStateEvent, 'type'>[] =>
  events.filter((event): event is ServerStateEvent => event.type === 'server_state').map(({ type: _type, ...rest }) => rest);

beforeAll(async () => {
  // A first run learns echo's catalog (a lazy server without one is started once to learn it),
  // then lets it go: nothing holds it (no warm hold), so its process ends.
  const first = await harness(doc, { ...options, start: false });
  const learning: DaemonEventPayload[] = [];
  first.daemon.events.subscribe((event) => learning.push(event.payload));
  await first.daemon.start();
  const catalog = join(first.dir, 'state', 'catalog');
  await vi.waitFor(() => expect(existsSync(catalog) && readdirSync(catalog).some((file) => file.endsWith('.json'))).toBe(true), { timeout: 30_000, interval: 50 });
  await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 30_000, interval: 50 });
  expect(learning.filter((event) => event.type === 'server_state' && event.state === 'starting')).toHaveLength(1);
  h = await harness(doc, { ...options, start: false });
  cpSync(catalog, join(h.dir, 'state', 'catalog'), { recursive: true });
  await first.close();
  h.daemon.events.subscribe((event) => events.push(event.payload));
  await h.daemon.start();
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await h?.close();
});

describe('server life states', () => {
  it('cold from the catalog, starting then running on first use with its start cost, stopped once let go', async () => {
    // 1. Cold: listed from the catalog, nothing started.
    expect(pidsWithMarker(mark)).toEqual([]);
    expect(await echo()).toMatchObject({ status: 'cold', state: 'cold' });
    expect((await echo()).lastStartMs).toBeUndefined();
    expect(await gauge()).toEqual({ cold: 1, starting: 0, running: 0, stopped: 0 });
    expect((await statusTable()).split('\n').find((line) => line.startsWith('echo'))).toMatch(/^echo\s+cold\s+cold\s+disconnected/);
    expect(stateEvents()).toEqual([]);

    // 2. A call starts it: starting, then running with what the start cost.
    const { client, transport } = await connectClient(`${base}/mcp`, h.token);
    clients.push(client);
    expect(textOf(await client.callTool({ name: 'echo__echo', arguments: { text: 'up' } }))).toBe('up');
    const running = await echo();
    expect(running).toMatchObject({ status: 'active', state: 'running' });
    expect(running.lastStartMs).toEqual(expect.any(Number));
    expect(await gauge()).toEqual({ cold: 0, starting: 0, running: 1, stopped: 0 });
    expect((await statusTable()).split('\n').find((line) => line.startsWith('echo'))).toMatch(/^echo\s+active\s+running · start \d+ ms\s+connected/);
    expect(stateEvents()).toEqual([
      { serverName: 'echo', state: 'starting' },
      { serverName: 'echo', state: 'running', lastStartMs: running.lastStartMs },
    ]);

    // 3. Its one session leaves: the entry drains and ends; the server is stopped, its start cost kept.
    await transport.terminateSession();
    await client.close();
    await vi.waitFor(async () => expect((await echo()).state).toBe('stopped'), { timeout: 30_000, interval: 50 });
    expect(await echo()).toMatchObject({ status: 'closed', lastStartMs: running.lastStartMs });
    expect(await gauge()).toEqual({ cold: 0, starting: 0, running: 0, stopped: 1 });
    expect((await statusTable()).split('\n').find((line) => line.startsWith('echo'))).toMatch(/^echo\s+closed\s+stopped \(idle\) · start \d+ ms\s+disconnected/);
    expect(stateEvents().at(-1)).toEqual({ serverName: 'echo', state: 'stopped', lastStartMs: running.lastStartMs });
  });
});
