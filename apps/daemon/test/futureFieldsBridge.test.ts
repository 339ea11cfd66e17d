/**
 * Unknown is forwarded, not dropped (the bridge path): the server of a later revision
 * (test/fixtures/servers/futureServer.mjs) behind the daemon, reached by a 2025-era client through
 * `mcpool bridge --url …/mcp/future`, raw JSON-RPC lines on its stdio (no SDK that could drop what
 * it does not know). What the client gets is compared with what the same server answers a direct
 * connection: its tool with `outputVariants` and unknown members, a result with SEP-3279 `outputs`
 * and unknown fields, and the caller's `requestedOutputs` reaching the server as sent.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from 'mcpool';
import { FIXTURES, fixtureConfig, killMarked, marker } from '../../../test/helpers/processes.js';
import { memoryDestination } from './helpers.js';
import { CALL, CALL_WITH_UNKNOWN, direct, INITIALIZE, peer } from './futureFixture.js';

const BIN = fileURLToPath(new URL('../bin/mcpool.js', import.meta.url));
const LONG = 120_000;
const TOKEN = 'future-fields-test-token-0123456789';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

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
