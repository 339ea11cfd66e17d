/**
 * Lazy start from the catalog, on the real `mcpool serve` process restarted on its own state dir:
 * the first run learns each server (started once, its catalog written); the second lists every
 * server to sessions of both eras from the catalog with no server running, starts exactly the
 * server a call needs, and tells the sessions `list_changed` when a server's live tools differ
 * from its catalog; a third run with one server's config changed ignores that server's old
 * catalog (it is started to learn it) while the others stay cold.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { McpoolClient, type WorkspaceMcpStatus } from '@mcpool/client';
import { FIXTURES, killMarked, marker, pidsWithMarker, textOf } from '../../../../test/helpers/processes.js';
import { connectClient, modernRequest, responseOf } from '../gatewayHelpers.js';
import { startDaemon, type DaemonProcess } from './gatewayHelpers.js';

const mark = marker('lazy-e2e');
const LONG = 180_000;
const clients: Client[] = [];
let daemon: DaemonProcess | undefined;

function doc(echoArgs: string[] = []): unknown {
  return {
    mcpServers: {
      echo: { command: process.execPath, args: [`${FIXTURES}echo.mjs`, mark, ...echoArgs], sharing: 'shared' },
      tools: { command: process.execPath, args: [`${FIXTURES}envTools.mjs`, mark], env: { FIXTURE_TOOLS: 'alpha,beta' }, sharing: 'shared' },
      dual: { command: process.execPath, args: [`${FIXTURES}v2EraServer.mjs`, mark], sharing: 'shared' },
    },
    daemon: { port: 0, watchConfig: false, start: 'lazy' },
  };
}

async function statusOf(d: DaemonProcess): Promise<Record<string, WorkspaceMcpStatus['servers'][number]>> {
  const status = await new McpoolClient({ baseUrl: d.url, token: d.token }).getWorkspaceMcp();
  return Object.fromEntries(status.servers.map((server) => [server.name, server]));
}

/** The servers whose entries this daemon process started, by its log. */
const started = (d: DaemonProcess): string[] => [...new Set(d.lines.filter((line) => line.msg === 'entry ready').map((line) => String(line.server)))].sort();

async function sdkClient(d: DaemonProcess): Promise<Client> {
  const { client } = await connectClient(`${d.url}/mcp`, d.token);
  clients.push(client);
  return client;
}

const catalogDir = (dir: string): string => join(dir, 'state', 'catalog');
const records = (dir: string): { file: string; record: { serverInfo?: { name: string }; era?: string; tools: { name: string }[] } }[] =>
  existsSync(catalogDir(dir))
    ? readdirSync(catalogDir(dir))
        .filter((file) => file.endsWith('.json'))
        .map((file) => ({ file, record: JSON.parse(readFileSync(join(catalogDir(dir), file), 'utf8')) as never }))
    : [];

async function stopDaemon(d: DaemonProcess): Promise<void> {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  expect(await d.stop()).toBe(0);
  // The daemon ends its servers before it exits; what is left of them is gone by now.
  await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 30_000, interval: 100 });
}

afterAll(() => {
  daemon?.cleanup();
  killMarked(mark);
});

