/**
 * The aggregate once, through both fronts: the same table of cases — lists and their one order,
 * name resolution (unknown and hidden alike), resource URIs and templates, completion routing,
 * capability and instruction merging, the per-server endpoint — run against a legacy session
 * (SDK v1 client, 2025-11-25) and the modern router (SDK v2 client pinned to 2026-07-28), both
 * served over one real pool with real fixture servers by the in-process host of `host.ts`.
 * The servers are configured out of name order (zeta, alpha, mid), so an order that followed
 * configuration or join order would show.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { McpTransportPool } from '@mcpool/core';
import type { GatewayAccess } from '@mcpool/gateway';
import { expectNoSurvivors, fixtureConfig, marker, textOf } from '../../../test/helpers/processes.js';
import { SPAWN_TIMEOUT_MS } from '../../../test/helpers/pools.js';
import { startHost, type Host } from './host.js';

type Era = 'legacy' | 'modern';
type Failure = { code: number; message: string };

/** What a case sees of an endpoint, whichever SDK and era reach it. */
interface Conn {
  era: Era;
  client: ClientV1 | ClientV2;
}

const mark = marker('aggregate');
const configs = {
  zeta: fixtureConfig('echo.mjs', mark),
  alpha: fixtureConfig('conformance.mjs', mark),
  mid: fixtureConfig('promptsOnly.mjs', mark),
};
/** Everything but one tool and one prompt, hidden from the caller. */
const access: GatewayAccess = {
  servers: new Set(Object.keys(configs)),
  allows: (server, name) => !(server === 'zeta' && name === 'add') && !(server === 'mid' && name === 'review'),
};

let pool: McpTransportPool;
let host: Host;
const conns = new Map<string, Conn>();

beforeAll(async () => {
  pool = new McpTransportPool({ spawnTimeoutMs: SPAWN_TIMEOUT_MS, drainDelayMs: 60_000 });
  host = await startHost({ pool, configs, access: () => access });
}, 120_000);

afterAll(async () => {
  for (const { client } of conns.values()) await client.close().catch(() => undefined);
  await host?.close();
  await pool?.drainAll({ force: true });
  await expectNoSurvivors(mark);
}, 60_000);

