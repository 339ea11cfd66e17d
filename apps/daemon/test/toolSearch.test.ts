/**
 * The tool-search view, `/mcp/~search`, on a real daemon with real fixture servers, for both
 * caller eras (an SDK client's 2025-era session, raw 2026-07-28 requests):
 * - it lists exactly two tools, `search_tools` and `call_tool`, whatever the servers behind it;
 * - a search finds a tool by a word of its description, with the name `call_tool` takes;
 *   `call_tool` calls it and answers what the server answered;
 * - the caller's filters hold: a client limited to one server, with one tool excluded, finds
 *   neither the other server's tools nor the excluded one, and calling them is the unknown-tool
 *   refusal, exactly as on `/mcp`;
 * - the schemas listed are a small fraction of the aggregated `/mcp` list's;
 * - a server's tools changing does not announce `tools/list_changed` to a search session (its two
 *   tools stay what they were; the search finds the new tool), other lists' changes still do.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PromptListChangedNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient, modernRequest, openListen, responseOf } from './gatewayHelpers.js';

const mark = marker('tool-search');
const LIMITED = `limited-${randomUUID()}`;
/** Three servers (one whose lists change on request); a client limited to one of them, with one of its tools excluded. */
const CONFIG = {
  mcpServers: {
    echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }),
    lookups: fixtureConfig('readOnlyTools.mjs', mark, { sharing: 'shared' }),
    changing: fixtureConfig('listChanged.mjs', mark, { sharing: 'shared' }),
  },
  daemon: { clients: [{ id: 'limited', tokenEnv: 'TS_LIMITED', rights: ['write'], servers: ['echo'], excludeTools: ['echo__env'] }] },
};
const sdkClients: Client[] = [];
let h: Harness;
let base: string;

beforeAll(async () => {
  h = await harness(CONFIG, { env: { TS_LIMITED: LIMITED }, marks: [mark] });
  base = await h.listen();
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(sdkClients.map((client) => client.close()));
  await h?.close();
});

type Found = { name: string; server: string; description?: string; inputSchema: unknown };

/** The two eras' ways of listing and calling on an endpoint, as one shape. */
interface Caller {
  list(): Promise<{ name: string }[]>;
  call(name: string, args: Record<string, unknown>): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }>;
}

async function legacyCaller(path: string, token: string): Promise<Caller> {
  const { client } = await connectClient(`${base}${path}`, token);
  sdkClients.push(client);
  return {
    list: async () => (await client.listTools()).tools,
    call: async (name, args) => {
      try {
        return { result: (await client.callTool({ name, arguments: args })) };
      } catch (error) {
        return { error: error as { code: number; message: string } };
      }
    },
  };
}

function modernCaller(path: string, token: string): Caller {
  const target = { base, token };
  return {
    list: async () => (responseOf(await modernRequest(target, 'tools/list', {}, { path })).result as { tools: { name: string }[] }).tools,
    call: async (name, args) => responseOf(await modernRequest(target, 'tools/call', { name, arguments: args }, { path })),
  };
}

const ERAS = [
  { era: 'legacy', caller: legacyCaller },
  { era: 'modern', caller: async (path: string, token: string) => modernCaller(path, token) },
];

const found = (answer: { result?: Record<string, unknown> }): Found[] => (answer.result?.structuredContent as { tools: Found[] }).tools;

