/**
 * Our Streamable HTTP transport against real SDK servers on 127.0.0.1: a legacy-era v1 server
 * (httpLegacyServer.mjs: sessions, GET stream, DELETE) and a modern v2 server
 * (httpModernServer.mjs, dual-era or modern-only). Each server records what it saw on the wire.
 * The legacy flows run twice: over node:http (the default) and over a supplied `fetch`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { createServer } from 'node:net';
import { StreamableHttpTransport, UpstreamStreamError } from '../src/transports/streamableHttpTransport.js';
import { encodeHeaderValue, mcpNameOf, paramHeaders, scanParamHeaders } from '../src/transports/httpMcpHeaders.js';
import { jsonRpcErrorIn } from '../src/transports/jsonRpcErrorBody.js';
import { SourceThrottle } from '../src/sourceThrottle.js';
import { UpstreamHttpError, type JsonRpcMessage } from '../src/transports/upstreamTransport.js';
import { startHttpLegacyServer, type HttpLegacyServer } from '../../../test/fixtures/servers/httpLegacyServer.mjs';
import { startHttpModernServer, type HttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const envelope = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1' },
};

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function legacyServer(options: { token?: string } = {}): Promise<HttpLegacyServer> {
  const server = await startHttpLegacyServer(options);
  cleanups.push(() => server.close());
  return server;
}

async function modernServer(options: { legacy?: 'stateless' | 'reject'; token?: string } = {}): Promise<HttpModernServer> {
  const server = await startHttpModernServer(options);
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

/** A transport plus a tiny JSON-RPC client on it: requests by id, everything received in order. */
async function open(url: string, options: Partial<ConstructorParameters<typeof StreamableHttpTransport>[0]> = {}) {
  const transport = new StreamableHttpTransport({ url: new URL(url), ...options });
  const received: JsonRpcMessage[] = [];
  const errors: Error[] = [];
  let closes = 0;
  let nextId = 1;
  transport.onmessage = (message) => received.push(message);
  transport.onerror = (error) => errors.push(error);
  transport.onclose = () => closes++;
  await transport.start();
  cleanups.push(() => transport.close());
  return {
    transport,
    received,
    errors,
    closes: () => closes,
    /** Sends a request and resolves with its response (waits on the stream if it is SSE). */
    async request(method: string, params: Record<string, unknown> = {}, signal?: AbortSignal): Promise<JsonRpcMessage> {
      const id = nextId++;
      await transport.send({ jsonrpc: '2.0', id, method, params }, { signal });
      await until(() => received.some((m) => m.id === id && m.method === undefined));
      return received.find((m) => m.id === id && m.method === undefined)!;
    },
    notify: (method: string, params?: Record<string, unknown>) => transport.send({ jsonrpc: '2.0', method, ...(params ? { params } : {}) }),
  };
}

type Client = Awaited<ReturnType<typeof open>>;

