/**
 * Our stdio transport against real children: its own process group, the shutdown sequence
 * (stdin end → SIGTERM the group → SIGKILL the group), stderr drained, progress kept.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ProcessGroupStdioTransport, TransportLostError, UpstreamClient, UpstreamClosedError, groupAlive } from '@mcpool/actor';
import { setTimeout as delay } from 'node:timers/promises';
import { spawnInThisThread, type ChildSpawner } from '../src/transports/stdioChild.js';
import { expectNoSurvivors, FIXTURES, isAlive, marker, pidsWithMarker } from '../../../test/helpers/processes.js';

const marks: string[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
});

function newMark(label: string): string {
  const mark = marker(label);
  marks.push(mark);
  return mark;
}

async function connect(transport: ProcessGroupStdioTransport): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' });
  clients.push(client);
  await client.connect(transport);
  return client;
}

function pgidOf(pid: number): number {
  return Number(execFileSync('ps', ['-o', 'pgid=', '-p', String(pid)], { encoding: 'utf8' }).trim());
}

describe('ProcessGroupStdioTransport', () => {
  it('starts the child in its own process group and reports its pid before initialize', async () => {
    const mark = newMark('group');
    let spawned: number | undefined;
    const transport = new ProcessGroupStdioTransport({ command: process.execPath, args: [FIXTURES + 'echo.mjs', mark], onSpawn: (pid) => (spawned = pid) });
    await connect(transport);
    expect(spawned).toBe(transport.pid);
    expect(pgidOf(transport.pid!)).toBe(transport.pid);
    expect(pgidOf(transport.pid!)).not.toBe(pgidOf(process.pid));
  });

  it('a cooperative server exits on stdin end, before any signal', async () => {
    const mark = newMark('coop');
    const transport = new ProcessGroupStdioTransport({ command: process.execPath, args: [FIXTURES + 'echo.mjs', mark], shutdownStepMs: 5000 });
    await connect(transport);
    const started = Date.now();
    await transport.close();
    expect(Date.now() - started).toBeLessThan(4000);
    expect(transport.exitInfo).toEqual({ code: 0, signal: null });
    expect(pidsWithMarker(mark)).toEqual([]);
  });

  it('a server that ignores stdin end and SIGTERM is SIGKILLed after the two steps', async () => {
    const mark = newMark('stubborn');
    const transport = new ProcessGroupStdioTransport({ command: process.execPath, args: [FIXTURES + 'sigtermIgnoring.mjs', mark], shutdownStepMs: 200 });
    await connect(transport);
    await transport.close();
    expect(transport.exitInfo?.signal).toBe('SIGKILL');
    expect(isAlive(transport.pid!)).toBe(false);
    expect(groupAlive(transport.pid!)).toBe(false);
  });

  it('`bash -c "sleep 60 & sleep 60"` leaves nothing: the whole group is ended', async () => {
    const mark = newMark('bash');
    // The marker rides along as $0 so the sleeps' parent can be found; the sleeps are in the group.
    const transport = new ProcessGroupStdioTransport({ command: 'bash', args: ['--norc', '-c', 'sleep 60 & sleep 60', mark], shutdownStepMs: 200 });
    await transport.start();
    const pgid = transport.pid!;
    await expect.poll(() => Number(execFileSync('sh', ['-c', `ps -A -o pgid= | grep -c "^ *${pgid}$" || true`], { encoding: 'utf8' })), { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    await transport.close();
    // Killed grandchildren are re-parented to init, which reaps them a moment later.
    await expect.poll(() => groupAlive(pgid), { timeout: 15_000 }).toBe(false);
  });

  it('a progress notification in the same chunk as its response still reaches the caller', async () => {
    const mark = newMark('chunk');
    const transport = new ProcessGroupStdioTransport({ command: process.execPath, args: [new URL('./fixtures/sameChunkProgress.mjs', import.meta.url).pathname, mark] });
    // The actor's own client: messages are delivered in order, so the progress handler runs
    // before the response settles the request.
    const client = new UpstreamClient(transport, { cancelBy: 'notification' });
    try {
      await client.start();
      await client.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '1' } }, { timeoutMs: 10_000 });
      await client.notify('notifications/initialized');
      for (let i = 0; i < 20; i++) {
        const seen: number[] = [];
        const result = await client.request('tools/call', { name: 'go' }, { timeoutMs: 10_000, onProgress: (p) => seen.push(p.progress) });
        expect(result.content).toEqual([{ type: 'text', text: 'went' }]);
        expect(seen).toEqual([1]);
      }
    } finally {
      await client.close();
    }
  });

  it('the end of stdout loses the server at once: the answer before it arrives, the rest reject, the surviving root is ended', async () => {
    const mark = newMark('eof');
    // Answers the first request, closes its stdout and lives on: only the end of stdout tells.
    const script = 'read a; read b; echo \'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}\'; exec >&-; sleep 20';
    const transport = new ProcessGroupStdioTransport({ command: 'sh', args: ['-c', script, mark], shutdownStepMs: 200 });
    const client = new UpstreamClient(transport, { cancelBy: 'notification' });
    const order: string[] = [];
    const onlost = transport.onlost!;
    transport.onlost = () => {
      order.push('lost');
      onlost();
    };
    const closed = new Promise<void>((resolve) => client.onClose(() => resolve()));
    try {
      await client.start();
      const first = client.request('a', {}, { timeoutMs: 30_000 });
      const second = client.request('b', {}, { timeoutMs: 30_000 }).catch((error: unknown) => error);
      const started = performance.now();
      expect(await first).toEqual({ ok: true });
      const error = await second;
      order.push('rejected');
      expect(error).toBeInstanceOf(UpstreamClosedError);
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(client.closed).toBe(true);
      await expect(client.request('c', {}, { timeoutMs: 1_000 })).rejects.toBeInstanceOf(UpstreamClosedError);
      // The client's close listeners heard of it with the loss, not when the process went.
      await closed;
      order.push('closed');
      expect(order).toEqual(['lost', 'rejected', 'closed']);
      // The shell would sleep for 20 s: the transport ends its group instead (the sleep,
      // re-parented once the shell is gone, is reaped a moment later).
      await expect.poll(() => groupAlive(transport.pid!), { timeout: 5_000 }).toBe(false);
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      await client.close();
    }
  });

  it('a child that stops reading its stdin holds sends until the pipe drains; its death releases them and fails its calls; a send after it is refused', async () => {
    const mark = newMark('fullpipe');
    // Never reads stdin: the pipe fills and stays full.
    const transport = new ProcessGroupStdioTransport({ command: 'sh', args: ['-c', 'exec sleep 60', mark], shutdownStepMs: 200 });
    const client = new UpstreamClient(transport, { cancelBy: 'notification' });
    try {
      await client.start();
      // Far more than a pipe holds (64 KB on Linux).
      const call = client.request('big', { blob: 'x'.repeat(1024 * 1024) }, { timeoutMs: 30_000 }).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 100));
      let held = true;
      const send = transport.send({ jsonrpc: '2.0', method: 'notifications/late' }).then(() => (held = false));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(held).toBe(true);

      process.kill(transport.pid!, 'SIGKILL');
      // The full pipe never drains: the loss releases the held send (it never rejects) and fails the call.
      await send;
      expect(await call).toBeInstanceOf(UpstreamClosedError);
      await expect(transport.send({ jsonrpc: '2.0', method: 'notifications/after' })).rejects.toBeInstanceOf(TransportLostError);
    } finally {
      await client.close();
    }
  });

  it('a close while the process is being spawned ends the process the spawn brings', async () => {
    const mark = newMark('close-during-start');
    // A spawner that takes its time, as one that asks the supervisor does.
    const slowSpawner: ChildSpawner = async (request) => {
      await delay(300);
      return spawnInThisThread(request);
    };
    const transport = new ProcessGroupStdioTransport({ command: process.execPath, args: [FIXTURES + 'echo.mjs', mark], spawner: slowSpawner, shutdownStepMs: 1000 });
    const starting = transport.start();
    const closing = transport.close();
    await starting;
    await closing;
    expect(transport.exited).toBe(true);
    expect(pidsWithMarker(mark)).toEqual([]);
  });

  it('drains a chatty stderr so the child never blocks, and keeps its tail for error messages', async () => {
    const mark = newMark('flood');
    const lines: string[] = [];
    const transport = new ProcessGroupStdioTransport({ command: process.execPath, args: [FIXTURES + 'flooding.mjs', mark], onStderrLine: (line) => lines.push(line) });
    const client = await connect(transport);
    // 2 MB of stderr is far more than a pipe buffer: an undrained pipe would block the child.
    const result = await client.callTool({ name: 'flood', arguments: { lines: 2048 } });
    expect(result.content).toEqual([{ type: 'text', text: 'flooded 2048 KB' }]);
    // stderr and stdout are separate pipes: the answer on stdout can be read before the last
    // stderr chunks are, so the lines are waited for (a blocked child would never answer at all).
    await expect.poll(() => lines.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(2048);
    expect(transport.stderrTail.length).toBeLessThanOrEqual(4096);
  });

  it('a command that does not exist rejects start with ENOENT', async () => {
    const transport = new ProcessGroupStdioTransport({ command: '/nonexistent/server' });
    await expect(transport.start()).rejects.toMatchObject({ code: 'ENOENT' });
    await transport.close();
  });
});
