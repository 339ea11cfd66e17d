#!/usr/bin/env node
// A team gateway's two prices, in one run: three replicas of `mcpool serve` (each with an echo
// server, `daemon.cluster` naming the others, one session key) behind HAProxy run from
// `deploy/haproxy.cfg` (round-robin, no stickiness), all on 127.0.0.1.
// 1. Modern (2026-07-28) `tools/call` throughput at concurrency 16 through that balancer, against
//    the same calls through a second HAProxy from the same deploy file with only r1 behind it
//    (target: ≥ 2.0× the one replica). Rounds alternate which goes first (ABBA); the ratio is
//    per round, then the median. Beside it, the CPU every process of the run used per call (the
//    client, HAProxy, each replica with its server) and the share of the machine anyone kept busy,
//    and the ceiling: each setup's calls/s with every CPU on this run alone at its CPU per call,
//    trio ÷ one. Once the CPUs are the limit, no ratio above that ceiling is possible here.
// 2. An SDK v1 (legacy, 2025-11-25) session opened on r1: each call sent straight to r1 (its
//    owner) or to r2, which forwards it to r1 (target: forwarded p50 ≤ 1.3× the owner's p50), or
//    to a bare relay process in front of r1 (lib/bareForwarder.mjs: the floor of any forwarding
//    hop here) — the three in turn, the order rotating each round.
// `node test/bench/cluster.mjs [--rounds=8] [--calls=400] [--concurrency=16] [--legacy=300]` (--legacy: calls each way)
// Prints its report as JSON; the exit code is 1 only when the run failed or left a process behind.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { haproxyConfig, startBalancedTeam } from '../conformance/balancer.mjs';
import { cpuUsOf, freePort, treePids } from './lib/gateways.mjs';
import { runCalls } from './lib/load.mjs';
import { ECHO, marker, sweep } from './lib/procs.mjs';
import { median, percentile } from './lib/stats.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const bounded = (value, fallback, min, max) => Math.min(max, Math.max(min, Number(value ?? fallback) || fallback));
const rounds = bounded(args.rounds, 8, 2, 100);
const calls = bounded(args.calls, 400, 32, 20_000);
const legacyCalls = bounded(args.legacy, 300, 10, 10_000);
const CONCURRENCY = bounded(args.concurrency, 16, 1, 256);
const READY_TIMEOUT_MS = 30_000;
const CALL_TIMEOUT_MS = 30_000;

const BARE_FORWARDER = fileURLToPath(new URL('./lib/bareForwarder.mjs', import.meta.url));
const mark = marker(randomUUID(), 'cluster');
const round2 = (value) => Math.round(value * 100) / 100;

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'mcpool-bench-cluster', version: '0.0.0' },
};
const MODERN_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'echo__echo',
};
let nextId = 0;

// node:http with a keep-alive agent, not fetch: the client shares the machine's two CPUs with the
// balancer and the replicas, so it should take as little of them as it can.
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY * 2 });
const BODY_TEXT = 'hello from mcpool bench';

/** One modern `tools/call` of the echo server through `base`; resolves with the replica that served it. */
function modernCall(base) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call', params: { name: 'echo__echo', arguments: { text: BODY_TEXT }, _meta: MODERN_META } });
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/mcp`, { method: 'POST', agent, headers: { ...MODERN_HEADERS, 'content-length': Buffer.byteLength(body) }, timeout: CALL_TIMEOUT_MS }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        if (res.statusCode !== 200 || !text.includes(BODY_TEXT)) reject(new Error(`modern call through ${base}: HTTP ${res.statusCode} ${text.slice(0, 300)}`));
        else resolve(res.headers['x-mcpool-replica']);
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`modern call through ${base}: no answer in ${CALL_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** A second HAProxy from the deploy file with only `replicas` ({ id, port }) behind it; `stop()` ends it by its pid. */
async function startHaproxy(replicas) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-bench-haproxy-'));
  writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfig(port, replicas));
  const child = spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk.toString('utf8')));
  child.once('error', (error) => (stderr += error.message));
  const exited = new Promise((resolve) => child.once('close', resolve));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await fetch(`${base}/readyz`).then((r) => r.status === 200, () => false))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`HAProxy did not become ready at ${base}: ${stderr.slice(-500)}`);
    }
    await delay(100);
  }
  return { base, pid: child.pid, stop, log: () => stderr };
}

/** The machine's CPU time so far, every process's (ours and everyone else's), from /proc/stat: [busy, total] in ticks. */
function machineTicks() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return [total - fields[3] - fields[4], total];
}

/** CPU µs used so far by each group of processes, and by this one (the client: every thread). */
function cpuNow(groups) {
  const own = process.cpuUsage();
  return { client: own.user + own.system, ...Object.fromEntries(Object.entries(groups).map(([name, pids]) => [name, cpuUsOf(pids)])) };
}

