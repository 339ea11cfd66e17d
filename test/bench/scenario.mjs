// A measurement that needs a process of its own (a clean supervisor RSS and heap): the runner
// starts `node scenario.mjs '<json>'` and reads the JSON result from the last stdout line.
// Every server it starts carries the run marker, so the runner's sweep finds them if this
// process dies. Whatever happens, the pool is drained and direct clients closed (finally).
//
//   {kind:'sessions', mode:'pool'|'direct', sessions, servers, mark}
//   {kind:'scale', sessions, servers, mark}          (run with --expose-gc)
//   {kind:'crash', mark, seconds, rounds, warmupMs}   (part 6: sections/crash.mjs)
import { fixtureConfig, pidsWithMarker, treeRss } from './lib/procs.mjs';
import { summarize } from './lib/stats.mjs';

const spec = JSON.parse(process.argv[2]);
/** Lets RSS settle after a burst (allocator, lazy thread stacks) before it is read. */
const SETTLE_MS = 500;
// Not from lib/load.mjs: that module loads the SDK client, which the pool's main thread never does.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const serverConfigs = (count) => Array.from({ length: count }, (_, k) => ({ name: `srv${k}`, config: fixtureConfig(`${spec.mark}-srv${k}`) }));

/** Pool events by type: a `failed` during a measurement makes its numbers suspect. */
const events = {};
const onEvent = (event) => {
  events[event.type] = (events[event.type] ?? 0) + 1;
};

function memory() {
  globalThis.gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers };
}

async function sessionsPool() {
  const { McpTransportPool } = await import('@mcpool/core');
  const t0 = performance.now();
  const pool = new McpTransportPool({ drainDelayMs: 30_000, budget: { clientBudget: 50, mode: 'warn' }, onEvent });
  try {
    const servers = serverConfigs(spec.servers);
    const views = await Promise.all(
      Array.from({ length: spec.sessions }, (_, s) => Promise.all(servers.map(({ name, config }) => pool.acquire(name, config, `session-${s}`)))),
    );
    const readyMs = performance.now() - t0;
    // Every view works: one call each (not timed).
    await Promise.all(views.flat().map((view) => view.callTool('echo', { text: 'ready?' })));
    await sleep(SETTLE_MS);
    const snapshot = pool.getSnapshot();
    return {
      readyMs,
      processes: servers.map(({ config }) => pidsWithMarker(config.args[1]).length),
      tree: treeRss(process.pid),
      memory: memory(),
      views: views.flat().length,
      liveActors: snapshot.liveActors,
    };
  } finally {
    await pool.drainAll({ timeoutMs: 10_000 });
  }
}

async function sessionsDirect() {
  const { closeDirect, connectDirect } = await import('./lib/load.mjs');
  const t0 = performance.now();
  const clients = [];
  try {
    const servers = serverConfigs(spec.servers);
    await Promise.all(
      Array.from({ length: spec.sessions }, () =>
        Promise.all(
          servers.map(async ({ config }) => {
            clients.push(await connectDirect(config));
          }),
        ),
      ),
    );
    const readyMs = performance.now() - t0;
    await Promise.all(clients.map((client) => client.callTool({ name: 'echo', arguments: { text: 'ready?' } })));
    await sleep(SETTLE_MS);
    return {
      readyMs,
      processes: servers.map(({ config }) => pidsWithMarker(config.args[1]).length),
      tree: treeRss(process.pid),
      memory: memory(),
      views: clients.length,
    };
  } finally {
    // Clients whose connect was still under way are found by the runner's marker sweep.
    await closeDirect(clients);
  }
}

async function scale() {
  const { McpTransportPool } = await import('@mcpool/core');
  const pool = new McpTransportPool({ drainDelayMs: 30_000, budget: { clientBudget: 50, mode: 'warn' }, onEvent });
  try {
    const servers = serverConfigs(spec.servers);
    // The entries exist first (one session), so the growth measured is views only.
    await Promise.all(servers.map(({ name, config }) => pool.acquire(name, config, 'seed')));
    // Warm the attach path, then let go, so JIT and first-use allocations are not counted as growth.
    for (let i = 0; i < 20; i++) for (const { name, config } of servers) await pool.acquire(name, config, `warmup-${i}`);
    for (let i = 0; i < 20; i++) await pool.releaseSession(`warmup-${i}`);
    await sleep(SETTLE_MS);
    const before = memory();
    const treeBefore = treeRss(process.pid);

    const attachMs = [];
    const tAttach = performance.now();
    for (let s = 0; s < spec.sessions; s++) {
      for (const { name, config } of servers) {
        const t = performance.now();
        await pool.acquire(name, config, `session-${s}`);
        attachMs.push(performance.now() - t);
      }
    }
    const attachWallMs = performance.now() - tAttach;
    await sleep(SETTLE_MS);
    const attached = memory();
    const treeAttached = treeRss(process.pid);
    const entries = Object.values(pool.getSnapshot().servers).reduce((n, s) => n + s.entryCount, 0);
    const refs = Object.values(pool.getSnapshot().servers).reduce((n, s) => n + s.entrySummary.reduce((m, e) => m + e.refs, 0), 0);

    const releaseMs = [];
    const tRelease = performance.now();
    for (let s = 0; s < spec.sessions; s++) {
      const t = performance.now();
      await pool.releaseSession(`session-${s}`);
      releaseMs.push(performance.now() - t);
    }
    const releaseWallMs = performance.now() - tRelease;
    await sleep(SETTLE_MS);
    const released = memory();
    const refsAfter = Object.values(pool.getSnapshot().servers).reduce((n, s) => n + s.entrySummary.reduce((m, e) => m + e.refs, 0), 0);
    return {
      entries,
      refs,
      refsAfter,
      processes: servers.map(({ config }) => pidsWithMarker(config.args[1]).length),
      attach: { ...summarize(attachMs), wallMs: attachWallMs },
      release: { ...summarize(releaseMs), wallMs: releaseWallMs },
      memory: { before, attached, released },
      tree: { before: treeBefore.bytes, attached: treeAttached.bytes },
      samples: { attachMs: attachMs.map((v) => Math.round(v * 1000) / 1000), releaseMs: releaseMs.map((v) => Math.round(v * 1000) / 1000) },
    };
  } finally {
    await pool.drainAll({ timeoutMs: 10_000 });
  }
}

const crash = async () => (await import('./sections/crash.mjs')).crashScenario(spec);

const kinds = { sessions: () => (spec.mode === 'pool' ? sessionsPool() : sessionsDirect()), scale, crash };
try {
  const result = await kinds[spec.kind]();
  process.stdout.write(`\n${JSON.stringify({ ok: true, result: { ...result, poolEvents: events } })}\n`);
} catch (error) {
  process.stdout.write(`\n${JSON.stringify({ ok: false, error: String(error?.stack ?? error) })}\n`);
  process.exitCode = 1;
}