async function initializeLegacy(client: Client): Promise<void> {
  const answer = await client.request('initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'test', version: '1' } });
  client.transport.setProtocol('legacy', (answer.result as { protocolVersion: string }).protocolVersion);
  await client.notify('notifications/initialized');
}

function header(record: { headers: Record<string, string | string[] | undefined> }, name: string): string | undefined {
  const value = record.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function textOf(message: JsonRpcMessage): string {
  return ((message.result as { content: { text: string }[] }).content[0]!).text;
}

const carriers = [
  { name: 'node:http', options: {} },
  { name: 'fetch', options: { fetch: globalThis.fetch } },
];

describe.each(carriers)('StreamableHttpTransport, legacy era, over $name', ({ options }) => {
  it('notifications past the source throttle are dropped from the answer stream as it is read; the answer behind them arrives', async () => {
    const server = await legacyServer();
    // One notification, then none for a long while.
    const throttle = new SourceThrottle({ perSecond: 0.001, burst: 1 });
    cleanups.push(async () => throttle.dispose());
    const client = await open(server.url, { ...options, readGate: throttle });
    await initializeLegacy(client);

    const before = client.received.length;
    const call = await client.request('tools/call', { name: 'progress', arguments: { steps: 5 }, _meta: { progressToken: 'tok' } });
    expect(textOf(call)).toBe('done 5');
    expect(client.received.slice(before).map((m) => m.method ?? 'response')).toEqual(['notifications/progress', 'response']);
    expect(throttle.throttled).toBe(true);
  });

  it('initializes, keeps the session, lists tools and streams progress before the result', async () => {
    const server = await legacyServer();
    const client = await open(server.url, { ...options, headers: { 'X-Tenant': 'acme' } });
    await initializeLegacy(client);
    const sessionId = client.transport.state.sessionId;
    expect(sessionId).toMatch(/^[\x21-\x7e]+$/);

    const list = await client.request('tools/list');
    expect((list.result as { tools: { name: string }[] }).tools.map((tool) => tool.name)).toEqual(['echo', 'progress', 'announce', 'whoami']);

    const before = client.received.length;
    const call = await client.request('tools/call', { name: 'progress', arguments: { steps: 3 }, _meta: { progressToken: 'tok' } });
    expect(textOf(call)).toBe('done 3');
    const streamed = client.received.slice(before);
    expect(streamed.map((m) => m.method ?? 'response')).toEqual(['notifications/progress', 'notifications/progress', 'notifications/progress', 'response']);
    expect(streamed.slice(0, 3).map((m) => m.params?.progress)).toEqual([1, 2, 3]);

    // What the server saw: initialize without session or version; everything after with both.
    const posts = server.requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => r.rpcMethod)).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/call']);
    for (const post of posts) {
      expect(header(post, 'accept')).toBe('application/json, text/event-stream');
      expect(header(post, 'content-type')).toBe('application/json');
      expect(header(post, 'x-tenant')).toBe('acme');
      expect(header(post, 'mcp-method')).toBeUndefined();
    }
    expect(header(posts[0]!, 'mcp-session-id')).toBeUndefined();
    expect(header(posts[0]!, 'mcp-protocol-version')).toBeUndefined();
    for (const post of posts.slice(1)) {
      expect(header(post, 'mcp-session-id')).toBe(sessionId);
      expect(header(post, 'mcp-protocol-version')).toBe(LEGACY);
    }
    expect(client.errors).toEqual([]);
  });

  it('opens the GET stream after initialized and delivers what the server sends outside requests', async () => {
    const server = await legacyServer();
    const client = await open(server.url, options);
    await initializeLegacy(client);
    await until(() => server.requests.some((r) => r.method === 'GET'));
    const get = server.requests.find((r) => r.method === 'GET')!;
    expect(header(get, 'accept')).toBe('text/event-stream');
    expect(header(get, 'mcp-session-id')).toBe(client.transport.state.sessionId);

    expect(textOf(await client.request('tools/call', { name: 'announce', arguments: {} }))).toBe('announced');
    await until(() => client.received.some((m) => m.method === 'notifications/tools/list_changed'));
  });

  it('a 404 to a request carrying the session reports the session lost (onerror, then onclose) and rejects the send', async () => {
    const server = await legacyServer();
    const client = await open(server.url, options);
    // Initialized, but before notifications/initialized: no GET stream yet to notice first.
    const answer = await client.request('initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'test', version: '1' } });
    client.transport.setProtocol('legacy', (answer.result as { protocolVersion: string }).protocolVersion);
    await server.forgetSessions();

    const failure = await client.request('tools/list').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamHttpError);
    expect((failure as UpstreamHttpError).status).toBe(404);
    await until(() => client.closes() === 1);
    expect(client.errors.map((e) => [e.constructor.name, (e as UpstreamHttpError).status])).toEqual([['UpstreamHttpError', 404]]);
    expect(client.errors[0]!.message).toMatch(/session is gone/);
    await expect(client.request('tools/list')).rejects.toThrow(/closed/);
    // Lost, not ended by us: no DELETE.
    expect(server.requests.some((r) => r.method === 'DELETE')).toBe(false);
  });

  it('a 404 when the GET stream reopens reports the session lost too', async () => {
    const server = await legacyServer();
    const client = await open(server.url, options);
    await initializeLegacy(client);
    await until(() => server.requests.some((r) => r.method === 'GET'));
    // Ends the GET stream; the transport reopens it and gets 404.
    await server.forgetSessions();
    await until(() => client.closes() === 1);
    expect(server.requests.filter((r) => r.method === 'GET').length).toBeGreaterThanOrEqual(2);
    expect(client.errors.some((e) => e instanceof UpstreamHttpError && e.status === 404 && /session is gone/.test(e.message))).toBe(true);
  });

  it('close() sends DELETE with the session id and leaves no connection, timer or session behind', async () => {
    const server = await legacyServer();
    const handlesBefore = activeHandles();
    const client = await open(server.url, options);
    await initializeLegacy(client);
    await until(() => server.requests.some((r) => r.method === 'GET'));
    const sessionId = client.transport.state.sessionId;
    expect(server.sessionCount()).toBe(1);

    await client.transport.close();
    expect(client.closes()).toBe(1);
    const deletes = server.requests.filter((r) => r.method === 'DELETE');
    expect(deletes).toHaveLength(1);
    expect(header(deletes[0]!, 'mcp-session-id')).toBe(sessionId);
    expect(server.sessionCount()).toBe(0);
    if (options.fetch === undefined) {
      // Our own agent: every socket is closed by close().
      await until(() => server.connectionCount() === 0);
      await until(() => sameHandles(activeHandles(), handlesBefore));
    }
    await client.transport.close();
    expect(client.closes()).toBe(1);
  });
});