/** Modern throughput at `CONCURRENCY` calls in flight: trio vs one replica, ABBA rounds, with the CPU each process group used per call. */
async function modernThroughput({ trio, single, groups }) {
  const servedBy = new Map();
  const trioCall = async () => {
    const replica = await modernCall(trio.base);
    servedBy.set(replica, (servedBy.get(replica) ?? 0) + 1);
  };
  const singleCall = () => modernCall(single.base);
  // Warm-up: every replica's connections, HAProxy's, the JIT.
  await runCalls(trioCall, 200, CONCURRENCY);
  await runCalls(singleCall, 100, CONCURRENCY);
  servedBy.clear();
  const phases = { trio: [], single: [] };
  const measure = async (name, call) => {
    const before = cpuNow(groups);
    const machineBefore = machineTicks();
    const run = await runCalls(call, calls, CONCURRENCY);
    const machineAfter = machineTicks();
    const after = cpuNow(groups);
    const cpuPerCallUs = Object.fromEntries(Object.keys(after).map((key) => [key, (after[key] - before[key]) / calls]));
    const ours = Object.values(cpuPerCallUs).reduce((a, b) => a + b, 0) * calls;
    phases[name].push({
      callsPerSec: (calls / run.wallMs) * 1000,
      p50Ms: percentile(run.latenciesUs, 50) / 1000,
      cpuPerCallUs,
      runCores: ours / (run.wallMs * 1000),
      machineBusy: (machineAfter[0] - machineBefore[0]) / (machineAfter[1] - machineBefore[1]),
    });
  };
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      await measure('trio', trioCall);
      await measure('single', singleCall);
    } else {
      await measure('single', singleCall);
      await measure('trio', trioCall);
    }
  }
  const ratios = phases.trio.map((phase, i) => phase.callsPerSec / phases.single[i].callsPerSec);
  const cpuPerCall = (name) => {
    const keys = Object.keys(phases[name][0].cpuPerCallUs);
    const byKey = Object.fromEntries(keys.map((key) => [key, Math.round(median(phases[name].map((phase) => phase.cpuPerCallUs[key])))]));
    return { ...byKey, total: Math.round(median(phases[name].map((phase) => Object.values(phase.cpuPerCallUs).reduce((a, b) => a + b, 0)))) };
  };
  const trioCpu = cpuPerCall('trio');
  const singleCpu = cpuPerCall('single');
  const singleCallsPerSec = median(phases.single.map((phase) => phase.callsPerSec));
  const cpus = availableParallelism();
  const trioCeiling = (cpus * 1e6) / trioCpu.total;
  const singleCeiling = (cpus * 1e6) / singleCpu.total;
  const phaseMedian = (name, key) => round2(median(phases[name].map((phase) => phase[key])));
  return {
    concurrency: CONCURRENCY,
    callsPerPhase: calls,
    rounds,
    trioCallsPerSec: Math.round(median(phases.trio.map((phase) => phase.callsPerSec))),
    singleCallsPerSec: Math.round(singleCallsPerSec),
    ratio: round2(median(ratios)),
    ratioRange: [round2(Math.min(...ratios)), round2(Math.max(...ratios))],
    target: 'three replicas ≥ 2.0× one replica behind the same balancer',
    met: median(ratios) >= 2,
    trioP50Ms: round2(median(phases.trio.map((phase) => phase.p50Ms))),
    singleP50Ms: round2(median(phases.single.map((phase) => phase.p50Ms))),
    cpuPerCallUs: { trio: trioCpu, single: singleCpu },
    // CPUs this run's processes kept busy, and the share of the machine's CPU time anyone used, per phase.
    runCores: { trio: phaseMedian('trio', 'runCores'), single: phaseMedian('single', 'runCores') },
    machineBusy: { trio: phaseMedian('trio', 'machineBusy'), single: phaseMedian('single', 'machineBusy') },
    ceiling: {
      cpus,
      trioCallsPerSec: Math.round(trioCeiling),
      singleCallsPerSec: Math.round(singleCeiling),
      ratio: round2(trioCeiling / singleCeiling),
      meaning: `every one of the ${cpus} CPUs on this run's processes alone, at each setup's CPU per call: once the CPUs are the limit, the trio can do at most this ratio of one replica`,
      trioVsMeasuredSingle: round2(trioCeiling / singleCallsPerSec),
    },
    trioServedBy: Object.fromEntries([...servedBy].sort()),
  };
}

