#!/usr/bin/env node
// Memory footprint against doing without the pool, each measurement in a fresh process (3 rounds,
// medians printed):
// - tree: one session × N stdio servers (default 20 echo.mjs, told apart by a marker). The pool's
//   whole tree (this process, its actor threads — one per connection, plus the warm spare — and
//   the servers) against the same N servers spawned directly by SDK v1 clients in one process.
//   Target: pool ≤ 1.15× direct.
// - url: S sessions (default 30) on one legacy Streamable HTTP server that is not shared (HTTP is
//   per-session unless the config pools it: one upstream session and one actor each). The
//   supervisor's RSS growth from before the first acquire to after the last call. The server runs
//   in a process of its own, outside the measured tree. Target: ≤ 60 MB.
// `node test/bench/footprint.mjs [--servers=20] [--sessions=30] [--rounds=3] [--only=tree|url]`
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const SERVERS = Number(args.servers ?? 20);
const SESSIONS = Number(args.sessions ?? 30);
const ROUNDS = Number(args.rounds ?? 3);
const SELF = fileURLToPath(import.meta.url);
const MB = 1024 * 1024;

async function settle() {
  globalThis.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 500));
}

if (args.child !== undefined) {
  const { fixtureConfig, marker, sweep, treeRss } = await import('./lib/procs.mjs');
  const run = `fp${process.pid}`;
  let out;
  if (args.child === 'direct') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const clients = [];
    for (let i = 0; i < SERVERS; i++) {
      const config = fixtureConfig(marker(run, String(i)));
      const client = new Client({ name: 'footprint', version: '1.0.0' });
      await client.connect(new StdioClientTransport({ command: config.command, args: config.args, stderr: 'ignore' }));
      await client.listTools();
      clients.push(client);
    }
    await Promise.all(clients.map((c) => c.callTool({ name: 'echo', arguments: { text: 'x' } })));
    await settle();
    out = { treeBytes: treeRss(process.pid).bytes };
    await Promise.all(clients.map((c) => c.close()));
  } else if (args.child === 'pool') {
    const { McpTransportPool } = await import('@mcpool/core');
    const pool = new McpTransportPool({ stateDir: false });
    const views = [];
    for (let i = 0; i < SERVERS; i++) views.push(await pool.acquire(`echo${i}`, fixtureConfig(marker(run, String(i))), 's1'));
    await Promise.all(views.map((v) => v.callTool('echo', { text: 'x' })));
    await settle();
    out = { treeBytes: treeRss(process.pid).bytes };
    await pool.drainAll();
  } else if (args.child === 'url') {
    const { McpTransportPool } = await import('@mcpool/core');
    const pool = new McpTransportPool({ stateDir: false });
    await settle();
    const before = process.memoryUsage().rss;
    const views = [];
    for (let s = 0; s < SESSIONS; s++) views.push(await pool.acquire('remote', { type: 'http', url: args.url }, `session-${s}`));
    await Promise.all(views.map((v) => v.callTool('echo', { text: 'x' })));
    await settle();
    const after = process.memoryUsage().rss;
    const snapshot = pool.getSnapshot();
    out = { growthBytes: after - before, liveActors: snapshot.liveActors };
    await pool.drainAll();
  }
  sweep(run);
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

function child(kind, extra = []) {
  const out = spawnSync(process.execPath, ['--expose-gc', SELF, `--child=${kind}`, `--servers=${SERVERS}`, `--sessions=${SESSIONS}`, ...extra], { encoding: 'utf8', timeout: 300_000 });
  const line = out.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`footprint ${kind} child failed (status ${out.status}): ${out.stderr.slice(-2000)}`);
  }
}

/** Starts the legacy HTTP fixture as a program of its own; resolves with its URL and a stop. */
async function startLegacyServer() {
  const server = spawn(process.execPath, [fileURLToPath(new URL('../fixtures/servers/httpLegacyServer.mjs', import.meta.url)), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: server.stdout });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the HTTP fixture did not start in 30 s')), 30_000);
    lines.on('line', (line) => {
      if (!line.startsWith('LISTENING ')) return;
      clearTimeout(timer);
      resolve(line.slice('LISTENING '.length).trim());
    });
    server.once('exit', (code) => reject(new Error(`the HTTP fixture exited with ${code}`)));
  });
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        server.once('exit', resolve);
        server.kill('SIGTERM');
      }),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function measureTree() {
  const tree = { direct: [], pool: [] };
  for (let r = 0; r < ROUNDS; r++) {
    // Interleaved, the order alternating, so a drift in the machine's load hits both sides.
    const order = r % 2 === 0 ? ['direct', 'pool'] : ['pool', 'direct'];
    for (const kind of order) tree[kind].push(child(kind).treeBytes);
  }
  const direct = median(tree.direct) / MB;
  const pooled = median(tree.pool) / MB;
  const ratios = tree.pool.map((bytes, i) => bytes / tree.direct[i]);
  console.log(`tree, 1 session × ${SERVERS} stdio servers: direct ${direct.toFixed(1)} MB, pool ${pooled.toFixed(1)} MB → ${(pooled / direct).toFixed(2)}× [per round ${ratios.map((r) => r.toFixed(2)).join(', ')}] (target ≤ 1.15×)`);
}

async function measureUrl() {
  const server = await startLegacyServer();
  try {
    const growth = [];
    let counts = { liveActors: 0 };
    for (let r = 0; r < ROUNDS; r++) {
      const result = child('url', [`--url=${server.url}`]);
      growth.push(result.growthBytes);
      counts = result;
    }
    console.log(`url, ${SESSIONS} sessions on one unshared legacy HTTP server: supervisor RSS +${(median(growth) / MB).toFixed(1)} MB (${counts.liveActors} entries, one actor thread each; target ≤ 60 MB)`);
  } finally {
    await server.stop();
  }
}

if (args.only !== 'url') measureTree();
if (args.only !== 'tree') await measureUrl();