describe.each(ERAS)('/mcp/~search ($era caller)', ({ caller }) => {
  it('lists two tools; a search finds a tool by a word of its description, and call_tool calls it', async () => {
    const search = await caller('/mcp/~search', h.token);
    expect((await search.list()).map((tool) => tool.name)).toEqual(['call_tool', 'search_tools']);

    const byDescription = await search.call('search_tools', { query: 'unchanged' });
    expect(byDescription.error).toBeUndefined();
    const hits = found(byDescription);
    expect(hits[0]).toMatchObject({ name: 'echo__echo', server: 'echo', description: 'Returns its `text` argument unchanged.' });
    expect(hits[0]!.inputSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } });
    // By an argument's name, on the other server.
    expect(found(await search.call('search_tools', { query: 'key' })).map((tool) => tool.name)).toContain('lookups__lookup');

    const called = await search.call('call_tool', { name: hits[0]!.name, arguments: { text: 'found it' } });
    expect(called.error).toBeUndefined();
    expect(called.result?.content).toEqual([{ type: 'text', text: 'found it' }]);
    const lookedUp = await search.call('call_tool', { name: 'lookups__lookup', arguments: { key: 'k' } });
    expect(lookedUp.result?.content).toEqual([{ type: 'text', text: 'value of k' }]);
  });

  it("holds the caller's filters: what it may not use is neither found nor callable, refused as on /mcp", async () => {
    const search = await caller('/mcp/~search', LIMITED);
    const everything = found(await search.call('search_tools', { query: 'returns value environment variable key pid echo', limit: 50 }));
    const names = everything.map((tool) => tool.name);
    expect(names).toContain('echo__echo');
    expect(names).not.toContain('echo__env');
    expect(names.some((name) => name.startsWith('lookups__'))).toBe(false);

    const aggregated = await caller('/mcp', LIMITED);
    for (const hidden of ['echo__env', 'lookups__lookup']) {
      const direct = await aggregated.call(hidden, {});
      const viaSearch = await search.call('call_tool', { name: hidden, arguments: {} });
      expect(viaSearch.error?.code).toBe(direct.error?.code);
      expect(viaSearch.error?.message).toBe(direct.error?.message);
      expect(viaSearch.error?.code).toBeDefined();
    }
  });

  it('refuses a search without a query, a call_tool without a name, and any other tool name', async () => {
    const search = await caller('/mcp/~search', h.token);
    expect((await search.call('search_tools', {})).error?.code).toBe(-32602);
    expect((await search.call('call_tool', { arguments: {} })).error?.code).toBe(-32602);
    const other = await search.call('echo__echo', { text: 'x' });
    expect(other.error?.message).toMatch(/Unknown tool: echo__echo/u);
  });
});

describe('the schemas a search view lists', () => {
  it('weigh a fraction of the aggregated list', async () => {
    const aggregated = JSON.stringify(await modernCaller('/mcp', h.token).list());
    const search = JSON.stringify(await modernCaller('/mcp/~search', h.token).list());
    // Two fixture servers list little; the bench measures the ratio for thirty.
    expect(search.length).toBeLessThan(aggregated.length);
  });
});

describe('list changes on a search session', () => {
  it('a new tool is found, not announced: its two tools did not change; a prompt change is announced', async () => {
    const { client: plain } = await connectClient(`${base}/mcp`, h.token);
    const { client: search } = await connectClient(`${base}/mcp/~search`, h.token);
    sdkClients.push(plain, search);
    const told = { plainTools: vi.fn(), plainPrompts: vi.fn(), searchTools: vi.fn(), searchPrompts: vi.fn() };
    plain.setNotificationHandler(ToolListChangedNotificationSchema, told.plainTools);
    plain.setNotificationHandler(PromptListChangedNotificationSchema, told.plainPrompts);
    search.setNotificationHandler(ToolListChangedNotificationSchema, told.searchTools);
    search.setNotificationHandler(PromptListChangedNotificationSchema, told.searchPrompts);
    // A 2026-07-28 caller listening on the search view.
    const listen = openListen({ base, token: h.token }, { toolsListChanged: true, promptsListChanged: true }, { path: '/mcp/~search' });
    const heard = (method: string): number => listen.messages.filter((message) => message.method === `notifications/${method}/list_changed`).length;
    const change = (tool: string, name: string) => plain.callTool({ name: `changing__${tool}`, arguments: { name } });
    // Both sessions' notification streams are open once a prompt change reached each of them.
    await vi.waitFor(async () => {
      await change('add_prompt', `p-${randomUUID()}`);
      expect(told.plainPrompts).toHaveBeenCalled();
      expect(told.searchPrompts).toHaveBeenCalled();
      expect(heard('prompts')).toBeGreaterThan(0);
    }, { timeout: 30_000, interval: 500 });
    const prompts = told.searchPrompts.mock.calls.length;
    const listened = heard('prompts');

    const fresh = `fresh_${randomUUID().slice(0, 8)}`;
    await change('add_tool', fresh);
    await vi.waitFor(() => expect(told.plainTools).toHaveBeenCalled(), { timeout: 30_000, interval: 20 });
    // One stream keeps its order: a tools change sent to the search session would come before this prompt change.
    await change('add_prompt', `p-${randomUUID()}`);
    await vi.waitFor(() => expect(told.searchPrompts.mock.calls.length).toBeGreaterThan(prompts), { timeout: 30_000, interval: 20 });
    await listen.waitFor(() => heard('prompts') > listened, 'the second prompts change on the listen', 30_000);
    expect(told.searchTools).not.toHaveBeenCalled();
    expect(heard('tools')).toBe(0);
    listen.close();

    const hits = (await search.callTool({ name: 'search_tools', arguments: { query: fresh } })).structuredContent as { tools: Found[] };
    expect(hits.tools.map((tool) => tool.name)).toContain(`changing__${fresh}`);
  }, 90_000);
});
