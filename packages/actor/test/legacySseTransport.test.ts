/**
 * Our HTTP+SSE (2024-11-05) transport against the v1 SDK's SSEServerTransport on 127.0.0.1
 * (httpLegacyServer.mjs): the endpoint event, messages on the stream, refused endpoints and
 * answers, the server ending the stream, and close() leaving nothing open.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { LegacySseTransport } from '../src/transports/legacySseTransport.js';
import { SourceThrottle } from '../src/sourceThrottle.js';
import { UpstreamHttpError, type JsonRpcMessage } from '../src/transports/upstreamTransport.js';
import { startHttpLegacyServer, type HttpLegacyServer } from '../../../test/fixtures/servers/httpLegacyServer.mjs';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function legacyServer(options: { token?: string } = {}): Promise<HttpLegacyServer> {
  const server = await startHttpLegacyServer(options);
  cleanups.push(() => server.close());
  return server;
}

async function until(condition: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await delay(10);
  }
}

function observed(transport: LegacySseTransport) {
  const seen = { received: [] as JsonRpcMessage[], errors: [] as Error[], closes: 0 };
  transport.onmessage = (message) => seen.received.push(message);
  transport.onerror = (error) => seen.errors.push(error);
  transport.onclose = () => seen.closes++;
  cleanups.push(() => transport.close());
  return seen;
}

async function request(transport: LegacySseTransport, received: JsonRpcMessage[], id: number, method: string, params: Record<string, unknown> = {}): Promise<JsonRpcMessage> {
  await transport.send({ jsonrpc: '2.0', id, method, params });
  await until(() => received.some((m) => m.id === id && m.method === undefined));
  return received.find((m) => m.id === id && m.method === undefined)!;
}

const carriers = [
  { name: 'node:http', options: {} },
  { name: 'fetch', options: { fetch: globalThis.fetch } },
];

describe.each(carriers)('LegacySseTransport over $name', ({ options }) => {
  it('takes the endpoint from the stream, then initializes, lists tools and gets progress before the result', async () => {
    const server = await legacyServer();
    const transport = new LegacySseTransport({ url: new URL(server.sseUrl), headers: { 'X-Tenant': 'acme' }, ...options });
    const seen = observed(transport);
    await transport.start();
    expect(transport.endpoint?.pathname).toBe('/messages');
    expect(transport.endpoint?.origin).toBe(new URL(server.sseUrl).origin);

    const init = await request(transport, seen.received, 1, 'initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    expect((init.result as { serverInfo: { name: string } }).serverInfo.name).toBe('fixture-http-legacy');
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const list = await request(transport, seen.received, 2, 'tools/list');
    expect((list.result as { tools: unknown[] }).tools).toHaveLength(4);

    const before = seen.received.length;
    await request(transport, seen.received, 3, 'tools/call', { name: 'progress', arguments: { steps: 2 }, _meta: { progressToken: 'p' } });
    expect(seen.received.slice(before).map((m) => m.method ?? 'response')).toEqual(['notifications/progress', 'notifications/progress', 'response']);

    const get = server.requests.find((r) => r.path === '/sse')!;
    expect(get.headers.accept).toBe('text/event-stream');
    expect(get.headers['x-tenant']).toBe('acme');
    const posts = server.requests.filter((r) => r.path === '/messages');
    expect(posts).toHaveLength(4);
    for (const post of posts) {
      expect(post.headers['x-tenant']).toBe('acme');
      expect(post.headers['content-type']).toBe('application/json');
    }
    expect(seen.errors).toEqual([]);
  });

  it('notifications past the source throttle are dropped from the stream as it is read; the answer behind them arrives', async () => {
    const server = await legacyServer();
    // One notification, then none for a long while.
    const throttle = new SourceThrottle({ perSecond: 0.001, burst: 1 });
    cleanups.push(async () => throttle.dispose());
    const transport = new LegacySseTransport({ url: new URL(server.sseUrl), readGate: throttle, ...options });
    const seen = observed(transport);
    await transport.start();
    await request(transport, seen.received, 1, 'initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });

    const before = seen.received.length;
    const call = await request(transport, seen.received, 2, 'tools/call', { name: 'progress', arguments: { steps: 5 }, _meta: { progressToken: 'p' } });
    expect((call.result as { content: { text: string }[] }).content[0]!.text).toBe('done 5');
    expect(seen.received.slice(before).map((m) => m.method ?? 'response')).toEqual(['notifications/progress', 'response']);
    expect(throttle.throttled).toBe(true);
  });

  it('refuses an endpoint on another origin: start() rejects and nothing is posted', async () => {
    const server = await legacyServer();
    const transport = new LegacySseTransport({ url: new URL(server.sseUrl.replace('/sse', '/sse-foreign')), ...options });
    const seen = observed(transport);
    await expect(transport.start()).rejects.toThrow(/not on the stream's origin/);
    expect(seen.closes).toBe(1);
    await until(() => server.connectionCount() === 0 || options.fetch !== undefined);
  });

  it('a 401 on the GET rejects start() with the status and WWW-Authenticate', async () => {
    const server = await legacyServer({ token: 'secret' });
    const transport = new LegacySseTransport({ url: new URL(server.sseUrl), ...options });
    observed(transport);
    const failure = await transport.start().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(UpstreamHttpError);
    expect((failure as UpstreamHttpError).status).toBe(401);
    expect((failure as UpstreamHttpError).wwwAuthenticate).toMatch(/^Bearer resource_metadata=/);

    const authorized = new LegacySseTransport({ url: new URL(server.sseUrl), headers: { authorization: 'Bearer secret' }, ...options });
    observed(authorized);
    await expect(authorized.start()).resolves.toBeUndefined();
  });

  it('a POST the server refuses rejects send() with an UpstreamHttpError', async () => {
    const server = await legacyServer();
    const transport = new LegacySseTransport({ url: new URL(server.sseUrl), ...options });
    const seen = observed(transport);
    await transport.start();
    // A message that is not JSON-RPC: the SDK answers 400.
    const failure = await transport.send({ hello: 'world' } as never).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(UpstreamHttpError);
    expect((failure as UpstreamHttpError).status).toBe(400);
    expect(seen.closes).toBe(0);
  });

  it('the server ending the stream is reported (onerror, then onclose once)', async () => {
    const server = await legacyServer();
    const transport = new LegacySseTransport({ url: new URL(server.sseUrl), ...options });
    const seen = observed(transport);
    await transport.start();
    await server.endSseStreams();
    await until(() => seen.closes === 1);
    expect(seen.errors.map((e) => e.message)).toEqual([expect.stringMatching(/ended the stream|stream broke/)]);
    await expect(transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).rejects.toThrow(/closed/);
  });

  it('close() ends the stream and the server session, and leaves no connection behind', async () => {
    const server = await legacyServer();
    const transport = new LegacySseTransport({ url: new URL(server.sseUrl), ...options });
    const seen = observed(transport);
    await transport.start();
    await request(transport, seen.received, 1, 'initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    expect(server.sessionCount()).toBe(1);
    await transport.close();
    await transport.close();
    expect(seen.closes).toBe(1);
    await until(() => server.sessionCount() === 0);
    if (options.fetch === undefined) await until(() => server.connectionCount() === 0);
    expect(seen.errors).toEqual([]);
  });
});

it('close() while start() waits for the endpoint makes start() reject', async () => {
  // A stream that never names an endpoint.
  const { createServer } = await import('node:http');
  const http = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': waiting\n\n');
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => {
    http.closeAllConnections();
    http.close(resolve);
  }));
  const transport = new LegacySseTransport({ url: new URL(`http://127.0.0.1:${(http.address() as { port: number }).port}/sse`) });
  const seen = observed(transport);
  const starting = transport.start();
  await delay(100);
  await transport.close();
  await expect(starting).rejects.toThrow(/before an endpoint event/);
  expect(seen.closes).toBe(1);
});

it('a network failure rejects start() with a plain Error whose cause is the socket error', async () => {
  const { createServer } = await import('node:net');
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  const transport = new LegacySseTransport({ url: new URL(`http://127.0.0.1:${port}/sse`) });
  const seen = observed(transport);
  const failure = await transport.start().catch((e: unknown) => e);
  expect(failure).toBeInstanceOf(Error);
  expect(failure).not.toBeInstanceOf(UpstreamHttpError);
  expect((failure as Error).message).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/sse failed: ECONNREFUSED/);
  expect((failure as Error).cause).toBeDefined();
  expect(seen.closes).toBe(1);
});
