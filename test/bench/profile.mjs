#!/usr/bin/env node
// Where does a call's time go? Runs one path under V8's CPU profiler (every thread: the main
// thread and the actor's worker, through MCPOOL_WORKER_CPU_PROF) and prints the top functions by self time, per thread and by
// package. `node test/bench/profile.mjs [--path=pool|direct|daemon] [--mode=seq|conc] [--calls=20000]`
// `--path=daemon [--endpoint=/mcp/everything|/mcp|daemon-all-modern]`: the real daemon (`mcpool serve`, part 2's
// config: server-everything over stdio, 127.0.0.1) runs under the profiler while this process
// calls `echo` through its Streamable HTTP endpoint with the SDK client; the daemon is stopped
// with SIGTERM so it writes its profile (the main thread's only: actor threads are terminated at
// shutdown and write none). Profiles are kept in bench-results/profiles/ (open them in Chrome
// DevTools → Performance).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const path = args.path ?? 'pool';
const mode = args.mode ?? 'seq';
const calls = Number(args.calls ?? 20_000);

if (path === 'daemon') {
  const dir = `${ROOT}bench-results/profiles/${Date.now()}-daemon-${mode}`;
  mkdirSync(dir, { recursive: true });
  await profileDaemon(dir);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) summarize(`${dir}/${file}`);
} else if (args.child === undefined) {
  const dir = `${ROOT}bench-results/profiles/${Date.now()}-${path}-${mode}`;
  mkdirSync(dir, { recursive: true });
  const run = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=100', fileURLToPath(import.meta.url), `--path=${path}`, `--mode=${mode}`, `--calls=${calls}`, '--child=1'], {
    stdio: 'inherit',
    cwd: ROOT,
    // The actor threads too: each writes its own profile when it exits at the pool's drain.
    env: { ...process.env, MCPOOL_WORKER_CPU_PROF: dir },
  });
  if (run.status !== 0) process.exit(run.status ?? 1);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) summarize(`${dir}/${file}`);
} else {
  await child();
}

async function child() {
  const { runCalls, connectDirect, closeDirect, directCall, pooledCall } = await import('./lib/load.mjs');
  const { fixtureConfig, marker } = await import('./lib/procs.mjs');
  const config = fixtureConfig(marker(`prof${process.pid}`, path));
  const concurrency = mode === 'seq' ? 1 : 16;
  if (path === 'direct') {
    const client = await connectDirect(config);
    try {
      await runCalls(directCall(client), 2000, concurrency);
      const r = await runCalls(directCall(client), calls, concurrency);
      report(r, concurrency);
    } finally {
      await closeDirect([client]);
    }
  } else {
    const { McpTransportPool } = await import('@mcpool/core');
    const pool = new McpTransportPool({ actorHost: { warmSpare: false } });
    try {
      const view = await pool.acquire('echo', config, 'profile');
      await runCalls(pooledCall(view), 2000, concurrency);
      const r = await runCalls(pooledCall(view), calls, concurrency);
      report(r, concurrency);
    } finally {
      await pool.drainAll({ timeoutMs: 5000 });
    }
  }
}

/** The daemon under `--cpu-prof`, driven from here through `--endpoint` (default /mcp/everything). */
async function profileDaemon(dir) {
  const { runCalls } = await import('./lib/load.mjs');
  const { GATEWAYS, closeSession, echoCall, startGateway, stopGateway, waitReady } = await import('./lib/gateways.mjs');
  const { marker } = await import('./lib/procs.mjs');
  const { randomBytes } = await import('node:crypto');
  const daemon = GATEWAYS.find((g) => g.id === 'daemon');
  // By id (`--endpoint=daemon-all-modern`: the modern client on /mcp) or by path (the first endpoint of that path).
  const wanted = args.endpoint ?? '/mcp/everything';
  const endpoint = daemon.endpoints.find((e) => e.id === wanted) ?? daemon.endpoints.find((e) => e.path === wanted);
  if (!endpoint) throw new Error(`--endpoint must be one of ${daemon.endpoints.map((e) => `${e.id} (${e.path})`).join(', ')}`);
  const concurrency = mode === 'seq' ? 1 : 16;
  const handle = await startGateway(daemon, { mark: marker(`prof${process.pid}`, 'daemon'), token: randomBytes(24).toString('base64url'), nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=100'] });
  let session;
  try {
    ({ session } = await waitReady(handle, endpoint, 60_000));
    const call = echoCall(session, endpoint.tool);
    await runCalls(call, 2000, concurrency);
    const r = await runCalls(call, calls, concurrency);
    console.log(`daemon ${endpoint.path}:`);
    report(r, concurrency);
  } finally {
    await closeSession(session);
    const killed = await stopGateway(handle, 20_000);
    if (killed.length > 0) console.error(`the daemon did not stop within 20 s (SIGKILLed ${killed.join(', ')}): its profiles may be missing`);
  }
}

function report(r, concurrency) {
  const sorted = [...r.latenciesUs].sort((a, b) => a - b);
  console.log(`${path} ${mode} (concurrency ${concurrency}): ${r.calls} calls, p50 ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} µs, ${((r.calls / r.wallMs) * 1000).toFixed(0)} calls/s, process CPU ${(r.cpuUs / r.calls).toFixed(1)} µs/call`);
}

/** Top self time by function and by package for one thread's profile. */
function summarize(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const deltas = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0));
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const byFunction = new Map();
  const byPackage = new Map();
  for (const [id, us] of self) {
    const { callFrame } = byId.get(id);
    const url = callFrame.url.replace(`file://${ROOT}`, '');
    const where =
      /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(url)?.[1] ??
      (/packages\/([^/]+)/.exec(url)?.[1] ? `@mcpool/${/packages\/([^/]+)/.exec(url)[1]}` : /^apps\/([^/]+)/.exec(url)?.[1] ? `apps/${/^apps\/([^/]+)/.exec(url)[1]}` : url.startsWith('node:') ? 'node internals' : url === '' ? `(${callFrame.functionName || 'native'})` : url);
    const fn = `${callFrame.functionName || '(anonymous)'} ${url.split('/').slice(-1)[0]}:${callFrame.lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    byPackage.set(where, (byPackage.get(where) ?? 0) + us);
  }
  // Inclusive time of the functions of this repository (self + callees), once per stack.
  const inclusive = new Map();
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  for (const [id, us] of self) {
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const { callFrame } = byId.get(cur);
      if (!/(packages|apps)\//.test(callFrame.url) || /node_modules/.test(callFrame.url)) continue;
      const key = `${callFrame.functionName || '(anonymous)'} ${callFrame.url.split('/').slice(-1)[0]}:${callFrame.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }
  const top = (map, n) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${k}`).join('\n');
  console.log(`\n${file.split('/').pop()} — ${(total / 1000).toFixed(0)} ms sampled\nby package:\n${top(byPackage, 10)}\ntop functions (self):\n${top(byFunction, 25)}\nmcpool functions (inclusive):\n${top(inclusive, 15)}`);
}
