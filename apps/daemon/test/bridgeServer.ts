/**
 * A small Streamable HTTP MCP server for the bridge tests: one SDK `McpServer` +
 * `StreamableHTTPServerTransport` per session on 127.0.0.1, a bearer token, 404 for unknown
 * sessions (like the daemon's `/mcp`), and the knobs the tests need: forget every session
 * (→ 404), answer 404 to every session-bearing request, refuse the GET stream, stop and start
 * again on the same port (a daemon restart), and a log of every HTTP request it saw.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { CreateMessageResultSchema, SubscribeRequestSchema, UnsubscribeRequestSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

export interface SeenRequest {
  method: string;
  /** JSON-RPC method(s) of a POST body, `response` for a client response. */
  rpc: string | undefined;
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  authorization: string | undefined;
  accept: string | undefined;
  contentType: string | undefined;
  lastEventId: string | undefined;
  status: number;
}

export interface TestServerOptions {
  /** @default a random token; null for none */
  token?: string | null;
  /** Resumable streams (priming event ids; the `poll` tool closes its stream early). @default false */
  eventStore?: boolean;
  /** A resource with `subscribe`, and `logging`: session state a re-init must restore. @default false */
  stateful?: boolean;
}

export interface TestServer {
  /** `http://127.0.0.1:<port>/mcp` */
  url: string;
  port: number;
  token: string | undefined;
  /** Every HTTP request, in order. */
  seen: SeenRequest[];
  /** initialize params, one per session created. */
  initializeParams: unknown[];
  /** Live session ids. */
  sessions(): string[];
  /** Answer 404 to every session-bearing request. */
  always404: boolean;
  /** Answer 404 to the session-bearing requests it accepts. */
  notFound: ((seen: SeenRequest) => boolean) | undefined;
  /** Answer GET with this status instead of a stream (e.g. 405). */
  getStatus: number | undefined;
  /** Closes every session: their ids now get 404 (an expired session). */
  forgetSessions(): Promise<void>;
  /** Releases the `slow` calls waiting. */
  releaseSlow(): void;
  /** How many `slow` calls were aborted by a cancellation. */
  slowAborted: number;
  /** Stops listening and drops every connection and session (a daemon going down). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const token = options.token === null ? undefined : (options.token ?? `bridge-test-${randomUUID()}`);
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let releases: (() => void)[] = [];
  /** `poll` calls waiting for the client to resume their stream. */
  let resumeWaiters: (() => void)[] = [];
  let port = 0;
  let http: HttpServer | undefined;

