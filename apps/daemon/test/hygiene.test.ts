/**
 * HTTP hygiene of the daemon on a real socket (127.0.0.1, port 0): slow or silent clients are cut
 * by the request and header timeouts (before auth too) while long-lived streams are not; a cap on
 * connections per remote address; duplicate Host lines refused; refusals on `/mcp` in JSON-RPC,
 * on REST in `{statusCode, code, error, message}`; names looked up as own properties only; a
 * DELETE with a JSON content type and no body accepted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon, type RunningDaemon } from 'mcpool';
import { memoryDestination } from './helpers.js';
import { limitConnectionsPerAddress } from '../src/http/security.js';

const TOKEN = 'hygiene-operator-token-0123456789';
/** Generous: the machine running the tests may be very busy. */
const DEADLINE_MS = 20_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Started {
  running: RunningDaemon;
  port: number;
  logs: string[];
}

async function start(daemonSection: Record<string, unknown> = {}): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-hygiene-'));
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify({ mcpServers: {}, daemon: { watchConfig: false, ...daemonSection } }));
  const logs: string[] = [];
  const env = { MCPOOL_STATE_DIR: join(dir, 'state'), MCPOOL_TOKEN: TOKEN };
  const running = await startDaemon({ configPath, env, cwd: dir, overrides: { port: 0, host: '127.0.0.1' }, destination: memoryDestination(logs) });
  cleanups.push(async () => {
    await running.stop('test');
    rmSync(dir, { recursive: true, force: true });
  });
  await running.warmed;
  return { running, port: running.port, logs };
}

/** A raw TCP connection to the daemon; every socket is destroyed after the test. */
async function open(port: number): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port });
  cleanups.push(() => void socket.destroy());
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => undefined);
  return socket;
}

/** Resolves with what the server sent once it closed the connection; rejects after `ms`. */
function closedWithin(socket: Socket, ms: number): Promise<{ data: string; ms: number }> {
  const started = Date.now();
  let data = '';
  socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not close the connection within ${ms} ms`)), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ data, ms: Date.now() - started });
    });
  });
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function parseResponse(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4) };
}

/** One request written as is (`Connection: close`), its response read to the end of the connection. */
async function raw(port: number, head: string[], body = ''): Promise<RawResponse> {
  const socket = await open(port);
  const closed = closedWithin(socket, DEADLINE_MS);
  socket.write(`${[...head, 'Connection: close'].join('\r\n')}\r\n\r\n${body}`);
  return parseResponse((await closed).data);
}

/** Reads one response (with Content-Length) from a keep-alive socket. */
function nextResponse(socket: Socket, ms = DEADLINE_MS): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let data = '';
    const timer = setTimeout(() => done(new Error(`no response within ${ms} ms`)), ms);
    const onData = (chunk: Buffer): void => {
      data += chunk.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end === -1) return;
      const response = parseResponse(data);
      if (Buffer.byteLength(response.body, 'latin1') >= Number(response.headers['content-length'] ?? 0)) done(undefined, response);
    };
    const onClose = (): void => done(new Error('the connection closed before a response'));
    const done = (error: Error | undefined, response?: RawResponse): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      if (error) reject(error);
      else resolve(response!);
    };
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}

const auth = `Authorization: Bearer ${TOKEN}`;

/** Writes one byte every `everyMs` until the socket closes (bounded by the test's deadline). */
function trickle(socket: Socket, everyMs: number): void {
  const timer = setInterval(() => {
    if (socket.destroyed || !socket.writable) clearInterval(timer);
    else socket.write('x');
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
  cleanups.push(() => clearInterval(timer));
}

describe('request and header timeouts', () => {
  const timeouts = { requestTimeoutMs: 1500, headersTimeoutMs: 1000 };

  it('cuts a body trickled byte by byte, with and without a token, and a silent socket', async () => {
    const { port } = await start(timeouts);
    const head = (withToken: boolean) =>
      [`POST /sessions HTTP/1.1`, `Host: 127.0.0.1:${port}`, ...(withToken ? [auth] : []), 'Content-Type: application/json', 'Content-Length: 1000'].join('\r\n') + '\r\n\r\n';

    const authed = await open(port);
    const anonymous = await open(port);
    const silent = await open(port);
    const results = Promise.all([closedWithin(authed, DEADLINE_MS), closedWithin(anonymous, DEADLINE_MS), closedWithin(silent, DEADLINE_MS)]);
    authed.write(head(true));
    anonymous.write(head(false));
    trickle(authed, 200);
    trickle(anonymous, 200);
    const [a, b, c] = await results;
    // Cut by the timeout (408), not answered: the body never came.
    expect(a.data).toMatch(/^HTTP\/1\.1 408 /);
    // Refused at once (no token), and then cut all the same: its body no longer holds the socket.
    expect(b.data).toMatch(/^HTTP\/1\.1 401 /);
    expect(c.data).toMatch(/^HTTP\/1\.1 408 /);
    for (const { ms } of [a, b, c]) expect(ms).toBeGreaterThanOrEqual(900);
  });

  it('keeps the event stream open well past the request timeout', async () => {
    // The first heartbeat comes after three request timeouts: the stream is quiet until then.
    const { port } = await start({ ...timeouts, heartbeatMs: 3 * timeouts.requestTimeoutMs + 500 });
    const socket = await open(port);
    let data = '';
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
    let closed = false;
    socket.once('close', () => (closed = true));
    const opened = Date.now();
    socket.write(`GET /workspace/mcp/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${auth}\r\nAccept: text/event-stream\r\n\r\n`);
    // A heartbeat written after three request timeouts arrives on the same, still open stream.
    const deadline = Date.now() + DEADLINE_MS;
    let seenAfter = -1;
    while (Date.now() < deadline && !closed) {
      const mark = data.length;
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (Date.now() - opened > 3 * timeouts.requestTimeoutMs && data.slice(mark).includes(': heartbeat')) {
        seenAfter = Date.now() - opened;
        break;
      }
    }
    expect(data).toMatch(/^HTTP\/1\.1 200 /);
    expect(closed).toBe(false);
    expect(seenAfter).toBeGreaterThan(3 * timeouts.requestTimeoutMs);
  });

  it('keeps a /mcp GET stream open past the request timeout', async () => {
    const { port } = await start({ ...timeouts, insecureNoAuthLoopback: true });
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hygiene', version: '1' } } });
    const init = await raw(
      port,
      ['POST /mcp HTTP/1.1', `Host: 127.0.0.1:${port}`, 'Content-Type: application/json', 'Accept: application/json, text/event-stream', `Content-Length: ${Buffer.byteLength(initialize)}`],
      initialize,
    );
    expect(init.status).toBe(200);
    const sessionId = init.headers['mcp-session-id'];
    expect(sessionId).toBeTruthy();

    const socket = await open(port);
    let data = '';
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
    let closed = false;
    socket.once('close', () => (closed = true));
    socket.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${sessionId}\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n`);
    const deadline = Date.now() + DEADLINE_MS;
    while (!data.includes('\r\n\r\n') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(data).toMatch(/^HTTP\/1\.1 200 /);
    // Nothing to wait for here but time itself: three request timeouts (and the checks between).
    await new Promise((resolve) => setTimeout(resolve, 3 * timeouts.requestTimeoutMs + 1000));
    expect(closed).toBe(false);
  });
});

