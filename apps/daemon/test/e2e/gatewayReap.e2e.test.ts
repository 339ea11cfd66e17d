/**
 * Abandoned `/mcp` sessions on the real daemon process: 100 sessions opened (initialize +
 * initialized) and never closed — what a conformance run or a crashed client leaves — are reaped
 * after `daemon.mcpSessionTtlMs` (short here), their pool refs given back, and their ids then
 * answer 404. A session with a request under way is not reaped.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { McpoolClient } from '@mcpool/client';
import { FIXTURES, killMarked, marker, pidsWithMarker, textOf } from '../../../../test/helpers/processes.js';
import { ACCEPT_BOTH, connectClient, openRawSession, raw } from '../gatewayHelpers.js';
import { startDaemon, type DaemonProcess } from './gatewayHelpers.js';

const mark = marker('gateway-reap');
const TTL_MS = 1500;
const SESSIONS = 100;
let daemon: DaemonProcess;
let rest: McpoolClient;

const echoRefs = async (): Promise<number> => {
  const status = await rest.getWorkspaceMcp();
  return status.servers.find((s) => s.name === 'echo')!.entrySummary.reduce((sum, e) => sum + e.refs, 0);
};

beforeAll(async () => {
  daemon = await startDaemon({
    mcpServers: { echo: { command: process.execPath, args: [`${FIXTURES}echo.mjs`, mark] } },
    // Servers that start with the daemon (`start: "eager"`): a session that only initialized holds
    // a ref on each (with the default, lazy start, it holds none until it uses one), and the warm
    // hold keeps the one process up while they come and go.
    daemon: { port: 0, watchConfig: false, start: 'eager', mcpSessionTtlMs: TTL_MS },
  });
  rest = new McpoolClient({ baseUrl: daemon.url, token: daemon.token });
}, 60_000);

afterAll(async () => {
  await daemon?.stop();
  daemon?.cleanup();
  killMarked(mark);
});

describe('the idle reaper', () => {
  it(`reaps ${SESSIONS} sessions abandoned without DELETE and gives their refs back`, async () => {
    // The warm hold is the only ref at first.
    expect(await echoRefs()).toBe(1);
    // 1. Open them (ten at a time), never close them.
    const ids: string[] = [];
    for (let batch = 0; batch < SESSIONS / 10; batch++) {
      ids.push(...(await Promise.all(Array.from({ length: 10 }, () => openRawSession(daemon.url, '/mcp', daemon.token)))));
    }
    expect(new Set(ids).size).toBe(SESSIONS);
    // Each open session holds one ref. On a slow machine the reaper may already have closed
    // some, so this count is only bounded; which sessions were reaped is checked exactly below.
    const held = await echoRefs();
    expect(held).toBeGreaterThan(1);
    expect(held).toBeLessThanOrEqual(SESSIONS + 1);
    // 2. The reaper closes them all; their refs go back; one process served them all along.
    await vi.waitFor(async () => expect(await echoRefs()).toBe(1), { timeout: TTL_MS * 10, interval: 100 });
    // Exactly the sessions this test opened, each once, all for idleness.
    const closed = daemon.lines.filter((line) => line.msg === 'gateway session closed');
    expect(closed.filter((line) => line.reason !== 'idle')).toEqual([]);
    expect(closed.map((line) => String(line.sessionId)).sort()).toEqual([...ids].sort());
    expect(pidsWithMarker(mark)).toHaveLength(1);
    // 3. A reaped id is unknown now.
    const late = await raw(daemon.url, {
      path: '/mcp',
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': ids[0]!, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION },
      body: { jsonrpc: '2.0', id: 9, method: 'tools/list' },
    });
    expect(late.status).toBe(404);
  });

  it('does not reap a session whose client is still there (a call or its GET stream under way) past the TTL', async () => {
    const { client, transport } = await connectClient(`${daemon.url}/mcp`, daemon.token);
    const result = await client.callTool({ name: 'echo__slow', arguments: { ms: TTL_MS * 2, steps: 2 } }, undefined, { timeout: 30_000 });
    expect(textOf(result)).toBe(`done after ${TTL_MS * 2}`);
    expect(textOf(await client.callTool({ name: 'echo__echo', arguments: { text: 'alive' } }))).toBe('alive');
    await transport.terminateSession();
    await client.close();
  });
});
