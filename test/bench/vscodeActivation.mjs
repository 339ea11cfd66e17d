#!/usr/bin/env node
// The VS Code extension's two budgets, outside an editor, against a real daemon with SERVERS
// fixture servers (`npm run build` first: it reads apps/vscode/dist/extension.js):
//  - activation → definitions provided, ms: from loading the bundle to the first answer of its MCP
//    provider (test/bench/lib/vscodeStandIn.cjs asks at once, as VS Code does). The baseline, in
//    the same rounds (ABBA, each side a fresh process): the requests that answer cannot avoid —
//    GET /workspace/mcp, then server/discover and tools/list of every server, in parallel.
//  - the extension's own memory: heapUsed after a full GC, once its definitions were provided
//    and its reads settled, minus heapUsed after a full GC before loading the bundle (the stand-in
//    loaded), in a process started with --expose-gc; RSS beside it.
// `node test/bench/vscodeActivation.mjs [--rounds=8] [--servers=5]`
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { runDaemonBench } from './lib/daemon.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const ROUNDS = Number(args.rounds ?? 8);
const SERVERS = Number(args.servers ?? 5);
const self = fileURLToPath(import.meta.url);
const BUNDLE = fileURLToPath(new URL('../../apps/vscode/dist/extension.js', import.meta.url));
const ECHO = fileURLToPath(new URL('../fixtures/servers/echo.mjs', import.meta.url));
const MODERN = { 'mcp-protocol-version': '2026-07-28', accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } };

async function baseline(base, auth) {
  const started = performance.now();
  const status = await (await fetch(`${base}/workspace/mcp`, { headers: auth })).json();
  const ask = async (name, method) => {
    const response = await fetch(`${base}/mcp/${name}`, { method: 'POST', headers: { ...auth, ...MODERN, 'mcp-method': method }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { _meta: META } }) });
    return response.json();
  };
  await Promise.all(status.servers.map((server) => Promise.all([ask(server.name, 'server/discover'), ask(server.name, 'tools/list')])));
  return { ms: performance.now() - started };
}

async function extension() {
  globalThis.gc();
  const require = createRequire(import.meta.url);
  const standIn = require('./lib/vscodeStandIn.cjs');
  globalThis.gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const bundle = require(BUNDLE);
  const context = standIn.context();
  bundle.activate(context);
  const definitions = await standIn.firstDefinitions();
  const ms = performance.now() - started;
  // Let the reads after the first answer (orphaned sessions, the move offer) settle, then measure.
  await delay(500);
  globalThis.gc();
  const heap = process.memoryUsage().heapUsed - heapBefore;
  const rss = process.memoryUsage().rss - rssBefore;
  await bundle.deactivate();
  for (const item of context.subscriptions) item.dispose();
  return { ms, heapMiB: heap / 2 ** 20, rssMiB: rss / 2 ** 20, definitions: definitions.length, versioned: definitions.every((d) => /^[0-9a-f]{16}$/.test(d.version ?? '')) };
}

if (args.child) {
  const result = args.child === 'baseline' ? await baseline(process.env.MCPOOL_URL, { authorization: `Bearer ${process.env.MCPOOL_TOKEN}` }) : await extension();
  process.stdout.write(JSON.stringify(result));
  process.exit(0);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

await runDaemonBench(
  {
    label: 'vscode-activation',
    config: (port) => ({
      mcpServers: Object.fromEntries(Array.from({ length: SERVERS }, (_, i) => [`echo${i}`, { command: process.execPath, args: [ECHO, `--server=${i}`] }])),
      daemon: { port, watchConfig: false },
    }),
  },
  async ({ base, operator }) => {
    const env = { ...process.env, MCPOOL_URL: base, MCPOOL_TOKEN: operator, MCPOOL_STATE_DIR: '/nonexistent-state' };
    const child = (kind) => {
      const out = spawnSync(process.execPath, ['--expose-gc', self, `--child=${kind}`], { env, encoding: 'utf8', timeout: 120_000 });
      if (out.status !== 0) throw new Error(`${kind} child failed: ${out.stderr}`);
      return JSON.parse(out.stdout);
    };
    child('baseline'); // warm the daemon's views once
    const rows = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ['baseline', 'extension'] : ['extension', 'baseline'];
      const got = Object.fromEntries(order.map((kind) => [kind, child(kind)]));
      rows.push({ baselineMs: got.baseline.ms, extensionMs: got.extension.ms, ratio: got.extension.ms / got.baseline.ms, heapMiB: got.extension.heapMiB, rssMiB: got.extension.rssMiB, definitions: got.extension.definitions, versioned: got.extension.versioned });
    }
    const ratios = rows.map((row) => row.ratio);
    return {
      servers: SERVERS,
      rounds: ROUNDS,
      activationToDefinitionsMs: { median: median(rows.map((row) => row.extensionMs)), target: 300 },
      baselineMs: { median: median(rows.map((row) => row.baselineMs)) },
      ratio: { median: median(ratios), range: [Math.min(...ratios), Math.max(...ratios)] },
      ownHeapMiB: { median: median(rows.map((row) => row.heapMiB)), target: 5 },
      rssMiB: { median: median(rows.map((row) => row.rssMiB)) },
      everyRound: rows,
      loadAverage: (await import('node:os')).loadavg(),
    };
  },
);
