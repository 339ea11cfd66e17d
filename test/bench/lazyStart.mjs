#!/usr/bin/env node
// What lazy start from a catalog saves and costs: 30 configured servers (the npm servers in the
// tree — server-everything, server-memory, server-filesystem — and the fixture servers, five of
// each kind under other names) behind a real daemon, run three times on one state dir:
//   eager  `daemon.start: "eager"`: every server starts with the daemon (and writes its catalog);
//   lazy   `daemon.start: "lazy"`, restarted on the same state dir: every server listed from the
//          catalog the eager run left, none started until a request needs it;
//   mixed  lazy, but the 5th echo, lookups and envtools servers `"start": "eager"`.
// In the first two: 5 `/mcp` sessions (SDK v1 clients, 2025-11-25) list tools, prompts, resources and
// templates and call 3 servers; the daemon's descendants are then counted and their RSS summed from
// one `ps` snapshot (target: 3 processes against 30, tree RSS ≤ 0.2× eager). Before that, session
// readiness with nothing running (lazy) against every server running (eager): initialize +
// initialized + tools/list (SDK v1) and server/discover + tools/list (SDK v2 pinned to 2026-07-28),
// one by one, the two eras alternating (target p50 ≤ 10 ms). Then, in the lazy run, the first call
// of a cold server against a cold acquire of the same server by the library in this process (a
// pool whose spare thread is ready — the daemon's pool has one too: spawn + discovery + the call),
// round by round, the order alternating (target ≤ 1.1×). In the mixed run, later calls on lazily
// started servers against the same calls on servers of the same kind started with the daemon.
// `node test/bench/lazyStart.mjs [--quick] [--ready=30] [--rounds=12] [--prof-dir=DIR]`
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from '@modelcontextprotocol/client';
import { runDaemonBench } from './lib/daemon.mjs';
import { closeSession } from './lib/gateways.mjs';
import { createPool, describeEvents } from './lib/pools.mjs';
import { psSnapshot, treeRss } from './lib/procs.mjs';
import { sleep, waitFor } from './lib/load.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const quick = 'quick' in args;
const readyRounds = Math.min(200, Math.max(3, Number(args.ready ?? (quick ? 12 : 30))));
// `--prof-dir=DIR`: the lazy daemon runs under V8's CPU profiler (`--cpu-prof`), its profiles written there on exit.
const profDir = args['prof-dir'];
// At most 4 servers of each fixture kind are cold in the lazy run (the first of each is called by
// the sessions): 12 rounds at most.
const coldRounds = Math.min(12, Math.max(2, Number(args.rounds ?? (quick ? 6 : 12))));
const LATER_CALLS = 20;
const WARMUP_CALLS = 10;
const SESSIONS = 5;
const TIMEOUT_MS = 60_000;
// The library's spare thread boots in ~150–300 ms here (the SDK import); both sides rest this long
// between cold rounds so each finds its spare ready.
const SPARE_BOOT_WAIT_MS = 1000;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = join(ROOT, 'test/fixtures/servers');
const npmServer = (name, ...rest) => ({ command: process.execPath, args: [join(ROOT, `node_modules/@modelcontextprotocol/${name}/dist/index.js`), ...rest] });
const fixture = (file) => ({ command: process.execPath, args: [join(FIXTURES, file)] });

const files = mkdtempSync(join(tmpdir(), 'mcpool-lazy-bench-files-'));
const stateDir = mkdtempSync(join(tmpdir(), 'mcpool-lazy-bench-state-'));
// [kind, config, a tool and its arguments]
const KINDS = [
  ['everything', () => npmServer('server-everything'), ['echo', { message: 'x' }]],
  ['memory', () => npmServer('server-memory'), ['read_graph', {}]],
  ['filesystem', () => npmServer('server-filesystem', files), ['list_allowed_directories', {}]],
  ['echo', () => fixture('echo.mjs'), ['echo', { text: 'x' }]],
  ['lookups', () => fixture('readOnlyTools.mjs'), ['lookup', { key: 'x' }]],
  ['envtools', () => fixture('envTools.mjs'), ['whoami', {}]],
];
const SERVERS = 30;
const mcpServers = {};
const toolOf = {};
for (let i = 0; i < SERVERS; i++) {
  const [kind, make, tool] = KINDS[i % KINDS.length];
  const name = `${kind}${Math.floor(i / KINDS.length) + 1}`;
  mcpServers[name] = { ...make(), sharing: 'shared' };
  toolOf[name] = tool;
}
// What the 5 sessions call: an npm server, another npm server, a fixture.
const CALLED = ['everything1', 'memory1', 'echo1'];
// Cold in the lazy run until their round: the fixtures' 2nd–5th servers, kinds alternating.
const COLD = [2, 3, 4, 5].flatMap((n) => ['echo', 'lookups', 'envtools'].map((kind) => `${kind}${n}`)).slice(0, coldRounds);

