/**
 * Both eras served in-process by a host that has nothing but `@mcpool/gateway` and
 * `@mcpool/core` (`host.ts`: a tiny `node:http` server on 127.0.0.1, no daemon): an SDK v1 client
 * (2025-11-25) and an SDK v2 client pinned to 2026-07-28 list and call the same servers over one
 * pool, sharing one process per server, and each answers the legacy server's requests of its own
 * calls its own way — the v1 client on the call's stream, the v2 client through `input_required`
 * and its retry. Closing the host releases every view and leaves no process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { McpTransportPool } from '@mcpool/core';
import { expectNoSurvivors, fixtureConfig, marker, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { SPAWN_TIMEOUT_MS } from '../../../test/helpers/pools.js';
import { startHost, type Host } from './host.js';

type Params = Record<string, unknown>;

const mark = marker('embedding');
const configs = { echo: fixtureConfig('echo.mjs', mark), conf: fixtureConfig('conformance.mjs', mark) };

let pool: McpTransportPool;
let host: Host;
let legacy: ClientV1;
let modern: ClientV2;

beforeAll(async () => {
  pool = new McpTransportPool({ spawnTimeoutMs: SPAWN_TIMEOUT_MS });
  host = await startHost({ pool, configs });
  const headers = { authorization: 'Bearer ide-user' };

  legacy = new ClientV1({ name: 'legacy-ide-client', version: '1.0.0' }, { capabilities: { sampling: {} } });
  legacy.setRequestHandler(CreateMessageRequestSchema, (request) => {
    const prompt = (request.params.messages[0]!.content as { text: string }).text;
    return { role: 'assistant', model: 'v1-model', content: { type: 'text', text: `v1 answers ${prompt}` } };
  });
  await legacy.connect(new TransportV1(new URL(`${host.base}/mcp`), { requestInit: { headers } }));

  modern = new ClientV2({ name: 'modern-ide-client', version: '2.4.0' }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  modern.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { username: 'grace', email: 'grace@example.com' } }));
  await modern.connect(new TransportV2(new URL(`${host.base}/mcp`), { requestInit: { headers } }));
}, 120_000);

afterAll(async () => {
  await legacy?.close().catch(() => undefined);
  await modern?.close().catch(() => undefined);
  await host?.close();
  await pool?.drainAll({ force: true });
  await expectNoSurvivors(mark);
}, 60_000);

const refs = (): number => Object.values(pool.getSnapshot().servers).reduce((sum, server) => sum + server.entrySummary.reduce((n, entry) => n + entry.refs, 0), 0);

describe('an IDE host serving both eras in-process', () => {
  it('is written with @mcpool/gateway and @mcpool/core alone', () => {
    const source = readFileSync(new URL('host.ts', import.meta.url), 'utf8');
    const imports = [...source.matchAll(/^import[^;]*?from\s+['"]([^'"]+)['"]/gms)].map((match) => match[1]);
    expect(imports.filter((spec) => !spec!.startsWith('node:'))).toEqual(['@mcpool/core', '@mcpool/gateway']);
  });

  it('serves an SDK v1 client a legacy session and an SDK v2 client modern requests, over one process per server', async () => {
    expect(modern.getProtocolEra()).toBe('modern');
    expect(host.sessions.size).toBe(1);
    for (const client of [legacy, modern] as const) {
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      expect(tools).toEqual(expect.arrayContaining(['echo__echo', 'conf__test_sampling', 'conf__test_elicitation']));
      expect(textOf((await client.callTool({ name: 'echo__echo', arguments: { text: 'in process' } })) as Params)).toBe('in process');
    }
    const pidOf = async (client: ClientV1 | ClientV2) => (JSON.parse(textOf((await client.callTool({ name: 'echo__pid', arguments: {} })))) as { pid: number }).pid;
    const pid = await pidOf(legacy);
    expect(await pidOf(modern)).toBe(pid);
    expect(pidsWithMarker(mark)).toContain(pid);
  }, 60_000);

  it('each client answers its own call’s server request: v1 on the call’s stream, v2 through input_required and its retry', async () => {
    const sampled = await legacy.callTool({ name: 'conf__test_sampling', arguments: { prompt: 'two eras' } });
    expect(textOf(sampled as Params)).toBe('LLM response: v1 answers two eras');
    const elicited = await modern.callTool({ name: 'conf__test_elicitation', arguments: { message: 'Who is there?' } });
    expect(textOf(elicited as Params)).toContain('grace@example.com');
    expect(host.router.pendingContinuations).toBe(0);
  }, 60_000);

  it('closing the host ends the legacy session and the modern hold, and releases every view', async () => {
    expect(refs()).toBeGreaterThan(0);
    expect(host.router.heldSessions).toBe(1);
    await host.close();
    expect(host.sessions.size).toBe(0);
    expect(host.router.heldSessions).toBe(0);
    await expect.poll(refs, { timeout: 30_000 }).toBe(0);
  }, 60_000);
});
