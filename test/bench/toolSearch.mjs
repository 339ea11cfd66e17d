#!/usr/bin/env node
// What the tool-search view saves a client: 30 configured servers (the npm servers in the tree —
// server-everything, server-memory, server-filesystem — and the fixture servers, several times
// each under other names) behind one daemon; a 2026-07-28 caller lists tools on `/mcp` and on
// `/mcp/~search`, and the bytes of the two lists are compared in the same run (target: the search
// view's ≤ 2 % of the aggregated one's). Then `search_tools` is timed against a `tools/list` of
// `/mcp` (both answered by the daemon from views it holds), and `call_tool` against the same call
// made directly on `/mcp`.
// `node test/bench/toolSearch.mjs [--rounds=30]`
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { runDaemonBench } from './lib/daemon.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const rounds = Math.min(500, Math.max(3, Number(args.rounds ?? 30)));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = join(ROOT, 'test/fixtures/servers');
const npmServer = (name, ...rest) => ({ command: process.execPath, args: [join(ROOT, `node_modules/@modelcontextprotocol/${name}/dist/index.js`), ...rest] });
const fixture = (file) => ({ command: process.execPath, args: [join(FIXTURES, file)] });

const files = mkdtempSync(join(tmpdir(), 'mcpool-search-bench-files-'));
const KINDS = [
  ['everything', () => npmServer('server-everything')],
  ['memory', () => npmServer('server-memory')],
  ['filesystem', () => npmServer('server-filesystem', files)],
  ['echo', () => fixture('echo.mjs')],
  ['lookups', () => fixture('readOnlyTools.mjs')],
  ['envtools', () => fixture('envTools.mjs')],
];
const SERVERS = 30;
const mcpServers = {};
for (let i = 0; i < SERVERS; i++) {
  const [kind, make] = KINDS[i % KINDS.length];
  mcpServers[`${kind}${Math.floor(i / KINDS.length) + 1}`] = { ...make(), sharing: 'shared' };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

await runDaemonBench({ label: 'search', config: (port) => ({ mcpServers, daemon: { port, start: 'eager' } }) }, async ({ base, auth }) => {
  let id = 0;
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } };
  const request = async (path, method, params = {}) => {
    const name = method === 'tools/call' ? { 'mcp-name': params.name } : {};
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...name },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: meta } }),
    });
    const text = await response.text();
    const body = text.startsWith('{') ? JSON.parse(text) : JSON.parse(text.split('\n').filter((l) => l.startsWith('data: ')).at(-1).slice(6));
    if (body.error) throw new Error(`${method} on ${path}: ${body.error.message}`);
    return { body, bytes: Buffer.byteLength(text) };
  };
  // Every server joined: the aggregated list is whole (bounded: 60 tries, 1 s apart).
  let aggregated;
  for (let i = 0; i < 60; i++) {
    aggregated = await request('/mcp', 'tools/list');
    const servers = new Set(aggregated.body.result.tools.map((tool) => tool.name.split('__')[0]));
    if (servers.size === SERVERS) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const search = await request('/mcp/~search', 'tools/list');
  const toolBytes = (list) => Buffer.byteLength(JSON.stringify(list.body.result.tools));

  const listMs = [];
  const searchMs = [];
  const viaSearchMs = [];
  const directMs = [];
  for (let i = 0; i < rounds; i++) {
    // ABBA: the order alternates so machine noise lands on both.
    const pair = [
      async () => {
        const t = performance.now();
        await request('/mcp', 'tools/list');
        listMs.push(performance.now() - t);
      },
      async () => {
        const t = performance.now();
        await request('/mcp/~search', 'tools/call', { name: 'search_tools', arguments: { query: 'read a file from the directory' } });
        searchMs.push(performance.now() - t);
      },
    ];
    const calls = [
      async () => {
        const t = performance.now();
        await request('/mcp', 'tools/call', { name: 'echo1__echo', arguments: { text: 'x' } });
        directMs.push(performance.now() - t);
      },
      async () => {
        const t = performance.now();
        await request('/mcp/~search', 'tools/call', { name: 'call_tool', arguments: { name: 'echo1__echo', arguments: { text: 'x' } } });
        viaSearchMs.push(performance.now() - t);
      },
    ];
    for (const run of i % 2 === 0 ? [...pair, ...calls] : [...pair.reverse(), ...calls.reverse()]) await run();
  }
  const found = (await request('/mcp/~search', 'tools/call', { name: 'search_tools', arguments: { query: 'read a file from the directory', limit: 3 } })).body.result.structuredContent.tools.map((tool) => tool.name);
  const ratio = toolBytes(search) / toolBytes(aggregated);
  return {
    servers: SERVERS,
    tools: aggregated.body.result.tools.length,
    aggregatedSchemaBytes: toolBytes(aggregated),
    searchSchemaBytes: toolBytes(search),
    schemaRatio: Math.round(ratio * 10000) / 10000,
    target: 'search view schema bytes ≤ 0.02× the aggregated view',
    met: ratio <= 0.02,
    searchP50Ms: Math.round(median(searchMs) * 100) / 100,
    aggregatedListP50Ms: Math.round(median(listMs) * 100) / 100,
    searchVsListRatio: Math.round((median(searchMs) / median(listMs)) * 100) / 100,
    callViaSearchP50Ms: Math.round(median(viaSearchMs) * 100) / 100,
    callDirectP50Ms: Math.round(median(directMs) * 100) / 100,
    callViaSearchVsDirect: Math.round((median(viaSearchMs) / median(directMs)) * 100) / 100,
    topThreeFor: { query: 'read a file from the directory', found },
    rounds,
  };
});
rmSync(files, { recursive: true, force: true });
