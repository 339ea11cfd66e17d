/**
 * Idle stop: a server with no call in flight and none for its `idleStopMs` is stopped (its
 * process ends) while the sessions that use it stay open and keep listing it from its catalog;
 * the next call starts it again and answers. Modern-era servers stop by the daemon's default, a
 * legacy-era one only with its own `idleStopMs`; a call in flight is never stopped under; a
 * modern caller's listen stream hears the restarted server. The daemon's clock is moved by the
 * test (no wall-clock wait for the idle time); the servers are real processes.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { WorkspaceMcpStatus } from '@mcpool/client';
import { fixtureConfig, isRunning, marker, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { connectClient, modernRequest, openListen, responseOf, type OpenStream } from './gatewayHelpers.js';
import { harness, type Harness } from './helpers.js';
import { ManualClock } from './manualClock.js';

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

const IDLE_MS = 60_000;
const marks = { legacy: marker('idle-legacy'), modern: marker('idle-modern'), kept: marker('idle-kept') };
const clock = new ManualClock();
let h: Harness;
let base: string;
const clients: Client[] = [];
const listens: OpenStream[] = [];

async function status(): Promise<Record<string, WorkspaceMcpStatus['servers'][number]>> {
  const body = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
  return Object.fromEntries(body.servers.map((server) => [server.name, server]));
}

/** The refs of a server's entries now (0 when none runs). */
async function refsOf(name: string): Promise<number> {
  return ((await status())[name]?.entrySummary ?? []).reduce((sum, entry) => sum + entry.refs, 0);
}

async function pidOf(client: Client, server: string): Promise<number> {
  return (JSON.parse(textOf(await client.callTool({ name: `${server}__pid`, arguments: {} }))) as { pid: number }).pid;
}

async function gone(pid: number): Promise<void> {
  await vi.waitFor(() => expect(isRunning(pid)).toBe(false), { timeout: 30_000, interval: 20 });
}

beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {
        legacy: fixtureConfig('echo.mjs', marks.legacy, { sharing: 'shared', idleStopMs: IDLE_MS }),
        modern: fixtureConfig('v2EraServer.mjs', marks.modern, { sharing: 'shared' }),
        kept: fixtureConfig('echo.mjs', marks.kept, { sharing: 'shared' }),
      },
      daemon: { start: 'lazy', idleStopMs: IDLE_MS },
    },
    { clock, marks: Object.values(marks), poolOptions: { drainDelayMs: 50 } },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
  // No catalog yet: each server was started once to learn it, then let go.
  await vi.waitFor(() => expect(Object.values(marks).flatMap((mark) => pidsWithMarker(mark))).toEqual([]), { timeout: 30_000, interval: 50 });
});

afterAll(async () => {
  for (const listen of listens) listen.close();
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await h?.close();
});

describe('idle stop', () => {
  it('ends an idle server’s process while its session stays, and the next call starts it again (both server eras)', async () => {
    const { client } = await connectClient(`${base}/mcp`, h.token);
    clients.push(client);
    const pids = { legacy: await pidOf(client, 'legacy'), modern: await pidOf(client, 'modern'), kept: await pidOf(client, 'kept') };
    expect([await refsOf('legacy'), await refsOf('modern'), await refsOf('kept')]).toEqual([1, 1, 1]);

    clock.advance(2 * IDLE_MS);
    // The session let go of the idle servers at once; the legacy server without its own idleStopMs is kept.
    expect([await refsOf('legacy'), await refsOf('modern'), await refsOf('kept')]).toEqual([0, 0, 1]);
    await gone(pids.legacy);
    await gone(pids.modern);
    expect(isRunning(pids.kept)).toBe(true);
    // Status tells the stopped servers from the one still running (once the pool saw their entries end).
    await vi.waitFor(
      async () => {
        const stopped = await status();
        expect([stopped.legacy!.state, stopped.modern!.state, stopped.kept!.state]).toEqual(['stopped', 'stopped', 'running']);
      },
      { timeout: 30_000, interval: 20 },
    );

    // The session stays and lists the stopped servers from their catalog.
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['legacy__echo', 'modern__echo', 'kept__echo']));
    expect(pidsWithMarker(marks.legacy)).toEqual([]);

    // The next call starts each again and answers.
    expect(textOf(await client.callTool({ name: 'legacy__echo', arguments: { text: 'again' } }))).toBe('again');
    expect(textOf(await client.callTool({ name: 'modern__echo', arguments: { text: 'modern again' } }))).toBe('modern again');
    const again = { legacy: await pidOf(client, 'legacy'), modern: await pidOf(client, 'modern') };
    expect(again.legacy).not.toBe(pids.legacy);
    expect(again.modern).not.toBe(pids.modern);
    expect(await pidOf(client, 'kept')).toBe(pids.kept);
  });

  it('never stops a server under a call in flight', async () => {
    const { client } = await connectClient(`${base}/mcp`, h.token);
    clients.push(client);
    const pid = await pidOf(client, 'legacy');
    let progressed!: () => void;
    const inFlight = new Promise<void>((resolve) => (progressed = resolve));
    const call = client.callTool({ name: 'legacy__slow', arguments: { ms: 3000, steps: 3 } }, undefined, { onprogress: () => progressed(), timeout: 60_000 });
    await inFlight;
    clock.advance(3 * IDLE_MS);
    // Every other view of it was idle and given back; the calling session's is still held.
    expect(await refsOf('legacy')).toBe(1);
    expect((await call).isError).not.toBe(true);
    expect(await pidOf(client, 'legacy')).toBe(pid);

    // Once the call settled, idleness counts from its end.
    clock.advance(2 * IDLE_MS);
    await gone(pid);
  });

  it('a modern caller’s call starts a stopped server again, and its listen stream hears the new process', async () => {
    const target = { base, token: h.token };
    const callPid = async (): Promise<number> => {
      const answer = responseOf(await modernRequest(target, 'tools/call', { name: 'modern__pid', arguments: {} }));
      return (JSON.parse(textOf(answer.result as Record<string, unknown>)) as { pid: number }).pid;
    };
    const listen = openListen(target, { toolsListChanged: true });
    listens.push(listen);
    expect(await listen.status).toBe(200);
    const pid = await callPid();
    clock.advance(2 * IDLE_MS);
    await gone(pid);

    const woken = await callPid();
    expect(woken).not.toBe(pid);
    // The restarted server's own list change reaches the listen stream opened before it stopped
    // (counted from here: a start whose lists differ from the catalog is told too, by the pool).
    const changes = (): number => listen.messages.filter((message) => message.method === 'notifications/tools/list_changed').length;
    const before = changes();
    const added = responseOf(await modernRequest(target, 'tools/call', { name: 'modern__add_tool', arguments: { name: `fresh_${Date.now()}` } }));
    expect(added.error).toBeUndefined();
    await listen.waitFor(() => changes() > before, 'tools list_changed after the restart', 30_000);
  });
});
