/**
 * The legacy wire on a real HTTP server on 127.0.0.1, with the SDK's own Streamable HTTP client
 * as its partner: the answer's media type (JSON unless something goes out before the result),
 * server→client requests answered on the call's stream, the standalone GET stream (one per
 * session), DELETE, and the transport's status codes for bad headers and bodies.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { LegacyWire, type LegacyEndpoint } from '../src/legacy/wire.js';

type Params = Record<string, unknown>;

const endpoint: LegacyEndpoint = {
  handles: (method) => method === 'tools/list' || method === 'tools/call',
  initialize: () => ({ serverInfo: { name: 'wire-test', version: '1.0.0' }, capabilities: { tools: { listChanged: true } } }),
  async handle(method, params, context) {
    if (method === 'tools/list') return { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] };
    const args = (params.arguments ?? {}) as Params;
    if (params.name === 'progress') {
      const progressToken = context.meta?.progressToken;
      context.notify({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 2 } });
    }
    if (params.name === 'ask') {
      const answer = await context.request({ method: 'elicitation/create', params: { mode: 'form', message: 'name?', requestedSchema: { type: 'object', properties: {} } } }, { signal: context.signal, timeoutMs: 5_000 });
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
    }
    return { content: [{ type: 'text', text: typeof args.text === 'string' ? args.text : '' }], extra: 'kept' };
  },
};

interface Host {
  url: string;
  wires: Map<string, LegacyWire>;
  server: Server;
}

const hosts: Host[] = [];
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  for (const host of hosts.splice(0)) {
    for (const wire of host.wires.values()) wire.close();
    host.server.closeAllConnections();
    await new Promise((resolve) => host.server.close(resolve));
  }
});

/** A host as small as the daemon's: a request without a session header opens a session, the rest go to theirs. */
async function startHost(): Promise<Host> {
  const wires = new Map<string, LegacyWire>();
  let next = 0;
  const server = createServer((req, res) => {
    const id = req.headers['mcp-session-id'];
    let wire = typeof id === 'string' ? wires.get(id) : undefined;
    if (wire === undefined && id === undefined) {
      const sessionId = `s${++next}`;
      wire = new LegacyWire({ sessionId, endpoint, onInitialized: () => wires.set(sessionId, wire!), onDeleted: () => wires.delete(sessionId) });
    }
    if (wire === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
      return;
    }
    void wire.handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, wires, server };
  hosts.push(host);
  return host;
}

/** An SDK client on `host`, recording the media type of every POST answer. */
async function connect(host: Host, capabilities: Params = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport; types: string[] }> {
  const types: string[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    if (init?.method === 'POST') types.push(response.headers.get('content-type') ?? `status ${response.status}`);
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(host.url), { fetch: recording });
  const client = new Client({ name: 'wire-client', version: '1.0.0' }, { capabilities });
  clients.push(client);
  await client.connect(transport);
  return { client, transport, types };
}

const post = (host: Host, body: string, headers: Record<string, string>) =>
  fetch(host.url, { method: 'POST', headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers }, body });

