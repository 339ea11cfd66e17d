/**
 * Continuations through the modern router in process, over a real pool: a legacy server's
 * elicitation and sampling requests, offered to a 2026-07-28 caller as `input_required`, and
 * the retries that answer them. A gateway-minted `requestState` continues only what it was
 * minted for — its caller, its endpoint, its method and its tool — while its call is held: a
 * state swapped across tools, moved to another server's tool, to another endpoint, to another
 * caller, to a tool that never asked, used after its call ended, or forged, is refused with the
 * same -32602 and the same message, and the genuine retries still complete, each with its own
 * answer. A state the gateway did not mint is refused on a legacy server (it would start a new
 * call) and passes untouched to a modern one (it is that server's own).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { McpTransportPool } from '@mcpool/core';
import { ModernRouter, type GatewayAccess, type ModernAnswer } from '@mcpool/gateway';
import { REQUEST_STATE_REFUSAL } from '@mcpool/protocol';
import { expectNoSurvivors, fixtureConfig, marker, textOf } from '../../../test/helpers/processes.js';
import { SPAWN_TIMEOUT_MS } from '../../../test/helpers/pools.js';

type Params = Record<string, unknown>;

const mark = marker('continuations');
const configs: Record<string, Params> = {
  conf: fixtureConfig('conformance.mjs', mark),
  other: fixtureConfig('conformance.mjs', mark),
  echo: fixtureConfig('echo.mjs', mark),
  dual: fixtureConfig('v2EraServer.mjs', mark),
};
const access: GatewayAccess = { servers: new Set(Object.keys(configs)), allows: () => true };
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, sampling: {} },
  'io.modelcontextprotocol/clientInfo': { name: 'continuations', version: '1.0.0' },
};
const REFUSED = { code: -32602, message: REQUEST_STATE_REFUSAL, data: { code: 'MCPOOL_INVALID_ARGUMENT' } };

let pool: McpTransportPool;
let router: ModernRouter;

beforeAll(() => {
  pool = new McpTransportPool({ spawnTimeoutMs: SPAWN_TIMEOUT_MS, drainDelayMs: 60_000 });
  router = new ModernRouter({ pool, config: (name) => configs[name] as never, version: '0.0.0-test' });
});

afterAll(async () => {
  await router?.close();
  await pool?.drainAll({ force: true });
  await expectNoSurvivors(mark);
}, 60_000);

interface Asking {
  principal?: string;
  scope?: string;
  /** The caller's declared client capabilities (elicitation and sampling unless told). */
  capabilities?: Params;
}

/** One request through the router; its response (the last message of a stream). */
async function ask(method: string, params: Params, { principal = 'alice', scope, capabilities }: Asking = {}): Promise<Params> {
  const name = method === 'resources/read' ? params.uri : params.name;
  const envelope = capabilities === undefined ? ENVELOPE : { ...ENVELOPE, 'io.modelcontextprotocol/clientCapabilities': capabilities };
  const answer: ModernAnswer = await router.handle({
    message: { jsonrpc: '2.0', id: randomUUID(), method, params: { ...params, _meta: envelope } },
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(typeof name === 'string' ? { 'mcp-name': name } : {}) },
    caller: { principal, scope, access },
  });
  if (answer.kind === 'json') return answer.body!;
  let last: Params | undefined;
  for await (const message of answer.stream) last = message;
  return last!;
}

const call = (name: string, args: Params, extra: Params = {}, asking?: Asking) => ask('tools/call', { name, arguments: args, ...extra }, asking);

/** The pending call's `input_required` result: its one input request and the gateway's state. */
function inputRequired(response: Params): { method: string; state: string } {
  const result = response.result as { resultType?: string; inputRequests?: Record<string, { method: string }>; requestState?: string };
  expect(result?.resultType, JSON.stringify(response)).toBe('input_required');
  return { method: result.inputRequests!.upstream!.method, state: result.requestState! };
}

const elicited = { upstream: { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } } };
const sampled = { upstream: { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'forty-two' } } };

