// Part 7: isolation by size and by process. Three measurements, each against a baseline in the
// same run, interleaved (ABBA):
//   framing    one 12 MiB line in 64 KiB chunks through the shared line reader, the actor's
//              previous reader (lib/previousLineReader.mjs) and the floor (one join + one decode);
//   neighbour  an `echo` entry's sequential call latency while another entry of the same pool
//              returns 12 MiB results back to back, against the same calls with nothing else
//              running; with the pool's defaults, and with one thread per connection;
//   spawn      `echo.mjs` started by a worker thread on its own pipes (as actors did) or by the
//              main thread on sockets the worker listens on (as actors do now, so the process
//              always reaps it): spawn, one `initialize` round trip, the kill and its reported
//              exit (lib/spawnWorker.mjs); and how long the main thread is held by each.
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { MessageChannel, Worker } from 'node:worker_threads';
import { LineReader } from '@mcpool/protocol/lineReader';
import { RpcChannel } from '@mcpool/protocol/rpc';
import { PreviousLineReader } from '../lib/previousLineReader.mjs';
import { createPool, describeEvents } from '../lib/pools.mjs';
import { ECHO, fixtureConfig } from '../lib/procs.mjs';
import { fmt, fmtRange, fmtRatio, median, percentile, ratio, summarize, target } from '../lib/stats.mjs';

const MIB = 1024 * 1024;
const CHUNK = 64 * 1024;
const ROOT = new URL('../../../', import.meta.url);
const ACTOR_DIST = new URL('packages/actor/dist/', ROOT);
const CHILD_SPAWNER = new URL('packages/core/dist/childSpawner.js', ROOT);
const SPAWN_WORKER = fileURLToPath(new URL('../lib/spawnWorker.mjs', import.meta.url));

/** A 12 MiB JSON-RPC answer line (the TypeScript SDK v1's key order), cut in 64 KiB chunks. */
function bigLineChunks(mb) {
  const line = Buffer.from(`{"result":{"content":[{"type":"text","text":"${'x'.repeat(mb * MIB)}"}]},"jsonrpc":"2.0","id":7}\n`);
  const chunks = [];
  for (let at = 0; at < line.length; at += CHUNK) chunks.push(line.subarray(at, at + CHUNK));
  return chunks;
}

/**
 * Each reader frames the chunks into the line and decodes it; `framedMs` is the time until the
 * line's bytes are joined (scanning and joining: what a reader adds), `totalMs` includes the
 * decode into a string, which every reader must do once. Times are this process's CPU time, not
 * wall time: the work is synchronous on one thread, and on a loaded machine the wall clock mostly
 * measures how long the thread waited for a CPU.
 */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const FRAMERS = {
  shared(chunks) {
    const t0 = cpuMs();
    const reader = new LineReader();
    for (const chunk of chunks) reader.push(chunk);
    const framedMs = cpuMs() - t0;
    const line = reader.next();
    return { line, framedMs, totalMs: cpuMs() - t0 };
  },
  previous(chunks) {
    const t0 = cpuMs();
    const reader = new PreviousLineReader();
    let line;
    for (const chunk of chunks) {
      reader.append(chunk);
      line ??= reader.next();
    }
    // It joins and decodes in one step: its framing is its total.
    const totalMs = cpuMs() - t0;
    return { line, framedMs: totalMs, totalMs };
  },
  floor(chunks) {
    const t0 = cpuMs();
    const whole = Buffer.concat(chunks);
    const framedMs = cpuMs() - t0;
    const line = whole.toString('utf8', 0, whole.length - 1);
    return { line, framedMs, totalMs: cpuMs() - t0 };
  },
};

