/**
 * Resuming a legacy response stream: real HTTP servers on 127.0.0.1 that answer a request with
 * an SSE stream, give its events ids and a `retry:`, and hang up before the response. The
 * transport must come back with GET and `Last-Event-ID` after that delay, deliver the rest once,
 * and give the request up (an `UpstreamStreamError` the client fails it with) within a bound
 * when the server does not come back, leaving no timer or socket behind.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { StreamableHttpTransport, UpstreamStreamError } from '../src/transports/streamableHttpTransport.js';
import { UpstreamClient } from '../src/upstreamClient.js';
import type { JsonRpcMessage } from '../src/transports/upstreamTransport.js';

const SESSION = 'session-resume';
const RETRY_MS = 300;

interface Seen {
  method: string;
  at: number;
  headers: IncomingMessage['headers'];
}

interface ResumeServer {
  url: string;
  seen: Seen[];
  /** When the server ended the request's first stream. */
  endedAt(): number | undefined;
  connections(): Promise<number>;
  /** Stop listening and drop every connection: the server never comes back. */
  vanish(): Promise<void>;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function sse(res: ServerResponse, chunk: string): void {
  if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': SESSION });
  res.write(chunk);
}

function event(id: string, message?: JsonRpcMessage, retry?: number): string {
  return `id: ${id}\n${retry === undefined ? '' : `retry: ${retry}\n`}data: ${message === undefined ? '' : JSON.stringify(message)}\n\n`;
}

/**
 * `tools/call` is answered with a priming event (id e1, `retry`), a progress notification (e2),
 * then the stream ends. `onGet` answers each GET; by default it replays e2 (already delivered),
 * sends the result as e3, and keeps the stream open, as a server may.
 */