describe('StreamableHttpTransport, legacy era on a dual-era v2 server (stateless, no sessions)', () => {
  it('initializes and calls without a session; the GET stream gets 405, which is fine; close() sends no DELETE', async () => {
    const server = await modernServer({ legacy: 'stateless' });
    const client = await open(server.url);
    await initializeLegacy(client);
    expect(client.transport.state.sessionId).toBeUndefined();
    await until(() => server.exchanges.some((x) => x.method === 'GET' && x.status !== undefined));
    expect(server.exchanges.find((x) => x.method === 'GET')!.status).toBe(405);
    expect(textOf(await client.request('tools/call', { name: 'echo', arguments: { text: 'old client' } }))).toBe('old client');
    const call = server.exchanges.find((x) => (x.body as { method?: string } | undefined)?.method === 'tools/call')!;
    expect(header(call, 'mcp-protocol-version')).toBe(LEGACY);
    expect(header(call, 'mcp-method')).toBeUndefined();
    await client.transport.close();
    await until(() => server.connectionCount() === 0);
    expect(server.exchanges.some((x) => x.method === 'DELETE')).toBe(false);
    expect(server.exchanges.filter((x) => x.method === 'GET')).toHaveLength(1);
    expect(client.errors).toEqual([]);
  });
});

describe('StreamableHttpTransport, era probing and errors', () => {
  it('a modern probe to a legacy-only server rejects with the 400 and its body', async () => {
    const server = await legacyServer();
    const client = await open(server.url);
    const failure = await client.transport.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(UpstreamHttpError);
    const error = failure as UpstreamHttpError;
    expect(error.status).toBe(400);
    expect(JSON.parse(error.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    // The probe went out with the modern headers derived from its body.
    const probe = server.requests.find((r) => r.rpcMethod === 'server/discover')!;
    expect(header(probe, 'mcp-protocol-version')).toBe(MODERN);
    expect(header(probe, 'mcp-method')).toBe('server/discover');
  });

  it('a legacy initialize to a modern-only server rejects with the 400 naming the supported versions', async () => {
    const server = await modernServer({ legacy: 'reject' });
    const client = await open(server.url);
    const failure = await client.request('initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 't', version: '1' } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(UpstreamHttpError);
    const error = failure as UpstreamHttpError;
    expect(error.status).toBe(400);
    expect(JSON.parse(error.body)).toMatchObject({ error: { code: -32022, data: { supported: [MODERN] } } });
    expect(jsonRpcErrorIn(error.body)).toMatchObject({ code: -32022, data: { supported: [MODERN] } });
    expect(jsonRpcErrorIn('<html>Bad Request</html>')).toBeUndefined();
    expect(jsonRpcErrorIn('{"error":"invalid_token"}')).toBeUndefined();
  });

  it('surfaces 401 with WWW-Authenticate, on both kinds of server', async () => {
    for (const server of [await legacyServer({ token: 'secret' }), await modernServer({ token: 'secret' })]) {
      const client = await open(server.url, { headers: { Authorization: 'Bearer wrong' } });
      const failure = await client.transport.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope } }).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(UpstreamHttpError);
      expect((failure as UpstreamHttpError).status).toBe(401);
      expect((failure as UpstreamHttpError).wwwAuthenticate).toMatch(/^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource"$/);
      expect(JSON.parse((failure as UpstreamHttpError).body)).toMatchObject({ error: 'invalid_token' });
      // With the token the request passes: the modern server answers, the legacy one refuses the probe (400, not 401).
      const authorized = await open(server.url, { headers: { Authorization: 'Bearer secret' } });
      const passed = await authorized.transport.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope } }).then(
        () => 200,
        (e: UpstreamHttpError) => e.status,
      );
      expect(passed).toBe('sseUrl' in server ? 400 : 200);
    }
  });

  it('a network failure rejects with a plain Error whose cause is the socket error', async () => {
    const port = await closedPort();
    for (const options of carriers.map((c) => c.options)) {
      const client = await open(`http://127.0.0.1:${port}/mcp`, options);
      const failure = await client.transport.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope } }).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(Error);
      expect(failure).not.toBeInstanceOf(UpstreamHttpError);
      expect((failure as Error).message).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/mcp failed/);
      expect((failure as Error).cause).toBeDefined();
    }
  });
});