const quantile = (list, q) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
};
const ms = (value) => (Number.isFinite(value) ? Math.round(value * 100) / 100 : null);
const times = (list) => ({ p50Ms: ms(quantile(list, 0.5)), p90Ms: ms(quantile(list, 0.9)), n: list.length });

/** The daemon's descendants (its server processes; threads are inside the daemon) and their RSS with the daemon's. */
function serverTree(daemonPid) {
  const snapshot = psSnapshot();
  const tree = treeRss(daemonPid, snapshot);
  const daemonRow = snapshot.find((p) => p.pid === daemonPid);
  return { serverProcesses: tree.processes - 1, treeRssMb: Math.round(tree.bytes / 1048576), daemonRssMb: daemonRow ? Math.round(daemonRow.rss / 1024) : null };
}

async function serverStates({ base, auth }) {
  const status = await fetch(`${base}/workspace/mcp`, { headers: auth }).then((r) => r.json());
  const counts = {};
  for (const server of status.servers ?? []) counts[server.state ?? server.status] = (counts[server.state ?? server.status] ?? 0) + 1;
  return counts;
}

async function legacyClient({ base, auth }, options = { requestInit: { headers: auth } }) {
  const client = new Client({ name: 'mcpool-lazy-bench', version: '0.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), options);
  await client.connect(transport, { timeout: TIMEOUT_MS });
  return { client, transport };
}

/** The CPU time the process `pid` used so far (every thread), ms at 10 ms resolution; undefined off Linux. */
function cpuMsOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * A `fetch` that answers from `recorded` (era → method → { status, headers, text }, as a session
 * of the daemon received them) without any HTTP: the client's own work for a session on the same
 * answers, the floor of session ready with this client. A GET stream is refused (405, which the
 * SDK takes as "no stream"); a DELETE is answered 200.
 */
function replayFetch(recorded) {
  return async (_input, init) => {
    const method = init?.method ?? 'GET';
    if (method === 'GET') return new Response(null, { status: 405 });
    if (method !== 'POST') return new Response(null, { status: 200 });
    const body = JSON.parse(init.body);
    const answer = recorded[body.method ?? 'response'];
    if (answer === undefined) throw new Error(`nothing recorded for ${body.method}`);
    // A fresh SDK client numbers its requests from 0 as the recorded one did: the same ids.
    if (answer.id !== undefined && answer.id !== body.id) throw new Error(`recorded id ${answer.id}, asked ${body.id}`);
    return new Response(answer.text === '' ? null : answer.text, { status: answer.status, headers: answer.headers });
  };
}

/**
 * One session opened, ready (its tool list read) and closed: the time to ready, and each POST's
 * round trip by its JSON-RPC method (request sent → whole body read), which is the daemon's share
 * plus the loopback; the rest is the client's (the SDK parsing and validating 255 tools).
 * `record`: each POST's answer is kept there by method (for {@link replayFetch}); `replay`: the
 * session runs on those answers, no daemon.
 */
async function readyOnce(daemon, era, { record, replay } = {}) {
  const steps = {};
  const fetchTimed = async (input, init) => {
    if ((init?.method ?? 'GET') !== 'POST') return fetch(input, init);
    const t = performance.now();
    const response = await fetch(input, init);
    const text = await response.text();
    const body = JSON.parse(init.body);
    const method = body.method ?? 'response';
    steps[method] = (steps[method] ?? 0) + performance.now() - t;
    if (record !== undefined) record[method] = { status: response.status, headers: [...response.headers], text, id: body.id };
    return new Response(text === '' ? null : text, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  const options = { requestInit: { headers: daemon.auth }, fetch: replay === undefined ? fetchTimed : replayFetch(replay) };
  const cpuBefore = replay === undefined ? cpuMsOf(daemon.pid) : undefined;
  const started = performance.now();
  let ready;
  if (era === 'modern') {
    const client = new ClientV2({ name: 'mcpool-lazy-bench', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransportV2(new URL(`${daemon.base}/mcp`), options), { timeout: TIMEOUT_MS });
    const { tools } = await client.listTools(undefined, { timeout: TIMEOUT_MS });
    ready = { ms: performance.now() - started, steps: { ...steps }, tools: tools.length };
    await client.close().catch(() => undefined);
  } else {
    const session = await legacyClient(daemon, options);
    const { tools } = await session.client.listTools(undefined, { timeout: TIMEOUT_MS });
    ready = { ms: performance.now() - started, steps: { ...steps }, tools: tools.length };
    await closeSession(session);
  }
  // The daemon's CPU for the whole session, its close included (10 ms ticks: summed over sessions).
  const cpuAfter = cpuBefore === undefined ? undefined : cpuMsOf(daemon.pid);
  return { ...ready, daemonCpuMs: cpuAfter === undefined ? undefined : cpuAfter - cpuBefore };
}

/**
 * Session readiness of both eras, alternating (ABBA), after 5 of each to compile both paths; in
 * the same rounds, each era's client alone on the answers its last warm-up session received (the
 * floor: what this client costs with a daemon that takes no time and no HTTP).
 */
async function sessionReady(daemon) {
  const recorded = { legacy: {}, modern: {} };
  for (let i = 0; i < 5; i++) for (const era of ['legacy', 'modern']) await readyOnce(daemon, era, { record: recorded[era] });
  const samples = {};
  const into = (key) => (samples[key] ??= { total: [], http: [], steps: {}, cpuMs: 0, cpuSessions: 0 });
  let tools = 0;
  const kinds = ['legacy', 'modern', 'legacyClientAlone', 'modernClientAlone'];
  for (let i = 0; i < readyRounds; i++) {
    for (const kind of i % 2 === 0 ? kinds : [...kinds].reverse()) {
      const era = kind.startsWith('legacy') ? 'legacy' : 'modern';
      const alone = kind.endsWith('ClientAlone');
      const one = await readyOnce(daemon, era, alone ? { replay: recorded[era] } : {});
      const sample = into(kind);
      sample.total.push(one.ms);
      if (!alone) {
        sample.http.push(Object.values(one.steps).reduce((a, b) => a + b, 0));
        for (const [method, value] of Object.entries(one.steps)) (sample.steps[method] ??= []).push(value);
        if (one.daemonCpuMs !== undefined) {
          sample.cpuMs += one.daemonCpuMs;
          sample.cpuSessions += 1;
        }
        tools = one.tools;
      }
    }
  }
  const summary = ({ total, http, steps, cpuMs, cpuSessions }) => ({
    ...times(total),
    samplesMs: total.map(ms),
    ...(http.length === 0
      ? {}
      : {
          httpRoundTripsP50Ms: ms(quantile(http, 0.5)),
          stepP50Ms: Object.fromEntries(Object.entries(steps).map(([method, list]) => [method, ms(quantile(list, 0.5))])),
          daemonCpuMsPerSession: cpuSessions === 0 ? null : ms(cpuMs / cpuSessions),
        }),
  });
  return Object.fromEntries([...Object.entries(samples).map(([kind, sample]) => [kind, summary(sample)]), ['toolsListed', tools]]);
}

/** 5 legacy sessions list everything and call the 3 servers; they stay open (the caller closes them). */
async function workload(daemon) {
  const sessions = [];
  const listed = {};
  for (let i = 0; i < SESSIONS; i++) {
    const session = await legacyClient(daemon);
    sessions.push(session);
    const { client } = session;
    listed.tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools.length;
    listed.prompts = (await client.listPrompts(undefined, { timeout: TIMEOUT_MS })).prompts.length;
    listed.resources = (await client.listResources(undefined, { timeout: TIMEOUT_MS })).resources.length;
    listed.templates = (await client.listResourceTemplates(undefined, { timeout: TIMEOUT_MS })).resourceTemplates.length;
    for (const name of CALLED) await call(client, name);
  }
  return { sessions, listed };
}

async function call(client, name) {
  const [tool, toolArgs] = toolOf[name];
  const result = await client.callTool({ name: `${name}__${tool}`, arguments: toolArgs }, undefined, { timeout: TIMEOUT_MS });
  if (result.isError) throw new Error(`${name}__${tool}: ${JSON.stringify(result.content).slice(0, 300)}`);
  return result;
}

/**
 * Later calls, in one daemon: each pair is a server started by its first call (lazy) and one of the
 * same kind started with the daemon (eager); both called WARMUP_CALLS times first (a fresh server's
 * code is not compiled yet), then LATER_CALLS rounds, the pair's order alternating.
 */
async function laterCalls(client, pairs) {
  const samples = { lazy: [], eager: [] };
  for (const [lazyName, eagerName] of pairs) for (let i = 0; i < WARMUP_CALLS; i++) for (const name of [lazyName, eagerName]) await call(client, name);
  for (let i = 0; i < LATER_CALLS; i++) {
    for (const [lazyName, eagerName] of pairs) {
      const order = i % 2 === 0 ? [['lazy', lazyName], ['eager', eagerName]] : [['eager', eagerName], ['lazy', lazyName]];
      for (const [side, name] of order) {
        const t = performance.now();
        await call(client, name);
        samples[side].push(performance.now() - t);
      }
    }
  }
  return samples;
}

const eagerConfig = (port) => ({ mcpServers, daemon: { port, start: 'eager' } });
const lazyConfig = (port) => ({ mcpServers, daemon: { port, start: 'lazy' } });
const LATER_PAIRS = ['echo', 'lookups', 'envtools'].map((kind) => [`${kind}4`, `${kind}5`]);
const mixedConfig = (port) => ({
  mcpServers: Object.fromEntries(Object.entries(mcpServers).map(([name, server]) => [name, LATER_PAIRS.some(([, eagerName]) => eagerName === name) ? { ...server, start: 'eager' } : server])),
  daemon: { port, start: 'lazy' },
});
const started = performance.now();
let eager;
let lazy;
let mixed;
const libraryEvents = {};
try {
  eager = await runDaemonBench({ label: 'lazy-eager', stateDir, print: false, config: eagerConfig }, async (daemon) => {
    // Every server up (bounded: 120 tries, 1 s apart): their catalogs are written.
    const up = await waitFor(async () => (await serverStates(daemon)).running === SERVERS, 120_000, 1000);
    if (!up) throw new Error(`not every server started: ${JSON.stringify(await serverStates(daemon))}`);
    const ready = await sessionReady(daemon);
    const { sessions, listed } = await workload(daemon);
    try {
      const tree = serverTree(daemon.pid);
      return { states: await serverStates(daemon), ready, listed, ...tree };
    } finally {
      for (const session of sessions) await closeSession(session);
    }
  });
  if (!eager) throw new Error('the eager run failed');

  lazy = await runDaemonBench({ label: 'lazy-lazy', stateDir, print: false, config: lazyConfig, ...(profDir === undefined ? {} : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] }) }, async (daemon) => {
    const atStart = { states: await serverStates(daemon), ...serverTree(daemon.pid) };
    const ready = await sessionReady(daemon);
    const afterReady = serverTree(daemon.pid).serverProcesses;
    const { sessions, listed } = await workload(daemon);
    const pool = createPool(libraryEvents, { drainDelayMs: 100 });
    try {
      const tree = serverTree(daemon.pid);
      const states = await serverStates(daemon);
      // First call of a cold server (daemon, over the open session) against the library's cold
      // acquire of the same server plus that call, order alternating.
      const rounds = [];
      await sleep(SPARE_BOOT_WAIT_MS);
      for (const [i, name] of COLD.entries()) {
        const daemonFirst = async () => {
          const t = performance.now();
          await call(sessions[0].client, name);
          return performance.now() - t;
        };
        const libraryCold = async () => {
          const config = { ...mcpServers[name], args: [...mcpServers[name].args, `--mcpool-bench-round=${i}`] };
          const [tool, toolArgs] = toolOf[name];
          const t = performance.now();
          const view = await pool.acquire(`${name}-lib`, config, `round-${i}`);
          const result = await view.callTool(tool, toolArgs);
          const elapsed = performance.now() - t;
          if (result.isError) throw new Error(`library ${name}: ${JSON.stringify(result.content).slice(0, 300)}`);
          await pool.releaseSession(`round-${i}`);
          return elapsed;
        };
        const round = { server: name };
        if (i % 2 === 0) {
          round.daemonMs = await daemonFirst();
          round.libraryMs = await libraryCold();
        } else {
          round.libraryMs = await libraryCold();
          round.daemonMs = await daemonFirst();
        }
        round.ratio = round.daemonMs / round.libraryMs;
        rounds.push(round);
        await sleep(SPARE_BOOT_WAIT_MS);
      }
      return { atStart, ready, afterReadyServerProcesses: afterReady, listed, states, ...tree, rounds };
    } finally {
      await pool.drainAll({ timeoutMs: 5000 });
      for (const session of sessions) await closeSession(session);
    }
  });
  if (!lazy?.rounds) throw new Error('the lazy run failed');

  // Mixed, on the same state dir: lazy by default, the 5th server of each fixture kind eager.
  mixed = await runDaemonBench({ label: 'lazy-mixed', stateDir, print: false, config: mixedConfig }, async (daemon) => {
    const up = await waitFor(async () => (await serverStates(daemon)).running === LATER_PAIRS.length, 60_000, 500);
    if (!up) throw new Error(`the eager servers did not start: ${JSON.stringify(await serverStates(daemon))}`);
    const atStart = await serverStates(daemon);
    const session = await legacyClient(daemon);
    try {
      await session.client.listTools(undefined, { timeout: TIMEOUT_MS });
      return { atStart, ...(await laterCalls(session.client, LATER_PAIRS)) };
    } finally {
      await closeSession(session);
    }
  });
  if (!mixed?.lazy) throw new Error('the mixed run failed');

  const ratios = lazy.rounds.map((r) => r.ratio);
  const firstCall = quantile(lazy.rounds.map((r) => r.daemonMs), 0.5);
  const coldAcquire = quantile(lazy.rounds.map((r) => r.libraryMs), 0.5);
  const rssRatio = lazy.treeRssMb / eager.treeRssMb;
  const laterLazy = quantile(mixed.lazy, 0.5);
  const laterEager = quantile(mixed.eager, 0.5);
  const laterRatios = mixed.lazy.map((value, i) => value / mixed.eager[i]);
  // Session ready over the floor: per round, the daemon's session less the client alone on its answers.
  const overFloor = (era) => {
    const total = lazy.ready[era].samplesMs;
    const alone = lazy.ready[`${era}ClientAlone`].samplesMs;
    return ms(quantile(total.map((value, i) => value - alone[i]), 0.5));
  };
  const readyMet = (era) => lazy.ready[era].p50Ms <= 10 && lazy.afterReadyServerProcesses === 0;
  const verdict = (ok) => (ok ? 'met' : 'MISSED');
  const readyLine = (era, client) => {
    const r = lazy.ready[era];
    return [
      `target  session ready, ${era} (${client}), catalog, nothing running: p50 ≤ 10 ms   ${r.p50Ms} ms (p90 ${r.p90Ms}; POST round trips ${r.httpRoundTripsP50Ms} ms; daemon CPU ${r.daemonCpuMsPerSession} ms/session; ${lazy.afterReadyServerProcesses} server processes after)   ${verdict(readyMet(era))}`,
      `  floor  the same client alone on the answers the daemon gave (no HTTP, no daemon)   ${lazy.ready[`${era}ClientAlone`].p50Ms} ms; the daemon's session over it: ${overFloor(era)} ms (median per round); eager, all 30 running: ${eager.ready[era].p50Ms} ms`,
    ];
  };
  console.log(
    [
      `target  processes: ${CALLED.length} server processes (eager: ${SERVERS}), tree RSS ≤ 0.2× eager   ${lazy.serverProcesses} (eager ${eager.serverProcesses}), ${ms(rssRatio)}× (${lazy.treeRssMb} against ${eager.treeRssMb} MB)   ${verdict(lazy.serverProcesses === CALLED.length && rssRatio <= 0.2)}`,
      ...readyLine('legacy', 'SDK v1: initialize + initialized + tools/list'),
      ...readyLine('modern', 'SDK v2 at 2026-07-28: server/discover + tools/list'),
      `target  first call of a cold server ≤ 1.1× a cold acquire of it (library, spare thread ready, + the call)   ${ms(quantile(ratios, 0.5))}× [${ms(Math.min(...ratios))}–${ms(Math.max(...ratios))}] over ${ratios.length} rounds (p50 ${ms(firstCall)} against ${ms(coldAcquire)} ms)   ${verdict(quantile(ratios, 0.5) <= 1.1)}`,
      `target  later calls unchanged: lazily started ÷ started with the daemon   ${ms(quantile(laterRatios, 0.5))}× per pair (p50 ${ms(laterLazy)} against ${ms(laterEager)} ms)`,
    ].join('\n'),
  );
  console.log(JSON.stringify({
    servers: SERVERS,
    sessions: SESSIONS,
    called: CALLED,
    processes: {
      target: '3 server processes (eager: 30), tree RSS ≤ 0.2× eager',
      lazy: { serverProcesses: lazy.serverProcesses, treeRssMb: lazy.treeRssMb, daemonRssMb: lazy.daemonRssMb, states: lazy.states },
      eager: { serverProcesses: eager.serverProcesses, treeRssMb: eager.treeRssMb, daemonRssMb: eager.daemonRssMb, states: eager.states },
      treeRssRatio: ms(rssRatio),
      lazyAtStart: lazy.atStart,
      listed: { lazy: lazy.listed, eager: eager.listed },
      met: lazy.serverProcesses === CALLED.length && rssRatio <= 0.2,
    },
    sessionReady: {
      target: 'p50 ≤ 10 ms with a catalog and nothing running',
      lazyNothingRunning: lazy.ready,
      serverProcessesAfter: lazy.afterReadyServerProcesses,
      eagerAllRunning: eager.ready,
      legacyVsEager: ms(lazy.ready.legacy.p50Ms / eager.ready.legacy.p50Ms),
      modernVsEager: ms(lazy.ready.modern.p50Ms / eager.ready.modern.p50Ms),
      overFloorMs: { legacy: overFloor('legacy'), modern: overFloor('modern') },
      met: readyMet('legacy') && readyMet('modern'),
    },
    firstCall: {
      target: 'first call of a cold server ≤ 1.1× a cold acquire of it (library, spare thread ready, + the call)',
      daemonFirstCallP50Ms: ms(firstCall),
      libraryColdAcquireP50Ms: ms(coldAcquire),
      ratioMedianPerRound: ms(quantile(ratios, 0.5)),
      ratioRange: [ms(Math.min(...ratios)), ms(Math.max(...ratios))],
      met: quantile(ratios, 0.5) <= 1.1,
      rounds: lazy.rounds.map((r) => ({ server: r.server, daemonMs: ms(r.daemonMs), libraryMs: ms(r.libraryMs), ratio: ms(r.ratio) })),
      libraryPoolEvents: describeEvents(libraryEvents) || 'none',
    },
    laterCalls: {
      target: 'unchanged: later calls on lazily started servers against eager-started ones, one daemon',
      lazyStartedP50Ms: ms(laterLazy),
      eagerStartedP50Ms: ms(laterEager),
      ratioMedianPerPair: ms(quantile(laterRatios, 0.5)),
      ratioOfP50s: ms(laterLazy / laterEager),
      pairs: LATER_PAIRS,
      statesAtStart: mixed.atStart,
      callsEach: LATER_CALLS,
    },
    wallSeconds: Math.round((performance.now() - started) / 1000),
  }, null, 2));
} finally {
  rmSync(files, { recursive: true, force: true });
  rmSync(stateDir, { recursive: true, force: true });
}
