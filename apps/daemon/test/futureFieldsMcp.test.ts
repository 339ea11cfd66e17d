/**
 * Unknown is forwarded, not dropped (the `/mcp` path, both caller eras): the server of a later
 * revision (test/fixtures/servers/futureServer.mjs) behind the daemon, as a dual-era server and as
 * a 2025-era one, called over raw HTTP by a 2026-07-28 caller and by a 2025-era session. What each
 * caller gets is compared with what the server answers a direct connection: its tool with
 * `outputVariants` and unknown members, a result with SEP-3279 `outputs` and unknown fields, and
 * the caller's `requestedOutputs` and a made-up param reaching the server as sent. A protocol
 * version mcpool does not know is answered with one it does, never echoed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from 'mcpool';
import { FIXTURES, fixtureConfig, killMarked, marker } from '../../../test/helpers/processes.js';
import { memoryDestination } from './helpers.js';
import { ACCEPT_BOTH, messagesOf, modernRequest, raw, responseOf } from './gatewayHelpers.js';
import { CALL, CALL_WITH_UNKNOWN, direct } from './futureFixture.js';

const LONG = 120_000;
const TOKEN = 'future-fields-mcp-test-token-0123456789';
const FUTURE_VERSION = '2099-01-01';
const SERVERS = { future: [] as string[], futureLegacy: ['--legacy-only'] };

const mark = marker('future-mcp');
const dir = mkdtempSync(join(tmpdir(), 'mcpool-future-mcp-'));
let daemon: RunningDaemon;

beforeAll(async () => {
  const mcpServers = Object.fromEntries(Object.entries(SERVERS).map(([name, args]) => [name, fixtureConfig('futureServer.mjs', mark, { args: [`${FIXTURES}futureServer.mjs`, mark, ...args] })]));
  const config = join(dir, 'mcpool.json');
  writeFileSync(config, JSON.stringify({ mcpServers, daemon: { port: 0 } }));
  daemon = await startDaemon({ configPath: config, env: { MCPOOL_STATE_DIR: join(dir, 'state'), MCPOOL_TOKEN: TOKEN }, destination: memoryDestination([]) });
  await daemon.warmed;
}, LONG);

afterAll(async () => {
  await daemon?.stop('test');
  killMarked(mark);
  rmSync(dir, { recursive: true, force: true });
});

/** A 2025-era session on `path` whose client asked for `version`: its id and the version it was answered. */
async function legacySession(path: string, version: string): Promise<{ call: (id: number, method: string, params: Record<string, unknown>) => Promise<Record<string, unknown>>; version: unknown }> {
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: ACCEPT_BOTH };
  const init = await raw(daemon.url, { path, headers, body: { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'future-test', version: '1.0.0' } } } });
  expect(init.status).toBe(200);
  const answered = (messagesOf(init)[0]!.result as Record<string, unknown>).protocolVersion;
  const session = { ...headers, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': String(answered) };
  expect((await raw(daemon.url, { path, headers: session, body: { jsonrpc: '2.0', method: 'notifications/initialized' } })).status).toBe(202);
  return {
    version: answered,
    call: async (id, method, params) => messagesOf(await raw(daemon.url, { path, headers: session, body: { jsonrpc: '2.0', id, method, params } })).at(-1)!,
  };
}

/** The result without what the server echoes of the request, and that echo without the `_meta` mcpool adds. */
function split(result: unknown): { result: Record<string, unknown>; received: Record<string, unknown> } {
  const { received, ...rest } = result as { received: Record<string, unknown> };
  const { _meta: _added, ...sent } = received;
  return { result: rest, received: sent };
}

describe.each(Object.entries(SERVERS))('a server from a later revision (%s) through /mcp', (server, args) => {
  it('answers a 2026-07-28 caller as it answers a direct connection, unknown params reaching it as sent', async () => {
    const expected = await direct(args, CALL_WITH_UNKNOWN);
    const target = { base: daemon.url, token: TOKEN };
    const listed = responseOf(await modernRequest(target, 'tools/list', {}, { path: `/mcp/${server}` }));
    expect((listed.result as Record<string, unknown>).tools).toEqual(expected.tools);
    const called = responseOf(await modernRequest(target, 'tools/call', CALL_WITH_UNKNOWN, { path: `/mcp/${server}` }));
    expect(called.error).toBeUndefined();
    const through = split(called.result);
    const directly = split(expected.called);
    // A 2026-07-28 result says it is complete; the direct connection was a 2025-era one.
    expect(through.result).toEqual({ ...directly.result, resultType: 'complete' });
    expect(through.received).toEqual(CALL_WITH_UNKNOWN);
  }, LONG);

  it('answers a 2025-era session that asked for an unknown version with a version it knows, and forwards what it does not know', async () => {
    const session = await legacySession(`/mcp/${server}`, FUTURE_VERSION);
    expect(session.version).not.toBe(FUTURE_VERSION);
    expect(session.version).toMatch(/^\d{4}-\d{2}-\d{2}$/u);
    const expected = await direct(args, CALL_WITH_UNKNOWN);
    expect((await session.call(1, 'tools/list', {})).result).toMatchObject({ tools: expected.tools });
    const called = await session.call(2, 'tools/call', CALL_WITH_UNKNOWN);
    expect(called.error).toBeUndefined();
    const through = split(called.result);
    expect(through.result).toEqual(split(expected.called).result);
    expect(through.received).toEqual(CALL_WITH_UNKNOWN);
    // A plain call is forwarded as plainly: nothing is added to the params.
    expect(split((await session.call(3, 'tools/call', CALL)).result).received).toEqual(CALL);
  }, LONG);
});
