/**
 * Unknown is forwarded, not dropped (the bridge path): the server of a later revision
 * (test/fixtures/servers/futureServer.mjs) behind the daemon, reached by a 2025-era client through
 * `mcpool bridge --url …/mcp/future`, raw JSON-RPC lines on its stdio (no SDK that could drop what
 * it does not know). What the client gets is compared with what the same server answers a direct
 * connection: its tool with `outputVariants` and unknown members, a result with SEP-3279 `outputs`
 * and unknown fields, and the caller's `requestedOutputs` reaching the server as sent.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from 'mcpool';
import { FIXTURES, fixtureConfig, killMarked, marker } from '../../../test/helpers/processes.js';
import { memoryDestination } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/mcpool.js', import.meta.url));
const LONG = 120_000;
const TOKEN = 'future-fields-test-token-0123456789';

type Message = { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { code: number; message: string } };

const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A JSON-RPC peer on a child's stdio: `request` resolves with the answer of that id; every message is kept in `seen`. */
function peer(child: { stdin: Writable; stdout: Readable }): { seen: Message[]; request: (id: number, method: string, params: Record<string, unknown>) => Promise<Message>; notify: (method: string) => void } {
  const seen: Message[] = [];
  const waiting = new Map<number, (message: Message) => void>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line) as Message;
    seen.push(message);
    if (message.id !== undefined && message.method === undefined) waiting.get(message.id)?.(message);
  });
  const send = (message: Record<string, unknown>): boolean => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  return {
    seen,
    request: (id, method, params) =>
      new Promise<Message>((resolve) => {
        waiting.set(id, resolve);
        send({ id, method, params });
      }),
    notify: (method) => void send({ method }),
  };
}

const INITIALIZE = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'future-test', version: '1.0.0' } };
/** A plain call, and one with params no revision mcpool knows has (SEP-3279's `requestedOutputs`, a made-up one). */
const CALL = { name: 'future', arguments: { text: 'hi' } };
const CALL_WITH_UNKNOWN = { ...CALL, requestedOutputs: ['table'], futureParam: { keep: [1, 'two'] } };

/** The fixture's own answers to `tools/list` and `call`, over its stdio. */
async function direct(args: string[], call: Record<string, unknown>): Promise<{ tools: unknown[]; called: Record<string, unknown> }> {
  const child = spawn(process.execPath, [`${FIXTURES}futureServer.mjs`, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const fixture = peer(child);
  await fixture.request(0, 'initialize', INITIALIZE);
  fixture.notify('notifications/initialized');
  const tools = (await fixture.request(1, 'tools/list', {})).result!.tools as unknown[];
  const called = (await fixture.request(2, 'tools/call', call)).result!;
  child.stdin.end();
  return { tools, called };
}

/** The daemon with the fixture (`args`) as `future`, and a 2025-era client on `mcpool bridge --url …/mcp/future`, initialized. */
async function throughBridge(args: string[]): Promise<ReturnType<typeof peer>> {
  const mark = marker('future-bridge');
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-future-'));
  cleanups.push(() => {
    killMarked(mark);
    rmSync(dir, { recursive: true, force: true });
  });
  const config = join(dir, 'mcpool.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { future: fixtureConfig('futureServer.mjs', mark, { args: [`${FIXTURES}futureServer.mjs`, mark, ...args] }) }, daemon: { port: 0 } }));
  const running: RunningDaemon = await startDaemon({ configPath: config, env: { MCPOOL_STATE_DIR: join(dir, 'state'), MCPOOL_TOKEN: TOKEN }, destination: memoryDestination([]) });
  cleanups.push(() => running.stop('test'));
  await running.warmed;
  const bridge = spawn(process.execPath, [BIN, 'bridge', '--url', `${running.url}/mcp/future`], { env: { PATH: process.env.PATH, MCPOOL_TOKEN: TOKEN, MCPOOL_STATE_DIR: join(dir, 'state') }, stdio: ['pipe', 'pipe', 'pipe'] });
  cleanups.push(() => {
    bridge.stdin.end();
    return new Promise((resolve) => (bridge.exitCode === null ? bridge.once('exit', resolve) : resolve(undefined)));
  });
  const client = peer(bridge);
  const initialized = await client.request(0, 'initialize', INITIALIZE);
  expect(initialized.result?.protocolVersion).toBe('2025-11-25');
  client.notify('notifications/initialized');
  return client;
}

describe.each([
  { era: 'modern', args: [] as string[] },
  { era: 'legacy', args: ['--legacy-only'] },
])('a server from a later revision ($era era upstream), through mcpool bridge', ({ args }) => {
  let client: ReturnType<typeof peer>;
  beforeAll(async () => {
    client = await throughBridge(args);
  }, LONG);

  it('its tools and results reach a 2025-era client as it answers a direct connection', async () => {
    const expected = await direct(args, CALL);
    expect((await client.request(1, 'tools/list', {})).result?.tools).toEqual(expected.tools);
    const called = await client.request(2, 'tools/call', CALL);
    expect(called.error).toBeUndefined();
    const { received, ...result } = called.result as { received: Record<string, unknown> };
    const { received: directReceived, ...directResult } = expected.called as { received: Record<string, unknown> };
    expect(result).toEqual(directResult);
    const { _meta: _added, ...sent } = received;
    expect(sent).toEqual(directReceived);
  }, LONG);

  it("a call's params mcpool does not know (requestedOutputs) reach the server as sent", async () => {
    const called = await client.request(3, 'tools/call', CALL_WITH_UNKNOWN);
    const { _meta: _added, ...sent } = (called.result as { received: Record<string, unknown> }).received;
    expect(sent).toEqual(CALL_WITH_UNKNOWN);
  });
});