describe('the legacy wire', () => {
  it('answers as JSON when nothing streams before the result, as SSE when a progress notification comes first', async () => {
    const host = await startHost();
    const { client, types } = await connect(host);
    types.length = 0;
    const plain = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(plain).toMatchObject({ content: [{ type: 'text', text: 'hi' }], extra: 'kept' });
    expect(types).toEqual(['application/json']);

    const progress: unknown[] = [];
    await client.callTool({ name: 'progress' }, undefined, { onprogress: (p) => progress.push(p) });
    expect(progress).toEqual([{ progress: 1, total: 2 }]);
    expect(types[1]).toBe('text/event-stream');
  });

  it('sends a server→client request on the call’s stream and routes the client’s answer back', async () => {
    const host = await startHost();
    const { client } = await connect(host, { elicitation: { form: {} } });
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 'ada' } }));
    const result = await client.callTool({ name: 'ask' });
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual({ action: 'accept', content: { name: 'ada' } });
  });

  it('refuses a missing session header (400), another session’s id (404), bad Accept (406), Content-Type (415) and protocol version (400)', async () => {
    const host = await startHost();
    const { transport } = await connect(host);
    const sessionId = transport.sessionId!;
    const wire = host.wires.get(sessionId)!;
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    // Straight to the wire, past the host's own lookup: the wire checks the header itself.
    const direct = async (headers: Record<string, string>, method = 'POST'): Promise<{ status: number; body: Params }> => {
      const probe = createServer((req, res) => void wire.handle(req, res));
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      try {
        const response = await fetch(`http://127.0.0.1:${(probe.address() as AddressInfo).port}/mcp`, {
          method,
          headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers },
          ...(method === 'POST' ? { body: list } : {}),
        });
        return { status: response.status, body: (await response.json()) as Params };
      } finally {
        probe.closeAllConnections();
        await new Promise((resolve) => probe.close(resolve));
      }
    };
    expect(await direct({})).toMatchObject({ status: 400, body: { error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header is required' } } });
    expect(await direct({ 'mcp-session-id': 'other' })).toMatchObject({ status: 404, body: { error: { code: -32001 } } });
    expect(await direct({ 'mcp-session-id': sessionId, accept: 'application/json' })).toMatchObject({ status: 406 });
    expect(await direct({ 'mcp-session-id': sessionId, 'content-type': 'text/plain' })).toMatchObject({ status: 415 });
    expect(await direct({ 'mcp-session-id': sessionId, 'mcp-protocol-version': '1999-01-01' })).toMatchObject({ status: 400, body: { error: { code: -32000 } } });
    expect(await direct({ 'mcp-session-id': sessionId }, 'PUT')).toMatchObject({ status: 405 });
    // A notification alone is taken with 202.
    const accepted = await post(host, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { 'mcp-session-id': sessionId });
    expect(accepted.status).toBe(202);
  });

  it('answers malformed JSON and a body that is no JSON-RPC message with 400 and -32700', async () => {
    const host = await startHost();
    const { transport } = await connect(host);
    const headers = { 'mcp-session-id': transport.sessionId! };
    const broken = await post(host, '{"jsonrpc": "2.0", "id": 1, "method": ', headers);
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ error: { code: -32700, message: 'Parse error: Invalid JSON' } });
    const notRpc = await post(host, JSON.stringify({ hello: 'world' }), headers);
    expect(notRpc.status).toBe(400);
    expect(await notRpc.json()).toMatchObject({ error: { code: -32700 } });
  });

  it('serves one GET stream per session (a second gets 409) and delivers notifications on it', async () => {
    const host = await startHost();
    const { client, transport } = await connect(host);
    const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
    const wire = host.wires.get(transport.sessionId!)!;
    // The SDK client opens its GET stream after initialize; wait for it, bounded.
    for (let i = 0; i < 100 && !wire.streaming; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(wire.streaming).toBe(true);
    expect(wire.notify({ method: 'notifications/tools/list_changed' })).toBe(true);
    await changed;
    const second = await fetch(host.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': transport.sessionId! } });
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({ error: { message: 'Conflict: Only one SSE stream is allowed per session' } });
  });

  it('answers a batch on one SSE stream, every request answered, the stream ended after the last', async () => {
    const host = await startHost();
    const { transport } = await connect(host);
    const batch = [
      { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'echo', arguments: { text: 'one' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'echo', arguments: { text: 'two' } } },
      { jsonrpc: '2.0', id: 'c', method: 'no/such' },
    ];
    const response = await post(host, JSON.stringify(batch), { 'mcp-session-id': transport.sessionId! });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    // The body ends only once every request of the batch was answered.
    const answers = (await response.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Params);
    expect(answers.map((answer) => answer.id).sort()).toEqual(['a', 'b', 'c']);
    expect(answers.find((answer) => answer.id === 'b')).toMatchObject({ result: { content: [{ text: 'two' }] } });
    expect(answers.find((answer) => answer.id === 'c')).toMatchObject({ error: { code: -32601 } });
  });

  it('ends the session on DELETE: its id is unknown afterwards', async () => {
    const host = await startHost();
    const { transport } = await connect(host);
    const sessionId = transport.sessionId!;
    const wire = host.wires.get(sessionId)!;
    await transport.terminateSession();
    expect(wire.closed).toBe(true);
    expect(host.wires.has(sessionId)).toBe(false);
    const after = await post(host, JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }), { 'mcp-session-id': sessionId });
    expect(after.status).toBe(404);
  });
});
