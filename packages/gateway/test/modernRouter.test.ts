/**
 * The modern router in process, as an IDE host would use it: a real pool, real fixture servers
 * (a dual-era v2-SDK server and a legacy v1 one), one parsed message in, its answer out — no HTTP.
 * Covers the era verdict, the views kept per (principal, endpoint) and released after the idle
 * period, the aggregated and per-server names, the legacy upstream's `_meta` without the modern
 * envelope, and what a closed router answers.
 */
import { describe, expect, it } from 'vitest';
import { classifyEra, ModernRouter, type GatewayAccess, type ModernAnswer } from '@mcpool/gateway';
import { fixtureConfig, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000 });
const VERSION = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'in-process', version: '1.0.0' },
};

const everything = (servers: string[]): GatewayAccess => ({ servers: new Set(servers), allows: () => true });

function headersFor(method: string, params: Record<string, unknown>): Record<string, string> {
  const name = method === 'resources/read' ? params.uri : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
  return { 'mcp-protocol-version': VERSION, 'mcp-method': method, ...(typeof name === 'string' ? { 'mcp-name': name } : {}) };
}

let ids = 0;
function ask(router: ModernRouter, method: string, params: Record<string, unknown>, caller: { principal: string; scope?: string; access: GatewayAccess }): Promise<ModernAnswer> {
  return router.handle({
    message: { jsonrpc: '2.0', id: ++ids, method, params: { ...params, _meta: { ...ENVELOPE, ...(params._meta as object | undefined) } } },
    headers: headersFor(method, params),
    caller: { scope: undefined, ...caller },
  });
}

function jsonOf(answer: ModernAnswer): Record<string, unknown> {
  if (answer.kind !== 'json' || answer.body === undefined) throw new Error(`expected a JSON answer, got ${answer.kind}`);
  return answer.body;
}

function setup(label: string, viewIdleMs = 60_000) {
  const pool = newPool();
  const dualMark = newMark(`${label}-dual`);
  const traceMark = newMark(`${label}-trace`);
  const configs: Record<string, Record<string, unknown>> = {
    dual: fixtureConfig('v2EraServer.mjs', dualMark),
    trace: fixtureConfig('traceMeta.mjs', traceMark),
  };
  const router = new ModernRouter({ pool, config: (name) => configs[name] as never, version: '0.0.0-test', viewIdleMs });
  return { pool, router, access: everything(Object.keys(configs)) };
}

const refsOf = (pool: ReturnType<typeof newPool>, server: string): number => (pool.getSnapshot().servers[server]?.entrySummary ?? []).reduce((sum, entry) => sum + entry.refs, 0);

describe('era verdict', () => {
  it('initialize is legacy, a valid envelope is modern, a modern header without an envelope is refused with -32602', () => {
    expect(classifyEra('POST', {}, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } })).toEqual({ era: 'legacy' });
    expect(classifyEra('POST', { 'mcp-protocol-version': VERSION, 'mcp-method': 'tools/list' }, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: ENVELOPE } })).toEqual({ era: 'modern' });
    expect(classifyEra('POST', {}, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).toEqual({ era: 'legacy' });
    const refused = classifyEra('POST', { 'mcp-protocol-version': VERSION }, { jsonrpc: '2.0', id: 7, method: 'tools/list' });
    expect(refused).toMatchObject({ era: 'reject', status: 400, body: { id: 7, error: { code: -32602 } } });
  });
});

describe('views for stateless callers', () => {
  it('keeps one pool session per principal and endpoint while used, and releases it after the idle period', async () => {
    const { pool, router, access } = setup('hold', 300);
    const listed = jsonOf(await ask(router, 'tools/list', {}, { principal: 'p1', access }));
    expect((listed.result as { tools: { name: string }[] }).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['dual__echo', 'trace__meta']));
    await ask(router, 'tools/call', { name: 'dual__echo', arguments: { text: 'again' } }, { principal: 'p1', access });
    expect(router.heldSessions).toBe(1);
    expect(refsOf(pool, 'dual')).toBe(1);
    await ask(router, 'tools/list', {}, { principal: 'p2', access });
    await ask(router, 'tools/list', {}, { principal: 'p1', scope: 'dual', access });
    expect(router.heldSessions).toBe(3);
    // Released once idle: bounded by a generous wait a hang would exceed.
    const deadline = Date.now() + 30_000;
    while (router.heldSessions > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(router.heldSessions).toBe(0);
    await expect.poll(() => refsOf(pool, 'dual'), { timeout: 30_000 }).toBe(0);
  });

  it('a legacy upstream gets the caller’s _meta without the modern envelope; the per-server endpoint is unprefixed', async () => {
    const { router, access } = setup('meta');
    const answer = jsonOf(await ask(router, 'tools/call', { name: 'meta', arguments: {}, _meta: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } }, { principal: 'p', scope: 'trace', access }));
    const seen = JSON.parse(textOf(answer.result as Record<string, unknown>)) as Record<string, unknown>;
    expect(seen.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(Object.keys(seen).filter((key) => key.startsWith('io.modelcontextprotocol/'))).toEqual([]);
    expect((answer.result as Record<string, unknown>).resultType).toBe('complete');
    await router.close();
  });

  it('a closed router refuses with 503 and holds nothing', async () => {
    const { router, access } = setup('closed');
    await ask(router, 'tools/list', {}, { principal: 'p', access });
    await router.close();
    expect(router.heldSessions).toBe(0);
    const answer = await ask(router, 'tools/list', {}, { principal: 'p', access });
    expect(answer).toMatchObject({ kind: 'json', status: 503, body: { error: { data: { code: 'MCPOOL_SHUTTING_DOWN' } } } });
  });
});