describe('a legacy server’s requests offered to a modern caller', () => {
  it('bind each requestState to its caller, endpoint, method and tool: every misuse is one refusal, and the genuine retries complete', async () => {
    // 1. Two calls of one caller wait for its input at once: an elicitation and a sampling.
    const elicitation = inputRequired(await call('conf__test_elicitation', { message: 'Who are you?' }));
    expect(elicitation.method).toBe('elicitation/create');
    const sampling = inputRequired(await call('conf__test_sampling', { prompt: 'meaning of life' }));
    expect(sampling.method).toBe('sampling/createMessage');
    expect(elicitation.state).toMatch(/^mcpool\.1\./);
    expect(router.pendingContinuations).toBe(2);

    // 2. Misuses, each refused alike.
    const misuses: [string, Promise<Params>][] = [
      ['swapped: the elicitation’s retry with the sampling’s state', call('conf__test_elicitation', { message: 'Who are you?' }, { requestState: sampling.state, inputResponses: elicited })],
      ['swapped: the sampling’s retry with the elicitation’s state', call('conf__test_sampling', { prompt: 'meaning of life' }, { requestState: elicitation.state, inputResponses: sampled })],
      ['the same tool of another server', call('other__test_elicitation', { message: 'Who are you?' }, { requestState: elicitation.state, inputResponses: elicited })],
      ['a tool that never asked', call('echo__echo', { text: 'hi' }, { requestState: elicitation.state, inputResponses: elicited })],
      ['another endpoint (the server’s own, its own name)', call('test_elicitation', { message: 'Who are you?' }, { requestState: elicitation.state, inputResponses: elicited }, { scope: 'conf' })],
      ['another caller', call('conf__test_elicitation', { message: 'Who are you?' }, { requestState: elicitation.state, inputResponses: elicited }, { principal: 'mallory' })],
      ['another method', ask('prompts/get', { name: 'conf__test_simple_prompt', requestState: elicitation.state, inputResponses: elicited })],
      ['a forged seal', call('conf__test_elicitation', { message: 'Who are you?' }, { requestState: `${elicitation.state.slice(0, -4)}AAAA`, inputResponses: elicited })],
      ['a made-up call', call('conf__test_elicitation', { message: 'Who are you?' }, { requestState: `mcpool.1.${randomUUID()}.${'A'.repeat(43)}`, inputResponses: elicited })],
    ];
    for (const [what, refused] of misuses) expect((await refused).error, what).toEqual(REFUSED);

    // 3. Nothing was used up: each genuine retry gets its own call's answer.
    const asked = await call('conf__test_elicitation', { message: 'Who are you?' }, { requestState: elicitation.state, inputResponses: elicited });
    expect(textOf(asked.result as Params)).toContain('ada@example.com');
    const answered = await call('conf__test_sampling', { prompt: 'meaning of life' }, { requestState: sampling.state, inputResponses: sampled });
    expect(textOf(answered.result as Params)).toBe('LLM response: forty-two');
    expect(router.pendingContinuations).toBe(0);

    // 4. Its call is over: the state continues nothing.
    expect((await call('conf__test_elicitation', { message: 'Who are you?' }, { requestState: elicitation.state, inputResponses: elicited })).error).toEqual(REFUSED);
  }, 120_000);

  it('offers a server request to the call it came from: one whose caller declared nothing is refused, not handed to another call of the hold', async () => {
    // A call of the hold that took input is in flight, waiting for its caller's answer.
    const elicitation = inputRequired(await call('conf__test_elicitation', { message: 'Who are you?' }));
    // The same caller, declaring nothing this time: its call's sampling request is its own, and refused.
    const bare = await call('conf__test_sampling', { prompt: 'meaning of life' }, {}, { capabilities: {} });
    expect(JSON.stringify(bare), 'the sampling request was refused for the call that made it').toMatch(/did not declare the sampling capability/);
    expect(router.pendingContinuations).toBe(1);
    // The waiting call was not touched: its genuine retry completes.
    const asked = await call('conf__test_elicitation', { message: 'Who are you?' }, { requestState: elicitation.state, inputResponses: elicited });
    expect(textOf(asked.result as Params)).toContain('ada@example.com');
    expect(router.pendingContinuations).toBe(0);
  }, 120_000);

  it('refuses a requestState it did not mint on a legacy server, and carries a modern server’s own in its caller’s envelope', async () => {
    // A legacy server mints none: a foreign state (or answers without one) would start a new call.
    expect((await call('echo__echo', { text: 'hi' }, { requestState: 'minted-elsewhere' })).error).toEqual(REFUSED);
    expect((await call('echo__echo', { text: 'hi' }, { inputResponses: elicited })).error).toEqual(REFUSED);
    expect(textOf((await call('echo__echo', { text: 'hi' })).result as Params)).toBe('hi');

    // A modern server's own state, in the envelope bound to this caller, and its retry answered by that server.
    const first = (await call('dual__confirm', { item: 'car' })).result as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(first.resultType).toBe('input_required');
    expect(first.requestState.startsWith('mcpool.u1.')).toBe(true);
    // The server's state bare (out of its envelope) continues nothing.
    const bare = first.requestState.slice('mcpool.u1.'.length + 44);
    expect((await call('dual__confirm', { item: 'car' }, { requestState: bare, inputResponses: { confirm: { action: 'accept', content: { ok: true } } } })).error).toEqual(REFUSED);
    const retry = await call('dual__confirm', { item: 'car' }, { requestState: first.requestState, inputResponses: { confirm: { action: 'accept', content: { ok: true } } } });
    expect(textOf(retry.result as Params)).toBe('confirmed car: {"action":"accept","content":{"ok":true}}');
  }, 120_000);
});