async function measureFraming(rounds) {
  const chunks = bigLineChunks(12);
  const samples = { shared: [], previous: [], floor: [] };
  const order = ['floor', 'shared', 'previous'];
  for (let round = 0; round < rounds; round++) {
    for (const kind of round % 2 === 0 ? order : [...order].reverse()) {
      const { line, framedMs, totalMs } = FRAMERS[kind](chunks);
      if (line?.length !== 12 * MIB + 73) throw new Error(`${kind} framed ${line?.length} characters`);
      samples[kind].push({ framedMs, totalMs });
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return samples;
}

/**
 * Per round: sequential echo calls on the neighbour for as long as the big entry takes to answer
 * `results` 12 MiB results back to back, and as many calls with nothing else running; the order
 * of the two alternates.
 */
async function measureNeighbour(ctx, rounds, results, poolOptions, label) {
  const events = {};
  const pool = createPool(events, { drainDelayMs: 60_000, ...poolOptions });
  const busy = [];
  const calm = [];
  const bigResults = [];
  try {
    const big = await pool.acquire('big', fixtureConfig(ctx.mark(`${label}-big`), 'bigResult.mjs'), 'bench');
    const echo = await pool.acquire('echo', fixtureConfig(ctx.mark(`${label}-echo`)), 'bench');
    for (let i = 0; i < 50; i++) await echo.callTool('echo', { text: 'warm' });
    const timedCall = async (i) => {
      const t0 = performance.now();
      await echo.callTool('echo', { text: `n${i}` });
      return performance.now() - t0;
    };
    let lastBusyCalls = 200;
    for (let round = 0; round < rounds; round++) {
      const phases = round % 2 === 0 ? ['calm', 'busy'] : ['busy', 'calm'];
      for (const phase of phases) {
        const latencies = [];
        if (phase === 'calm') {
          for (let i = 0; i < lastBusyCalls; i++) latencies.push(await timedCall(i));
          calm.push(latencies);
          continue;
        }
        let answered = 0;
        const loader = (async () => {
          for (let i = 0; i < results; i++) {
            const t0 = performance.now();
            const result = await big.callTool('big', { mb: 12 });
            if (result.content[0].text.length !== 12 * MIB) throw new Error('a 12 MiB result came back cut');
            bigResults.push(performance.now() - t0);
            answered += 1;
          }
        })();
        for (let i = 0; answered < results && i < 1_000_000; i++) latencies.push(await timedCall(i));
        await loader;
        busy.push(latencies);
        lastBusyCalls = latencies.length;
      }
    }
  } finally {
    await pool.drainAll({ timeoutMs: 5000 });
  }
  return { busy, calm, bigResults, events };
}

async function measureSpawn(rounds) {
  const { spawnChild } = await import(CHILD_SPAWNER.href);
  const { port1, port2 } = new MessageChannel();
  const supervisor = new RpcChannel(port1, { handler: (op, args, ctx) => (op === 'spawnChild' ? spawnChild(args, ctx, () => undefined) : undefined) });
  const worker = new Worker(SPAWN_WORKER, { workerData: { actorDist: ACTOR_DIST.href, control: port2 }, transferList: [port2] });
  const samples = { inThread: [], supervisor: [] };
  const mainHeld = { inThread: [], supervisor: [] };
  try {
    const [ready] = await once(worker, 'message');
    if (ready !== 'ready') throw new Error('the spawn worker did not start');
    const channel = new RpcChannel(worker, { ownsPort: false });
    const order = ['inThread', 'supervisor'];
    for (let round = 0; round < rounds; round++) {
      for (const kind of round % 2 === 0 ? order : [...order].reverse()) {
        // How long the main thread's loop was held at most while this sample ran.
        const delay = monitorEventLoopDelay({ resolution: 1 });
        delay.enable();
        samples[kind].push(await channel.request('sample', { kind, command: process.execPath, args: [ECHO, '--mcpool-bench=spawn-ab'] }, { timeoutMs: 60_000 }));
        delay.disable();
        mainHeld[kind].push(delay.max / 1e6);
      }
    }
    channel.close();
  } finally {
    supervisor.close();
    await worker.terminate();
  }
  return { samples, mainHeld };
}

/** Per-round ratios a/b of `pick(sample)`, as `median [range]`. */
function paired(a, b, pick) {
  const ratios = a.map((sample, i) => ratio(pick(sample), pick(b[i])));
  return { median: median(ratios), text: `${fmtRatio(median(ratios))} ${fmtRange(ratios)}` };
}

export const isolationSection = {
  id: 'isolation',
  part: 7,
  title: 'Isolation: framing a 12 MiB line, a neighbour during 12 MiB results, the spawn handshake',
  async run(ctx) {
    const framingRounds = ctx.quick ? 3 : 7;
    const neighbourRounds = ctx.quick ? 3 : 5;
    const neighbourResults = ctx.quick ? 2 : 3;
    const spawnRounds = ctx.quick ? 10 : 30;

    const framing = await measureFraming(framingRounds);
    const fr = (kind, key) => summarize(framing[kind].map((sample) => sample[key]));
    const previousVsShared = paired(framing.previous, framing.shared, (sample) => sample.totalMs);
    const sharedVsFloor = paired(framing.shared, framing.floor, (sample) => sample.totalMs);

    // One setup: every connection has its own thread, there is nothing else to set.
    const setups = [{ label: 'pool defaults', options: {} }];
    const neighbour = [];
    for (const setup of setups) {
      const measured = await measureNeighbour(ctx, neighbourRounds, neighbourResults, setup.options, setup.label.replaceAll(' ', '-'));
      const p99 = (rounds) => rounds.map((latencies) => percentile(latencies, 99));
      const ratios = p99(measured.busy).map((busy, i) => ratio(busy, p99(measured.calm)[i]));
      neighbour.push({ ...setup, measured, busy: summarize(measured.busy.flat()), calm: summarize(measured.calm.flat()), ratio: median(ratios), ratios, big: summarize(measured.bigResults) });
    }

    const spawn = await measureSpawn(spawnRounds);
    const sp = (kind, key) => summarize(spawn.samples[kind].map((s) => s[key]));
    const handshake = paired(spawn.samples.supervisor, spawn.samples.inThread, (s) => s.initializedMs);
    const held = { inThread: summarize(spawn.mainHeld.inThread), supervisor: summarize(spawn.mainHeld.supervisor) };

    const byDefaults = neighbour[0];
    return {
      tables: [
        {
          title: `framing one 12 MiB line in 64 KiB chunks, ${framingRounds} interleaved rounds (CPU time of this process)`,
          columns: ['reader', 'scan + join p50 CPU ms', 'with the decode p50 CPU ms', 'max CPU ms', 'with the decode, vs shared (per round)'],
          rows: [
            ['floor: one join + one decode of the line', fmt(fr('floor', 'framedMs').p50, 1), fmt(fr('floor', 'totalMs').p50, 1), fmt(fr('floor', 'totalMs').max, 1), `${fmtRatio(1 / sharedVsFloor.median)}`],
            ['shared LineReader (@mcpool/protocol/lineReader)', fmt(fr('shared', 'framedMs').p50, 1), fmt(fr('shared', 'totalMs').p50, 1), fmt(fr('shared', 'totalMs').max, 1), 'baseline'],
            ['previous actor reader (re-joins and re-scans per chunk)', '(one step)', fmt(fr('previous', 'totalMs').p50, 1), fmt(fr('previous', 'totalMs').max, 1), previousVsShared.text],
          ],
        },
        {
          title: `a neighbour's sequential echo calls: ${neighbourRounds} rounds, each calling while another entry answers ${neighbourResults} 12 MiB results back to back, then as many calls calm (ABBA)`,
          columns: ['setup', 'calls', 'calm p50 ms', 'calm p99 ms', 'busy p50 ms', 'busy p99 ms', 'p99 busy ÷ calm (per round)', '12 MiB result p50 ms', 'pool events'],
          rows: neighbour.map((n) => [n.label, n.busy.n, fmt(n.calm.p50, 2), fmt(n.calm.p99, 2), fmt(n.busy.p50, 2), fmt(n.busy.p99, 2), `${fmtRatio(n.ratio)} ${fmtRange(n.ratios)}`, fmt(n.big.p50), describeEvents(n.measured.events) || 'none']),
        },
        {
          title: `spawning echo.mjs for a worker thread, ${spawnRounds} interleaved rounds`,
          columns: ['who spawns', 'stdio in hand p50 ms', 'initialize answered p50 ms', 'p99 ms', 'kill → exit reported p50 ms', 'main thread held, max per sample p50 ms'],
          rows: [
            ['the worker, on its own pipes (before)', fmt(sp('inThread', 'spawnedMs').p50, 1), fmt(sp('inThread', 'initializedMs').p50, 1), fmt(sp('inThread', 'initializedMs').p99, 1), fmt(sp('inThread', 'endedMs').p50, 1), fmt(held.inThread.p50, 1)],
            ['the main thread, on the worker’s sockets (now)', fmt(sp('supervisor', 'spawnedMs').p50, 1), fmt(sp('supervisor', 'initializedMs').p50, 1), fmt(sp('supervisor', 'initializedMs').p99, 1), fmt(sp('supervisor', 'endedMs').p50, 1), fmt(held.supervisor.p50, 1)],
          ],
          notes: [`initialize answered, supervisor ÷ in-thread per round: ${handshake.text}`],
        },
      ],
      targets: [
        target('12 MiB framed in milliseconds (shared reader, scan + join p50, CPU)', `${fmt(fr('shared', 'framedMs').p50, 1)} ms; with the decode, the previous reader takes ${fmtRatio(previousVsShared.median)} as long`, Number.isFinite(fr('shared', 'framedMs').p50) ? fr('shared', 'framedMs').p50 < 100 : undefined),
        target("a neighbour's p99 during 12 MiB results ≤ 1.5× calm (pool defaults)", fmtRatio(byDefaults.ratio), Number.isFinite(byDefaults.ratio) ? byDefaults.ratio <= 1.5 : undefined),
        target('spawn through the supervisor ≤ 1.1× spawning in the thread (initialize answered, p50 of per-round ratios)', handshake.text, Number.isFinite(handshake.median) ? handshake.median <= 1.1 : undefined),
      ],
      raw: { framingMs: framing, neighbour: neighbour.map((n) => ({ label: n.label, busyMs: n.measured.busy, calmMs: n.measured.calm, bigResultsMs: n.measured.bigResults, events: n.measured.events })), spawn },
    };
  },
};

