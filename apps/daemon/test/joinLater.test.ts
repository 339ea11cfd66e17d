/**
 * A `/mcp` session never waits on the slowest server: `initialize` waits for a server that is not
 * ready only within one join window per server (shared by the sessions opening meanwhile), the
 * session opens with the servers that are ready, and a server that comes up later joins it with
 * `list_changed`. A server that cannot start backs off in the pool instead of being spawned for
 * every new session, and its error shows in the status.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { WorkspaceMcpStatus } from '@mcpool/client';
import { fixtureConfig, marker, textOf } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const mark = marker('join-later');
const JOIN_WAIT_MS = 4000;
let h: Harness;
let base: string;
let counter: string;
let dir: string;
let started: Promise<void> | undefined;
const clients: Client[] = [];

async function open(): Promise<{ client: Client; ms: number }> {
  const started = performance.now();
  const { client } = await connectClient(`${base}/mcp`, h.token);
  clients.push(client);
  return { client, ms: performance.now() - started };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-join-'));
  counter = join(dir, 'broken-starts');
  const broken = [`require('node:fs').appendFileSync(${JSON.stringify(counter)}, 'x');`, 'process.exit(3);'].join(' ');
  h = await harness(
    {
      mcpServers: {
        echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }),
        // Never answers initialize: its spawn ends only at the spawn timeout.
        stuck: fixtureConfig('hanging.mjs', mark, { sharing: 'shared' }),
        // Answers after 10 s: it joins sessions that opened without it.
        late: fixtureConfig('slowInit.mjs', mark, { sharing: 'shared', env: { FIXTURE_INIT_DELAY_MS: '10000' } }),
        broken: { command: process.execPath, args: ['-e', broken, '--', mark], sharing: 'shared' },
      },
      daemon: { keepWarm: false, mcpJoinWaitMs: JOIN_WAIT_MS },
    },
    { marks: [mark], start: false, poolOptions: { spawnBackoff: { initialMs: 60_000, maxMs: 60_000 } } },
  );
  // Not awaited: the warm-up of a just-started daemon is under way while the sessions open.
  started = h.daemon.start();
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await h?.close();
  await started?.catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe('a /mcp session opens with the servers that are ready', () => {
  it('waits one join window, opens without the stuck and the late server, and the late one joins with list_changed', async () => {
    const first = await open();
    // Bounded by the join window (plus a loaded machine's slack), far below the spawn timeout.
    expect(first.ms).toBeLessThan(JOIN_WAIT_MS + 8000);
    const names = (await first.client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain('echo__echo');
    expect(names.some((name) => name.startsWith('late__') || name.startsWith('stuck__'))).toBe(false);
    // A server still joining may bring prompts and resources: the lists are declared up front.
    expect(first.client.getServerCapabilities()).toMatchObject({ tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } });

    // Sessions opening while the stuck server still hangs do not wait its window again.
    const second = await open();
    expect(second.ms).toBeLessThan(JOIN_WAIT_MS - 500);
    expect((await second.client.listTools()).tools.map((tool) => tool.name)).toContain('echo__echo');

    let changed = 0;
    first.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void (changed += 1));
    await vi.waitFor(() => expect(changed).toBeGreaterThan(0), { timeout: 60_000, interval: 200 });
    expect((await first.client.listTools()).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['echo__echo', 'late__echo']));
    expect(textOf(await first.client.callTool({ name: 'late__echo', arguments: { text: 'joined' } }))).toBe('joined');
  });

  it('a server that cannot start is spawned once while 50 sessions open, and its error shows in the status', async () => {
    const opened = [];
    for (let batch = 0; batch < 5; batch++) opened.push(...(await Promise.all(Array.from({ length: 10 }, () => open()))));
    expect(opened).toHaveLength(50);
    const starts = existsSync(counter) ? readFileSync(counter, 'utf8').length : 0;
    // One spawn (an exit on the era probe gets one legacy try: two starts at most).
    expect(starts).toBeGreaterThanOrEqual(1);
    expect(starts).toBeLessThanOrEqual(2);
    const status = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
    const cell = status.servers.find((server) => server.name === 'broken')!;
    expect(cell).toMatchObject({ status: 'failed', lastError: { code: 'MCPOOL_SPAWN_FAILED' }, retryAt: expect.any(String) });
    // A call to it answers at once with that error.
    const failed = await opened[0]!.client.callTool({ name: 'broken__anything', arguments: {} }).catch((error: unknown) => error as Error);
    expect(String((failed as Error).message)).toMatch(/broken/);
    await Promise.all(opened.splice(0).map(({ client }) => client.close().catch(() => undefined)));
  });
});
