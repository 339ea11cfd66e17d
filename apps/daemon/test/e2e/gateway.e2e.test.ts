/**
 * End to end through `/mcp` on the real `mcpool serve` process (compiled `bin/mcpool.js`): two
 * downstream clients of different kinds — an SDK `Client` over Streamable HTTP and
 * `@modelcontextprotocol/inspector-cli` — share one upstream process; a client's tool filter holds
 * on lists and calls; progress reaches only its caller; a killed upstream gives the caller a
 * JSON-RPC error (not a hang) and the next call works after the reconnect; SIGTERM stops the
 * daemon with sessions open and leaves no process behind. No sleeps: events and bounded waits.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError, ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { McpoolClient } from '@mcpool/client';
import { FIXTURES, isAlive, killMarked, marker, pidFromResult, pidsWithMarker, textOf } from '../../../../test/helpers/processes.js';
import { connectClient } from '../gatewayHelpers.js';
import { inspector, startDaemon, type DaemonProcess } from './gatewayHelpers.js';

const mark = marker('gateway-e2e');
const ALICE = `alice-${randomUUID()}`;
const BOB = `bob-${randomUUID()}`;
let daemon: DaemonProcess;
let rest: McpoolClient;
const clients: Client[] = [];

async function sdkClient(token: string): Promise<Client> {
  const { client } = await connectClient(`${daemon.url}/mcp`, token);
  clients.push(client);
  return client;
}

const echoRefs = async (): Promise<number> => {
  const status = await rest.getWorkspaceMcp();
  return status.servers.find((s) => s.name === 'echo')!.entrySummary.reduce((sum, e) => sum + e.refs, 0);
};

beforeAll(async () => {
  daemon = await startDaemon(
    {
      // Shared explicitly: the echo fixture keeps no state, so unrelated clients may share it.
      mcpServers: { echo: { command: process.execPath, args: [`${FIXTURES}echo.mjs`, mark], sharing: 'shared' } },
      daemon: {
        port: 0,
        watchConfig: false,
        clients: [
          { id: 'alice', tokenEnv: 'GW_E2E_ALICE', rights: ['read'], servers: ['echo'], excludeTools: ['echo__add'] },
          { id: 'bob', tokenEnv: 'GW_E2E_BOB', rights: ['read'], servers: ['echo'] },
        ],
      },
    },
    { GW_E2E_ALICE: ALICE, GW_E2E_BOB: BOB },
  );
  rest = new McpoolClient({ baseUrl: daemon.url, token: daemon.token });
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  daemon?.cleanup();
  killMarked(mark);
});

describe('/mcp on the real daemon', () => {
  it('an SDK client and the inspector CLI share one upstream process', async () => {
    const alice = await sdkClient(ALICE);
    const viaSdk = pidFromResult(await alice.callTool({ name: 'echo__pid', arguments: {} }));
    const cli = await inspector(`${daemon.url}/mcp`, BOB, ['--method', 'tools/call', '--tool-name', 'echo__pid']);
    expect(cli.code, cli.stderr).toBe(0);
    const viaInspector = pidFromResult(JSON.parse(cli.stdout) as Record<string, unknown>);
    expect(viaInspector).toBe(viaSdk);
    expect(pidsWithMarker(mark)).toEqual([viaSdk]);
  });

  it('a tool filtered out for alice is neither listed nor callable by her, and works for bob through the inspector', async () => {
    const alice = await sdkClient(ALICE);
    expect((await alice.listTools()).tools.map((t) => t.name)).not.toContain('echo__add');
    const refused = await alice.callTool({ name: 'echo__add', arguments: { a: 2, b: 3 } }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(-32602);
    // Alice through the inspector: refused as well.
    const aliceCli = await inspector(`${daemon.url}/mcp`, ALICE, ['--method', 'tools/call', '--tool-name', 'echo__add', '--tool-arg', 'a=2', 'b=3']);
    expect(aliceCli.code).not.toBe(0);
    const list = await inspector(`${daemon.url}/mcp`, BOB, ['--method', 'tools/list']);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain('echo__add');
    const sum = await inspector(`${daemon.url}/mcp`, BOB, ['--method', 'tools/call', '--tool-name', 'echo__add', '--tool-arg', 'a=2', 'b=3']);
    expect(sum.code, sum.stderr).toBe(0);
    expect(textOf(JSON.parse(sum.stdout) as Record<string, unknown>)).toBe('5');
  });

  it('progress from a slow upstream tool reaches only its caller', async () => {
    const caller = await sdkClient(ALICE);
    const other = await sdkClient(BOB);
    const seenByOther: unknown[] = [];
    other.setNotificationHandler(ProgressNotificationSchema, (n) => void seenByOther.push(n));
    const progress: number[] = [];
    const [mine, theirs] = await Promise.all([
      caller.callTool({ name: 'echo__slow', arguments: { ms: 300, steps: 3 } }, undefined, { onprogress: (p) => void progress.push(p.progress) }),
      other.callTool({ name: 'echo__slow', arguments: { ms: 300, steps: 3 } }),
    ]);
    expect([textOf(mine), textOf(theirs)]).toEqual(['done after 300', 'done after 300']);
    expect(progress).toEqual([1, 2, 3]);
    expect(seenByOther).toEqual([]);
  });

  it('killing the upstream mid-call gives the caller a JSON-RPC error, and the next call works after the reconnect', async () => {
    const client = await sdkClient(ALICE);
    const before = pidFromResult(await client.callTool({ name: 'echo__pid', arguments: {} }));
    // 1. A long call is under way (its first progress proves it reached the server).
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const call = client.callTool({ name: 'echo__slow', arguments: { ms: 30_000, steps: 300 } }, undefined, { onprogress: () => started(), timeout: 60_000 });
    const outcome = call.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await running;
    // 2. The server dies under it.
    const t0 = Date.now();
    process.kill(before, 'SIGKILL');
    const error = await outcome;
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).data).toMatchObject({ code: 'MCPOOL_CALL_INTERRUPTED' });
    expect(Date.now() - t0).toBeLessThan(10_000);
    await vi.waitFor(() => expect(isAlive(before)).toBe(false), { timeout: 15_000, interval: 20 });
    // 3. The pool reconnects (a new process); the same session's next call works.
    const after = await vi.waitFor(
      async () => pidFromResult(await client.callTool({ name: 'echo__pid', arguments: {} })),
      { timeout: 15_000, interval: 100 },
    );
    expect(after).not.toBe(before);
    expect(textOf(await client.callTool({ name: 'echo__echo', arguments: { text: 'still here' } }))).toBe('still here');
    expect(pidsWithMarker(mark)).toEqual([after]);
  });

  it('every open session holds one ref from its first use; DELETE gives it back', async () => {
    const held = await echoRefs();
    const { client, transport } = await connectClient(`${daemon.url}/mcp/echo`, BOB);
    // Servers start on first use: the call is what takes the session's ref.
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'ref' } }))).toBe('ref');
    expect(await echoRefs()).toBe(held + 1);
    await transport.terminateSession();
    await client.close();
    await vi.waitFor(async () => expect(await echoRefs()).toBe(held), { timeout: 15_000, interval: 20 });
  });

  it('SIGTERM stops the daemon with sessions still open, and leaves no process behind', async () => {
    expect(clients.length).toBeGreaterThan(0);
    const pids = pidsWithMarker(mark);
    expect(pids).toHaveLength(1);
    expect(await daemon.stop()).toBe(0);
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 20_000, interval: 50 });
    expect(daemon.lines.some((line) => line.msg === 'gateway session closed' && line.reason === 'daemon shutting down')).toBe(true);
  });
});