describe('lazy start from the catalog, across daemon restarts', () => {
  it('lists from the catalog with nothing running, starts exactly what a call needs, and ignores a changed config’s catalog', async () => {
    // First run: no catalog yet, so each server is started once to learn it.
    daemon = await startDaemon(doc());
    const dir = daemon.dir;
    await vi.waitFor(() => expect(records(dir)).toHaveLength(3), { timeout: 60_000, interval: 100 });
    expect(records(dir).find(({ record }) => record.serverInfo?.name === 'fixture-dual-era')?.record.era).toBe('modern');
    expect(records(dir).find(({ record }) => record.serverInfo?.name === 'fixture-env-tools')?.record.era).toBe('legacy');
    await stopDaemon(daemon);

    // The tools server's catalog lacks one of the tools it has now (it changed since it was listed).
    const envTools = records(dir).find(({ record }) => record.serverInfo?.name === 'fixture-env-tools')!;
    writeFileSync(join(catalogDir(dir), envTools.file), JSON.stringify({ ...envTools.record, tools: envTools.record.tools.filter((tool) => tool.name !== 'beta') }));

    // Second run: every server is cold; three sessions (two legacy, one modern) list them all.
    daemon = await startDaemon(doc(), {}, dir);
    const d = daemon;
    await d.logLine((line) => line.msg.startsWith('3/3 servers ready'));
    expect(started(d)).toEqual([]);
    let status = await statusOf(d);
    expect(Object.values(status).map((server) => [server.name, server.status, server.entryCount])).toEqual([
      ['dual', 'cold', 0],
      ['echo', 'cold', 0],
      ['tools', 'cold', 0],
    ]);
    expect(pidsWithMarker(mark)).toEqual([]);
    const first = await sdkClient(d);
    const second = await sdkClient(d);
    let changed = 0;
    second.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed += 1;
    });
    const expected = ['dual__echo', 'echo__echo', 'tools__alpha'];
    for (const client of [first, second]) {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(expected));
      expect(names).not.toContain('tools__beta');
    }
    const modernTarget = { base: d.url, token: d.token };
    const modernNames = (responseOf(await modernRequest(modernTarget, 'tools/list')).result as { tools: { name: string }[] }).tools.map((tool) => tool.name);
    expect(modernNames).toEqual(expect.arrayContaining(expected));
    // A server's own endpoint, as an editor reads its metadata before it connects.
    const own = responseOf(await modernRequest(modernTarget, 'tools/list', {}, { path: '/mcp/dual' })).result as { tools: { name: string }[] };
    expect(own.tools.map((tool) => tool.name)).toContain('echo');
    status = await statusOf(d);
    expect(Object.values(status).map((server) => server.status)).toEqual(['cold', 'cold', 'cold']);
    expect(pidsWithMarker(mark)).toEqual([]);

    // A call starts its server and no other.
    expect(textOf(await first.callTool({ name: 'echo__echo', arguments: { text: 'woke' } }))).toBe('woke');
    status = await statusOf(d);
    expect(status.echo!.status).not.toBe('cold');
    expect(status.echo!.entryCount).toBe(1);
    expect([status.tools!.status, status.dual!.status]).toEqual(['cold', 'cold']);

    // The tools server lists more than its catalog said: the sessions are told.
    expect(textOf(await first.callTool({ name: 'tools__alpha', arguments: {} }))).toBe('alpha');
    await vi.waitFor(() => expect(changed).toBeGreaterThan(0), { timeout: 20_000, interval: 20 });
    expect((await second.listTools()).tools.map((tool) => tool.name)).toContain('tools__beta');
    expect((await statusOf(d)).dual!.status).toBe('cold');

    // A modern call starts the modern server.
    const answer = responseOf(await modernRequest(modernTarget, 'tools/call', { name: 'dual__echo', arguments: { text: 'modern' } }));
    expect(textOf(answer.result as never)).toBe('modern');
    status = await statusOf(d);
    expect(status.dual!.status).not.toBe('cold');
    expect(status.dual!.entrySummary[0]?.era).toBe('modern');
    await stopDaemon(d);

    // Third run, echo's config changed: its old catalog is not read (it is started to learn it).
    daemon = await startDaemon(doc(['--changed']), {}, dir);
    await daemon.logLine((line) => line.msg.startsWith('3/3 servers ready'));
    expect(started(daemon)).toEqual(['echo']);
    status = await statusOf(daemon);
    expect([status.tools!.status, status.dual!.status]).toEqual(['cold', 'cold']);
    await vi.waitFor(() => expect(records(dir)).toHaveLength(4), { timeout: 30_000, interval: 100 });
    await stopDaemon(daemon);
  }, LONG);
});
