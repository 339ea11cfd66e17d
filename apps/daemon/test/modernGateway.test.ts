/**
 * `/mcp` for 2026-07-28 callers, in process: a real Daemon and its fastify app on 127.0.0.1:0, real
 * fixture servers behind it (a dual-era v2-SDK server, served modern by the pool, and a legacy
 * v1 server), an SDK v2 client pinned to 2026-07-28 and an SDK v1 client side by side, and raw
 * node:http requests for what a client library would hide (headers, status codes, SSE framing).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import type { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { pidsWithMarker, fixtureConfig, marker, textOf } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import {
  MODERN_VERSION,
  connectClient,
  messagesOf,
  modernEnvelope,
  modernHeaders as modernHeadersFor,
  modernRequest,
  openListen as openListenAt,
  raw,
  responseOf,
  type ModernOptions,
  type ModernTarget,
  type OpenStream,
  type RawResponse,
} from './gatewayHelpers.js';

const dualMark = marker('modern-dual');
const echoMark = marker('modern-echo');
const changesMark = marker('modern-changes');
const confMark = marker('modern-conformance');
const ALICE = `alice-${randomUUID()}`;
const VERSION = MODERN_VERSION;

let h: Harness;
let base: string;
const closers: (() => Promise<unknown>)[] = [];

const target = (): ModernTarget => ({ base, token: h.token });
const envelope = modernEnvelope;
const modernHeaders = (method: string, params: Record<string, unknown>, options: ModernOptions): Record<string, string> => modernHeadersFor(target(), method, params, options);
const modern = (method: string, params: Record<string, unknown> = {}, options: ModernOptions = {}): Promise<RawResponse> => modernRequest(target(), method, params, options);

function openListen(notifications: Record<string, unknown>, id: number | string = `listen-${randomUUID()}`): OpenStream {
  const stream = openListenAt(target(), notifications, { id });
  closers.push(async () => stream.close());
  return stream;
}

async function v2Client(path = '/mcp'): Promise<ClientV2> {
  const client = new ClientV2({ name: 'modern-v2-client', version: '2.4.0' }, { versionNegotiation: { mode: { pin: VERSION } } });
  await client.connect(new TransportV2(new URL(`${base}${path}`), { requestInit: { headers: { authorization: `Bearer ${h.token}` } } }));
  closers.push(() => client.close());
  return client;
}

async function v1Client(path = '/mcp'): Promise<ClientV1> {
  const { client } = await connectClient(`${base}${path}`, h.token);
  closers.push(() => client.close());
  return client;
}

const listChanged = (id: unknown) => (messages: Record<string, unknown>[]) =>
  messages.some((m) => m.method === 'notifications/tools/list_changed' && (m.params as { _meta?: Record<string, unknown> })._meta?.['io.modelcontextprotocol/subscriptionId'] === id);

beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {
        dual: fixtureConfig('v2EraServer.mjs', dualMark, { sharing: 'shared' }),
        echo: fixtureConfig('echo.mjs', echoMark, { sharing: 'shared' }),
        changes: fixtureConfig('listChanged.mjs', changesMark, { sharing: 'shared' }),
        conf: fixtureConfig('conformance.mjs', confMark, { sharing: 'shared' }),
      },
      daemon: {
        heartbeatMs: 200,
        clients: [{ id: 'alice', tokenEnv: 'MG_ALICE', rights: ['read'], servers: ['dual', 'echo'], excludeTools: ['echo__add'] }],
      },
    },
    { env: { MG_ALICE: ALICE }, marks: [dualMark, echoMark, changesMark, confMark] },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
}, 120_000);

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  await h?.close();
});

describe('both eras on one /mcp', () => {
  it('an SDK v2 client pinned to 2026-07-28 and an SDK v1 client share one upstream process, and each lists, calls, reads and gets prompts', async () => {
    const modernClient = await v2Client();
    const legacyClient = await v1Client();
    expect(modernClient.getProtocolEra()).toBe('modern');

    for (const client of [modernClient, legacyClient] as const) {
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      expect(tools).toEqual(expect.arrayContaining(['dual__echo', 'dual__pid', 'echo__echo', 'changes__base']));
      const echoed = await client.callTool({ name: 'dual__echo', arguments: { text: 'hi' } });
      expect(textOf(echoed as Record<string, unknown>)).toBe('hi');
      const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
      expect(prompts).toContain('echo__greet');
      const prompt = await client.getPrompt({ name: 'echo__greet', arguments: { name: 'Ada' } });
      expect(JSON.stringify(prompt.messages)).toContain('Ada');
      const read = await client.readResource({ uri: 'fixture://info' });
      expect(read.contents[0]?.uri).toBe('fixture://info');
    }
    // One process behind both: the same pid through either era, and one process with the marker.
    const pidOf = async (client: ClientV1 | ClientV2) => (JSON.parse(textOf((await client.callTool({ name: 'dual__pid', arguments: {} })))) as { pid: number }).pid;
    const [modernPid, legacyPid] = [await pidOf(modernClient), await pidOf(legacyClient)];
    expect(modernPid).toBe(legacyPid);
    expect(pidsWithMarker(dualMark)).toEqual([modernPid]);
  });

  it('a modern caller’s own _meta (client info, capabilities, version, trace context) reaches the modern upstream; a legacy upstream gets none of the envelope', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const answer = await modern('tools/call', { name: 'dual__meta', arguments: {} }, { meta: { 'io.modelcontextprotocol/clientInfo': { name: 'who-asks', version: '9.9.9' } }, headers: { traceparent } });
    expect(answer.status).toBe(200);
    const seen = JSON.parse(textOf((responseOf(answer).result as Record<string, unknown>))) as { envelope: Record<string, unknown> | null; meta: Record<string, unknown> | null };
    const all = { ...seen.envelope, ...seen.meta };
    expect(JSON.stringify(all)).toContain('who-asks');
    expect(JSON.stringify(all)).toContain('elicitation');
    expect(JSON.stringify(all)).toContain(traceparent);
  });

  it('a call with nothing streamed answers JSON; one whose progress comes first answers SSE, the result last', async () => {
    const plain = await modern('tools/call', { name: 'dual__echo', arguments: { text: 'json' } });
    expect(plain.headers['content-type']).toContain('application/json');
    expect((responseOf(plain).result as Record<string, unknown>).resultType).toBe('complete');
    const streamed = await modern('tools/call', { name: 'dual__progress', arguments: { steps: 3, intervalMs: 20 } }, { meta: { progressToken: 'p-1' } });
    expect(streamed.headers['content-type']).toContain('text/event-stream');
    const messages = messagesOf(streamed);
    expect(messages.filter((m) => m.method === 'notifications/progress').map((m) => (m.params as { progressToken: unknown }).progressToken)).toEqual(['p-1', 'p-1', 'p-1']);
    expect(textOf(messages.at(-1)!.result as Record<string, unknown>)).toBe('done 3');
  });

  it('server/discover names the capabilities behind the URL; lists are sorted, private and carry ttlMs', async () => {
    const discover = responseOf(await modern('server/discover'));
    const result = discover.result as Record<string, unknown>;
    expect(result.supportedVersions).toEqual([VERSION]);
    expect(result.capabilities).toMatchObject({ tools: { listChanged: true }, prompts: {}, resources: {} });
    const single = responseOf(await modern('server/discover', {}, { path: '/mcp/dual' })).result as Record<string, unknown>;
    expect(single.capabilities).toEqual({ tools: { listChanged: true } });
    expect((single._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'fixture-dual-era' });

    const listed = responseOf(await modern('tools/list')).result as { tools: { name: string }[]; cacheScope: string; ttlMs: number };
    const names = listed.tools.map((tool) => tool.name);
    expect(names).toEqual([...names].sort());
    expect(listed.cacheScope).toBe('private');
    expect(listed.ttlMs).toBe(0);
    const scoped = responseOf(await modern('tools/list', {}, { path: '/mcp/dual' })).result as { tools: { name: string }[]; cacheScope: string };
    expect(scoped.tools.map((tool) => tool.name)).toContain('echo');
    expect(scoped.cacheScope).toBe('private');
  });
});

describe('names and access', () => {
  it('a prefixed name in Mcp-Name is accepted and reaches the server unprefixed; unknown and forbidden tools both answer -32602', async () => {
    const ok = await modern('tools/call', { name: 'echo__echo', arguments: { text: 'x' } }, { token: ALICE });
    expect(textOf(responseOf(ok).result as Record<string, unknown>)).toBe('x');
    const forbidden = responseOf(await modern('tools/call', { name: 'echo__add', arguments: { a: 1, b: 2 } }, { token: ALICE }));
    const unknown = responseOf(await modern('tools/call', { name: 'echo__nope', arguments: {} }, { token: ALICE }));
    const otherServer = responseOf(await modern('tools/call', { name: 'changes__base', arguments: {} }, { token: ALICE }));
    for (const answer of [forbidden, unknown, otherServer]) expect((answer.error as { code: number }).code).toBe(-32602);
    expect((forbidden.error as { message: string }).message).toBe('Unknown tool: echo__add');
    const listed = (responseOf(await modern('tools/list', {}, { token: ALICE })).result as { tools: { name: string }[] }).tools.map((tool) => tool.name);
    expect(listed).not.toContain('echo__add');
    expect(listed).not.toContain('changes__base');
  });
});

describe('Mcp-Param headers', () => {
  it('a tool’s x-mcp-header argument must come with its Mcp-Param header (plain or base64), equal to the body', async () => {
    const call = (headers: Record<string, string>) => modern('tools/call', { name: 'dual__regional', arguments: { region: 'eu-west', text: 'hi' } }, { headers });
    const ok = await call({ 'mcp-param-region': 'eu-west' });
    expect(textOf(responseOf(ok).result as Record<string, unknown>)).toBe('eu-west: hi');
    const encoded = await call({ 'mcp-param-region': `=?base64?${Buffer.from('eu-west').toString('base64')}?=` });
    expect(textOf(responseOf(encoded).result as Record<string, unknown>)).toBe('eu-west: hi');
    for (const refused of [await call({ 'mcp-param-region': 'us-east' }), await call({})]) {
      expect(refused.status).toBe(400);
      expect((JSON.parse(refused.body) as { error: { code: number } }).error.code).toBe(-32020);
    }
  });
});

describe('header checks', () => {
  it('header mismatches give the spec’s status/code pairs; a notification gets 202', async () => {
    const codeOf = (answer: RawResponse) => ({ status: answer.status, code: (JSON.parse(answer.body) as { error?: { code: number } }).error?.code });
    expect(codeOf(await modern('tools/list', {}, { headers: { 'mcp-method': 'prompts/list' } }))).toEqual({ status: 400, code: -32020 });
    expect(codeOf(await modern('tools/list', {}, { omit: ['mcp-method'] }))).toEqual({ status: 400, code: -32020 });
    expect(codeOf(await modern('tools/list', {}, { omit: ['mcp-protocol-version'] }))).toEqual({ status: 400, code: -32020 });
    expect(codeOf(await modern('tools/call', { name: 'dual__echo', arguments: { text: 'a' } }, { headers: { 'mcp-name': 'dual__pid' } }))).toEqual({ status: 400, code: -32020 });
    expect(codeOf(await modern('tools/call', { name: 'dual__echo', arguments: { text: 'a' } }, { omit: ['mcp-name'] }))).toEqual({ status: 400, code: -32020 });
    const base64 = `=?base64?${Buffer.from('dual__echo').toString('base64')}?=`;
    expect(codeOf(await modern('tools/call', { name: 'dual__echo', arguments: { text: 'a' } }, { headers: { 'mcp-name': base64 } }))).toEqual({ status: 200, code: undefined });
    expect(codeOf(await modern('tools/list', {}, { headers: { 'mcp-protocol-version': '2025-11-25' } }))).toEqual({ status: 400, code: -32020 });

    const unsupported = await modern('tools/list', {}, { headers: { 'mcp-protocol-version': '2027-01-01' }, meta: { 'io.modelcontextprotocol/protocolVersion': '2027-01-01' } });
    expect(codeOf(unsupported)).toEqual({ status: 400, code: -32022 });
    expect((JSON.parse(unsupported.body) as { error: { data: { supported: string[] } } }).error.data.supported).toEqual([VERSION]);

    expect(codeOf(await modern('ping'))).toEqual({ status: 404, code: -32601 });
    expect(codeOf(await modern('logging/setLevel', { level: 'info' }))).toEqual({ status: 404, code: -32601 });

    const notification = await raw(base, {
      path: '/mcp',
      headers: modernHeaders('notifications/cancelled', {}, {}),
      body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: envelope() } },
    });
    expect(notification.status).toBe(202);
    expect(notification.body).toBe('');
  });
});

describe('MRTR through a modern upstream', () => {
  it('input_required comes back with the server’s requestState in an envelope, the byte-exact retry is answered, a tampered one is refused', async () => {
    const first = responseOf(await modern('tools/call', { name: 'dual__confirm', arguments: { item: 'car' } }));
    const asked = first.result as { resultType: string; inputRequests: Record<string, { method: string }>; requestState: string };
    expect(asked.resultType).toBe('input_required');
    expect(asked.inputRequests.confirm?.method).toBe('elicitation/create');
    expect(asked.requestState).toMatch(/^mcpool\.u1\./);

    const inputResponses = { confirm: { action: 'accept', content: { ok: true } } };
    const retry = responseOf(await modern('tools/call', { name: 'dual__confirm', arguments: { item: 'car' }, inputResponses, requestState: asked.requestState }));
    expect(textOf(retry.result as Record<string, unknown>)).toBe('confirmed car: {"action":"accept","content":{"ok":true}}');

    const tampered = `${asked.requestState.slice(0, -4)}AAAA`;
    const refused = responseOf(await modern('tools/call', { name: 'dual__confirm', arguments: { item: 'car' }, inputResponses, requestState: tampered }));
    expect((refused.error as { code: number }).code).toBe(-32602);
  });

  it('a state the shared server gave one principal is refused for another, enveloped or bare, and still continues its own caller’s call', async () => {
    const params = { name: 'dual__confirm', arguments: { item: 'boat' } };
    const first = responseOf(await modern('tools/call', params));
    const state = (first.result as { requestState: string }).requestState;
    // The server's own state, as a caller who unwrapped the envelope would send it.
    const bare = state.slice('mcpool.u1.'.length).split('.').slice(1).join('.');
    const inputResponses = { confirm: { action: 'accept', content: { ok: true } } };
    for (const replayed of [state, bare]) {
      const answer = responseOf(await modern('tools/call', { ...params, inputResponses, requestState: replayed }, { token: ALICE }));
      expect(answer.result, replayed === state ? 'the envelope' : 'the bare state').toBeUndefined();
      expect(answer.error).toMatchObject({ code: -32602, message: expect.stringContaining('requestState') });
    }
    const own = responseOf(await modern('tools/call', { ...params, inputResponses, requestState: state }));
    expect(textOf(own.result as Record<string, unknown>)).toBe('confirmed boat: {"action":"accept","content":{"ok":true}}');
  });
});

describe('a legacy upstream’s elicitation during a modern call', () => {
  it('becomes an input_required result for the caller; its retry answers the upstream request and gets the call’s result; a forged state is refused', async () => {
    const params = { name: 'conf__test_elicitation', arguments: { message: 'Who are you?' } };
    const first = responseOf(await modern('tools/call', params));
    const asked = first.result as { resultType: string; inputRequests: Record<string, { method: string; params: { message: string } }>; requestState: string };
    expect(asked.resultType).toBe('input_required');
    const [key, request] = Object.entries(asked.inputRequests)[0]!;
    expect(request.method).toBe('elicitation/create');
    expect(request.params.message).toBe('Who are you?');

    const forged = responseOf(await modern('tools/call', { ...params, inputResponses: { [key]: { action: 'accept', content: {} } }, requestState: `${asked.requestState.slice(0, -3)}abc` }));
    expect((forged.error as { code: number }).code).toBe(-32602);

    const inputResponses = { [key]: { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } } };
    const retry = responseOf(await modern('tools/call', { ...params, inputResponses, requestState: asked.requestState }));
    expect(textOf(retry.result as Record<string, unknown>)).toContain('ada');
    // Spent: the same state again is refused.
    const again = responseOf(await modern('tools/call', { ...params, inputResponses, requestState: asked.requestState }));
    expect((again.error as { code: number }).code).toBe(-32602);
  });
});

describe('subscriptions/listen', () => {
  it('acknowledges the honoured subset, tags list_changed with the subscription id after a tools change and after the upstream is killed and back, and sends keep-alives', async () => {
    const id = `listen-${randomUUID()}`;
    const listen = openListen({ toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['nope://x'] }, id);
    await listen.waitFor((m) => m.length > 0, 'the acknowledgement');
    expect(await listen.status).toBe(200);
    expect(listen.messages[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: [] }, _meta: { 'io.modelcontextprotocol/subscriptionId': id } },
    });

    const added = await modern('tools/call', { name: 'changes__add_tool', arguments: { name: `t${Date.now()}` } });
    expect(added.status).toBe(200);
    await listen.waitFor(listChanged(id), 'list_changed after add_tool');

    const before = listen.messages.length;
    const [pid] = pidsWithMarker(changesMark);
    expect(pid).toBeDefined();
    process.kill(pid!, 'SIGKILL');
    await listen.waitFor((m) => m.length > before && listChanged(id)(m.slice(before)), 'list_changed after the upstream came back', 90_000);
    await listen.waitFor(() => listen.comments() > 0, 'a keep-alive comment');
    listen.close();
  });

  it('one listen subscribing to more than 256 distinct resources is refused whole with the typed error; duplicates count once', async () => {
    const uris = Array.from({ length: 257 }, (_, i) => `nope://r/${i}`);
    const refused = await modern('subscriptions/listen', { notifications: { resourceSubscriptions: uris } }, { path: '/mcp/dual' });
    expect(refused.status).toBe(400);
    expect(responseOf(refused).error).toMatchObject({ code: -32602, data: { code: 'MCPOOL_REQUEST_TOO_LARGE', requested: 257, max: 256 } });
    // 256 distinct, each named twice: within the bound (none is this server's, so it completes at once).
    const accepted = await modern('subscriptions/listen', { notifications: { resourceSubscriptions: [...uris.slice(0, 256), ...uris.slice(0, 256)] } }, { path: '/mcp/dual' });
    expect(accepted.status).toBe(200);
    expect(messagesOf(accepted)[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { resourceSubscriptions: [] } } });
  });

  it('a filter with nothing to honour is acknowledged and completed at once', async () => {
    const answer = await modern('subscriptions/listen', { notifications: {} }, { path: '/mcp/dual' });
    const messages = messagesOf(answer);
    expect(messages[0]?.method).toBe('notifications/subscriptions/acknowledged');
    expect((messages[0]?.params as { notifications: unknown }).notifications).toEqual({});
    expect(messages.at(-1)).toMatchObject({ result: { resultType: 'complete' } });
  });
});
