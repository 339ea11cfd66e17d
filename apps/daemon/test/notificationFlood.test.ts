/**
 * A server floods notifications while a downstream `/mcp` client stops reading its GET stream,
 * on the real daemon (a child process): the daemon holds a bounded backlog for that session
 * instead of buffering without end, disconnects it once its stream has stayed full, says why in
 * its log, and another session's calls to another server are answered meanwhile.
 */
import { describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { fixtureConfig, marker, textOf } from '../../../test/helpers/processes.js';
import { startDaemonProcess } from './e2e/daemonProcess.js';
import { ACCEPT_BOTH, connectClient, openRawSession, raw } from './gatewayHelpers.js';

function rssMB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/**
 * The session calls the flood server once: servers start on first use, and a session gets a
 * server's notifications from the request that made it use the server on.
 */
async function useFlood(url: string, headers: Record<string, string>): Promise<void> {
  const used = await raw(url, { path: '/mcp', headers: { ...headers, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'flood__echo', arguments: { text: 'on' } } } });
  expect(used.status).toBe(200);
  expect(used.body).toContain('"text":"on"');
}

describe('notification flood through /mcp', () => {
  it('a client that stops reading is disconnected with a logged reason, and its backlog goes with it; other calls go on', async () => {
    const mark = marker('notify-flood');
    const running = await startDaemonProcess('notify-flood', mark, { flood: fixtureConfig('notifyFlood.mjs', mark, { sharing: 'shared' }), echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }) });
    const { url, token, auth } = running;
    const daemonPid = running.pid;
    let stalled: ClientRequest | undefined;
    let stalledRes: IncomingMessage | undefined;
    try {
      // Session 1 opens its GET stream and never reads it.
      const sessionId = await openRawSession(url, '/mcp', token);
      const headers = { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
      await useFlood(url, headers);
      const streamClosed = new Promise<void>((resolve) => {
        stalled = httpRequest(`${url}/mcp`, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } }, (res: IncomingMessage) => {
          res.pause();
          stalledRes = res;
          res.once('close', () => resolve());
          res.once('error', () => resolve());
        });
        stalled.once('error', () => resolve());
        stalled.end();
      });
      // Session 2 (an SDK client that reads) starts the flood and calls another server during it.
      const { client } = await connectClient(`${url}/mcp`, token);
      expect(textOf(await client.callTool({ name: 'flood__start', arguments: { perSecond: 2000, size: 1000 } }))).toBe('flooding');
      const before = rssMB(daemonPid);
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, rssMB(daemonPid))), 250);
      const slowest: number[] = [];
      try {
        await vi.waitFor(
          async () => {
            const started = performance.now();
            expect(textOf(await client.callTool({ name: 'echo__echo', arguments: { text: 'still here' } }))).toBe('still here');
            slowest.push(performance.now() - started);
            expect(running.out()).toMatch(/closing a \/mcp session whose client did not read its stream/);
          },
          { timeout: 60_000, interval: 200 },
        );
        // Read now: what the daemon had written drains, then the stream ends.
        stalledRes?.resume();
        await streamClosed;
      } finally {
        clearInterval(sampler);
      }
      const line = running.out().split('\n').find((l) => l.includes('closing a /mcp session whose client did not read'))!;
      expect(JSON.parse(line)).toMatchObject({ sessionId });
      // The stalled session is gone; session 2 still works.
      const after = await raw(url, { path: '/mcp', headers: { ...headers, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: { jsonrpc: '2.0', id: 9, method: 'tools/list' } });
      expect(after.status).toBe(404);
      await client.callTool({ name: 'flood__stop', arguments: {} });
      // Memory is reported, not asserted: within this test's seconds the heaps of the daemon and
      // its actor threads grow with the flood's garbage before they collect it (100–160 MB seen,
      // more on Node 24), as much as an unbounded backlog would in that time. What proves the
      // bound is above: the stalled session is cut and gone. `test/bench/flood.mjs` measures RSS
      // over a longer flood.
      console.info(`daemon RSS grew ${Math.round(peak - before)} MB at the peak of the flood`);
      // Answered, never hung (a hang is the call's whole timeout): generous for a loaded machine.
      expect(Math.max(...slowest)).toBeLessThan(30_000);
      await client.close();
    } finally {
      stalled?.destroy();
      await running.stop();
    }
  }, 150_000);

  it('a client that reads again after a stall gets one marker from mcpool saying how many notifications it missed', async () => {
    const mark = marker('notify-marker');
    const running = await startDaemonProcess('notify-marker', mark, { flood: fixtureConfig('notifyFlood.mjs', mark, { sharing: 'shared' }) });
    const { url, token, auth } = running;
    let stalled: ClientRequest | undefined;
    try {
      const sessionId = await openRawSession(url, '/mcp', token);
      const headers = { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
      await useFlood(url, headers);
      let stream = '';
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        stalled = httpRequest(`${url}/mcp`, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } }, (incoming: IncomingMessage) => {
          incoming.pause();
          resolve(incoming);
        });
        stalled.once('error', reject);
        stalled.end();
      });
      res.on('data', (chunk: Buffer) => (stream += chunk.toString('utf8')));
      res.pause();
      const { client } = await connectClient(`${url}/mcp`, token);
      // Large logs: the socket fills within a second, and the byte bound drops long before the count bound.
      expect(textOf(await client.callTool({ name: 'flood__start', arguments: { perSecond: 2000, size: 20_000 } }))).toBe('flooding');
      // Stalled for less than the cut (10 s), then the client reads again and the flood ends.
      await new Promise((resolve) => setTimeout(resolve, 4000));
      await client.callTool({ name: 'flood__stop', arguments: {} });
      res.resume();
      const marker = await vi.waitFor(
        () => {
          const event = stream.split('\n').filter((l) => l.startsWith('data: ') && l.includes('"logger":"mcpool"')).map((l) => JSON.parse(l.slice(6)) as { method?: string; params?: { logger?: string; level?: string; data?: string } }).find((m) => m.params?.logger === 'mcpool');
          if (event === undefined) throw new Error('no marker yet');
          return event;
        },
        { timeout: 20_000, interval: 100 },
      );
      expect(marker).toMatchObject({ method: 'notifications/message', params: { level: 'warning', logger: 'mcpool' } });
      const dropped = Number(/dropped (\d+) notifications/.exec(marker.params!.data!)?.[1]);
      expect(dropped).toBeGreaterThan(0);
      // The same count is in the daemon's log line for the burst.
      const line = running.out().split('\n').find((l) => l.includes('a /mcp client read slower than its notifications came'))!;
      expect(JSON.parse(line)).toMatchObject({ sessionId, dropped });
      // Not cut: the session answers.
      const after = await raw(url, { path: '/mcp', headers: { ...headers, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: { jsonrpc: '2.0', id: 9, method: 'tools/list' } });
      expect(after.status).toBe(200);
      await client.close();
    } finally {
      stalled?.destroy();
      await running.stop();
    }
  }, 150_000);
});
