/**
 * A server floods notifications while a downstream `/mcp` client stops reading its GET stream,
 * on the real daemon (a child process): the daemon holds a bounded backlog for that session
 * instead of buffering without end, disconnects it once its stream has stayed full, says why in
 * its log, and another session's calls to another server are answered meanwhile.
 */
import { describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { fixtureConfig, killMarked, marker, textOf } from '../../../test/helpers/processes.js';
import { ACCEPT_BOTH, connectClient, openRawSession, raw } from './gatewayHelpers.js';

const BIN = fileURLToPath(new URL('../bin/mcpool.js', import.meta.url));

function rssMB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

interface FloodDaemon {
  url: string;
  token: string;
  auth: { authorization: string };
  pid: number;
  /** Everything the daemon logged so far (JSON lines). */
  out(): string;
  /** SIGTERM, wait for the exit, kill what the marker names, remove the directory. */
  stop(): Promise<void>;
}

/** A real `mcpool serve` child on a port of its own, with `servers` and its state in a temporary directory; ready when it returns. */
async function startDaemon(label: string, mark: string, servers: Record<string, unknown>): Promise<FloodDaemon> {
  const dir = mkdtempSync(join(tmpdir(), `mcpool-${label}-`));
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify({ mcpServers: servers, daemon: { port: 0, watchConfig: false } }));
  const daemon = spawn(process.execPath, [BIN, 'serve', '--config', configPath, '--log-level', 'info'], {
    env: { PATH: process.env.PATH, HOME: dir, XDG_STATE_HOME: join(dir, 'xdg'), MCPOOL_STATE_DIR: join(dir, 'state') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  daemon.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  daemon.stderr.resume();
  const exited = new Promise<void>((resolve) => daemon.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    daemon.kill('SIGTERM');
    await exited;
    killMarked(mark);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const url = await vi.waitFor(
      () => {
        const found = /listening on (http:\/\/[^"\s]+)/.exec(out);
        if (!found) throw new Error('not listening yet');
        return found[1]!;
      },
      { timeout: 60_000, interval: 50 },
    );
    const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
    const auth = { authorization: `Bearer ${token}` };
    await vi.waitFor(async () => expect((await fetch(`${url}/readyz`, { headers: auth })).status).toBe(200), { timeout: 60_000, interval: 100 });
    return { url, token, auth, pid: daemon.pid!, out: () => out, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

describe('notification flood through /mcp', () => {
  it('a client that stops reading is disconnected with a logged reason, and its backlog goes with it; other calls go on', async () => {
    const mark = marker('notify-flood');
    const running = await startDaemon('notify-flood', mark, { flood: fixtureConfig('notifyFlood.mjs', mark, { sharing: 'shared' }), echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }) });
    const { url, token, auth } = running;
    const daemonPid = running.pid;
    let stalled: ClientRequest | undefined;
    let stalledRes: IncomingMessage | undefined;
    try {
      // Session 1 opens its GET stream and never reads it.
      const sessionId = await openRawSession(url, '/mcp', token);
      const headers = { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
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
    const running = await startDaemon('notify-marker', mark, { flood: fixtureConfig('notifyFlood.mjs', mark, { sharing: 'shared' }) });
    const { url, token, auth } = running;
    let stalled: ClientRequest | undefined;
    try {
      const sessionId = await openRawSession(url, '/mcp', token);
      const headers = { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
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
