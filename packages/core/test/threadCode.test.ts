/**
 * A connection thread loads the code its transport needs and no other: a stdio connection never
 * loads the HTTP, SSE or websocket transports (nor their libraries); a remote one loads its own.
 * Real threads on the shipped worker entry, with a resolve hook that records every module the
 * thread loads (`test/fixtures/workers/loadRecordingWorker.mjs`).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { textOf, fixtureConfig } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';
import { startHttpFixture, type HttpFixture } from '../../../test/fixtures/servers/httpHeaders.mjs';
import { startWsFixture, type WsFixture } from '../../../test/fixtures/servers/wsServer.mjs';

const RECORDING = new URL('../../../test/fixtures/workers/loadRecordingWorker.mjs', import.meta.url);
const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

const loads = new Map<string, string[]>();
const reports = new BroadcastChannel('mcpool-test-loads');
reports.onmessage = (event) => {
  const { serverName, urls } = (event as MessageEvent).data as { serverName: string; urls: string[] };
  loads.set(serverName, urls);
};
const servers: (HttpFixture | WsFixture)[] = [];
afterAll(async () => {
  reports.close();
  await Promise.all(servers.map((server) => server.close()));
});

/** The file names (or bare specifiers' URLs) the thread of `server` loaded. */
function loaded(server: string): string[] {
  return (loads.get(server) ?? []).map((url) => (url.startsWith('file:') ? url.slice(url.lastIndexOf('/') + 1) : url));
}

const REMOTE_CODE = /^(streamableHttpTransport|legacySseTransport|websocketTransport|httpExchange|httpMcpHeaders|httpBody)\.js$/;

describe('what a connection thread loads', () => {
  it('a stdio connection loads no HTTP, SSE or websocket code', async () => {
    const pool = newPool({ actorHost: { workerUrl: RECORDING } });
    const view = await pool.acquire('local', fixtureConfig('echo.mjs', newMark('loads-stdio')), 's1');
    expect(textOf(await view.callTool('echo', { text: 'x' }))).toBe('x');
    await vi.waitFor(() => expect(loaded('local')).toContain('worker.js'), { timeout: 10_000, interval: 20 });
    const files = loaded('local');
    expect(files.filter((file) => REMOTE_CODE.test(file))).toEqual([]);
    expect(files.filter((file) => /node_modules\/(ws|eventsource-parser)\//.test(file) || file === 'ws')).toEqual([]);
    // `node:net` is the stdio path's own: the child's stdio is handed over on Unix sockets.
    expect(files.filter((file) => file === 'node:http' || file === 'node:https')).toEqual([]);
    // Nor is that code inside what it did load (a bundle would carry it in its entry).
    const entry = readFileSync(fileURLToPath(loads.get('local')!.find((url) => url.endsWith('/worker.js'))!), 'utf8');
    for (const name of ['StreamableHttpTransport', 'LegacySseTransport', 'WebSocketTransport', 'scanParamHeaders', 'readSse', 'nodeHttpExchange']) {
      expect(entry, name).not.toMatch(new RegExp(`(class|function) ${name}\\b`));
    }
  });

  it('a Streamable HTTP connection loads its transport, and not the websocket one', async () => {
    const server = await startHttpFixture();
    servers.push(server);
    const pool = newPool({ actorHost: { workerUrl: RECORDING } });
    const view = await pool.acquire('remote', { type: 'http', url: server.url }, 's1');
    expect(textOf(await view.callTool('echo', { text: 'x' }))).toContain('x');
    await vi.waitFor(() => expect(loaded('remote')).toContain('streamableHttpTransport.js'), { timeout: 10_000, interval: 20 });
    expect(loaded('remote')).not.toContain('websocketTransport.js');
  });

  it('a websocket connection loads its transport and the ws library, and not the HTTP ones', async () => {
    const server = await startWsFixture();
    servers.push(server);
    const pool = newPool({ actorHost: { workerUrl: RECORDING } });
    const view = await pool.acquire('socket', { type: 'websocket', url: server.url }, 's1');
    expect(textOf(await view.callTool('echo', { text: 'x' }))).toContain('x');
    await vi.waitFor(() => expect(loaded('socket')).toContain('websocketTransport.js'), { timeout: 10_000, interval: 20 });
    expect(loaded('socket').filter((file) => /^(streamableHttpTransport|legacySseTransport)\.js$/.test(file))).toEqual([]);
  });
});