async function connect(era: Era, path: string): Promise<Conn> {
  const key = `${era} ${path}`;
  const known = conns.get(key);
  if (known !== undefined) return known;
  const url = new URL(`${host.base}${path}`);
  const headers = { authorization: 'Bearer table' };
  let client: ClientV1 | ClientV2;
  if (era === 'legacy') {
    client = new ClientV1({ name: 'table-v1', version: '1.0.0' });
    await client.connect(new TransportV1(url, { requestInit: { headers } }));
  } else {
    client = new ClientV2({ name: 'table-v2', version: '2.4.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new TransportV2(url, { requestInit: { headers } }));
    expect(client.getProtocolEra()).toBe('modern');
  }
  const conn = { era, client };
  conns.set(key, conn);
  return conn;
}

/** A JSON-RPC failure as both SDKs report it: its code, the message without the v1 SDK's prefix. */
async function failureOf(run: () => Promise<unknown>): Promise<Failure | 'no failure'> {
  try {
    await run();
    return 'no failure';
  } catch (error) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    return { code: code as number, message: String(message).replace(/^MCP error -?\d+: /, '') };
  }
}

// The v1 and v2 clients have the same methods for what the table uses; their types differ only by SDK.
const api = (conn: Conn) => conn.client as ClientV1;

interface Case {
  title: string;
  /** The endpoint. @default '/mcp' */
  path?: string;
  run: (conn: Conn) => Promise<unknown>;
  /** What both fronts answer... */
  expected?: unknown;
  /** ...or what each era answers, where the revisions differ. */
  byEra?: (era: Era) => unknown;
}

const names = (items: { name: string }[]) => items.map((item) => item.name);

const CASES: Case[] = [
  {
    title: 'tools are listed by their <server>__ name, sorted, the hidden one left out, without the pool’s trust field',
    run: async (conn) => {
      const tools = (await api(conn).listTools()).tools;
      const listed = names(tools);
      return {
        sorted: JSON.stringify(listed) === JSON.stringify([...listed].sort()),
        first: listed[0],
        last: listed.at(-1),
        zeta: listed.filter((name) => name.startsWith('zeta__')),
        hasAlpha: listed.includes('alpha__test_simple_text'),
        trust: tools.some((tool) => 'trust' in tool),
      };
    },
    expected: { sorted: true, first: 'alpha__json_schema_2020_12_tool', last: 'zeta__throw', zeta: ['zeta__echo', 'zeta__env', 'zeta__fail', 'zeta__pid', 'zeta__slow', 'zeta__throw'], hasAlpha: true, trust: false },
  },
  {
    title: 'prompts are listed by their <server>__ name, sorted, the hidden one left out',
    run: async (conn) => names((await api(conn).listPrompts()).prompts),
    expected: ['alpha__test_prompt_with_arguments', 'alpha__test_prompt_with_embedded_resource', 'alpha__test_prompt_with_image', 'alpha__test_simple_prompt', 'mid__summarize', 'zeta__greet'],
  },
  {
    title: 'resources keep their URIs and are sorted by them',
    run: async (conn) => (await api(conn).listResources()).resources.map((resource) => resource.uri),
    expected: ['fixture://info', 'test://static-binary', 'test://static-text', 'test://watched-resource'],
  },
  {
    title: 'resource templates are listed by template',
    run: async (conn) => (await api(conn).listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate),
    expected: ['test://template/{id}/data'],
  },
  {
    title: 'a prefixed tool resolves to its server and its own name',
    run: async (conn) => textOf((await api(conn).callTool({ name: 'zeta__echo', arguments: { text: 'through the aggregate' } }))),
    expected: 'through the aggregate',
  },
  {
    title: 'an unknown tool, a hidden one, one of an unknown server and an unprefixed one all answer alike',
    run: async (conn) =>
      Promise.all(['zeta__nosuch', 'zeta__add', 'nope__echo', 'echo'].map((name) => failureOf(() => api(conn).callTool({ name, arguments: { a: 1, b: 2 } })))),
    expected: ['zeta__nosuch', 'zeta__add', 'nope__echo', 'echo'].map((name) => ({ code: -32602, message: `Unknown tool: ${name}` })),
  },
  {
    title: 'a prompt resolves by its prefixed name; a hidden one answers as unknown',
    run: async (conn) => [
      JSON.stringify((await api(conn).getPrompt({ name: 'zeta__greet', arguments: { name: 'Ada' } })).messages),
      await failureOf(() => api(conn).getPrompt({ name: 'mid__review', arguments: {} })),
    ],
    expected: [expect.stringContaining('Hello, Ada!'), { code: -32602, message: 'Unknown prompt: mid__review' }],
  },
  {
    title: 'a URI goes to the server listing it, a templated one to the server whose template matches',
    run: async (conn) => {
      const listed = (await api(conn).readResource({ uri: 'fixture://info' })).contents[0] as { text?: string };
      const templated = (await api(conn).readResource({ uri: 'test://template/7/data' })).contents[0] as { uri?: string };
      return [listed.text?.split(' ')[0], templated.uri];
    },
    expected: ['fixture-echo', 'test://template/7/data'],
  },
  {
    title: 'a URI no server has is "resource not found": -32002 in 2025-11-25, -32602 in 2026-07-28',
    run: async (conn) => failureOf(() => api(conn).readResource({ uri: 'nope://nothing' })),
    byEra: (era) => ({ code: era === 'legacy' ? -32002 : -32602, message: 'Resource not found: nope://nothing' }),
  },
  {
    title: 'completion goes where its ref resolves: a prompt by its prefixed name, a template by URI; a hidden prompt is unknown',
    run: async (conn) => [
      (await api(conn).complete({ ref: { type: 'ref/prompt', name: 'alpha__test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'pa' } })).completion.values,
      (await api(conn).complete({ ref: { type: 'ref/resource', uri: 'test://template/{id}/data' }, argument: { name: 'id', value: '4' } })).completion.values,
      await failureOf(() => api(conn).complete({ ref: { type: 'ref/prompt', name: 'mid__review' }, argument: { name: 'x', value: '' } })),
    ],
    expected: [['paris', 'park', 'party'], ['42'], { code: -32602, message: 'Unknown prompt: mid__review' }],
  },
  {
    title: 'capabilities merge over the servers: every list kind announces listChanged, subscribe when one server has it',
    run: async (conn) => {
      const caps = api(conn).getServerCapabilities() ?? {};
      return { tools: caps.tools, prompts: caps.prompts, resources: caps.resources, logging: caps.logging, completions: caps.completions };
    },
    expected: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, logging: {}, completions: {} },
  },
  {
    title: 'instructions are each server’s, under its name',
    run: async (conn) => api(conn).getInstructions(),
    expected: '## alpha\nFixture for the MCP conformance server scenarios (mcpool test suite).',
  },
  {
    title: 'a server’s own endpoint lists its tools unprefixed, sorted, the hidden one left out, under its own serverInfo',
    path: '/mcp/zeta',
    run: async (conn) => [names((await api(conn).listTools()).tools), api(conn).getServerVersion()?.name, textOf((await api(conn).callTool({ name: 'echo', arguments: { text: 'scoped' } })))],
    expected: [['echo', 'env', 'fail', 'pid', 'slow', 'throw'], 'fixture-echo', 'scoped'],
  },
  {
    title: 'a server’s own endpoint sends any URI to its server and completes its prompts by their own names',
    path: '/mcp/alpha',
    run: async (conn) => [
      await failureOf(() => api(conn).readResource({ uri: 'test://no-such-resource' })),
      (await api(conn).complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg2', value: 'bl' } })).completion.values,
    ],
    // The server's own answer to a URI it does not have (a legacy server: -32002), as the era says it.
    byEra: (era) => [{ code: era === 'legacy' ? -32002 : -32602, message: expect.stringContaining('test://no-such-resource') }, ['blue']],
  },
];

const pids: Record<Era, number | undefined> = { legacy: undefined, modern: undefined };

describe.each(['legacy', 'modern'] as const)('the %s front', (era) => {
  it.each(CASES)('$title', async ({ path = '/mcp', run, expected, byEra }) => {
    const conn = await connect(era, path);
    expect(await run(conn)).toEqual(byEra === undefined ? expected : byEra(era));
  }, 120_000);

  it('reaches the servers of the one pool', async () => {
    const conn = await connect(era, '/mcp');
    pids[era] = (JSON.parse(textOf((await api(conn).callTool({ name: 'zeta__pid', arguments: {} })))) as { pid: number }).pid;
  }, 60_000);
});

describe('both fronts', () => {
  it('share one process per server: the pool is one', () => {
    expect(pids.legacy).toBeTypeOf('number');
    expect(pids.modern).toBe(pids.legacy);
  });
});