  function mcpServer(): McpServer {
    const server = new McpServer({ name: 'bridge-test', version: '1.0.0' }, options.stateful ? { capabilities: { logging: {}, resources: { subscribe: true } } } : {});
    if (options.stateful) {
      server.registerResource('info', 'test://info', { description: 'a resource' }, (uri) => ({ contents: [{ uri: uri.href, text: 'info' }] }));
      server.server.setRequestHandler(SubscribeRequestSchema, () => ({}));
      server.server.setRequestHandler(UnsubscribeRequestSchema, () => ({}));
      server.registerTool('touch', { description: 'sends resources/updated for test://info' }, async () => {
        await server.server.sendResourceUpdated({ uri: 'test://info' });
        return { content: [{ type: 'text', text: 'touched' }] };
      });
      server.registerTool('log', { description: 'sends a session log message (filtered by logging/setLevel)' }, async (extra) => {
        await server.sendLoggingMessage({ level: 'info', data: 'logged by the server' }, extra.sessionId);
        return { content: [{ type: 'text', text: 'logged' }] };
      });
    }
    server.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }], extraField: 'kept by the bridge' }));
    server.registerTool('meta', { description: 'the request’s _meta, as JSON' }, (extra) => ({ content: [{ type: 'text', text: JSON.stringify(extra._meta ?? null) }] }));
    server.registerTool('whoami', { description: 'the session id' }, (extra) => ({ content: [{ type: 'text', text: extra.sessionId ?? '' }] }));
    server.registerTool('slow', { description: 'waits for releaseSlow(), reporting progress' }, async (extra) => {
      const token = extra._meta?.progressToken;
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
      await new Promise<void>((resolve, reject) => {
        releases.push(resolve);
        extra.signal.addEventListener('abort', () => {
          state.slowAborted++;
          reject(new Error('cancelled'));
        });
      });
      return { content: [{ type: 'text', text: 'slow done' }] };
    });
    server.registerTool('ask', { description: 'asks the client to sample (on the call’s own stream)' }, async (extra) => {
      const answer = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hello?' } }], maxTokens: 10 } }, CreateMessageResultSchema);
      return { content: [{ type: 'text', text: `client said: ${(answer.content as { text: string }).text}` }] };
    });
    server.registerTool('notify', { description: 'sends tools/list_changed on the GET stream' }, async () => {
      server.sendToolListChanged();
      return { content: [{ type: 'text', text: 'notified' }] };
    });
    server.registerTool('poll', { description: 'closes its SSE stream before answering (SSE polling)' }, async (extra) => {
      extra.closeSSEStream?.();
      // Answer once the client has resumed: a response stored while the SDK replays the stream
      // can be lost (a race inside the SDK's transport, not what this test is about).
      await new Promise<void>((resolve) => {
        resumeWaiters.push(resolve);
        setTimeout(resolve, 5000).unref();
      });
      return { content: [{ type: 'text', text: `polled (closed early: ${extra.closeSSEStream !== undefined})` }] };
    });
    server.registerPrompt('greet', { description: 'a prompt' }, () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] }));
    return server;
  }

  async function readBody(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text === '' ? undefined : JSON.parse(text);
  }

  const rpcOf = (body: unknown): string | undefined => {
    const list = Array.isArray(body) ? body : body === undefined ? [] : [body];
    const names = list.map((m: { method?: string }) => m.method ?? 'response');
    return names.length ? names.join(',') : undefined;
  };

  const notFound = (res: ServerResponse): void => {
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const header = (name: string): string | undefined => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const entry: SeenRequest = {
      method: req.method!,
      rpc: rpcOf(body),
      sessionId: header('mcp-session-id'),
      protocolVersion: header('mcp-protocol-version'),
      authorization: header('authorization'),
      accept: header('accept'),
      contentType: header('content-type'),
      lastEventId: header('last-event-id'),
      status: 0,
    };
    state.seen.push(entry);
    res.on('finish', () => (entry.status = res.statusCode));
    // A status is known as soon as the head is written (SSE answers never "finish" while open).
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
    (res as unknown as { writeHead: (...args: unknown[]) => ServerResponse }).writeHead = (...args: unknown[]) => {
      entry.status = args[0] as number;
      const result = writeHead(...args);
      if (entry.method === 'GET' && entry.lastEventId !== undefined && entry.status === 200) {
        const waiting = resumeWaiters;
        resumeWaiters = [];
        for (const resume of waiting) resume();
      }
      return result;
    };
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    if (token !== undefined && entry.authorization !== `Bearer ${token}`) {
      return void res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: 401, code: 'MCPOOL_UNAUTHORIZED', error: 'Unauthorized', message: 'a valid bearer token is required' }));
    }
    const sessionId = entry.sessionId;
    if (sessionId !== undefined) {
      if (state.always404 || state.notFound?.(entry)) return notFound(res);
      if (req.method === 'GET' && state.getStatus !== undefined) return void res.writeHead(state.getStatus).end();
      const transport = transports.get(sessionId);
      if (!transport) return notFound(res);
      return transport.handleRequest(req, res, body);
    }
    if (req.method === 'POST' && isInitializeRequest(body)) {
      state.initializeParams.push(body.params);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void transports.set(id, transport),
        ...(options.eventStore ? { eventStore: new InMemoryEventStore(), retryInterval: 20 } : {}),
      });
      transport.onclose = () => {
        if (transport.sessionId) transports.delete(transport.sessionId);
      };
      await mcpServer().connect(transport);
      return transport.handleRequest(req, res, body);
    }
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no session id' }, id: null }));
  }

  async function forgetSessions(): Promise<void> {
    const all = [...transports.values()];
    transports.clear();
    await Promise.all(all.map((transport) => transport.close().catch(() => undefined)));
  }

  async function listen(): Promise<void> {
    const server = createServer((req, res) => {
      handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(error));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    http = server;
  }

  async function stop(): Promise<void> {
    const server = http;
    http = undefined;
    releases = [];
    await forgetSessions();
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  const state: TestServer = {
    url: '',
    port: 0,
    token,
    seen: [],
    initializeParams: [],
    sessions: () => [...transports.keys()],
    always404: false,
    notFound: undefined,
    getStatus: undefined,
    forgetSessions,
    releaseSlow: () => {
      const waiting = releases;
      releases = [];
      for (const release of waiting) release();
    },
    slowAborted: 0,
    stop,
    start: listen,
    close: stop,
  };
  await listen();
  state.port = port;
  state.url = `http://127.0.0.1:${port}/mcp`;
  return state;
}
