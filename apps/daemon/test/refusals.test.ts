/**
 * Every refusal has one code on every surface: a real daemon (fastify app, real fixture
 * servers), each refusal of `@mcpool/protocol/refusals` provoked on `/mcp` for a 2025-11-25
 * session, on `/mcp` for 2026-07-28 requests, and on the REST API where it exists there, and
 * each answer checked against the one code table: the JSON-RPC code `JSON_RPC_CODE` gives it and
 * `data.code` on `/mcp` (in-band, or with `HTTP_STATUS` when refused before routing), `HTTP_STATUS`
 * and the code itself on REST. Where a revision names another code, the table says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, HTTP_STATUS, JSON_RPC_CODE, REQUEST_STATE_REFUSAL } from '@mcpool/protocol';
import type { SessionInfo } from '@mcpool/client';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { startHttpModernServer, type HttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';
import { harness, type Harness } from './helpers.js';
import { ACCEPT_BOTH, initializeBody, MODERN_VERSION, modernEnvelope } from './gatewayHelpers.js';

type Params = Record<string, unknown>;

/** What a surface answered: the HTTP status, and the JSON-RPC error or the REST error body. */
interface Seen {
  status: number;
  rpcCode?: number | undefined;
  /** `data.code` of a JSON-RPC error; `code` of a REST body. */
  code?: unknown;
  message: string;
}

const mark = marker('refusals');
const LIMITED = `limited-${randomUUID()}`;
let h: Harness;
let upstream: HttpModernServer;
let proxy: Server;

/**
 * A proxy in front of a real HTTP upstream (a 2026-07-28 server), on 127.0.0.1: `echo` of the text
 * `boom` is answered with an HTML error page (no JSON-RPC in it), of `reset` by a reset connection;
 * everything else passes through.
 */
async function startProxy(target: string): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let text: unknown;
      try {
        const message = JSON.parse(body.toString('utf8')) as { method?: string; params?: { arguments?: { text?: unknown } } };
        if (message.method === 'tools/call') text = message.params?.arguments?.text;
      } catch {
        // not JSON: passed through
      }
      if (text === 'boom') return void res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
      if (text === 'reset') return void req.socket.destroy();
      const origin = new URL(target);
      const forwarded = httpRequest(`${origin.origin}${req.url ?? ''}`, { method: req.method, headers: { ...req.headers, host: origin.host } }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      forwarded.on('error', () => res.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

beforeAll(async () => {
  upstream = await startHttpModernServer();
  proxy = await startProxy(upstream.url);
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
  h = await harness(
    {
      mcpServers: {
        echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }),
        conf: fixtureConfig('conformance.mjs', mark, { sharing: 'shared' }),
        hidden: fixtureConfig('echo.mjs', mark, { sharing: 'shared', excludeTools: ['add'] }),
        // Found on PATH, so it loads; it exits before answering initialize, so its spawn fails.
        broken: { command: process.execPath, args: ['-e', 'process.exit(3)'] },
        // Not found: the server cannot run at all, and the rest run.
        missing: { command: `/nonexistent/mcpool-refusals-${randomUUID()}` },
        remote: { type: 'http', url: proxyUrl },
      },
      daemon: { clients: [{ id: 'limited', tokenEnv: 'REFUSALS_LIMITED', rights: ['read'], servers: ['echo'] }] },
    },
    { env: { REFUSALS_LIMITED: LIMITED }, marks: [mark] },
  );
}, 120_000);

afterAll(async () => {
  await h?.close();
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve) ?? resolve(undefined));
  await upstream?.close();
});

// --- The surfaces ------------------------------------------------------------------------------

/** The JSON-RPC messages of a `/mcp` answer body (JSON, or SSE events). */
function lastMessage(body: string, type: unknown): Params {
  if (String(type).includes('text/event-stream')) {
    const data = body.split('\n').filter((line) => line.startsWith('data: '));
    return JSON.parse(data.at(-1)!.slice('data: '.length)) as Params;
  }
  return JSON.parse(body) as Params;
}

function seenOf(status: number, message: Params): Seen {
  const error = message.error as { code: number; message: string; data?: { code?: unknown } } | undefined;
  if (error === undefined) return { status, message: `no error: ${JSON.stringify(message)}` };
  return { status, rpcCode: error.code, code: error.data?.code, message: error.message };
}

/** A legacy `initialize` on `path`: refused before any session exists. */
async function legacyInitialize(path: string, token = h.token): Promise<Seen> {
  const answer = await h.request({ method: 'POST', url: path, token, headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH }, payload: initializeBody() });
  return seenOf(answer.statusCode, lastMessage(answer.body, answer.headers['content-type']));
}

