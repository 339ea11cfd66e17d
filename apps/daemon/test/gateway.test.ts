/**
 * The `/mcp` gateway in process: a real Daemon and its fastify app listening on 127.0.0.1:0, real
 * fixture servers behind it, SDK clients (Streamable HTTP) and raw node:http requests in front.
 * Covers aggregation and naming, faithful pass-through, per-client access on lists and calls,
 * progress / logging / server→client requests tied to the calling request, cancellation both ways,
 * list_changed and resources/updated routing, sessions bound to their principal and endpoint, and
 * the HTTP refusals (400/401/403/404/405/406/413/415).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LATEST_PROTOCOL_VERSION,
  LoggingMessageNotificationSchema,
  McpError,
  ProgressNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type ElicitRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { WorkspaceMcpStatus } from '@mcpool/client';
import { fixtureConfig, marker, textOf } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { ACCEPT_BOTH, connectClient, initializeBody, messagesOf, openRawSession, raw } from './gatewayHelpers.js';

const mark = marker('gateway');
const ALICE = `alice-${randomUUID()}`;
const BOB = `bob-${randomUUID()}`;
const VIEWER = `viewer-${randomUUID()}`;

let h: Harness;
let base: string;
const clients: Client[] = [];

async function open(token: string | undefined, path = '/mcp', options: Parameters<typeof connectClient>[2] = {}): Promise<Client> {
  const { client } = await connectClient(`${base}${path}`, token, options);
  clients.push(client);
  return client;
}

const refsOf = async (server: string): Promise<number[]> => {
  const status = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
  return status.servers.find((s) => s.name === server)!.entrySummary.map((e) => e.refs);
};

beforeAll(async () => {
  h = await harness(
    {
      // Shared by every client: these tests are about the gateway; sharing.test.ts covers the default.
      mcpServers: {
        echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }),
        conformance: fixtureConfig('conformance.mjs', mark, { sharing: 'shared' }),
        changes: fixtureConfig('listChanged.mjs', mark, { sharing: 'shared' }),
      },
      daemon: {
        mcpBodyLimitBytes: 64 * 1024,
        clients: [
          { id: 'alice', tokenEnv: 'GW_ALICE', rights: ['read'], servers: ['echo', 'conformance'], excludeTools: ['echo__add'] },
          { id: 'bob', tokenEnv: 'GW_BOB', rights: ['write'] },
          { id: 'viewer', tokenEnv: 'GW_VIEWER', rights: ['read'] },
        ],
      },
    },
    { env: { GW_ALICE: ALICE, GW_BOB: BOB, GW_VIEWER: VIEWER }, marks: [mark] },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const address = h.app.server.address() as { port: number };
  base = `http://127.0.0.1:${address.port}`;
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await h?.close();
});

describe('aggregation and pass-through', () => {
  it('/mcp lists every server’s tools as <server>__<tool>, schemas untouched and without the pool’s trust field', async () => {
    const client = await open(h.token);
    expect(client.getServerVersion()).toMatchObject({ name: 'mcpool' });
    expect(client.getServerCapabilities()).toMatchObject({ tools: { listChanged: true }, prompts: { listChanged: true }, resources: { subscribe: true, listChanged: true }, logging: {}, completions: {} });
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['echo__echo', 'echo__add', 'conformance__test_simple_text', 'changes__base']));
    expect(names.every((name) => /^(echo|conformance|changes)__/.test(name))).toBe(true);
    const schema = tools.find((tool) => tool.name === 'conformance__json_schema_2020_12_tool')!.inputSchema;
    expect(schema).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema', $defs: { address: { type: 'object' } }, additionalProperties: false });
    expect(tools.some((tool) => 'trust' in tool)).toBe(false);
  });

  it('calls a prefixed tool; an isError result stays a result; an upstream JSON-RPC error keeps its code and message', async () => {
    const client = await open(h.token);
    expect(textOf(await client.callTool({ name: 'echo__echo', arguments: { text: 'hi' } }))).toBe('hi');
    const failed = await client.callTool({ name: 'conformance__test_error_handling', arguments: {} });
    expect(failed.isError).toBe(true);
    const thrown = await client.callTool({ name: 'echo__throw', arguments: {} }).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(McpError);
    expect((thrown as McpError).code).toBe(-32603);
    // The fixture throws an McpError, whose message already carries the SDK's prefix on the wire;
    // the gateway takes every such prefix off, so the client shows its own once.
    expect((thrown as McpError).message).toBe('MCP error -32603: fixture tool threw on purpose');
    const unknown = await client.callTool({ name: 'nosuch__tool', arguments: {} }).catch((error: unknown) => error);
    expect((unknown as McpError).code).toBe(-32602);
  });

  it('keeps content items as sent (audio mimeType, embedded resources)', async () => {
    const client = await open(h.token);
    const audio = await client.callTool({ name: 'conformance__test_audio_content', arguments: {} });
    expect(audio.content).toEqual([{ type: 'audio', data: expect.any(String), mimeType: 'audio/wav' }]);
    const mixed = await client.callTool({ name: 'conformance__test_multiple_content_types', arguments: {} });
    expect((mixed.content as { type: string }[]).map((item) => item.type)).toEqual(['text', 'image', 'resource']);
  });

  it('prompts are prefixed; completion strips the prefix from ref.name', async () => {
    const client = await open(h.token);
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(['echo__greet', 'conformance__test_simple_prompt']));
    const greeting = await client.getPrompt({ name: 'echo__greet', arguments: { name: 'Ada' } });
    expect(JSON.stringify(greeting.messages)).toContain('Hello, Ada!');
    const completion = await client.complete({ ref: { type: 'ref/prompt', name: 'conformance__test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'pa' } });
    expect(completion.completion.values).toEqual(['paris', 'park', 'party']);
    const byTemplate = await client.complete({ ref: { type: 'ref/resource', uri: 'test://template/{id}/data' }, argument: { name: 'id', value: '4' } });
    expect(byTemplate.completion.values).toEqual(['42']);
  });

  it('resources keep their URIs and are routed by URI or template', async () => {
    const client = await open(h.token);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(expect.arrayContaining(['fixture://info', 'test://static-text', 'test://static-binary']));
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toContain('test://template/{id}/data');
    expect(JSON.stringify(await client.readResource({ uri: 'fixture://info' }))).toContain('fixture-echo pid=');
    expect(JSON.stringify(await client.readResource({ uri: 'test://template/77/data' }))).toContain('Data for ID: 77');
    const missing = await client.readResource({ uri: 'nowhere://x' }).catch((error: unknown) => error);
    expect((missing as McpError).code).toBe(-32002);
  });

  it('/mcp/<server> exposes that server alone, unprefixed, with its own serverInfo and capabilities', async () => {
    const client = await open(h.token, '/mcp/conformance');
    expect(client.getServerVersion()).toEqual({ name: 'mcpool-conformance-fixture', version: '1.0.0' });
    expect(client.getInstructions()).toContain('conformance');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('test_simple_text');
    expect(tools.some((t) => t.name.includes('__'))).toBe(false);
    expect(textOf(await client.callTool({ name: 'test_simple_text', arguments: {} }))).toContain('simple text');
    const echo = await open(h.token, '/mcp/echo');
    expect(echo.getServerCapabilities()).toMatchObject({ tools: { listChanged: true } });
    expect(echo.getServerCapabilities()?.logging).toBeUndefined();
  });
});

describe('per-client access, on lists and on calls', () => {
  it('a tool excluded for alice is neither listed nor callable by her, and works for bob', async () => {
    const alice = await open(ALICE);
    const names = (await alice.listTools()).tools.map((t) => t.name);
    expect(names).toContain('echo__echo');
    expect(names).not.toContain('echo__add');
    // Her servers are echo and conformance only.
    expect(names.some((name) => name.startsWith('changes__'))).toBe(false);
    const refused = await alice.callTool({ name: 'echo__add', arguments: { a: 1, b: 2 } }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(-32602);
    expect((refused as McpError).message).toContain('Unknown tool: echo__add');
    const bob = await open(BOB);
    expect(textOf(await bob.callTool({ name: 'echo__add', arguments: { a: 1, b: 2 } }))).toBe('3');
    expect((await bob.listTools()).tools.map((t) => t.name)).toContain('changes__base');
  });

  it('a server outside the client’s list is 403 on /mcp/<server>; an unknown one 404', async () => {
    const init = (path: string, token: string) => raw(base, { path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: initializeBody() });
    expect((await init('/mcp/changes', ALICE)).status).toBe(403);
    expect((await init('/mcp/nosuch', h.token)).status).toBe(404);
  });

  it('a read-only client without a server list may open a session but sees and calls nothing', async () => {
    const viewer = await open(VIEWER);
    expect((await viewer.listTools()).tools).toEqual([]);
    const refused = await viewer.callTool({ name: 'echo__echo', arguments: { text: 'x' } }).catch((error: unknown) => error);
    expect((refused as McpError).code).toBe(-32602);
  });
});

describe('tied to the calling request', () => {
  it('progress reaches only its caller, on its own stream, with the caller’s token', async () => {
    const caller = await open(h.token);
    const other = await open(h.token);
    const seenByOther: unknown[] = [];
    other.setNotificationHandler(ProgressNotificationSchema, (n) => void seenByOther.push(n));
    const progress: number[] = [];
    const [result] = await Promise.all([
      caller.callTool({ name: 'echo__slow', arguments: { ms: 200, steps: 4 } }, undefined, { onprogress: (p) => void progress.push(p.progress) }),
      other.callTool({ name: 'echo__slow', arguments: { ms: 200, steps: 4 } }),
    ]);
    expect(textOf(result)).toBe('done after 200');
    expect(progress).toEqual([1, 2, 3, 4]);
    expect(seenByOther).toEqual([]);
  });

  it('logging/setLevel is per session: each gets the messages of its own calls at its own level', async () => {
    const quiet = await open(h.token, '/mcp/conformance');
    const loud = await open(h.token, '/mcp/conformance');
    const quietLogs: unknown[] = [];
    const loudLogs: string[] = [];
    quiet.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void quietLogs.push(n.params));
    loud.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void loudLogs.push(String(n.params.data)));
    await quiet.setLoggingLevel('error');
    await loud.setLoggingLevel('debug');
    await quiet.callTool({ name: 'test_tool_with_logging', arguments: {} });
    await loud.callTool({ name: 'test_tool_with_logging', arguments: {} });
    expect(loudLogs).toEqual(['Tool execution started', 'Tool processing data', 'Tool execution completed']);
    expect(quietLogs).toEqual([]);
  });

  it('sampling from the upstream reaches the calling session; its answer goes back as sent', async () => {
    const client = await open(h.token, '/mcp', { capabilities: { sampling: {} } });
    const asked: unknown[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      asked.push(request.params.messages);
      return { role: 'assistant', content: { type: 'text', text: 'forty-two' }, model: 'test-model', stopReason: 'endTurn' };
    });
    const result = await client.callTool({ name: 'conformance__test_sampling', arguments: { prompt: 'meaning of life?' } });
    expect(textOf(result)).toBe('LLM response: forty-two');
    expect(JSON.stringify(asked)).toContain('meaning of life?');
  });

  it('elicitation schemas survive the trip (oneOf, enumNames, items.anyOf)', async () => {
    const client = await open(h.token, '/mcp', { capabilities: { elicitation: {} } });
    let schema: ElicitRequest['params'] | undefined;
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      schema = request.params;
      return { action: 'accept', content: { untitledSingle: 'option1' } };
    });
    const result = await client.callTool({ name: 'conformance__test_elicitation_sep1330_enums', arguments: {} });
    expect(textOf(result)).toContain('action=accept');
    const properties = (schema as { requestedSchema: { properties: Record<string, Record<string, unknown>> } }).requestedSchema.properties;
    expect(properties.legacyEnum!.enumNames).toEqual(['Option One', 'Option Two', 'Option Three']);
    expect(properties.titledSingle!.oneOf).toHaveLength(3);
    expect((properties.titledMulti!.items as { anyOf: unknown[] }).anyOf).toHaveLength(3);
  });

  it('a client that cannot sample gets an error, not a hang', async () => {
    const client = await open(h.token, '/mcp/conformance');
    const outcome = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'x' } }).then(
      (result) => ({ isError: result.isError === true, text: textOf(result) }),
      (error: unknown) => ({ isError: true, text: (error as Error).message }),
    );
    expect(outcome.isError).toBe(true);
  });

  it('cancelling a call cancels it upstream, and cancels downstream the elicitation asked on its behalf', async () => {
    const client = await open(h.token, '/mcp', { capabilities: { elicitation: {} } });
    let elicitationSignal: AbortSignal | undefined;
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => (asked = resolve));
    client.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
      elicitationSignal = extra.signal;
      asked();
      return new Promise(() => undefined); // a user who never answers
    });
    const controller = new AbortController();
    const call = client.callTool({ name: 'conformance__test_elicitation', arguments: { message: 'who?' } }, undefined, { signal: controller.signal });
    await wasAsked;
    controller.abort('changed my mind');
    await expect(call).rejects.toThrow();
    // The call's cancel reaches the pool (notifications/cancelled upstream) and the elicitation it was riding on.
    await vi.waitFor(() => expect(elicitationSignal?.aborted).toBe(true), { timeout: 15_000, interval: 20 });
    expect(textOf(await client.callTool({ name: 'echo__echo', arguments: { text: 'after' } }))).toBe('after');
  });
});

describe('notifications on the session stream', () => {
  it('list_changed from an upstream reaches the sessions that see it, and the next list has the new tool', async () => {
    const client = await open(h.token);
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void (changed += 1));
    const name = `t${randomUUID().slice(0, 8)}`;
    await client.callTool({ name: 'changes__add_tool', arguments: { name } });
    await vi.waitFor(() => expect(changed).toBeGreaterThan(0), { timeout: 15_000, interval: 20 });
    expect((await client.listTools()).tools.map((t) => t.name)).toContain(`changes__${name}`);
    expect(textOf(await client.callTool({ name: `changes__${name}`, arguments: { text: 'new' } }))).toBe('new');
  });

  it('resources/updated goes only to the sessions subscribed to that URI', async () => {
    const watcher = await open(h.token);
    const bystander = await open(h.token);
    const control = await open(h.token, '/mcp/conformance');
    const seen = { watcher: 0, bystander: 0, control: 0 };
    watcher.setNotificationHandler(ResourceUpdatedNotificationSchema, () => void (seen.watcher += 1));
    bystander.setNotificationHandler(ResourceUpdatedNotificationSchema, () => void (seen.bystander += 1));
    control.setNotificationHandler(ResourceUpdatedNotificationSchema, () => void (seen.control += 1));
    await watcher.subscribeResource({ uri: 'test://watched-resource' });
    await control.subscribeResource({ uri: 'test://watched-resource' });
    await bystander.callTool({ name: 'conformance__touch_watched_resource', arguments: {} });
    await vi.waitFor(() => expect(seen).toMatchObject({ watcher: 1, control: 1 }), { timeout: 15_000, interval: 20 });
    // 2. Unsubscribed: the next touch reaches the control session only.
    await watcher.unsubscribeResource({ uri: 'test://watched-resource' });
    await bystander.callTool({ name: 'conformance__touch_watched_resource', arguments: {} });
    await vi.waitFor(() => expect(seen.control).toBe(2), { timeout: 15_000, interval: 20 });
    await bystander.ping();
    expect(seen).toEqual({ watcher: 1, bystander: 0, control: 2 });
  });
});

describe('sessions', () => {
  it('a session holds one ref per server from its first use to DELETE', async () => {
    const before = await refsOf('echo');
    const sessions = h.app.gateway.size;
    const { client, transport } = await connectClient(`${base}/mcp/echo`, h.token);
    // Servers start on first use: the call is what takes the ref (one entry, shared by everyone).
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'ref' } }))).toBe('ref');
    expect(await refsOf('echo')).toEqual(before.length === 0 ? [1] : before.map((refs) => refs + 1));
    expect(h.app.gateway.size).toBe(sessions + 1);
    await transport.terminateSession();
    // (no entry before: the one this session started now drains, held by nobody)
    await vi.waitFor(async () => expect(await refsOf('echo')).toEqual(before.length === 0 ? [0] : before), { timeout: 15_000, interval: 20 });
    expect(h.app.gateway.size).toBe(sessions);
    await client.close();
  });

  it('is bound to its principal and its endpoint: anyone else, anywhere else, gets 404', async () => {
    const id = await openRawSession(base, '/mcp/echo', ALICE);
    const list = (path: string, token: string) =>
      raw(base, {
        path,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': id, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION },
        body: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      });
    const own = await list('/mcp/echo', ALICE);
    expect(own.status).toBe(200);
    expect(JSON.stringify(messagesOf(own))).toContain('"echo"');
    for (const [path, token] of [
      ['/mcp/echo', BOB],
      ['/mcp/echo', h.token],
      ['/mcp', ALICE],
      ['/mcp/conformance', ALICE],
    ] as const) {
      const other = await list(path, token);
      expect(other.status, `${path} with another token or endpoint`).toBe(404);
      expect(JSON.parse(other.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32001 } });
    }
    // DELETE by someone else: 404, and the session lives on; by its owner: gone.
    const del = (token: string) => raw(base, { method: 'DELETE', path: '/mcp/echo', headers: { authorization: `Bearer ${token}`, 'mcp-session-id': id, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION } });
    expect((await del(BOB)).status).toBe(404);
    expect((await del(ALICE)).status).toBe(200);
    expect((await list('/mcp/echo', ALICE)).status).toBe(404);
  });

  it('are listed in /workspace/sessions and counted per client in /metrics, and the REST API ends them: the operator any, a client its own', async () => {
    // Other tests of this file may hold sessions of these clients: counts are compared with before.
    const countOf = async (client: string): Promise<number> => {
      const text = (await h.request({ method: 'GET', url: '/metrics' })).body;
      return Number(new RegExp(`^mcpool_mcp_client_sessions\\{client="${client}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    };
    const before = { alice: await countOf('alice'), bob: await countOf('bob') };
    const alices = [await openRawSession(base, '/mcp/echo', ALICE), await openRawSession(base, '/mcp', ALICE)];
    const bobs = await openRawSession(base, '/mcp', BOB);
    const listed = (await h.request({ method: 'GET', url: '/workspace/sessions' })).json<{ sessions: { kind: string; id: string; clientId: string; scope?: string }[] }>().sessions;
    expect(listed).toEqual(expect.arrayContaining([
      expect.objectContaining({ kind: 'mcp', id: alices[0], clientId: 'alice', scope: 'echo' }),
      expect.objectContaining({ kind: 'mcp', id: alices[1], clientId: 'alice' }),
      expect.objectContaining({ kind: 'mcp', id: bobs, clientId: 'bob' }),
    ]));
    expect(await countOf('alice')).toBe(before.alice + 2);
    expect(await countOf('bob')).toBe(before.bob + 1);

    const end = (id: string, token: string) => h.request({ method: 'DELETE', url: `/workspace/sessions/${id}`, token });
    // Another client's session does not exist for bob; a read-only client may end nothing.
    expect((await end(alices[0]!, BOB)).statusCode).toBe(404);
    expect((await end(alices[0]!, ALICE)).statusCode).toBe(403);
    expect((await end(bobs, BOB)).statusCode).toBe(204);
    expect((await end(alices[0]!, h.token)).statusCode).toBe(204);
    expect((await end(alices[0]!, h.token)).statusCode).toBe(404);
    const tools = (id: string, path: string, token: string) =>
      raw(base, {
        path,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': id, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION },
        body: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      });
    expect((await tools(alices[0]!, '/mcp/echo', ALICE)).status).toBe(404);
    expect((await tools(bobs, '/mcp', BOB)).status).toBe(404);
    expect((await tools(alices[1]!, '/mcp', ALICE)).status).toBe(200);
    expect(await countOf('bob')).toBe(before.bob);
    // A REST session ends through the same route.
    const rest = (await h.request({ method: 'POST', url: '/sessions', payload: {} })).json<{ id: string }>();
    expect((await end(rest.id, h.token)).statusCode).toBe(204);
    expect((await h.request({ method: 'GET', url: `/sessions/${rest.id}` })).statusCode).toBe(404);
    expect((await end(alices[1]!, h.token)).statusCode).toBe(204);
  });
});

describe('HTTP refusals', () => {
  const post = (options: { path?: string; headers?: Record<string, string>; body?: unknown; token?: string | null }) =>
    h.request({
      method: 'POST',
      url: options.path ?? '/mcp',
      token: options.token,
      headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...options.headers },
      payload: (options.body ?? initializeBody()),
    });

  it('401 without a token or with a wrong one (no anonymous access outside the test mode)', async () => {
    expect((await post({ token: null })).statusCode).toBe(401);
    expect((await post({ token: 'not-a-token-of-this-daemon' })).statusCode).toBe(401);
  });

  it('403 for a foreign Host or Origin; the daemon’s own origin is fine', async () => {
    expect((await post({ headers: { host: 'evil.example.com' } })).statusCode).toBe(403);
    expect((await post({ headers: { host: 'localhost.evil.example.com:7070' } })).statusCode).toBe(403);
    expect((await post({ headers: { origin: 'http://evil.example.com' } })).statusCode).toBe(403);
    // node:http too: the Host header as a client really sends it.
    const foreign = await raw(base, { path: '/mcp', headers: { host: 'evil.example.com', authorization: `Bearer ${h.token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: initializeBody() });
    expect(foreign.status).toBe(403);
    const port = new URL(base).port;
    const same = await raw(base, { path: '/mcp/echo', headers: { origin: `http://127.0.0.1:${port}`, authorization: `Bearer ${h.token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: initializeBody() });
    expect(same.status).toBe(200);
  });

  it('400 for a request without a session that is not an initialize, and for GET/DELETE without one', async () => {
    expect((await post({ body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })).statusCode).toBe(400);
    expect((await h.request({ method: 'GET', url: '/mcp', headers: { accept: 'text/event-stream' } })).statusCode).toBe(400);
    expect((await h.request({ method: 'DELETE', url: '/mcp' })).statusCode).toBe(400);
  });

  it('404 for an unknown session id, 405 for other methods', async () => {
    const unknown = await post({ headers: { 'mcp-session-id': randomUUID() }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: { code: -32001, message: 'Session not found' } });
    const put = await h.request({ method: 'PUT', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: {} });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe('GET, POST, DELETE');
  });

  it('406 without both Accept types, 415 for a body that is not JSON, 413 past the body cap', async () => {
    expect((await post({ headers: { accept: 'application/json' } })).statusCode).toBe(406);
    const text = await h.request({ method: 'POST', url: '/mcp', headers: { 'content-type': 'text/plain', accept: ACCEPT_BOTH }, payload: JSON.stringify(initializeBody()) });
    expect(text.statusCode).toBe(415);
    const huge = initializeBody();
    (huge.params as Record<string, unknown>).padding = 'x'.repeat(70 * 1024);
    expect((await post({ body: huge })).statusCode).toBe(413);
    // Within an open session the SDK transport answers 406 itself.
    const id = await openRawSession(base, '/mcp/echo', h.token);
    const noSse = await raw(base, { path: '/mcp/echo', headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': id }, body: { jsonrpc: '2.0', id: 5, method: 'tools/list' } });
    expect(noSse.status).toBe(406);
  });
});
