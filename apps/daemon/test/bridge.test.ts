/**
 * `mcpool bridge`, in process, against a real Streamable HTTP MCP server on 127.0.0.1 (SDK
 * transport per session): the relay itself, server-initiated traffic, session recovery after a
 * 404 (B-3…B-5), a daemon that goes down (B-7), and the close (B-6). Every test also checks that
 * the bridge wrote nothing but JSON-RPC lines (B-1). No sleeps: waits are on events or bounded
 * `vi.waitFor`.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, ToolListChangedNotificationSchema, PromptListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startTestServer, type TestServer } from './bridgeServer.js';
import { expectPureJsonRpc, staticToken, startBridge, type BridgeRun } from './bridgeHarness.js';

let server: TestServer;
let run: BridgeRun | undefined;
let clients: Client[] = [];

beforeEach(async () => {
  server = await startTestServer();
});

afterEach(async () => {
  if (run) {
    expectPureJsonRpc(run.lines);
    await run.bridge.close('test done');
  }
  run = undefined;
  clients = [];
  await server.close();
});

const text = (result: unknown): string => ((result as { content: { text: string }[] }).content[0]!.text);
const posts = (rpc: string): number => server.seen.filter((seen) => seen.method === 'POST' && seen.rpc === rpc).length;

async function connected(options: Parameters<BridgeRun['connect']>[0] = {}): Promise<Client> {
  run = startBridge({ url: server.url, token: staticToken(server.token) });
  const client = await run.connect(options);
  clients.push(client);
  return client;
}

describe('relay', () => {
  it('relays initialize, lists and calls with the session id, protocol version, token and Accept on every request', async () => {
    const client = await connected();
    expect(client.getServerVersion()).toMatchObject({ name: 'bridge-test' });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('echo');
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi');

    const [initialize, ...rest] = server.seen.filter((seen) => seen.method === 'POST');
    expect(initialize).toMatchObject({ rpc: 'initialize', sessionId: undefined, protocolVersion: undefined, authorization: `Bearer ${server.token}`, accept: 'application/json, text/event-stream', contentType: 'application/json' });
    const sessionId = server.sessions()[0];
    for (const seen of rest) expect(seen).toMatchObject({ sessionId, protocolVersion: '2025-11-25', authorization: `Bearer ${server.token}`, accept: 'application/json, text/event-stream' });
    expect(run!.bridge.stats).toMatchObject({ sessionId, protocolVersion: '2025-11-25', reinits: 0, pending: 0 });
  });

  it('passes results through as the server sent them (no SDK re-validation drops a field)', async () => {
    const client = await connected();
    await client.callTool({ name: 'echo', arguments: { text: 'raw' } });
    const answer = run!.messages().find((message) => (message.result as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text === 'raw');
    expect(answer?.result).toMatchObject({ extraField: 'kept by the bridge' });
  });

  it('relays progress, a server→client sampling request and the client’s answer', async () => {
    const client = await connected({ capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', content: { type: 'text', text: 'hello from the client' }, model: 'test' }));
    expect(text(await client.callTool({ name: 'ask' }))).toBe('client said: hello from the client');
    expect(posts('response')).toBe(1);

    const progress: number[] = [];
    const call = client.callTool({ name: 'slow' }, undefined, { onprogress: (p) => progress.push(p.progress) });
    await vi.waitFor(() => expect(progress).toEqual([1]), { timeout: 15_000, interval: 10 });
    server.releaseSlow();
    expect(text(await call)).toBe('slow done');
  });

  it('opens the GET stream after initialized and relays what arrives on it', async () => {
    const client = await connected();
    const changed = vi.fn();
    client.setNotificationHandler(ToolListChangedNotificationSchema, changed);
    await vi.waitFor(() => expect(server.seen.some((seen) => seen.method === 'GET' && seen.status === 200)).toBe(true), { timeout: 15_000, interval: 10 });
    await client.callTool({ name: 'notify' });
    await vi.waitFor(() => expect(changed).toHaveBeenCalledTimes(1), { timeout: 15_000, interval: 10 });
    const get = server.seen.find((seen) => seen.method === 'GET')!;
    expect(get).toMatchObject({ accept: 'text/event-stream', sessionId: server.sessions()[0], protocolVersion: '2025-11-25' });
  });

  it('tolerates 405 on the GET stream (no retries)', async () => {
    server.getStatus = 405;
    const client = await connected();
    await vi.waitFor(() => expect(server.seen.some((seen) => seen.method === 'GET')).toBe(true), { timeout: 15_000, interval: 10 });
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'still fine' } }))).toBe('still fine');
    expect(server.seen.filter((seen) => seen.method === 'GET')).toHaveLength(1);
  });

  it('a cancelled request: the server sees the cancellation, its stream is closed, no error is made up', async () => {
    const client = await connected();
    const controller = new AbortController();
    const call = client.callTool({ name: 'slow' }, undefined, { signal: controller.signal });
    await vi.waitFor(() => expect(posts('tools/call')).toBe(1), { timeout: 15_000, interval: 10 });
    controller.abort('user');
    await expect(call).rejects.toThrow();
    await vi.waitFor(() => expect(server.slowAborted).toBe(1), { timeout: 15_000, interval: 10 });
    await vi.waitFor(() => expect(run!.bridge.stats.pending).toBe(0), { timeout: 15_000, interval: 10 });
    // Nothing answered the cancelled call: no synthetic error for a request the client gave up on.
    expect(run!.messages().filter((message) => 'error' in message)).toEqual([]);
  });

  it('resumes a POST stream the server closed before answering (SSE polling, Last-Event-ID)', async () => {
    await server.close();
    server = await startTestServer({ eventStore: true });
    const client = await connected();
    expect(text(await client.callTool({ name: 'poll' }))).toBe('polled (closed early: true)');
    expect(server.seen.some((seen) => seen.method === 'GET' && seen.lastEventId !== undefined)).toBe(true);
  });

  it('a client that does not wait for the initialize answer: its next messages wait for the session id', async () => {
    run = startBridge({ url: server.url, token: staticToken(server.token) });
    run.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'eager', version: '1' } } });
    run.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    run.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const list = await run.waitForMessage((message) => message.id === 2);
    expect((list.result as { tools: unknown[] }).tools.length).toBeGreaterThan(0);
    const session = server.sessions()[0];
    const [first, ...rest] = server.seen.filter((seen) => seen.method === 'POST').map((seen) => [seen.rpc, seen.sessionId === session, seen.protocolVersion]);
    expect(first).toEqual(['initialize', false, undefined]);
    // Sent concurrently once the answer came: either may reach the server first.
    expect(rest.sort()).toEqual([
      ['notifications/initialized', true, '2025-11-25'],
      ['tools/list', true, '2025-11-25'],
    ]);
  });

  it('skips lines that are not JSON-RPC, answers a 401 with an error that names the token', async () => {
    run = startBridge({ url: server.url, token: staticToken('wrong-token-0123456789') });
    run.input.write('this is not json\n');
    run.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const answer = await run.waitForMessage((message) => message.id === 1);
    expect(answer.error).toMatchObject({ code: -32000, data: { code: 'MCPOOL_BRIDGE_HTTP_ERROR', httpStatus: 401 } });
    expect((answer.error as { message: string }).message).toMatch(/401.*token/);
    expect(run.logged('not JSON')).toHaveLength(1);
  });

  it('drops a client line over its 32 MiB cap as it streams, and reads the next line whole', async () => {
    run = startBridge({ url: server.url, token: staticToken(server.token) });
    // 33 MiB in 1 MiB writes, then a request on the same stream.
    const part = Buffer.alloc(1024 * 1024, 0x78);
    for (let i = 0; i < 33; i++) run.input.write(part);
    run.input.write('\n');
    run.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const answer = await run.waitForMessage((message) => message.id === 1);
    expect(answer.result).toMatchObject({ protocolVersion: '2025-11-25' });
    expect(run.logged('over the size cap')).toHaveLength(1);
    expect(run.logged('not JSON')).toHaveLength(0);
  });

  it('re-reads the token after a 401 (a restarted daemon wrote a new one)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-bridge-token-'));
    try {
      const file = join(dir, 'token');
      writeFileSync(file, 'old-token-0123456789\n');
      let cached: string | undefined;
      const read = async (): Promise<string | undefined> => (cached = (await import('node:fs/promises')).readFile(file, 'utf8').then((t) => t.trim()) as unknown as string);
      run = startBridge({ url: server.url, token: { get: async () => cached ?? read(), refresh: read } });
      writeFileSync(file, `${server.token}\n`);
      const client = await run.connect();
      clients.push(client);
      expect(text(await client.callTool({ name: 'echo', arguments: { text: 'ok' } }))).toBe('ok');
      expect(server.seen.filter((seen) => seen.status === 401)).toHaveLength(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('session recovery (B-3…B-5)', () => {
  it('an expired session: the next call succeeds after exactly one re-init, with the saved params, and the client is told to refresh', async () => {
    const client = await connected();
    const toolsChanged = vi.fn();
    const promptsChanged = vi.fn();
    client.setNotificationHandler(ToolListChangedNotificationSchema, toolsChanged);
    client.setNotificationHandler(PromptListChangedNotificationSchema, promptsChanged);
    const before = server.sessions()[0]!;
    expect(text(await client.callTool({ name: 'whoami' }))).toBe(before);
    // The GET stream would notice the loss by itself; refuse it so the call is what finds the 404.
    server.getStatus = 405;
    await server.forgetSessions();

    const after = text(await client.callTool({ name: 'whoami' }));
    expect(after).not.toBe(before);
    expect(server.sessions()).toEqual([after]);
    expect(run!.bridge.stats.reinits).toBe(1);
    // B-3: the same initialize params, then initialized; B-5: the version header after the re-init.
    expect(server.initializeParams).toHaveLength(2);
    expect(server.initializeParams[1]).toEqual(server.initializeParams[0]);
    const afterReinit = server.seen.filter((seen) => seen.sessionId === after && seen.method === 'POST');
    expect(afterReinit.map((seen) => seen.rpc)).toEqual(['notifications/initialized', 'tools/call']);
    for (const seen of afterReinit) expect(seen.protocolVersion).toBe('2025-11-25');
    // The failed message was retried once: two tools/call to the old session id? No: one 404, one retry.
    expect(server.seen.filter((seen) => seen.rpc === 'tools/call' && seen.status === 404)).toHaveLength(1);
    // B-4: list_changed for what the server advertised (tools and prompts, not resources).
    await vi.waitFor(() => expect([toolsChanged.mock.calls.length, promptsChanged.mock.calls.length]).toEqual([1, 1]), { timeout: 15_000, interval: 10 });
    expect(run!.messages().some((message) => message.method === 'notifications/resources/list_changed')).toBe(false);
    // The client's own initialize was answered exactly once.
    expect(run!.messages().filter((message) => (message.result as { serverInfo?: unknown } | undefined)?.serverInfo !== undefined)).toHaveLength(1);
  });

  it('requests that hit the same 404 together share one re-init', async () => {
    const client = await connected();
    server.getStatus = 405;
    await server.forgetSessions();
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => client.callTool({ name: 'echo', arguments: { text: `n${n}` } })));
    expect(results.map(text)).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
    expect(run!.bridge.stats.reinits).toBe(1);
    expect(server.initializeParams).toHaveLength(2);
  });

  it('a server answering 404 twice: one JSON-RPC error for that request, no loop', async () => {
    server.getStatus = 405;
    const client = await connected();
    await vi.waitFor(() => expect(server.seen.some((seen) => seen.method === 'GET')).toBe(true), { timeout: 15_000, interval: 10 });
    server.always404 = true;
    const seenBefore = server.seen.length;
    await expect(client.callTool({ name: 'echo', arguments: { text: 'x' } })).rejects.toThrow(/re-initializing failed/);
    const during = server.seen.slice(seenBefore).filter((seen) => seen.method === 'POST');
    // 1. the call → 404; 2. initialize (no session id) → 200; 3. initialized → 404; that is all.
    expect(during.map((seen) => [seen.rpc, seen.status])).toEqual([
      ['tools/call', 404],
      ['initialize', 200],
      ['notifications/initialized', 404],
    ]);
    const errors = run!.messages().filter((message) => 'error' in message);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toMatchObject({ code: -32000, data: { code: 'MCPOOL_BRIDGE_REINIT_FAILED', httpStatus: 404 } });

    // The next request tries once more (bounded per message), and works when the server does again.
    server.always404 = false;
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'back' } }))).toBe('back');
  });

  it('the retried request meeting a 404 again is one error (SESSION_NOT_FOUND), not a loop', async () => {
    server.getStatus = 405;
    const client = await connected();
    await vi.waitFor(() => expect(server.seen.some((seen) => seen.method === 'GET')).toBe(true), { timeout: 15_000, interval: 10 });
    server.notFound = (seen) => seen.rpc === 'tools/call';
    const seenBefore = server.seen.length;
    await expect(client.callTool({ name: 'echo', arguments: { text: 'y' } })).rejects.toThrow(/404.*again/);
    expect(server.seen.slice(seenBefore).filter((seen) => seen.method === 'POST').map((seen) => [seen.rpc, seen.status])).toEqual([
      ['tools/call', 404],
      ['initialize', 200],
      ['notifications/initialized', 202],
      ['tools/call', 404],
    ]);
    expect(run!.messages().filter((message) => 'error' in message).map((message) => (message.error as { data: unknown }).data)).toEqual([{ code: 'MCPOOL_BRIDGE_SESSION_NOT_FOUND', httpStatus: 404 }]);
  });

  it('restores the session state the client had set: its log level and resource subscriptions', async () => {
    await server.close();
    server = await startTestServer({ stateful: true });
    const client = await connected();
    const listChanged: string[] = [];
    client.fallbackNotificationHandler = async (notification) => void listChanged.push(notification.method);
    await client.setLoggingLevel('debug');
    await client.subscribeResource({ uri: 'test://info' });
    await client.subscribeResource({ uri: 'test://gone' });
    await client.unsubscribeResource({ uri: 'test://gone' });
    server.getStatus = 405;
    await server.forgetSessions();
    await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    const session = server.sessions()[0];
    const replayed = server.seen.filter((seen) => seen.sessionId === session && seen.method === 'POST').map((seen) => [seen.rpc, seen.status]);
    expect(replayed).toEqual([
      ['notifications/initialized', 202],
      ['logging/setLevel', 200],
      ['resources/subscribe', 200],
      ['tools/call', 200],
    ]);
    // Their answers went to the bridge, not the client; resources are advertised here, so they are refreshed too.
    expect(run!.messages().filter((message) => typeof message.id === 'string' && message.id.startsWith('mcpool-bridge'))).toEqual([]);
    await vi.waitFor(() => expect(listChanged.sort()).toEqual(['notifications/prompts/list_changed', 'notifications/resources/list_changed', 'notifications/tools/list_changed']), { timeout: 15_000, interval: 10 });
  });

  it('a request in flight when the session is lost gets an error; the next one works', async () => {
    const client = await connected();
    const call = client.callTool({ name: 'slow' });
    await vi.waitFor(() => expect(posts('tools/call')).toBe(1), { timeout: 15_000, interval: 10 });
    await server.forgetSessions();
    await expect(call).rejects.toThrow(/response stream|session was lost/);
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'next' } }))).toBe('next');
    expect(run!.bridge.stats).toMatchObject({ reinits: 1, pending: 0 });
  });

  it('a restarted server: the GET stream notices, re-initializes once by itself, and the idle client is told', async () => {
    const client = await connected();
    const toolsChanged = vi.fn();
    client.setNotificationHandler(ToolListChangedNotificationSchema, toolsChanged);
    await vi.waitFor(() => expect(server.seen.some((seen) => seen.method === 'GET' && seen.status === 200)).toBe(true), { timeout: 15_000, interval: 10 });
    // 1. The daemon goes down: the GET stream breaks and retries against a closed port.
    await server.stop();
    // 2. It comes back on the same port without the old sessions.
    await server.start();
    // 3. The GET retry meets a 404 and re-initializes, with no request from the client.
    await vi.waitFor(() => expect(run!.bridge.stats.reinits).toBe(1), { timeout: 15_000, interval: 10 });
    await vi.waitFor(() => expect(toolsChanged).toHaveBeenCalledTimes(1), { timeout: 15_000, interval: 10 });
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'after restart' } }))).toBe('after restart');
    expect(run!.bridge.stats.reinits).toBe(1);
    expect(server.initializeParams).toHaveLength(2);
  });
});

describe('a daemon that does not answer (B-7)', () => {
  it('bounded retries, then a JSON-RPC error for the request; it works again once the daemon is back', async () => {
    const client = await connected();
    server.getStatus = 405;
    await server.stop();
    const started = Date.now();
    await expect(client.callTool({ name: 'echo', arguments: { text: 'down' } })).rejects.toThrow(/does not answer.*3 attempts/);
    expect(Date.now() - started).toBeLessThan(2000);
    const error = run!.messages().find((message) => 'error' in message);
    expect(error?.error).toMatchObject({ code: -32000, data: { code: 'MCPOOL_BRIDGE_UNREACHABLE' } });

    await server.start();
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'up' } }))).toBe('up');
    expect(run!.bridge.stats.reinits).toBe(1);
  });

  it('never reachable: initialize gets an error, not a hang', async () => {
    await server.stop();
    run = startBridge({ url: server.url, token: staticToken(server.token) });
    run.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const answer = await run.waitForMessage((message) => message.id === 'init');
    expect(answer.error).toMatchObject({ data: { code: 'MCPOOL_BRIDGE_UNREACHABLE' } });
  });

  it('asks the autostart hook once, then goes on when it says the daemon is up', async () => {
    await server.stop();
    const onUnreachable = vi.fn(async () => {
      await server.start();
      return true;
    });
    run = startBridge({ url: server.url, token: staticToken(server.token), onUnreachable });
    const client = await run.connect();
    clients.push(client);
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'started' } }))).toBe('started');
    expect(onUnreachable).toHaveBeenCalledTimes(1);
  });
});

describe('close (B-6)', () => {
  it('stdin EOF: DELETEs the session and ends within a second', async () => {
    const client = await connected();
    await client.callTool({ name: 'echo', arguments: { text: 'bye' } });
    expect(server.sessions()).toHaveLength(1);
    const started = Date.now();
    run!.input.end();
    await run!.done;
    expect(Date.now() - started).toBeLessThan(1000);
    expect(server.seen.filter((seen) => seen.method === 'DELETE')).toHaveLength(1);
    expect(server.seen.find((seen) => seen.method === 'DELETE')).toMatchObject({ status: 200, protocolVersion: '2025-11-25', authorization: `Bearer ${server.token}` });
    expect(server.sessions()).toHaveLength(0);
  });

  it('stdin EOF with a call in flight: still ends within a second', async () => {
    const client = await connected();
    void client.callTool({ name: 'slow' }).catch(() => undefined);
    await vi.waitFor(() => expect(posts('tools/call')).toBe(1), { timeout: 15_000, interval: 10 });
    const started = Date.now();
    run!.input.end();
    await run!.done;
    expect(Date.now() - started).toBeLessThan(1000);
    expect(server.sessions()).toHaveLength(0);
  });

  it('a second initialize from the client replaces the session (the first is deleted)', async () => {
    run = startBridge({ url: server.url, token: staticToken(server.token) });
    const init = (id: number) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    run.send(init(1));
    await run.waitForMessage((message) => message.id === 1);
    run.send(init(2));
    await run.waitForMessage((message) => message.id === 2);
    await vi.waitFor(() => expect(server.seen.filter((seen) => seen.method === 'DELETE')).toHaveLength(1), { timeout: 15_000, interval: 10 });
    expect(server.sessions()).toEqual([run.bridge.stats.sessionId]);
  });
});