/** A request of an open legacy session on `/mcp` (opened once, without sampling). */
let sessionId: string | undefined;
async function legacyRequest(method: string, params: Params): Promise<Seen> {
  const headers = { 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-protocol-version': '2025-11-25' };
  if (sessionId === undefined) {
    const opened = await h.request({ method: 'POST', url: '/mcp', headers, payload: initializeBody() });
    sessionId = String(opened.headers['mcp-session-id']);
    await h.request({ method: 'POST', url: '/mcp', headers: { ...headers, 'mcp-session-id': sessionId }, payload: { jsonrpc: '2.0', method: 'notifications/initialized' } });
  }
  const answer = await h.request({ method: 'POST', url: '/mcp', headers: { ...headers, 'mcp-session-id': sessionId }, payload: { jsonrpc: '2.0', id: randomUUID(), method, params } });
  return seenOf(answer.statusCode, lastMessage(answer.body, answer.headers['content-type']));
}

/** One 2026-07-28 request (its caller declares elicitation only). */
async function modern(method: string, params: Params, { path = '/mcp', token = h.token }: { path?: string; token?: string } = {}): Promise<Seen> {
  const name = method === 'resources/read' ? params.uri : params.name;
  const answer = await h.request({
    method: 'POST',
    url: path,
    token,
    headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': method, ...(typeof name === 'string' ? { 'mcp-name': name } : {}) },
    payload: { jsonrpc: '2.0', id: randomUUID(), method, params: { ...params, _meta: modernEnvelope() } },
  });
  return seenOf(answer.statusCode, lastMessage(answer.body, answer.headers['content-type']));
}

/** A REST session's tool call (the session made once). */
let restId: string | undefined;
async function rest(server: string, name: string, args: Params = {}): Promise<Seen> {
  restId ??= (await h.request({ method: 'POST', url: '/sessions', payload: {} })).json<SessionInfo>().id;
  const answer = await h.request({ method: 'POST', url: `/sessions/${restId}/tools/call`, payload: { server, name, arguments: args } });
  const body = answer.json<{ statusCode: number; code: string; message: string }>();
  return { status: answer.statusCode, code: body.code, message: body.message };
}

// --- The table ---------------------------------------------------------------------------------

interface Row {
  refusal: string;
  code: ErrorCode;
  /** The eras where it is refused before routing (the HTTP status is the code's); elsewhere it is in-band (200). */
  httpLevel?: ('legacy' | 'modern')[];
  legacy?: () => Promise<Seen>;
  modern?: () => Promise<Seen>;
  rest?: () => Promise<Seen>;
  /** Where a revision names another JSON-RPC code than the table's. */
  rpcCodeOf?: Partial<Record<'legacy' | 'modern', number>>;
  /** The refusal's message, the same on every surface (a substring). */
  message: string;
  /** The one refusal whose JSON-RPC error carries no `data` (it says nothing of why). */
  noData?: boolean;
}

/** The remote upstream's `echo` of `text`, which the proxy answers with a failure (`boom`, `reset`). */
function unavailable(refusal: string, text: string): Row {
  return {
    refusal,
    code: ErrorCode.UPSTREAM_UNAVAILABLE,
    legacy: () => legacyRequest('tools/call', { name: 'remote__echo', arguments: { text } }),
    modern: () => modern('tools/call', { name: 'remote__echo', arguments: { text } }),
    rest: () => rest('remote', 'echo', { text }),
    message: 'remote is unavailable: ',
  };
}

const ROWS: Row[] = [
  {
    refusal: 'an endpoint of no configured server',
    code: ErrorCode.NOT_FOUND,
    httpLevel: ['legacy', 'modern'],
    legacy: () => legacyInitialize('/mcp/nope'),
    modern: () => modern('tools/list', {}, { path: '/mcp/nope' }),
    message: 'no configured server is named "nope"',
  },
  {
    refusal: 'an endpoint the caller may not use',
    code: ErrorCode.FORBIDDEN,
    httpLevel: ['legacy', 'modern'],
    legacy: () => legacyInitialize('/mcp/conf', LIMITED),
    modern: () => modern('tools/list', {}, { path: '/mcp/conf', token: LIMITED }),
    message: 'this client may not use server "conf"',
  },
  {
    refusal: 'an endpoint of a configured server that cannot run',
    code: ErrorCode.SERVER_UNAVAILABLE,
    httpLevel: ['legacy', 'modern'],
    legacy: () => legacyInitialize('/mcp/missing'),
    modern: () => modern('tools/list', {}, { path: '/mcp/missing' }),
    message: 'missing is unavailable: ',
  },
  {
    refusal: 'a server of the endpoint that did not start',
    code: ErrorCode.SPAWN_FAILED,
    // A legacy session cannot open without its one server; a modern request is refused in-band.
    httpLevel: ['legacy'],
    legacy: () => legacyInitialize('/mcp/broken'),
    modern: () => modern('tools/call', { name: 'anything', arguments: {} }, { path: '/mcp/broken' }),
    rest: () => rest('broken', 'anything'),
    message: 'broken',
  },
  {
    refusal: 'a tool the caller may not see',
    code: ErrorCode.TOOL_NOT_ALLOWED,
    legacy: () => legacyRequest('tools/call', { name: 'hidden__add', arguments: { a: 1, b: 2 } }),
    modern: () => modern('tools/call', { name: 'hidden__add', arguments: { a: 1, b: 2 } }),
    rest: () => rest('hidden', 'add', { a: 1, b: 2 }),
    noData: true,
    message: 'add',
  },
  {
    refusal: 'a resource URI no server has',
    code: ErrorCode.RESOURCE_NOT_FOUND,
    legacy: () => legacyRequest('resources/read', { uri: 'nope://nothing' }),
    modern: () => modern('resources/read', { uri: 'nope://nothing' }),
    rpcCodeOf: { modern: -32602 },
    message: 'Resource not found: nope://nothing',
  },
  unavailable('an upstream that answers with an HTTP error page (no JSON-RPC)', 'boom'),
  unavailable('an upstream whose connection was reset (a network failure)', 'reset'),
  {
    refusal: 'a requestState that continues no call of this gateway',
    code: ErrorCode.INVALID_ARGUMENT,
    modern: () => modern('tools/call', { name: 'echo__echo', arguments: { text: 'x' }, requestState: 'mcpool.1.forged.state' }),
    message: REQUEST_STATE_REFUSAL,
  },
];

describe('each refusal, one code on every surface', () => {
  for (const row of ROWS) {
    it(`${row.refusal}: ${row.code} (HTTP ${HTTP_STATUS[row.code]}, JSON-RPC ${JSON_RPC_CODE[row.code]})`, async () => {
      for (const era of ['legacy', 'modern'] as const) {
        const provoke = row[era];
        if (provoke === undefined) continue;
        const seen = await provoke();
        expect(seen.status, `${era} status`).toBe(row.httpLevel?.includes(era) === true ? HTTP_STATUS[row.code] : 200);
        expect(seen.rpcCode, `${era} JSON-RPC code`).toBe(row.rpcCodeOf?.[era] ?? JSON_RPC_CODE[row.code]);
        expect(seen.code, `${era} data.code`).toBe(row.noData === true ? undefined : row.code);
        expect(seen.message, `${era} message`).toContain(row.message);
      }
      if (row.rest !== undefined) {
        const seen = await row.rest();
        expect(seen.status, 'REST status').toBe(HTTP_STATUS[row.code]);
        expect(seen.code, 'REST code').toBe(row.code);
        expect(seen.message, 'REST message').toContain(row.message);
      }
    }, 120_000);
  }

  it('a server→client request nobody can take: the server gets -32601 (SERVER_REQUEST_REFUSED) from every surface', async () => {
    // The fixture's tool fails with the error its sampling request got, quoting it: that is what the server was told.
    const expected = JSON_RPC_CODE[ErrorCode.SERVER_REQUEST_REFUSED];
    expect(expected).toBe(-32601);
    // A legacy session whose client declared no sampling, a modern caller that declared none, a REST session (no handler).
    const legacy = await legacyRequest('tools/call', { name: 'conf__test_sampling', arguments: { prompt: 'x' } });
    const modernSeen = await modern('tools/call', { name: 'conf__test_sampling', arguments: { prompt: 'x' } });
    const restSeen = await rest('conf', 'test_sampling', { prompt: 'x' });
    for (const [surface, seen] of [['legacy', legacy], ['modern', modernSeen]] as const) {
      expect(seen.rpcCode, surface).toBe(expected);
      expect(seen.message, surface).toMatch(/mcpool cannot route sampling\/createMessage: /);
    }
    expect(restSeen.code).toBe(ErrorCode.UPSTREAM_ERROR);
    expect(restSeen.message).toMatch(new RegExp(`${expected}.*mcpool cannot route sampling/createMessage`));
  }, 120_000);

  it('the host shutting down: SHUTTING_DOWN on both eras and REST, before anything is routed', async () => {
    const stopping = h.daemon.shutdown('refusals test');
    const seen = [await legacyInitialize('/mcp'), await modern('tools/list', {})];
    for (const answer of seen) {
      expect(answer.status).toBe(HTTP_STATUS[ErrorCode.SHUTTING_DOWN]);
      expect([answer.rpcCode, answer.code]).toEqual([JSON_RPC_CODE[ErrorCode.SHUTTING_DOWN], ErrorCode.SHUTTING_DOWN]);
    }
    const restAnswer = await h.request({ method: 'POST', url: '/sessions', payload: {} });
    expect([restAnswer.statusCode, restAnswer.json<{ code: string }>().code]).toEqual([HTTP_STATUS[ErrorCode.SHUTTING_DOWN], ErrorCode.SHUTTING_DOWN]);
    await stopping;
  }, 120_000);
});