describe('connections per remote address', () => {
  // Loopback is exempt in the daemon (local clients are admitted per principal); the cap itself is
  // tested on a real server here with nothing exempt, as it holds for a remote host's address.
  it('refuses a connection beyond the cap and leaves the others working', async () => {
    const logs: string[] = [];
    const server = createServer((_request, response) => response.end('ok'));
    limitConnectionsPerAddress(server, 3, { warn: (_fields: unknown, message?: string) => void logs.push(String(message)) }, () => false);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    cleanups.push(() => void server.closeAllConnections());
    const port = (server.address() as AddressInfo).port;
    const get = `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
    const held: Socket[] = [];
    for (let i = 0; i < 3; i += 1) {
      const socket = await open(port);
      socket.write(get);
      expect((await nextResponse(socket)).status).toBe(200);
      held.push(socket);
    }
    const extra = await open(port);
    const refused = await closedWithin(extra, DEADLINE_MS);
    expect(refused.data).toBe('');
    expect(logs.some((line) => line.includes('daemon.maxConnectionsPerAddress'))).toBe(true);

    // The held connections still answer.
    for (const socket of held) {
      socket.write(get);
      expect((await nextResponse(socket)).status).toBe(200);
    }
    // One closed: a new connection is taken again (once the server has seen the close).
    held[0]!.destroy();
    const deadline = Date.now() + DEADLINE_MS;
    let status = 0;
    while (status !== 200 && Date.now() < deadline) {
      const socket = await open(port);
      socket.write(get);
      status = await nextResponse(socket, 5000).then(
        (response) => response.status,
        () => 0,
      );
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
    for (const socket of held) socket.destroy();
  });
});

describe('Host, error shapes, names, DELETE', () => {
  it('answers 400 to a request with two Host lines, and checks the host of an absolute-form target', async () => {
    const { port } = await start();
    const one = await raw(port, ['GET /healthz HTTP/1.1', `Host: 127.0.0.1:${port}`, auth]);
    expect(one.status).toBe(200);
    for (const second of ['evil.example.com', `127.0.0.1:${port}`]) {
      const two = await raw(port, ['GET /healthz HTTP/1.1', `Host: 127.0.0.1:${port}`, `Host: ${second}`, auth]);
      expect(two.status).toBe(400);
      expect(JSON.parse(two.body)).toMatchObject({ statusCode: 400, code: 'MCPOOL_BAD_REQUEST' });
    }
    // An absolute-form target names its host itself: that one is checked, not the Host line.
    const absolute = await raw(port, [`GET http://evil.example.com:${port}/healthz HTTP/1.1`, `Host: 127.0.0.1:${port}`, auth]);
    expect(absolute.status).toBe(403);
    expect((await raw(port, [`GET http://127.0.0.1:${port}/healthz HTTP/1.1`, `Host: 127.0.0.1:${port}`, auth])).status).toBe(200);
    const onMcp = await raw(port, ['POST /mcp HTTP/1.1', `Host: 127.0.0.1:${port}`, 'Host: evil.example.com', auth, 'Content-Type: application/json', 'Content-Length: 2'], '{}');
    expect(onMcp.status).toBe(400);
    expect(JSON.parse(onMcp.body)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, data: { code: 'MCPOOL_BAD_REQUEST' } } });
  });

  it('refuses on /mcp with JSON-RPC errors and on REST with the REST shape', async () => {
    const { port } = await start({ mcpBodyLimitBytes: 1024 });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const post = (path: string, headers: string[], payload = body) =>
      raw(port, [`POST ${path} HTTP/1.1`, ...headers, `Content-Length: ${Buffer.byteLength(payload)}`], payload);
    const host = `Host: 127.0.0.1:${port}`;
    const json = 'Content-Type: application/json';
    const accept = 'Accept: application/json, text/event-stream';
    const cases: { name: string; response: Promise<RawResponse>; status: number; code: string; rpc: number }[] = [
      { name: 'bad Host', response: post('/mcp', ['Host: evil.example.com', auth, json, accept]), status: 403, code: 'MCPOOL_FORBIDDEN', rpc: -32000 },
      { name: 'bad Origin', response: post('/mcp/echo', [host, 'Origin: http://evil.example.com', auth, json, accept]), status: 403, code: 'MCPOOL_FORBIDDEN', rpc: -32000 },
      { name: 'no token', response: post('/mcp', [host, json, accept]), status: 401, code: 'MCPOOL_UNAUTHORIZED', rpc: -32000 },
      { name: 'bad token', response: post('/mcp', [host, 'Authorization: Bearer nope', json, accept]), status: 401, code: 'MCPOOL_UNAUTHORIZED', rpc: -32000 },
      { name: 'too large', response: post('/mcp', [host, auth, json, accept], JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'x'.repeat(2048) })), status: 413, code: 'MCPOOL_PAYLOAD_TOO_LARGE', rpc: -32600 },
      { name: 'text/plain', response: post('/mcp', [host, auth, 'Content-Type: text/plain', accept]), status: 415, code: 'MCPOOL_UNSUPPORTED_MEDIA_TYPE', rpc: -32600 },
      { name: 'bad JSON', response: post('/mcp', [host, auth, json, accept], '{"jsonrpc":'), status: 400, code: 'MCPOOL_BAD_REQUEST', rpc: -32600 },
    ];
    for (const { name, response, status, code, rpc } of cases) {
      const answer = await response;
      expect(answer.status, name).toBe(status);
      const parsed = JSON.parse(answer.body) as Record<string, unknown>;
      expect(parsed, name).toEqual({ jsonrpc: '2.0', id: null, error: { code: rpc, message: expect.any(String), data: { code } } });
    }
    const unauthorized = await raw(port, ['GET /mcp HTTP/1.1', host, 'Accept: text/event-stream']);
    expect(unauthorized.headers['www-authenticate']).toMatch(/^Bearer /);

    // REST keeps its own shape.
    const rest = await post('/sessions', [host, json]);
    expect(rest.status).toBe(401);
    expect(JSON.parse(rest.body)).toEqual({ statusCode: 401, code: 'MCPOOL_UNAUTHORIZED', error: 'Unauthorized', message: expect.any(String) });
    const restHost = await post('/sessions', ['Host: evil.example.com', auth, json], '{}');
    expect(restHost.status).toBe(403);
    expect(JSON.parse(restHost.body)).toMatchObject({ statusCode: 403, code: 'MCPOOL_FORBIDDEN' });
  });

  it('answers 404 to restarts of names only Object.prototype has', async () => {
    const { port } = await start();
    for (const name of ['__proto__', 'constructor', 'hasOwnProperty', 'toString']) {
      const answer = await raw(port, [`POST /workspace/mcp/${name}/restart HTTP/1.1`, `Host: 127.0.0.1:${port}`, auth]);
      expect(answer.status, name).toBe(404);
      expect(JSON.parse(answer.body), name).toMatchObject({ statusCode: 404, code: 'MCPOOL_NOT_FOUND' });
    }
  });

  it('accepts a DELETE with a JSON content type and no body', async () => {
    const { port } = await start();
    const created = await raw(port, ['POST /sessions HTTP/1.1', `Host: 127.0.0.1:${port}`, auth, 'Content-Type: application/json', 'Content-Length: 2'], '{}');
    expect(created.status).toBe(201);
    const { id } = JSON.parse(created.body) as { id: string };
    const del = () => raw(port, [`DELETE /sessions/${id} HTTP/1.1`, `Host: 127.0.0.1:${port}`, auth, 'Content-Type: application/json', 'Content-Length: 0']);
    expect((await del()).status).toBe(204);
    expect((await del()).status).toBe(404);
    // A POST with the same empty JSON body is still malformed.
    const empty = await raw(port, ['POST /sessions HTTP/1.1', `Host: 127.0.0.1:${port}`, auth, 'Content-Type: application/json', 'Content-Length: 0']);
    expect(empty.status).toBe(400);
  });
});