describe('StreamableHttpTransport, modern era', () => {
  it('probes with server/discover, then calls tools with the standard headers and no session', async () => {
    const server = await modernServer();
    const client = await open(server.url);
    const discover = await client.request('server/discover', { _meta: envelope });
    expect((discover.result as { supportedVersions: string[] }).supportedVersions).toContain(MODERN);
    client.transport.setProtocol('modern', MODERN);

    await client.request('tools/list', { _meta: envelope });
    const before = client.received.length;
    const call = await client.request('tools/call', { name: 'progress', arguments: { steps: 2 }, _meta: { ...envelope, progressToken: 7 } });
    expect(textOf(call)).toBe('done 2');
    expect(client.received.slice(before).map((m) => m.method ?? 'response')).toEqual(['notifications/progress', 'notifications/progress', 'response']);
    // `regional` declares x-mcp-header Region: the server refuses the call unless the header mirrors it.
    const regional = await client.request('tools/call', { name: 'regional', arguments: { region: 'zürich', text: 'hi' }, _meta: envelope });
    expect(textOf(regional)).toBe('zürich: hi');

    const posts = server.exchanges.filter((x) => x.method === 'POST');
    expect(posts.map((x) => [header(x, 'mcp-method'), header(x, 'mcp-name')])).toEqual([
      ['server/discover', undefined],
      ['tools/list', undefined],
      ['tools/call', 'progress'],
      ['tools/call', 'regional'],
    ]);
    for (const post of posts) {
      expect(post.status).toBe(200);
      expect(header(post, 'mcp-protocol-version')).toBe(MODERN);
      expect(header(post, 'mcp-session-id')).toBeUndefined();
    }
    // Not header-safe ASCII, so the base64 sentinel carries it.
    expect(header(posts[3]!, 'mcp-param-region')).toBe(`=?base64?${Buffer.from('zürich').toString('base64')}?=`);
    expect(server.exchanges.some((x) => x.method !== 'POST')).toBe(false);
    expect(client.errors).toEqual([]);
  });

  it('a call to an x-mcp-header tool before any tools/list goes without the header and gets the 400 / -32020', async () => {
    const server = await modernServer({ legacy: 'reject' });
    const client = await open(server.url);
    client.transport.setProtocol('modern', MODERN);
    const failure = await client.request('tools/call', { name: 'regional', arguments: { region: 'eu', text: 'x' }, _meta: envelope }).catch((e: unknown) => e);
    expect((failure as UpstreamHttpError).status).toBe(400);
    expect(JSON.parse((failure as UpstreamHttpError).body)).toMatchObject({ error: { code: -32020 } });
  });

  it('aborting a request closes its HTTP exchange: the server sees the close and cancels the handler', async () => {
    const server = await modernServer();
    const client = await open(server.url);
    client.transport.setProtocol('modern', MODERN);
    const controller = new AbortController();
    const pending = client.transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow', arguments: { ms: 30_000 }, _meta: envelope } }, { signal: controller.signal });
    await until(() => server.exchanges.some((x) => header(x, 'mcp-name') === 'slow'));
    controller.abort(new Error('caller gave up'));
    await expect(pending).rejects.toThrow('caller gave up');
    await until(() => server.cancelled.length === 1);
    expect(server.exchanges.find((x) => header(x, 'mcp-name') === 'slow')!.closedEarly).toBe(true);
    expect(client.errors).toEqual([]);
  });

  it('a long-lived subscriptions/listen stream delivers its events until its signal aborts', async () => {
    const server = await modernServer();
    const client = await open(server.url);
    client.transport.setProtocol('modern', MODERN);
    const controller = new AbortController();
    await client.transport.send(
      { jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: envelope } },
      { signal: controller.signal },
    );
    await until(() => client.received.some((m) => m.method === 'notifications/subscriptions/acknowledged'));
    server.notify.toolsChanged();
    await until(() => client.received.some((m) => m.method === 'notifications/tools/list_changed'));
    const listen = server.exchanges.find((x) => header(x, 'mcp-method') === 'subscriptions/listen')!;
    expect(listen.closedEarly).toBe(false);

    controller.abort();
    await until(() => listen.closedEarly);
    // Ended by us: not reported as a lost request.
    await delay(50);
    expect(client.errors).toEqual([]);
  });

  it('close() ends an open stream and leaves no connection behind; no DELETE without a session', async () => {
    const server = await modernServer();
    const client = await open(server.url);
    client.transport.setProtocol('modern', MODERN);
    await client.transport.send({ jsonrpc: '2.0', id: 9, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: envelope } });
    await until(() => client.received.some((m) => m.method === 'notifications/subscriptions/acknowledged'));
    await client.transport.close();
    expect(client.closes()).toBe(1);
    await until(() => server.connectionCount() === 0);
    expect(server.exchanges.find((x) => header(x, 'mcp-method') === 'subscriptions/listen')!.closedEarly).toBe(true);
    expect(server.exchanges.some((x) => x.method === 'DELETE')).toBe(false);
  });

  it('a response stream that ends before its response is reported with the request id', async () => {
    // A server that opens an SSE answer, sends one progress notification and hangs up.
    const { createServer: createHttpServer } = await import('node:http');
    const http = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\n\n`);
      });
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => http.close(resolve)));
    const client = await open(`http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`);
    client.transport.setProtocol('modern', MODERN);
    await client.transport.send({ jsonrpc: '2.0', id: 42, method: 'tools/call', params: { name: 'x', _meta: envelope } });
    await until(() => client.errors.length > 0);
    expect(client.errors[0]).toBeInstanceOf(UpstreamStreamError);
    expect((client.errors[0] as UpstreamStreamError).requestId).toBe(42);
    expect(client.received.map((m) => m.method)).toEqual(['notifications/progress']);
  });
});

describe('the mirrored headers', () => {
  it('Mcp-Name comes from params.name or params.uri, and only for the methods that mirror one', () => {
    expect(mcpNameOf('tools/call', { name: 'echo' })).toBe('echo');
    expect(mcpNameOf('prompts/get', { name: 'greet' })).toBe('greet');
    expect(mcpNameOf('resources/read', { uri: 'file:///a b' })).toBe('file:///a b');
    expect(mcpNameOf('tools/list', { name: 'x' })).toBeUndefined();
    expect(mcpNameOf('constructor', {})).toBeUndefined();
  });

  it('values that are not plain visible ASCII go as the base64 sentinel', () => {
    expect(encodeHeaderValue('eu-west-1')).toBe('eu-west-1');
    for (const value of ['zürich', ' padded', 'line\nbreak', '', '=?base64?abc?=']) {
      expect(encodeHeaderValue(value)).toBe(`=?base64?${Buffer.from(value).toString('base64')}?=`);
    }
  });

  it('collects x-mcp-header declarations reached through properties, and refuses the invalid ones', () => {
    const nested = { type: 'object', properties: { where: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } }, n: { type: 'integer', 'x-mcp-header': 'N' } } };
    const scan = scanParamHeaders(nested);
    expect(scan).toEqual({ valid: true, declarations: [{ path: ['where', 'region'], header: 'Region' }, { path: ['n'], header: 'N' }] });
    expect(paramHeaders(scan.valid ? scan.declarations : [], { where: { region: 'eu' }, n: 3 })).toEqual({ 'mcp-param-region': 'eu', 'mcp-param-n': '3' });
    expect(paramHeaders(scan.valid ? scan.declarations : [], { where: null })).toEqual({});

    const invalid = [
      { type: 'object', properties: { a: { type: 'number', 'x-mcp-header': 'A' } } },
      { type: 'object', properties: { a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'A' } } } },
      { type: 'object', anyOf: [{ properties: { a: { type: 'string', 'x-mcp-header': 'A' } } }] },
      { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Bad Name' } } },
      { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Same' }, b: { type: 'string', 'x-mcp-header': 'same' } } },
      { type: 'string', 'x-mcp-header': 'Root' },
    ];
    for (const schema of invalid) expect(scanParamHeaders(schema).valid).toBe(false);
  });
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Active handles by kind (sockets, timers), as `process.getActiveResourcesInfo()` counts them. */
function activeHandles(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

function sameHandles(now: Record<string, number>, before: Record<string, number>): boolean {
  return ['TCPSocketWrap', 'Timeout'].every((kind) => (now[kind] ?? 0) <= (before[kind] ?? 0));
}