async function startServer(onGet?: (req: IncomingMessage, res: ServerResponse, pendingId: string | number) => void): Promise<ResumeServer> {
  const seen: Seen[] = [];
  let pendingId: string | number = 0;
  let endedAt: number | undefined;
  const open = new Set<ServerResponse>();
  const progress = (): JsonRpcMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } });
  const server: Server = createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    if (req.method === 'GET') {
      seen.push({ method: 'GET', at: performance.now(), headers: req.headers });
      if (onGet !== undefined) onGet(req, res, pendingId);
      else {
        sse(res, event('e2', progress()));
        sse(res, event('e3', { jsonrpc: '2.0', id: pendingId, result: { content: [{ type: 'text', text: 'resumed' }] } }));
      }
      return;
    }
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as JsonRpcMessage;
      seen.push({ method: message.method ?? 'response', at: performance.now(), headers: req.headers });
      if (message.method !== 'tools/call') {
        res.writeHead(202).end();
        return;
      }
      pendingId = message.id!;
      sse(res, event('e1', undefined, RETRY_MS));
      sse(res, event('e2', progress()));
      setTimeout(() => {
        endedAt = performance.now();
        res.end();
      }, 20);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let gone = false;
  const vanish = async (): Promise<void> => {
    if (gone) return;
    gone = true;
    for (const res of open) res.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  cleanups.push(vanish);
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`,
    seen,
    endedAt: () => endedAt,
    connections: () => new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count)))),
    vanish,
  };
}

async function until(condition: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await delay(10);
  }
}

async function openLegacy(url: string) {
  const transport = new StreamableHttpTransport({ url: new URL(url) });
  const received: JsonRpcMessage[] = [];
  const errors: Error[] = [];
  transport.onmessage = (message) => received.push(message);
  transport.onerror = (error) => errors.push(error);
  await transport.start();
  cleanups.push(() => transport.close());
  transport.setProtocol('legacy', '2025-11-25');
  return { transport, received, errors };
}

/** Timers and TCP handles of this process: what must come back to its level after close(). */
function handles(): { timers: number; sockets: number } {
  const info = process.getActiveResourcesInfo();
  return { timers: info.filter((kind) => kind === 'Timeout').length, sockets: info.filter((kind) => kind === 'TCPSocketWrap').length };
}

describe('resuming a legacy response stream', () => {
  it('reconnects with GET and Last-Event-ID after the retry delay and delivers the rest once', async () => {
    const server = await startServer();
    const client = await openLegacy(server.url);
    await client.transport.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'slow' } });
    await until(() => client.received.some((m) => m.id === 7));

    const get = server.seen.find((each) => each.method === 'GET')!;
    expect(get.headers['last-event-id']).toBe('e2');
    expect(get.headers['mcp-protocol-version']).toBe('2025-11-25');
    expect(get.headers.accept).toBe('text/event-stream');
    // The server's retry is waited out (a little timer slack allowed).
    expect(get.at - server.endedAt()!).toBeGreaterThanOrEqual(RETRY_MS - 20);
    // The replayed progress (e2) is not delivered again; the result arrives once.
    expect(client.received.map((m) => m.method ?? `result ${String(m.id)}`)).toEqual(['notifications/progress', 'result 7']);
    expect(client.errors).toEqual([]);
    // The GET the server kept open is closed by us once the response is in.
    await until(() => server.seen.filter((each) => each.method === 'GET').length === 1);
    await client.transport.close();
    let open = await server.connections();
    for (let i = 0; i < 50 && open > 0; i++) {
      await delay(10);
      open = await server.connections();
    }
    expect(open).toBe(0);
  });

  it('keeps resuming while each reconnection brings new events', async () => {
    let gets = 0;
    const server = await startServer((_req, res, pendingId) => {
      gets++;
      if (gets < 3) {
        sse(res, event(`g${gets}`, { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: gets + 1 } }, 50));
        res.end();
        return;
      }
      sse(res, event('g3', { jsonrpc: '2.0', id: pendingId, result: {} }));
      res.end();
    });
    const client = await openLegacy(server.url);
    await client.transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } });
    await until(() => client.received.some((m) => m.id === 1));
    expect(server.seen.filter((each) => each.method === 'GET').map((each) => each.headers['last-event-id'])).toEqual(['e2', 'g1', 'g2']);
    expect(client.errors).toEqual([]);
  });

  it('a server that never comes back fails the request with an UpstreamStreamError within the bound, leaving no timer or socket', async () => {
    const server = await startServer();
    const before = handles();
    const transport = new StreamableHttpTransport({ url: new URL(server.url) });
    const client = new UpstreamClient(transport, { cancelBy: 'notification' });
    await client.start();
    transport.setProtocol('legacy', '2025-11-25');
    const started = performance.now();
    const call = client.request('tools/call', { name: 'slow' }, { timeoutMs: 8000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await until(() => server.endedAt() !== undefined);
    await server.vanish();
    const error = await call;
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(UpstreamStreamError);
    expect((error as UpstreamStreamError).requestId).toBe(1);
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
    // Three reconnections, each after the server's retry: well before the call's own timeout.
    expect(elapsed).toBeGreaterThanOrEqual(3 * RETRY_MS - 20);
    expect(elapsed).toBeLessThan(3 * RETRY_MS + 2000);
    await client.close();
    await until(() => {
      const now = handles();
      return now.timers <= before.timers && now.sockets <= before.sockets;
    });
  });

  it('a refusal of the reconnection (405: no GET) fails the request at once', async () => {
    const server = await startServer((_req, res) => res.writeHead(405).end());
    const client = await openLegacy(server.url);
    await client.transport.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'slow' } });
    await until(() => client.errors.length > 0);
    expect(client.errors[0]).toBeInstanceOf(UpstreamStreamError);
    expect((client.errors[0] as UpstreamStreamError).requestId).toBe(3);
    expect(server.seen.filter((each) => each.method === 'GET')).toHaveLength(1);
  });

  it('close() during the retry wait sends no GET and reports nothing', async () => {
    const server = await startServer();
    const before = handles();
    const client = await openLegacy(server.url);
    await client.transport.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'slow' } });
    await until(() => server.endedAt() !== undefined);
    await client.transport.close();
    await delay(RETRY_MS + 100);
    expect(server.seen.some((each) => each.method === 'GET')).toBe(false);
    expect(client.errors).toEqual([]);
    await until(() => {
      const now = handles();
      return now.timers <= before.timers && now.sockets <= before.sockets;
    });
  });

  it('a modern request has no resumption: its lost stream is reported at once, without a GET', async () => {
    const server = await startServer();
    const client = await openLegacy(server.url);
    client.transport.setProtocol('modern', '2026-07-28');
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    await client.transport.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'slow', _meta: meta } });
    await until(() => client.errors.length > 0);
    expect(client.errors[0]).toBeInstanceOf(UpstreamStreamError);
    await delay(RETRY_MS + 100);
    expect(server.seen.some((each) => each.method === 'GET')).toBe(false);
  });
});
