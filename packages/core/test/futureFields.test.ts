/**
 * Unknown is forwarded, not dropped (the library path): a server of a revision mcpool has never
 * heard of (test/fixtures/servers/futureServer.mjs, no SDK) behind a pool view, in both eras mcpool
 * speaks to it. What it answers a direct connection — results with SEP-3279's `outputs` and fields
 * no revision has, a tool with `outputVariants` and unknown members, an unknown capability, an
 * unknown notification during a call, an unknown method — reaches the view's caller as sent, and
 * the request's own unknown params (`requestedOutputs`) reach the server as the caller sent them.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import type { UpstreamNotification } from '@mcpool/core';
import { FIXTURES, fixtureConfig } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools();
const LONG = 60_000;

type Message = { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown> };

/**
 * The fixture over its own stdio, no pool in between: `initialize`, then `requests` in order;
 * resolves with every message it wrote (answers and notifications), in order.
 */
async function direct(args: string[], requests: { method: string; params: Record<string, unknown> }[]): Promise<Message[]> {
  const child = spawn(process.execPath, [`${FIXTURES}futureServer.mjs`, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const seen: Message[] = [];
  const lines = createInterface({ input: child.stdout });
  const want = requests.length + 1;
  const done = new Promise<void>((resolve) => {
    lines.on('line', (line) => {
      seen.push(JSON.parse(line) as Message);
      if (seen.filter((message) => message.id !== undefined).length === want) resolve();
    });
  });
  const send = (message: Record<string, unknown>): boolean => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  send({ id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'direct', version: '1' } } });
  send({ method: 'notifications/initialized' });
  requests.forEach((request, i) => send({ id: i + 1, ...request }));
  await done;
  child.stdin.end();
  await new Promise((resolve) => child.once('exit', resolve));
  return seen;
}

const CALL = { name: 'future', arguments: { text: 'hi' }, requestedOutputs: ['table'], futureParam: { keep: [1, 'two'] } };

describe.each([
  { era: 'modern', args: [] as string[] },
  { era: 'legacy', args: ['--legacy-only'] },
])('a server from a later revision, $era era, through a pool view', ({ era, args }) => {
  it('passes every field, capability, notification and method it does not know through unchanged', async () => {
    const mark = newMark(`future-${era}`);
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('future', fixtureConfig('futureServer.mjs', mark, { args: [`${FIXTURES}futureServer.mjs`, mark, ...args] }), 's1');
    expect(pool.getSnapshot().servers.future?.entrySummary[0]?.era).toBe(era);

    const [initialized, notification, called, , method] = await direct(args, [
      { method: 'tools/call', params: CALL },
      { method: 'tools/list', params: {} },
      { method: 'future/method', params: { anything: { goes: true } } },
    ]);
    const listed = (await direct(args, [{ method: 'tools/list', params: {} }]))[1]!;

    // The lists and what the server declared, as it sent them (`trust` is the pool's own mark on a session's tool).
    expect(view.tools.map(({ trust: _trust, ...tool }) => tool)).toEqual(listed.result!.tools as unknown[]);
    expect(view.capabilities).toEqual(initialized!.result!.capabilities);
    expect(view.serverInfo).toEqual(initialized!.result!.serverInfo);

    // A call: its unknown notification on the way, then its result, both as sent; its own params
    // reached the server as the caller wrote them (the pool adds only `_meta`, in the modern era).
    const notifications: UpstreamNotification[] = [];
    const result = await view.request('tools/call', CALL, { onNotification: (n) => notifications.push(n) });
    expect(notifications).toContainEqual(expect.objectContaining({ method: notification!.method, params: notification!.params }));
    const { received, ...rest } = result as { received: Record<string, unknown> };
    const { received: directReceived, ...directRest } = called!.result as { received: Record<string, unknown> };
    expect(rest).toEqual(directRest);
    const { _meta: added, ...sent } = received;
    expect(sent).toEqual(directReceived);
    if (era === 'legacy') expect(added).toBeUndefined();

    // A method mcpool has no name for (its params echoed back: the modern era's `_meta` aside, as sent).
    const { echoed, ...answered } = (await view.request('future/method', { anything: { goes: true } })) as { echoed: Record<string, unknown> };
    const { echoed: directEchoed, ...directAnswered } = method!.result as { echoed: Record<string, unknown> };
    const { _meta: _echoedMeta, ...echoedParams } = echoed;
    expect(answered).toEqual(directAnswered);
    expect(echoedParams).toEqual(directEchoed);
    await view.release();
  }, LONG);
});
