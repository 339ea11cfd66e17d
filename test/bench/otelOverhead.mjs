#!/usr/bin/env node
// What OpenTelemetry costs on the call path. Four figures, each in a fresh process:
//  - instrument: the pool's per-request instrumentation alone (start the CLIENT span, inject,
//    end it, record the duration), µs per request, with no SDK registered (telemetry off) and
//    with the daemon's SDK registered (recording spans into a batch processor whose exporter drops
//    them, and a meter provider with a reader);
//  - call: sequential `tools/call echo` p50 through a pool (echo.mjs), off and on, for scale;
//  - import: ms to import @opentelemetry/api (what @mcpool/core loads always) and the daemon's
//    SDK module (what only telemetry on loads).
// `node test/bench/otelOverhead.mjs [--calls=2000] [--loops=200000]`
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const CALLS = Number(args.calls ?? 2000);
const LOOPS = Number(args.loops ?? 200_000);
const self = fileURLToPath(import.meta.url);

async function registerSdk() {
  const { NodeTracerProvider } = await import('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics');
  const { metrics } = await import('@opentelemetry/api');
  const drop = { export: (_spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve() };
  new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(drop)] }).register();
  class Reader extends MetricReader {
    onForceFlush() {
      return Promise.resolve();
    }
    onShutdown() {
      return Promise.resolve();
    }
  }
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new Reader()] }));
}

if (args.child === 'instrument') {
  if (args.sdk === '1') await registerSdk();
  const { startClientCall, peerAttributes } = await import('../../packages/core/dist/telemetry.js');
  const peer = peerAttributes('echo', 'stdio', undefined);
  const params = { name: 'echo', arguments: { text: 'x' } };
  const result = { content: [{ type: 'text', text: 'x' }] };
  const run = (n) => {
    for (let i = 0; i < n; i++) startClientCall('tools/call', params, peer).end(result, undefined);
  };
  run(LOOPS / 10);
  const started = process.hrtime.bigint();
  run(LOOPS);
  const us = Number(process.hrtime.bigint() - started) / 1000 / LOOPS;
  process.stdout.write(JSON.stringify({ us }) + '\n');
  process.exit(0);
}

if (args.child === 'call') {
  if (args.sdk === '1') await registerSdk();
  const { McpTransportPool } = await import('@mcpool/core');
  const { fixtureConfig, marker, sweep } = await import('./lib/procs.mjs');
  const run = `otel${process.pid}`;
  const pool = new McpTransportPool({ stateDir: false });
  const view = await pool.acquire('echo', fixtureConfig(marker(run, 'echo')), 's1');
  for (let i = 0; i < 200; i++) await view.callTool('echo', { text: 'x' });
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await view.callTool('echo', { text: 'x' });
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  await pool.drainAll();
  sweep?.(run);
  process.stdout.write(JSON.stringify({ p50: times[Math.floor(times.length / 2)] * 1000 }) + '\n');
  process.exit(0);
}

if (args.child === 'import') {
  const started = performance.now();
  await import(args.what === 'sdk' ? '../../apps/daemon/dist/telemetry/sdk.js' : '@opentelemetry/api');
  process.stdout.write(JSON.stringify({ ms: performance.now() - started }) + '\n');
  process.exit(0);
}

function child(extra) {
  const out = spawnSync(process.execPath, [self, ...extra, `--calls=${CALLS}`, `--loops=${LOOPS}`], { encoding: 'utf8', timeout: 300_000 });
  const line = out.stdout.trim().split('\n').pop();
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`child ${extra.join(' ')} failed: ${out.stderr}`);
  }
}

const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ROUNDS = 3;
const rows = [];
for (const [label, extra, key] of [
  ['instrument, off (µs/request)', ['--child=instrument'], 'us'],
  ['instrument, on (µs/request)', ['--child=instrument', '--sdk=1'], 'us'],
  ['tools/call p50, off (µs)', ['--child=call'], 'p50'],
  ['tools/call p50, on (µs)', ['--child=call', '--sdk=1'], 'p50'],
  ['import @opentelemetry/api (ms)', ['--child=import', '--what=api'], 'ms'],
  ['import the daemon SDK module (ms)', ['--child=import', '--what=sdk'], 'ms'],
]) {
  const values = [];
  for (let r = 0; r < ROUNDS; r++) values.push(child(extra)[key]);
  rows.push({ label, median: Number(median(values).toFixed(2)), all: values.map((v) => Number(v.toFixed(2))) });
}
for (const row of rows) process.stdout.write(`${row.label.padEnd(36)} ${String(row.median).padStart(9)}   [${row.all.join(', ')}]\n`);
