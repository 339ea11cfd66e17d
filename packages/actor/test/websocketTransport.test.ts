/**
 * Our websocket transport against a real websocket MCP server on 127.0.0.1 (the wsServer.mjs
 * fixture): connect and call, headers on the upgrade, refused upgrades, loss of the connection,
 * close, and frames that are not MCP messages.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { WebSocketConnectError, WebSocketTransport } from '../src/transports/websocketTransport.js';
import { TransportLostError } from '../src/transports/processGroupStdioTransport.js';
import { startWsFixture, type WsFixture } from '../../../test/fixtures/servers/wsServer.mjs';

let fixture: WsFixture;
beforeAll(async () => {
  fixture = await startWsFixture();
});
afterAll(async () => {
  await fixture?.close();
});

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

/** A transport whose onclose/onerror calls are counted; installed before connect (the SDK chains them). */
function newTransport(options: Partial<ConstructorParameters<typeof WebSocketTransport>[0]> = {}) {
  const transport = new WebSocketTransport({ url: fixture.url, ...options });
  const seen = { closes: 0, errors: [] as Error[] };
  transport.onclose = () => seen.closes++;
  transport.onerror = (error) => seen.errors.push(error);
  return { transport, seen };
}

async function connect(transport: WebSocketTransport): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' });
  clients.push(client);
  await client.connect(transport);
  return client;
}

async function callText(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text: string }[];
  return content[0]!.text;
}


/** Active handles and requests (`process.getActiveResourcesInfo()`), counted by kind. */
function handleCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

