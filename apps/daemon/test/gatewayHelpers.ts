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
