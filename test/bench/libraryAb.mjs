#!/usr/bin/env node
// The library call path, A/B: this tree's `@mcpool/core` against another build of it (another
// checkout, built: `--baseline=/path/to/checkout`), in one process. Each side has its own pool
// with one echo.mjs entry; rounds alternate which side goes first, and per round each side runs
// N sequential calls (p50) and M calls at concurrency 16 (p50 and calls/s). Ratios are this tree
// ÷ the baseline per round, then the median over rounds, with their range.
// `node test/bench/libraryAb.mjs --baseline=/tmp/main [--rounds=8] [--seq=1000] [--conc=4000]`
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { ECHO_ARGS, runCalls } from './lib/load.mjs';
import { fixtureConfig, marker, sweep } from './lib/procs.mjs';
import { median } from './lib/stats.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
if (args.baseline === undefined) {
  console.error('usage: node test/bench/libraryAb.mjs --baseline=<a built checkout> [--rounds=8] [--seq=1000] [--conc=4000]');
  process.exit(2);
}
const ROUNDS = Number(args.rounds ?? 8);
const SEQ = Number(args.seq ?? 1000);
const CONC = Number(args.conc ?? 4000);
const WARMUP = 500;

const sides = {
  branch: await import('@mcpool/core'),
  baseline: await import(pathToFileURL(join(resolve(args.baseline), 'packages/core/dist/index.js')).href),
};
const run = `ab${process.pid}`;
const views = {};
const pools = [];
try {
  for (const [name, core] of Object.entries(sides)) {
    const pool = new core.McpTransportPool({ stateDir: false, drainDelayMs: 60_000 });
    pools.push(pool);
    views[name] = await pool.acquire('echo', fixtureConfig(marker(run, name)), 'ab');
    const call = () => views[name].callTool('echo', ECHO_ARGS);
    await runCalls(call, WARMUP, 1);
    await runCalls(call, WARMUP * 2, 16);
  }
  const rounds = { branch: { seq: [], concP50: [], concRate: [] }, baseline: { seq: [], concP50: [], concRate: [] } };
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? ['branch', 'baseline'] : ['baseline', 'branch'];
    for (const name of order) {
      const call = () => views[name].callTool('echo', ECHO_ARGS);
      const seq = await runCalls(call, SEQ, 1);
      const conc = await runCalls(call, CONC, 16);
      rounds[name].seq.push(median(seq.latenciesUs));
      rounds[name].concP50.push(median(conc.latenciesUs));
      rounds[name].concRate.push((conc.calls / conc.wallMs) * 1000);
    }
  }
  const ratios = (key) => rounds.branch[key].map((value, i) => value / rounds.baseline[key][i]);
  const show = (label, key, unit, better) => {
    const r = ratios(key);
    console.log(
      `${label}: branch ${median(rounds.branch[key]).toFixed(0)} ${unit}, baseline ${median(rounds.baseline[key]).toFixed(0)} ${unit} → ${median(r).toFixed(3)}× [${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)}] (${better})`,
    );
  };
  console.log(`${ROUNDS} rounds (alternating); per round ${SEQ} sequential calls, ${CONC} at concurrency 16; baseline ${args.baseline}`);
  show('sequential p50', 'seq', 'µs', 'lower is better; target ≤ 1.05×');
  show('concurrency 16 p50', 'concP50', 'µs', 'lower is better; target ≤ 1.05×');
  show('concurrency 16 calls/s', 'concRate', 'calls/s', 'higher is better; target ≥ 0.95×');
} finally {
  await Promise.all(pools.map((pool) => pool.drainAll()));
  sweep(run);
}
