#!/usr/bin/env node
// A connection thread against a bare worker with the same V8 limits, in one run:
// - RSS: the growth of a fresh supervisor process per connection, 8 stdio connections (echo.mjs,
//   one thread each, called 20 times each), against the growth per bare worker of 8 bare workers
//   (`lib/bareWorker.mjs`: a module file that answers a ping). Servers are child processes,
//   outside this process's RSS, so a connection's growth is its thread (isolate, stacks, the
//   actor's code and state) plus the supervisor's bookkeeping. Measured after the warm spare booted, so the spare is in both sides'
//   "before".
// - Boot: new Worker → first answer on its channel, the actor's worker entry against the bare one:
//   in wall time, and in the new thread's own CPU time (Linux: the thread that appeared in
//   /proc/self/task, its schedstat), which a loaded machine does not stretch.
// Rounds alternate which kind goes first, each in fresh processes; medians and per-round ratios.
// `node test/bench/actorRss.mjs [--entries=8] [--rounds=3] [--boots=12] [--worker=<actor worker URL>]`
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const ENTRIES = Number(args.entries ?? 8);
const ROUNDS = Number(args.rounds ?? 3);
const BOOTS = Number(args.boots ?? 12);
/** The limits of both kinds: the pool's default for its connection threads. */
const LIMITS = { maxOldGenerationSizeMb: 320, maxYoungGenerationSizeMb: 3 };
const BARE = new URL('./lib/bareWorker.mjs', import.meta.url);
const MB = 1048576;

const settle = async (ms) => {
  globalThis.gc?.();
  await new Promise((resolve) => setTimeout(resolve, ms));
  globalThis.gc?.();
};

async function pingable(url) {
  const { RpcChannel } = await import('@mcpool/protocol/rpc');
  const worker = new Worker(url, { resourceLimits: LIMITS, stdout: false, stderr: false, execArgv: [], workerData: { liveness: new SharedArrayBuffer(8) } });
  const channel = new RpcChannel(worker, { ownsPort: false });
  await channel.request('ping', null, { timeoutMs: 60_000 });
  return worker;
}

if (args.child === 'pool') {
  const { McpTransportPool } = await import('@mcpool/core');
  const { fixtureConfig, marker, sweep } = await import('./lib/procs.mjs');
  const run = `rss${process.pid}`;
  const pool = new McpTransportPool({ stateDir: false, actorHost: { resourceLimits: LIMITS, ...(args.worker ? { workerUrl: new URL(args.worker) } : {}) } });
  pool.start();
  while (!pool.getSnapshot().spareThread) await new Promise((resolve) => setTimeout(resolve, 10));
  await settle(500);
  const before = process.memoryUsage().rss;
  const views = [];
  for (let i = 0; i < ENTRIES; i++) views.push(await pool.acquire(`echo${i}`, fixtureConfig(marker(run, String(i))), 's1'));
  for (let k = 0; k < 20; k++) await Promise.all(views.map((v) => v.callTool('echo', { text: 'x' })));
  // The spare taken by the last acquire is booted again: wait for it, so both sides hold one spare.
  while (!pool.getSnapshot().spareThread) await new Promise((resolve) => setTimeout(resolve, 10));
  await settle(1500);
  const after = process.memoryUsage().rss;
  await pool.drainAll();
  sweep?.(run);
  process.stdout.write(JSON.stringify({ perThread: (after - before) / ENTRIES }) + '\n');
  process.exit(0);
}

if (args.child === 'bare') {
  await settle(500);
  const before = process.memoryUsage().rss;
  const workers = [];
  for (let i = 0; i < ENTRIES; i++) workers.push(await pingable(BARE));
  await settle(1500);
  const after = process.memoryUsage().rss;
  process.stdout.write(JSON.stringify({ perThread: (after - before) / ENTRIES }) + '\n');
  process.exit(0);
}

if (args.child === 'boot') {
  const actor = new URL(args.worker ?? import.meta.resolve('@mcpool/actor/worker'));
  const times = { actor: [], bare: [], actorCpu: [], bareCpu: [] };
  const tasks = () => new Set(readdirSync('/proc/self/task'));
  for (let i = 0; i < BOOTS; i++) {
    for (const kind of i % 2 === 0 ? ['actor', 'bare'] : ['bare', 'actor']) {
      const before = tasks();
      const started = performance.now();
      const worker = await pingable(kind === 'actor' ? actor : BARE);
      times[kind].push(performance.now() - started);
      // The thread that appeared is the worker's: its CPU time so far (ns → ms).
      const cpu = [...tasks()].filter((tid) => !before.has(tid)).map((tid) => Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1').split(' ')[0]) / 1e6);
      if (cpu.length === 1) times[`${kind}Cpu`].push(cpu[0]);
      await worker.terminate();
    }
  }
  process.stdout.write(JSON.stringify(times) + '\n');
  process.exit(0);
}

function child(kind) {
  const out = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), `--child=${kind}`, `--entries=${ENTRIES}`, `--boots=${BOOTS}`, ...(args.worker ? [`--worker=${args.worker}`] : [])], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  const line = out.stdout.trim().split('\n').pop();
  try {
    return JSON.parse(line);
  } catch {
    process.stderr.write(out.stderr);
    process.exit(1);
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
const rss = { pool: [], bare: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const kind of r % 2 === 0 ? ['pool', 'bare'] : ['bare', 'pool']) rss[kind].push(child(kind).perThread / MB);
}
const ratios = rss.pool.map((value, i) => value / rss.bare[i]);
const boots = child('boot');
const bootRatios = boots.actor.map((value, i) => value / boots.bare[i]);
const list = (values, digits = 1) => values.map((v) => v.toFixed(digits)).join(', ');
console.log(`limits ${JSON.stringify(LIMITS)}; ${ENTRIES} threads per process, ${ROUNDS} rounds (alternating), boots ${BOOTS} each (interleaved)`);
console.log(`connection thread RSS: median ${median(rss.pool).toFixed(2)} MB [${list(rss.pool, 2)}]  (target ≤ 10 MB)`);
console.log(`bare worker RSS:       median ${median(rss.bare).toFixed(2)} MB [${list(rss.bare, 2)}]`);
console.log(`  ratio connection ÷ bare: median ${median(ratios).toFixed(2)}× [${list(ratios, 2)}]  (target ≤ 1.25×)`);
console.log(`thread boot, wall: actor p50 ${median(boots.actor).toFixed(1)} ms, bare p50 ${median(boots.bare).toFixed(1)} ms; ratio per pair median ${median(bootRatios).toFixed(2)}× [${list(bootRatios, 2)}]  (target ≤ 1.2×)`);
if (boots.actorCpu.length > 0 && boots.actorCpu.length === boots.bareCpu.length) {
  const cpuRatios = boots.actorCpu.map((value, i) => value / boots.bareCpu[i]);
  console.log(`thread boot, the thread's CPU: actor p50 ${median(boots.actorCpu).toFixed(1)} ms, bare p50 ${median(boots.bareCpu).toFixed(1)} ms; ratio per pair median ${median(cpuRatios).toFixed(2)}× [${list(cpuRatios, 2)}]`);
}