describe('WebSocketTransport', () => {
  it('connects an SDK client, lists tools and calls echo', async () => {
    const { transport, seen } = newTransport();
    const client = await connect(transport);
    expect(client.getServerVersion()?.name).toBe('fixture-ws');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['echo', 'whoami', 'closeme']));
    expect(await callText(client, 'echo', { text: 'hello over ws' })).toBe('hello over ws');
    expect(seen.errors).toEqual([]);
  });

  it('sends the configured headers on the upgrade request', async () => {
    const withAuth = await connect(newTransport({ headers: { Authorization: 'Bearer good-token' } }).transport);
    expect(await callText(withAuth, 'whoami')).toBe('Bearer good-token');
    const without = await connect(newTransport().transport);
    expect(await callText(without, 'whoami')).toBe('(none)');
  });

  it('a 401 on the upgrade rejects start() with a message naming 401', async () => {
    const { transport, seen } = newTransport({ headers: { Authorization: 'Bearer bad' } });
    const error = await transport.start().then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    expect(error).toBeInstanceOf(WebSocketConnectError);
    expect((error as Error).message).toMatch(/HTTP 401\b/);
    expect((error as WebSocketConnectError).status).toBe(401);
    expect((error as WebSocketConnectError).code).toBe(401);
    // Through the SDK client too.
    const client = new Client({ name: 'test', version: '1' });
    await expect(client.connect(newTransport({ headers: { Authorization: 'Bearer bad' } }).transport)).rejects.toThrow(/401/);
    await transport.close();
    expect(seen.closes).toBe(1);
  });

  it('a server that does not agree to the mcp subprotocol is refused', async () => {
    const { transport } = newTransport({ protocols: [] });
    await expect(transport.start()).rejects.toThrow(/HTTP 400/);
  });

  it('a refused TCP connection rejects start() with its code', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const { transport, seen } = newTransport({ url: `ws://127.0.0.1:${port}/mcp` });
    const error = await transport.start().catch((rejection: unknown) => rejection as WebSocketConnectError);
    expect(error).toBeInstanceOf(WebSocketConnectError);
    expect(error!.message).toMatch(/ECONNREFUSED/);
    expect(error!.code).toBe('ECONNREFUSED');
    await transport.close();
    expect(seen.closes).toBe(1);
  });

  it('an abrupt close by the server fires onclose once and rejects requests in flight', async () => {
    const { transport, seen } = newTransport();
    const client = await connect(transport);
    const inFlight = client.callTool({ name: 'slow', arguments: { ms: 10_000 } });
    const inFlightError = inFlight.catch((error: unknown) => error);
    expect(await callText(client, 'closeme')).toBe('closing');
    const error = await inFlightError;
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(ErrorCode.ConnectionClosed);
    await vi.waitFor(() => expect(seen.closes).toBe(1), { timeout: 15_000, interval: 10 });
    expect(transport.closeInfo?.code).toBe(1006);
    expect(seen.errors.some((e) => e instanceof TransportLostError && /closed by the server/.test(e.message))).toBe(true);
    await expect(transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' })).rejects.toBeInstanceOf(TransportLostError);
    // close() after the loss resolves at once and does not report a second close.
    await transport.close();
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen.closes).toBe(1);
  });

  it('close() is idempotent, rejects later sends and leaves no open handle', async () => {
    // vitest's runner arms a short timer of its own as a test starts: the baseline is taken once
    // only the poller's own timer is left, and read inside a poll like the final count.
    let baseline: Record<string, number> = {};
    await expect
      .poll(() => {
        baseline = handleCounts();
        return baseline.Timeout ?? 0;
      }, { timeout: 15_000, interval: 10 })
      .toBeLessThanOrEqual(1);
    const { transport, seen } = newTransport();
    const client = await connect(transport);
    expect(await callText(client, 'echo', { text: 'x' })).toBe('x');
    expect(handleCounts()).not.toEqual(baseline);
    const first = transport.close();
    const second = transport.close();
    expect(second).toBe(first);
    const started = Date.now();
    await first;
    expect(Date.now() - started).toBeLessThan(1000); // the fixture answers the close frame: no terminate needed
    await transport.close();
    expect(seen.closes).toBe(1);
    expect(transport.closeInfo?.code).toBe(1000);
    await expect(transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' })).rejects.toThrow(/closed/);
    await expect(client.callTool({ name: 'echo', arguments: { text: 'y' } })).rejects.toThrow();
    // Our socket and the fixture's end of it both gone, and no timer left behind: polled only
    // until the 1 s close grace (armed when close() began) ends, so a leaked grace timer fails it.
    const graceLeftMs = 1000 - (Date.now() - started) - 20;
    await expect.poll(handleCounts, { timeout: Math.max(graceLeftMs, 1), interval: 10 }).toEqual(baseline);
    expect(seen.errors).toEqual([]);
  });

  it('close() destroys the socket when the server does not answer the close frame within 1 s', async () => {
    const { transport, seen } = newTransport();
    const client = await connect(transport);
    expect(await callText(client, 'deaf')).toBe('deaf');
    const started = Date.now();
    await transport.close();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(950);
    expect(took).toBeLessThan(3000);
    expect(transport.closeInfo?.code).toBe(1006);
    expect(seen.closes).toBe(1);
  });

  it('close() during the opening handshake rejects start() and fires onclose once', async () => {
    const { transport, seen } = newTransport();
    const starting = transport.start();
    const startError = starting.catch((error: unknown) => error as Error);
    await transport.close();
    expect((await startError)?.message).toMatch(/closed before the connection was established/);
    expect(seen.closes).toBe(1);
    await expect(transport.start()).rejects.toThrow(/already started or closed/);
  });

  it('frames that are not MCP messages go to onerror and the connection keeps working', async () => {
    const { transport, seen } = newTransport();
    const client = await connect(transport);
    expect(await callText(client, 'junk')).toBe('sent junk');
    const messages = seen.errors.map((error) => error.message);
    expect(messages).toEqual([
      expect.stringMatching(/not JSON: this is not json/),
      expect.stringMatching(/not a JSON-RPC message/),
      expect.stringMatching(/binary frame/),
    ]);
    expect(await callText(client, 'echo', { text: 'still here' })).toBe('still here');
    expect(seen.closes).toBe(0);
  });

  it('a progress notification in the same TCP chunk as its result still reaches onprogress', async () => {
    const client = await connect(newTransport().transport);
    for (let i = 0; i < 5; i++) {
      const progress: number[] = [];
      const result = await client.callTool({ name: 'burst', arguments: {} }, undefined, { onprogress: (p) => progress.push(p.progress) });
      expect((result.content as { text: string }[])[0]!.text).toBe('burst');
      expect(progress).toEqual([1]);
    }
  });
});
