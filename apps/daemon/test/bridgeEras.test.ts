/**
 * `mcpool bridge`'s 2026-07-28 face, in process, against a real Streamable HTTP MCP server on
 * 127.0.0.1 (SDK transport per session, 2025-11-25 like the daemon's `/mcp`): what the legacy
 * session is opened with, what a forwarded request carries, `subscriptions/listen` with resource
 * subscriptions, the per-request log level, server→client requests a modern client cannot take,
 * and 404 recovery under a modern client. Every test also checks that the bridge wrote nothing but
 * JSON-RPC lines. Waits are on events or bounded `vi.waitFor`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './bridgeServer.js';
import { expectPureJsonRpc, staticToken, startBridge, type BridgeRun } from './bridgeHarness.js';

const MODERN = '2026-07-28';
let server: TestServer | undefined;
let run: BridgeRun | undefined;

afterEach(async () => {
  if (run) {
    expectPureJsonRpc(run.lines);
    await run.bridge.close('test done');
  }
  run = undefined;
  await server?.close();
  server = undefined;
});

async function modern(options: Parameters<typeof startTestServer>[0] = { stateful: true }): Promise<{ server: TestServer; run: BridgeRun }> {
  server = await startTestServer(options);
  run = startBridge({ url: server.url, token: staticToken(server.token) });
  return { server, run };
}

const meta = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {}, roots: {}, experimental: { probe: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'modern-test', version: '9.9.9' },
  ...extra,
});
const request = (id: string | number, method: string, params: Record<string, unknown> = {}, extraMeta?: Record<string, unknown>): Record<string, unknown> => ({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(extraMeta) } });

async function resultOf(bridge: BridgeRun, id: string | number): Promise<Record<string, unknown>> {
  const message = await bridge.waitForMessage((m) => m.id === id && m.method === undefined);
  if (message.error !== undefined) throw new Error(`request ${id} failed: ${JSON.stringify(message.error)}`);
  return message.result as Record<string, unknown>;
}
const textOf = (result: unknown): string => (result as { content: { text: string }[] }).content[0]!.text;
const posts = (seen: TestServer['seen'], rpc: string): number => seen.filter((entry) => entry.method === 'POST' && entry.rpc === rpc).length;

describe('the 2026-07-28 face of the bridge', () => {
  it('opens the legacy session with the client info of the first request and only the capabilities it can serve', async () => {
    const { server, run } = await modern();
    run.send(request(1, 'server/discover'));
    const discovered = await resultOf(run, 1);
    expect(discovered).toMatchObject({ supportedVersions: [MODERN], resultType: 'complete', capabilities: { logging: {}, resources: { subscribe: true } } });
    expect((discovered._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'bridge-test', version: '1.0.0' });
    expect(server.initializeParams).toEqual([{ protocolVersion: '2025-11-25', capabilities: { experimental: { probe: {} } }, clientInfo: { name: 'modern-test', version: '9.9.9' } }]);
    await vi.waitFor(() => expect(posts(server.seen, 'notifications/initialized')).toBe(1), { timeout: 10_000 });
    // A second discover reuses the session.
    run.send(request(2, 'server/discover'));
    await resultOf(run, 2);
    expect(server.initializeParams).toHaveLength(1);
    expect(run.bridge.stats.era).toBe('modern');
  });

  it('forwards a request without the modern-only _meta keys, keeping progressToken and the rest', async () => {
    const { run } = await modern();
    run.send(request(1, 'tools/call', { name: 'meta', arguments: {} }, { progressToken: 'tok', traceparent: '00-abc-def-01' }));
    const forwarded = JSON.parse(textOf(await resultOf(run, 1))) as Record<string, unknown>;
    expect(forwarded).toEqual({ progressToken: 'tok', traceparent: '00-abc-def-01' });
    // Progress reaches the client on its token.
    run.send(request(2, 'tools/call', { name: 'slow', arguments: {} }, { progressToken: 'slow-tok' }));
    await run.waitForMessage((m) => m.method === 'notifications/progress' && (m.params as { progressToken?: unknown }).progressToken === 'slow-tok');
    server!.releaseSlow();
    expect((await resultOf(run, 2)).resultType).toBe('complete');
  });

  it('a notifications/cancelled for a forwarded request reaches the daemon, which stops the call', async () => {
    const { server, run } = await modern();
    run.send(request('slow', 'tools/call', { name: 'slow', arguments: {} }, { progressToken: 'p' }));
    await run.waitForMessage((m) => m.method === 'notifications/progress');
    run.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'test', _meta: meta() } });
    await vi.waitFor(() => expect(server.slowAborted).toBe(1), { timeout: 10_000 });
    expect(posts(server.seen, 'notifications/cancelled')).toBe(1);
  });

  it('subscriptions/listen honours resourceSubscriptions through resources/subscribe, tags resources/updated, and unsubscribes when cancelled', async () => {
    const { server, run } = await modern();
    run.send(request('L', 'subscriptions/listen', { notifications: { resourceSubscriptions: ['test://info'], toolsListChanged: true, promptsListChanged: true } }));
    const ack = await run.waitForMessage((m) => m.method === 'notifications/subscriptions/acknowledged');
    // resourcesListChanged was not asked for, so it is not acknowledged (nor sent).
    expect(ack.params).toEqual({ notifications: { resourceSubscriptions: ['test://info'], toolsListChanged: true, promptsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'L' } });
    expect(posts(server.seen, 'resources/subscribe')).toBe(1);

    run.send(request(1, 'tools/call', { name: 'touch', arguments: {} }));
    await resultOf(run, 1);
    const updated = await run.waitForMessage((m) => m.method === 'notifications/resources/updated');
    expect(updated.params).toEqual({ uri: 'test://info', _meta: { 'io.modelcontextprotocol/subscriptionId': 'L' } });

    run.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'L' } });
    await vi.waitFor(() => expect(posts(server.seen, 'resources/unsubscribe')).toBe(1), { timeout: 10_000 });
    // The cancel of a listen is the bridge's own business: it never reaches the daemon.
    expect(posts(server.seen, 'notifications/cancelled')).toBe(0);
    run.send(request(2, 'tools/call', { name: 'touch', arguments: {} }));
    await resultOf(run, 2);
    run.send(request(3, 'tools/list'));
    await resultOf(run, 3);
    expect(run.messages().filter((m) => m.method === 'notifications/resources/updated')).toHaveLength(1);
    expect(run.messages().filter((m) => m.id === 'L')).toEqual([]);
  });

  it('logs reach the client only after a request asked for a level, which is set on the legacy session', async () => {
    const { server, run } = await modern();
    run.send(request(0, 'server/discover'));
    await resultOf(run, 0);
    // Session logs ride the GET stream: wait for it, so that a log sent now would reach the bridge.
    await vi.waitFor(() => expect(server.seen.some((entry) => entry.method === 'GET' && entry.status === 200)).toBe(true), { timeout: 10_000 });
    run.send(request(1, 'tools/call', { name: 'log', arguments: {} }));
    await resultOf(run, 1);
    expect(posts(server.seen, 'logging/setLevel')).toBe(0);
    run.send(request(2, 'tools/call', { name: 'log', arguments: {} }, { 'io.modelcontextprotocol/logLevel': 'debug' }));
    await resultOf(run, 2);
    expect(posts(server.seen, 'logging/setLevel')).toBe(1);
    const logged = await run.waitForMessage((m) => m.method === 'notifications/message');
    expect(logged.params).toMatchObject({ level: 'info', data: 'logged by the server' });
    expect(run.messages().filter((m) => m.method === 'notifications/message')).toHaveLength(1);
    // The same level again: not set twice.
    run.send(request(3, 'tools/list', {}, { 'io.modelcontextprotocol/logLevel': 'debug' }));
    await resultOf(run, 3);
    expect(posts(server.seen, 'logging/setLevel')).toBe(1);
  });

  it('answers a server→client request itself (a modern stdio client takes none) and never writes it to the client', async () => {
    const { run } = await modern({});
    run.send(request(1, 'tools/call', { name: 'ask', arguments: {} }));
    const answer = await run.waitForMessage((m) => m.id === 1 && m.method === undefined);
    // The tool's sampling request was refused: the call fails (as an error result or a JSON-RPC error), promptly.
    const failed = answer.error !== undefined || (answer.result as { isError?: boolean }).isError === true;
    expect(failed).toBe(true);
    expect(run.messages().filter((m) => m.method === 'sampling/createMessage')).toEqual([]);
    expect(run.logged('the daemon sent a request the modern client cannot take')).toHaveLength(1);
  });

  it('recovers from a lost session under a modern client: one re-init, the resource subscription replayed, the listen told to re-list', async () => {
    const { server, run } = await modern();
    run.send(request('L', 'subscriptions/listen', { notifications: { toolsListChanged: true, resourceSubscriptions: ['test://info'] } }));
    await run.waitForMessage((m) => m.method === 'notifications/subscriptions/acknowledged');
    await server.forgetSessions();
    run.send(request(1, 'tools/call', { name: 'echo', arguments: { text: 'after' } }));
    expect(textOf(await resultOf(run, 1))).toBe('after');
    expect(run.bridge.stats.reinits).toBe(1);
    expect(server.initializeParams).toHaveLength(2);
    expect(server.initializeParams[1]).toEqual(server.initializeParams[0]);
    expect(posts(server.seen, 'resources/subscribe')).toBe(2);
    const changed = await run.waitForMessage((m) => m.method === 'notifications/tools/list_changed');
    expect(changed.params).toEqual({ _meta: { 'io.modelcontextprotocol/subscriptionId': 'L' } });
    // The resources list_changed of the re-init went to nobody: the listen did not ask for it.
    expect(run.messages().filter((m) => m.method === 'notifications/resources/list_changed')).toEqual([]);
  });

  it('a client that sends initialize after a discover is served as a legacy client from then on', async () => {
    const { server, run } = await modern({});
    run.send(request(1, 'server/discover'));
    await resultOf(run, 1);
    run.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'both', version: '1' } } });
    const init = await resultOf(run, 'init');
    expect(init.protocolVersion).toBe('2025-11-25');
    run.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    run.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const listed = await resultOf(run, 2);
    expect(listed.resultType).toBeUndefined();
    expect(run.bridge.stats.era).toBe('legacy');
    expect(server.initializeParams).toHaveLength(2);
  });

  it('a daemon that does not answer fails the modern request; the next one opens the session anew', async () => {
    const { server, run } = await modern({});
    await server.stop();
    run.send(request(1, 'server/discover'));
    const failed = await run.waitForMessage((m) => m.id === 1);
    expect(failed.error).toMatchObject({ code: -32000, data: { code: 'MCPOOL_BRIDGE_UNREACHABLE' } });
    await server.start();
    run.send(request(2, 'tools/list'));
    const listed = await resultOf(run, 2);
    expect((listed.tools as { name: string }[]).map((tool) => tool.name)).toContain('echo');
    expect(listed.resultType).toBe('complete');
    expect(server.initializeParams).toHaveLength(1);
  });

  it('a request before any handshake gets -32022 without reaching the daemon; a ping is answered', async () => {
    const { server, run } = await modern({});
    run.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const early = await run.waitForMessage((m) => m.id === 1);
    expect(early.error).toMatchObject({ code: -32022, data: { code: 'MCPOOL_BRIDGE_UNSUPPORTED_PROTOCOL_VERSION', supported: [MODERN] } });
    run.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    expect((await run.waitForMessage((m) => m.id === 2)).result).toEqual({});
    expect(server.seen).toEqual([]);
    expect(run.bridge.stats.era).toBe('unknown');
  });
});
