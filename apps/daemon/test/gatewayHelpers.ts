/**
 * Helpers for the `/mcp` gateway tests: an SDK client over Streamable HTTP with a bearer token,
 * raw requests over `node:http` (fetch would drop a custom Host header), and the initialize body.
 */
import { request as httpRequest } from 'node:http';
import { Client, type ClientOptions } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

export const ACCEPT_BOTH = 'application/json, text/event-stream';

export function initializeBody(id: number | string = 1, capabilities: Record<string, unknown> = {}): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities, clientInfo: { name: 'gateway-test', version: '1.0.0' } } };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over node:http; the whole body is read (an SSE answer ends after its response). */
export function raw(base: string, options: { method?: string; path: string; headers?: Record<string, string>; body?: unknown }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    const req = httpRequest(`${base}${options.path}`, { method: options.method ?? 'POST', headers: { ...(payload === undefined ? {} : { 'content-length': Buffer.byteLength(payload) }), ...options.headers } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** The JSON-RPC messages of an SSE (or JSON) answer body. */
export function messagesOf(response: RawResponse): Record<string, unknown>[] {
  const type = String(response.headers['content-type'] ?? '');
  if (type.includes('application/json')) return [JSON.parse(response.body) as Record<string, unknown>];
  return response.body
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.length > 'data: '.length)
    .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>);
}

/** Opens a session with a raw initialize + initialized; returns its id. */
export async function openRawSession(base: string, path: string, token: string | undefined): Promise<string> {
  const auth: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const init = await raw(base, { path, headers: { ...auth, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: initializeBody() });
  if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${init.body}`);
  const id = init.headers['mcp-session-id'];
  if (typeof id !== 'string') throw new Error('no session id');
  const done = await raw(base, {
    path,
    headers: { ...auth, 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': id, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION },
    body: { jsonrpc: '2.0', method: 'notifications/initialized' },
  });
  if (done.status !== 202) throw new Error(`initialized answered ${done.status}`);
  return id;
}

/** An SDK client connected to `url` with `token` (sent with every request). */
export async function connectClient(url: string, token: string | undefined, options: ClientOptions = {}, name = 'gateway-test'): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name, version: '1.0.0' }, options);
  const transport = new StreamableHTTPClientTransport(new URL(url), token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return { client, transport };
}

// --- 2026-07-28 (modern) requests -------------------------------------------------------------

export const MODERN_VERSION = '2026-07-28';

/** Where modern requests go: the daemon's base URL and the bearer token they carry by default. */
export interface ModernTarget {
  base: string;
  token: string;
}

export interface ModernOptions {
  id?: number | string;
  path?: string;
  token?: string;
  headers?: Record<string, string>;
  meta?: Record<string, unknown>;
  /** Leave these standard headers out. */
  omit?: string[];
}

/** The per-request `_meta` envelope a modern client sends. */
export const modernEnvelope = (name = 'raw-modern'): Record<string, unknown> => ({
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
  'io.modelcontextprotocol/clientInfo': { name, version: '1.0.0' },
});

let nextModernId = 1;

/** The standard headers a modern client sends for `method` (Mcp-Name from params.name / params.uri). */
export function modernHeaders(target: ModernTarget, method: string, params: Record<string, unknown>, options: ModernOptions = {}): Record<string, string> {
  const name = method === 'resources/read' ? params.uri : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.token ?? target.token}`,
    'content-type': 'application/json',
    accept: ACCEPT_BOTH,
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
  };
  for (const omitted of options.omit ?? []) delete headers[omitted];
  return { ...headers, ...options.headers };
}

export function modernBody(method: string, params: Record<string, unknown>, options: ModernOptions = {}): Record<string, unknown> {
  return { jsonrpc: '2.0', id: options.id ?? nextModernId++, method, params: { ...params, _meta: { ...modernEnvelope(), ...options.meta } } };
}

/** One modern request, answered in full (JSON, or an SSE body read to its end). */
export function modernRequest(target: ModernTarget, method: string, params: Record<string, unknown> = {}, options: ModernOptions = {}): Promise<RawResponse> {
  return raw(target.base, { path: options.path ?? '/mcp', headers: modernHeaders(target, method, params, options), body: modernBody(method, params, options) });
}

/** The one response of a modern answer (JSON, or the last message of an SSE one). */
export function responseOf(answer: RawResponse): Record<string, unknown> {
  return messagesOf(answer).at(-1)!;
}

/** A `subscriptions/listen` stream read as it comes. */
export interface OpenStream {
  messages: Record<string, unknown>[];
  waitFor(predicate: (messages: Record<string, unknown>[]) => boolean, what: string, ms?: number): Promise<void>;
  comments: () => number;
  close(): void;
  status: Promise<number>;
  /** Resolves when the server ended the response. */
  ended: Promise<void>;
}

export function openListen(target: ModernTarget, notifications: Record<string, unknown>, options: ModernOptions = {}): OpenStream {
  const params = { notifications };
  const listenOptions: ModernOptions = { id: `listen-${Math.random().toString(36).slice(2)}`, ...options };
  const payload = JSON.stringify(modernBody('subscriptions/listen', params, listenOptions));
  const messages: Record<string, unknown>[] = [];
  let comments = 0;
  let buffer = '';
  const waiters = new Set<() => void>();
  let resolveStatus!: (status: number) => void;
  let resolveEnded!: () => void;
  const status = new Promise<number>((resolve) => (resolveStatus = resolve));
  const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
  const path = listenOptions.path ?? '/mcp';
  const req = httpRequest(`${target.base}${path}`, { method: 'POST', headers: { ...modernHeaders(target, 'subscriptions/listen', params, listenOptions), 'content-length': Buffer.byteLength(payload) } }, (res) => {
    resolveStatus(res.statusCode!);
    res.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      // A refusal is one JSON body, not SSE events.
      if (!String(res.headers['content-type'] ?? '').includes('text/event-stream')) return;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of event.split('\n')) {
          if (line.startsWith(':')) comments += 1;
          if (line.startsWith('data: ')) messages.push(JSON.parse(line.slice(6)) as Record<string, unknown>);
        }
      }
      for (const wake of waiters) wake();
    });
    res.on('end', () => {
      if (!String(res.headers['content-type'] ?? '').includes('text/event-stream') && buffer !== '') messages.push(JSON.parse(buffer) as Record<string, unknown>);
      for (const wake of waiters) wake();
      resolveEnded();
    });
    res.on('error', () => resolveEnded());
  });
  req.on('error', () => {
    resolveStatus(0);
    resolveEnded();
  });
  req.end(payload);
  return {
    messages,
    comments: () => comments,
    status,
    ended,
    close: () => req.destroy(),
    waitFor: (predicate, what, ms = 60_000) =>
      new Promise<void>((resolve, reject) => {
        if (predicate(messages)) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(messages)}`));
        }, ms);
        const check = (): void => {
          if (!predicate(messages)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      }),
  };
}