/** The bare forwarder (lib/bareForwarder.mjs) in front of `target`, as a process of its own; `stop()` ends it by its pid. */
async function startBareForwarder(target) {
  const child = spawn(process.execPath, [BARE_FORWARDER, target, mark], { stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = new Promise((resolve) => child.once('close', resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const bound = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(bound);
  };
  let out = '';
  for await (const chunk of child.stdout) {
    out += chunk;
    const match = /LISTENING (\d+)/.exec(out);
    if (match) return { base: `http://127.0.0.1:${match[1]}`, stop };
  }
  await stop();
  throw new Error('the bare forwarder exited before it listened');
}

/**
 * An SDK v1 session owned by `owner`; each call goes to `owner`, to `other` (which forwards it to
 * the owner), or to the bare forwarder in front of the owner (the floor of any forwarding hop),
 * the three in turn, the order rotating each round.
 */
async function legacyForwarding({ owner, other, bare }) {
  let target = owner;
  let last;
  // The SDK's requests keep their path and body; only the process they are sent to changes.
  const routed = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    url.host = new URL(target).host;
    const response = await fetch(url, init);
    last = { replica: response.headers.get('x-mcpool-replica'), forwardedBy: response.headers.get('x-mcpool-forwarded-by') };
    return response;
  };
  const client = new Client({ name: 'mcpool-bench-cluster-legacy', version: '0.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(`${owner}/mcp`), { fetch: routed });
  await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
  const ownerId = last.replica;
  try {
    const call = async (to) => {
      target = to;
      const t = performance.now();
      const result = await client.callTool({ name: 'echo__echo', arguments: { text: BODY_TEXT } }, undefined, { timeout: CALL_TIMEOUT_MS });
      const ms = performance.now() - t;
      if (!JSON.stringify(result).includes(BODY_TEXT)) throw new Error(`legacy call via ${to}: ${JSON.stringify(result).slice(0, 300)}`);
      if (last.replica !== ownerId) throw new Error(`legacy call via ${to} was served by ${last.replica}, not the owner ${ownerId}`);
      if ((to === other) !== (last.forwardedBy !== null)) throw new Error(`legacy call via ${to}: forwarded by ${last.forwardedBy}`);
      return ms;
    };
    const ways = [owner, other, bare];
    for (let i = 0; i < 30; i++) await call(ways[i % 3]);
    const ms = new Map(ways.map((way) => [way, []]));
    for (let i = 0; i < legacyCalls; i++) {
      for (let j = 0; j < 3; j++) {
        const way = ways[(i + j) % 3];
        ms.get(way).push(await call(way));
      }
    }
    const p50 = (way) => median(ms.get(way));
    const ratio = p50(other) / p50(owner);
    return {
      sessionId: `${transport.sessionId?.slice(0, 5)}…`,
      owner: ownerId,
      callsEach: legacyCalls,
      ownerP50Ms: round2(p50(owner)),
      forwardedP50Ms: round2(p50(other)),
      ratio: round2(ratio),
      target: 'forwarded legacy call p50 ≤ 1.3× the p50 of one that lands on its owner',
      met: ratio <= 1.3,
      floor: { bareForwarderP50Ms: round2(p50(bare)), ratio: round2(p50(bare) / p50(owner)), meaning: 'one bare node:http relay process in front of the owner, against the owner' },
      ownerP99Ms: round2(percentile(ms.get(owner), 99)),
      forwardedP99Ms: round2(percentile(ms.get(other), 99)),
      bareForwarderP99Ms: round2(percentile(ms.get(bare), 99)),
    };
  } finally {
    target = owner;
    await client.close().catch(() => undefined);
  }
}

const started = performance.now();
const load = { start: loadavg().map(round2) };
let team;
let single;
let bare;
try {
  team = await startBalancedTeam({ mcpServers: { echo: { command: process.execPath, args: [ECHO, mark], sharing: 'shared' } } });
  const ports = team.replicas.map((replica) => Number(new URL(replica.base).port));
  single = await startHaproxy([{ id: 'r1', port: ports[0] }]);
  // Each replica's tree (the daemon and its echo server), and the two HAProxy processes.
  const groups = { haproxy: [team.haproxyPid, single.pid], ...Object.fromEntries(team.replicas.map((replica, i) => [`r${i + 1}`, treePids(replica.pid)])) };
  const modern = await modernThroughput({ trio: team, single, groups });
  bare = await startBareForwarder(team.replicas[0].base);
  const legacy = await legacyForwarding({ owner: team.replicas[0].base, other: team.replicas[1].base, bare: bare.base });
  load.end = loadavg().map(round2);
  console.log(JSON.stringify({ modern, legacy, load, wallSeconds: Math.round((performance.now() - started) / 1000) }, null, 2));
} catch (error) {
  console.error('bench failed:', error);
  if (single) console.error(`the one-replica HAProxy said:\n${single.log().slice(-2000)}`);
  process.exitCode = 1;
} finally {
  agent.destroy();
  await bare?.stop();
  await single?.stop();
  const clean = await team?.stop();
  if (team && !clean) console.error('a replica did not exit 0 on SIGTERM');
  const left = sweep(mark);
  if (left.length > 0) {
    console.error(`processes of the run left behind (killed): ${left.join(', ')}`);
    process.exitCode = 1;
  }
}
