#!/usr/bin/env node
/**
 * The notification flood, measured on a real daemon: a server sends ~40k `notifications/message`
 * a second outside any request while one downstream `/mcp` client holds its GET stream open and
 * never reads it. Reports the daemon's RSS growth, whether (and when) the stalled session was cut
 * and why, and the latency of calls to another server through another session, during the flood
 * vs calm. A script, not a test: it reports, it asserts nothing.
 *
 * Calm latency is sampled the same way and as long as the flood (the flood run makes at least as
 * many calls), so both p99s rest on the same count.
 *
 *   npm run build && node test/bench/flood.mjs [--seconds 60] [--rate 40000] [--size 0] [--cpu-prof] [--mem [--gc]]
 *
 * `--cpu-prof` writes the daemon's CPU profile (main thread and actor threads) to a directory it
 * names; `--mem` reports the daemon's main-thread memory (heap, external, array buffers) per phase,
 * and with `--gc` also what it holds after a full collection every 5 s (garbage vs retained).
 *
 * Where the flood's slow calls come from: each call slower than twice the calm p99 is listed with
 * how much of it this process's own event loop was stalled (past 100 ms) and, with `--mem`, the
 * daemon's; beside it the share of a core the daemon, the two servers and this process used, calm
 * vs flood, what one reading session got in each of the flood's first ten seconds, and (`--mem`)
 * the daemon's worst loop delay in each second around the flood's start.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  const eq = process.argv.find((a) => a.startsWith(`--${name}=`));
  return Number(eq?.split('=')[1] ?? (i === -1 ? fallback : process.argv[i + 1]));
};
const SECONDS = arg('seconds', 60);
const RATE = arg('rate', 40_000);
const SIZE = arg('size', 0);
const CPU_PROF = process.argv.includes('--cpu-prof');
const MEM = process.argv.includes('--mem');
const BIN = fileURLToPath(new URL('../../apps/daemon/bin/mcpool.js', import.meta.url));
const fixture = (name) => fileURLToPath(new URL(`../fixtures/servers/${name}`, import.meta.url));
const log = (...a) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);

const dir = mkdtempSync(join(tmpdir(), 'mcpool-flood-bench-'));
writeFileSync(
  join(dir, 'config.json'),
  JSON.stringify({
    mcpServers: {
      flood: { command: process.execPath, args: [fixture('notifyFlood.mjs'), '--marker=flood-bench'], sharing: 'shared' },
      echo: { command: process.execPath, args: [fixture('echo.mjs'), '--marker=flood-bench'], sharing: 'shared' },
    },
    // Eager: the stalled session must hold the flood server from its initialize (with the default,
    // lazy start, a session that never calls it is not sent its notifications).
    daemon: { port: 0, watchConfig: false, start: 'eager' },
  }),
);
const env = { PATH: process.env.PATH, HOME: dir, XDG_STATE_HOME: join(dir, 'xdg'), MCPOOL_STATE_DIR: join(dir, 'state') };
const profDir = CPU_PROF ? mkdtempSync(join(tmpdir(), 'mcpool-flood-prof-')) : undefined;
const nodeArgs = [...(MEM && process.argv.includes('--gc') ? ['--expose-gc'] : []), ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), ...(MEM ? ['--require', fileURLToPath(new URL('./lib/memSampler.cjs', import.meta.url))] : [])];
const daemon = spawn(process.execPath, [...nodeArgs, BIN, 'serve', '--config', join(dir, 'config.json'), '--log-level', 'info'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
let out = '';
daemon.stdout.on('data', (chunk) => (out += chunk));
const mem = [];
/** Stalls past 100 ms of the daemon's main loop (`--mem`) and of this process's, as { end: wall ms, ms }. */
const daemonStalls = [];
const benchStalls = [];
let benchLast = Date.now();
const benchWatch = setInterval(() => {
  const now = Date.now();
  if (now - benchLast > 110) benchStalls.push({ end: now, ms: now - benchLast - 10 });
  benchLast = now;
}, 10);
benchWatch.unref();
/** How much of [from, to] (wall ms) the stalls cover. */
const overlap = (stalls, from, to) => stalls.reduce((sum, s) => sum + Math.max(0, Math.min(to, s.end) - Math.max(from, s.end - s.ms)), 0);
let errTail = '';
daemon.stderr.on('data', (chunk) => {
  const lines = (errTail + chunk).split('\n');
  errTail = lines.pop();
  for (const line of lines) {
    if (line.startsWith('MEMSAMPLE ')) mem.push({ ...JSON.parse(line.slice(10)), phase });
    if (line.startsWith('LOOPSTALL ')) daemonStalls.push(JSON.parse(line.slice(10)));
  }
});
let phase = 'start';
/** CPU seconds (user + system) a process has used: /proc/PID/stat fields 14 and 15, in clock ticks (100 a second). */
const cpuS = (pid) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
};
/** The daemon's child running the fixture `name` (spawned by an actor thread: its task is the parent). */
const childPid = (name) => {
  for (const task of readdirSync(`/proc/${daemon.pid}/task`)) {
    for (const pid of readFileSync(`/proc/${daemon.pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(name)) return Number(pid);
    }
  }
  return undefined;
};
const rssMB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))[1]) / 1024;
/** Per phase: the last sample and the peak of each field. */
const summarizeMem = (samples) => {
  const out = {};
  for (const s of samples) {
    const p = (out[s.phase] ??= { last: {}, peak: {} });
    p.loopDelayMs ??= { worstP99: 0, max: 0 };
    p.loopDelayMs.worstP99 = Math.max(p.loopDelayMs.worstP99, s.loopP99);
    p.loopDelayMs.max = Math.max(p.loopDelayMs.max, s.loopMax);
    if (s.afterGc) p.lastAfterFullGc = { rss: s.rss, heapUsed: s.heapUsed, heapTotal: s.heapTotal };
    for (const k of ['rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers']) {
      p.last[k] = s[k];
      p.peak[k] = Math.max(p.peak[k] ?? 0, s[k]);
    }
  }
  return out;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

let stalled;
try {
  let url;
  for (let i = 0; i < 600 && url === undefined; i++) {
    url = /listening on (http:\/\/[^"\s]+)/.exec(out)?.[1];
    if (url === undefined) await delay(50);
  }
  const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
  const auth = { authorization: `Bearer ${token}` };
  for (let i = 0; i < 600; i++) {
    if ((await fetch(`${url}/readyz`, { headers: auth })).status === 200) break;
    await delay(100);
  }
  log('daemon ready at', url);
  const connect = async () => {
    const client = new Client({ name: 'flood-bench', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: auth } });
    await client.connect(transport);
    return { client, transport };
  };
  // The session that stops reading: raw initialize, then a GET stream that is never read.
  const init = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'stalled', version: '1' } } }),
  });
  const sessionId = init.headers.get('mcp-session-id');
  await init.text();
  const headers = { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
  await fetch(`${url}/mcp`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) => r.text());
  let streamClosedAt;
  const t0 = performance.now();
  stalled = httpRequest(`${url}/mcp`, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } }, (res) => {
    res.pause();
    res.once('close', () => (streamClosedAt ??= performance.now()));
    res.once('error', () => (streamClosedAt ??= performance.now()));
  });
  stalled.once('error', () => (streamClosedAt ??= performance.now()));
  // A paused response emits no 'close' while its data is unread: the socket's close is the cut.
  stalled.once('socket', (socket) => socket.once('close', () => (streamClosedAt ??= performance.now())));
  stalled.end();

  const { client } = await connect();
  const failures = [];
  /** Every call's wall-clock span, to line the slow ones up against the stalls. */
  const spans = [];
  const ping = async () => {
    const started = performance.now();
    const wallStart = Date.now();
    try {
      await client.callTool({ name: 'echo__echo', arguments: { text: 'x' } }, undefined, { timeout: 30_000 });
    } catch (error) {
      failures.push(`${((performance.now() - started) / 1000).toFixed(1)} s: ${error.message}`);
    }
    spans.push({ phase, from: wallStart, to: Date.now() });
    return performance.now() - started;
  };
  const cpuNow = () => ({ daemon: cpuS(daemon.pid), floodServer: cpuS(childPid('notifyFlood.mjs')), echoServer: cpuS(childPid('echo.mjs')), bench: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6 });
  const cpuDelta = (a, b, s) => Object.fromEntries(Object.keys(a).map((k) => [k, `${Math.round((100 * (b[k] - a[k])) / s)}%`]));
  const cpuCalm0 = cpuNow();
  const calm = [];
  phase = 'calm';
  const calmStarted = performance.now();
  while (performance.now() - calmStarted < SECONDS * 1000) {
    calm.push(await ping());
    await delay(50);
  }
  log(`calm: echo p50 ${pct(calm, 50).toFixed(1)} ms, p99 ${pct(calm, 99).toFixed(1)} ms`);

  const cpuCalm = cpuDelta(cpuCalm0, cpuNow(), (performance.now() - calmStarted) / 1000);
  // The flooding server's own session: a second client whose GET stream is read.
  const { client: starter } = await connect();
  // What one reading session gets from the flood, second by second (the daemon's main thread writes each).
  const received = [];
  starter.fallbackNotificationHandler = async () => void received.push(performance.now());
  await starter.callTool({ name: 'flood__start', arguments: { perSecond: RATE, size: SIZE } });
  // This process hosts the clients too: its own loop's delay is part of every latency measured.
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const before = rssMB();
  let peak = before;
  const flood = [];
  phase = 'flood';
  const cpuFlood0 = cpuNow();
  const started = performance.now();
  const floodStartedAt = Date.now();
  let nextReport = 5;
  while (performance.now() - started < SECONDS * 1000 || (flood.length < calm.length && performance.now() - started < 2 * SECONDS * 1000)) {
    flood.push(await ping());
    peak = Math.max(peak, rssMB());
    const elapsed = (performance.now() - started) / 1000;
    if (elapsed >= nextReport) {
      log(`t=${elapsed.toFixed(0)}s rss ${rssMB().toFixed(0)} MB (start ${before.toFixed(0)}), echo calls ${flood.length}, stalled stream ${streamClosedAt === undefined ? 'open' : 'closed'}`);
      nextReport += 5;
    }
    await delay(50);
  }
  loop.disable();
  const cpuFlood = cpuDelta(cpuFlood0, cpuNow(), (performance.now() - started) / 1000);
  phase = 'after';
  const sent = (await starter.callTool({ name: 'flood__stop', arguments: {} })).content[0].text;
  const after = rssMB();
  const cut = out.split('\n').find((l) => l.includes('closing a /mcp session whose client did not read'));
  const dropped = out.split('\n').filter((l) => l.includes('dropped and coalesced')).length;
  const result = {
    seconds: SECONDS,
    targetRate: RATE,
    sentBySever: Number(sent),
    achievedRate: Math.round(Number(sent) / SECONDS),
    rssStartMB: Math.round(before),
    rssPeakMB: Math.round(peak),
    rssEndMB: Math.round(after),
    rssGrowthMB: Math.round(peak - before),
    calmEcho: { n: calm.length, p50: +pct(calm, 50).toFixed(1), p99: +pct(calm, 99).toFixed(1) },
    floodEcho: { n: flood.length, p50: +pct(flood, 50).toFixed(1), p99: +pct(flood, 99).toFixed(1), max: +Math.max(...flood).toFixed(1) },
    benchLoopDelayMs: { p50: +(loop.percentile(50) / 1e6).toFixed(1), p99: +(loop.percentile(99) / 1e6).toFixed(1), max: +(loop.max / 1e6).toFixed(1) },
    stalledSessionCutAfterS: streamClosedAt === undefined ? null : +((streamClosedAt - t0) / 1000).toFixed(1),
    cutReasonLogged: cut === undefined ? null : JSON.parse(cut).msg,
    dropWarnings: dropped,
    echoFailures: failures,
    ...(MEM ? { daemonMainThreadMB: summarizeMem(mem) } : {}),
    // Share of one core each used, calm vs flood: what the flood costs the machine, and where.
    cpuOfOneCore: { calm: cpuCalm, flood: cpuFlood },
    // The flood's slowest calls (past 2x calm p99): when, and how much of each this process's or the daemon's stalled loop covers.
    slowFloodCalls: spans
      .filter((c) => c.phase === 'flood' && c.to - c.from > 2 * pct(calm, 99))
      .map((c) => `t=${((c.from - floodStartedAt) / 1000).toFixed(1)}s ${c.to - c.from} ms: bench stalled ${overlap(benchStalls, c.from, c.to)} ms${MEM ? `, daemon ${overlap(daemonStalls, c.from, c.to)} ms` : ''}`),
    readerGotFirstSeconds: Array.from({ length: 10 }, (_, i) => received.filter((t) => t >= started + i * 1000 && t < started + (i + 1) * 1000).length).join(' '),
    // The daemon's loop delay second by second around the flood's start: where a stall falls.
    ...(MEM ? { daemonLoopFirstSeconds: mem.filter((s) => s.t >= floodStartedAt - 2000 && s.t < floodStartedAt + 10_000).map((s) => `${((s.t - floodStartedAt) / 1000).toFixed(1)}s: max ${s.loopMax} ms`) } : {}),
    ...(CPU_PROF ? { cpuProfilesIn: profDir } : {}),
    sessionsCut: out.split('\n').filter((l) => l.includes('closing a /mcp session')).map((l) => JSON.parse(l).sessionId === sessionId ? 'the stalled one' : 'another (reading) one'),
  };
  console.log(JSON.stringify(result, null, 2));
  await client.close();
  await starter.close();
} finally {
  stalled?.destroy();
  daemon.kill('SIGTERM');
  await new Promise((resolve) => daemon.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
}
