// Part 1: the library path. A direct in-process SDK Client over stdio vs PooledConnection.callTool
// through the pool (view → MessagePort → actor thread → stdio child), on the same fixture, in the
// same process. Rounds alternate the order of the paths (forward, then reversed), so machine
// noise hits all; the headline ratio is the median of the per-round ratios (paired), with their
// range. Two more paths are floors: the one hop a pool call cannot avoid (the direct call plus
// one bare MessagePort round trip to a worker thread that echoes it, lib/echoThread.mjs), and the
// design with none of mcpool's code (a worker thread that owns its own child and only forwards,
// lib/forwardThread.mjs).
import { closeDirect, connectDirect, directCall, ECHO_ARGS, pooledCall, runCalls } from '../lib/load.mjs';
import { createPool, describeEvents } from '../lib/pools.mjs';
import { fixtureConfig } from '../lib/procs.mjs';
import { startEchoThread } from '../lib/echoThread.mjs';
import { startForwardThread } from '../lib/forwardThread.mjs';
import { floor, fmt, fmtRange, fmtRatio, median, ratio, summarize, target } from '../lib/stats.mjs';
import { ACQUIRE_COLUMNS, acquireNotes, acquireRows, measureAcquire } from './acquire.mjs';

const CONCURRENCY = 16;
const MODES = { seq: 1, conc: CONCURRENCY };
/** The paths, in the order of even rounds; odd rounds reverse it. */
const PATHS = ['direct', 'hop', 'forward', 'pool'];
const PATH_LABEL = {
  direct: 'direct SDK Client.callTool',
  hop: 'floor: direct + one bare thread round trip',
  forward: 'floor: a bare forwarding thread',
  pool: 'PooledConnection.callTool',
};

function aggregate(chunks) {
  const calls = chunks.reduce((s, c) => s + c.calls, 0);
  const wallMs = chunks.reduce((s, c) => s + c.wallMs, 0);
  const cpuUs = chunks.reduce((s, c) => s + c.cpuUs, 0);
  return {
    ...summarize(chunks.flatMap((c) => c.latenciesUs)),
    calls,
    callsPerSec: (calls / wallMs) * 1000,
    cpuUsPerCall: cpuUs / calls,
    round: {
      p50: chunks.map((c) => median(c.latenciesUs)),
      callsPerSec: chunks.map((c) => (c.calls / c.wallMs) * 1000),
      cpuUsPerCall: chunks.map((c) => c.cpuUs / c.calls),
    },
  };
}

/** Per-round ratios a/b of one statistic, their median and range. */
function pairedRatio(a, b, key) {
  const ratios = a.round[key].map((v, i) => ratio(v, b.round[key][i]));
  return { median: median(ratios), ratios, text: `${fmtRatio(median(ratios))} ${fmtRange(ratios)}` };
}

/** { mode: { stat: { median, perRound } } } for the JSON. */
const rawRatios = (byMode) => Object.fromEntries(Object.entries(byMode).map(([mode, r]) => [mode, Object.fromEntries(Object.entries(r).map(([k, v]) => [k, { median: v.median, perRound: v.ratios }]))]));

export const librarySection = {
  id: 'library',
  part: 1,
  title: 'Library path: PooledConnection.callTool vs a direct SDK client (echo.mjs, tool echo)',
  async run(ctx) {
    // A sequential round is `perRound` calls per path (2,000; quick 1,000). A concurrent round is
    // longer: throughput is a steady state, and at concurrency 16 a round of 2,000 calls lasts
    // ~60 ms, of which the first few hundred calls (after the path sat idle while the others ran)
    // run slower on every path, most on those with a thread in between. Rounds of 8,000 calls
    // (~0.3 s) weigh that start-up a quarter as much.
    const perRound = ctx.quick ? 1000 : 2000;
    const concPerRound = ctx.quick ? 4000 : 8000;
    const perMode = { seq: perRound, conc: concPerRound };
    const rounds = ctx.quick ? 4 : 8;
    const warmup = ctx.quick ? 300 : 500;
    const calls = (perRound + concPerRound) * rounds;
    const chunks = Object.fromEntries(PATHS.map((path) => [path, { seq: [], conc: [] }]));
    const events = {};

    const pool = createPool(events, { drainDelayMs: 30_000 });
    let client;
    let echoThread;
    let forwardThread;
    try {
      const view = await pool.acquire('echo', fixtureConfig(ctx.mark('lib-pool')), 'bench-library');
      client = await connectDirect(fixtureConfig(ctx.mark('lib-direct')));
      echoThread = await startEchoThread();
      forwardThread = await startForwardThread(ctx.mark('lib-forward'));
      const direct = directCall(client);
      const { roundTrip } = echoThread;
      // The floor shares the direct path's client and child: the only difference is the hop.
      const hop = async () => {
        await roundTrip();
        return direct();
      };
      const forward = () => forwardThread.call('tools/call', { name: 'echo', arguments: ECHO_ARGS });
      const paths = { direct, hop, forward, pool: pooledCall(view) };
      // Warm-up: JIT on every path, both children, the actor and echo threads; the spare thread's boot ends meanwhile.
      for (const call of Object.values(paths)) for (const concurrency of Object.values(MODES)) await runCalls(call, warmup, concurrency);
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? PATHS : [...PATHS].reverse();
        for (const path of order) chunks[path].seq.push(await runCalls(paths[path], perMode.seq, MODES.seq));
        for (const path of [...order].reverse()) chunks[path].conc.push(await runCalls(paths[path], perMode.conc, MODES.conc));
      }
      ctx.checkLoopback('library');
    } finally {
      await echoThread?.close();
      await forwardThread?.close();
      await closeDirect([client]);
      await pool.drainAll({ timeoutMs: 5000 });
    }

    const acquireRounds = ctx.quick ? 2 : 4;
    const acquire = await measureAcquire(ctx, acquireRounds, 'lib-acq');

    const result = Object.fromEntries(PATHS.map((path) => [path, {}]));
    for (const path of PATHS) for (const mode of Object.keys(MODES)) result[path][mode] = aggregate(chunks[path][mode]);
    const pairAll = (a, b) => ({ p50: pairedRatio(a, b, 'p50'), callsPerSec: pairedRatio(a, b, 'callsPerSec'), cpuUsPerCall: pairedRatio(a, b, 'cpuUsPerCall') });
    // paired[mode]: pool ÷ direct; floorPaired[mode]: hop ÷ direct; poolVsFloor[mode]: pool ÷ hop;
    // forwardPaired[mode]: forward ÷ direct; poolVsForward[mode]: pool ÷ forward.
    const paired = {};
    const floorPaired = {};
    const poolVsFloor = {};
    const forwardPaired = {};
    const poolVsForward = {};
    const rows = [];
    const ratioCells = (r) => [r.p50.text, r.callsPerSec.text, r.cpuUsPerCall.text];
    for (const mode of Object.keys(MODES)) {
      const d = result.direct[mode];
      const h = result.hop[mode];
      const f = result.forward[mode];
      const p = result.pool[mode];
      paired[mode] = pairAll(p, d);
      floorPaired[mode] = pairAll(h, d);
      poolVsFloor[mode] = pairAll(p, h);
      forwardPaired[mode] = pairAll(f, d);
      poolVsForward[mode] = pairAll(p, f);
      const label = mode === 'seq' ? 'sequential' : `concurrency ${CONCURRENCY}`;
      const cells = (s) => [s.calls, fmt(s.p50), fmt(s.p99), fmt(s.callsPerSec), fmt(s.cpuUsPerCall)];
      rows.push([PATH_LABEL.direct, label, ...cells(d), 'baseline', 'baseline', 'baseline']);
      rows.push([PATH_LABEL.hop, label, ...cells(h), ...ratioCells(floorPaired[mode])]);
      rows.push([PATH_LABEL.forward, label, ...cells(f), ...ratioCells(forwardPaired[mode])]);
      rows.push([PATH_LABEL.pool, label, ...cells(p), ...ratioCells(paired[mode])]);
      rows.push(['pool ÷ round-trip floor (same rounds)', label, '', '', '', '', '', ...ratioCells(poolVsFloor[mode])]);
      rows.push(['pool ÷ forwarding floor (same rounds)', label, '', '', '', '', '', ...ratioCells(poolVsForward[mode])]);
    }
    const seqRatio = paired.seq.p50.median;
    const concRatio = paired.conc.callsPerSec.median;
    // What the hop alone takes of the sequential budget (1.2× direct: 0.2× of direct's p50 to spend).
    const hopSeq = floorPaired.seq.p50.median;
    const budgetShare = Number.isFinite(hopSeq) ? `${Math.round(((hopSeq - 1) / 0.2) * 100)} %` : '–';
    const hopAddedUs = result.hop.seq.p50 - result.direct.seq.p50;
    const poolEvents = describeEvents(events);
    return {
      tables: [
        {
          title: `${rounds} interleaved rounds per path of ${perRound} sequential and ${concPerRound} concurrent calls (${calls} in all per path), after ${warmup} warm-up calls per path and mode. Ratios: median of per-round path ÷ direct [range] (last rows of each mode: pool ÷ each floor). Round-trip floor = each call does one MessagePort round trip to a worker thread that echoes a tools/call-sized message, then the direct call (same client and child as direct). Forwarding floor = a worker thread with its own echo.mjs child posts each call to it as one line and posts each answer back, parsed once, nothing else. CPU = this whole process (all threads), per call`,
          columns: ['path', 'mode', 'calls', 'p50 µs', 'p99 µs', 'calls/s', 'CPU µs/call', 'p50 ratio', 'calls/s ratio', 'CPU ratio'],
          rows,
          notes: poolEvents ? [`pool events during the calls: ${poolEvents}`] : [],
        },
        { title: `Acquire vs direct connect (${acquireRounds} rounds; part 4 has more)`, columns: ACQUIRE_COLUMNS, rows: acquireRows(acquire), notes: acquireNotes(acquire) },
      ],
      targets: [
        target('library p50 ≤ 1.2× direct (sequential)', fmtRatio(seqRatio), seqRatio <= 1.2),
        floor(
          'one bare thread round trip per call (sequential)',
          `${floorPaired.seq.p50.text} direct p50 (${fmt(result.hop.seq.p50)} vs ${fmt(result.direct.seq.p50)} µs: +${fmt(hopAddedUs)} µs), ${budgetShare} of the 1.2× budget; the pool is ${poolVsFloor.seq.p50.text} this floor`,
        ),
        target('library throughput ≥ 1.0× direct at concurrency 16', fmtRatio(concRatio), concRatio >= 1.0),
        floor(
          `one bare thread round trip per call (concurrency ${CONCURRENCY})`,
          `${floorPaired.conc.callsPerSec.text} direct calls/s (CPU ${floorPaired.conc.cpuUsPerCall.text} direct); the pool is ${poolVsFloor.conc.callsPerSec.text} this floor's calls/s`,
        ),
        floor(
          `a bare forwarding thread (concurrency ${CONCURRENCY})`,
          `${forwardPaired.conc.callsPerSec.text} direct calls/s (CPU ${forwardPaired.conc.cpuUsPerCall.text} direct); the pool is ${poolVsForward.conc.callsPerSec.text} this floor's calls/s`,
        ),
      ],
      raw: {
        calls,
        rounds,
        perRound,
        concPerRound,
        warmup,
        concurrency: CONCURRENCY,
        summary: Object.fromEntries(
          Object.entries(result).map(([path, modes]) => [
            path,
            Object.fromEntries(Object.entries(modes).map(([mode, s]) => [mode, { p50Us: s.p50, p99Us: s.p99, callsPerSec: s.callsPerSec, cpuUsPerCall: s.cpuUsPerCall, perRound: s.round }])),
          ]),
        ),
        pairedRatios: rawRatios(paired),
        floor: { what: 'direct call + one bare MessagePort round trip to an echoing worker thread', hopVsDirect: rawRatios(floorPaired), poolVsHop: rawRatios(poolVsFloor) },
        forwardFloor: { what: 'a worker thread that owns its own echo.mjs child and only forwards lines and parsed answers', forwardVsDirect: rawRatios(forwardPaired), poolVsForward: rawRatios(poolVsForward) },
        // Every call's latency in µs (0.1 µs), per path, mode and round: any statistic can be recomputed.
        latenciesUs: Object.fromEntries(
          Object.entries(chunks).map(([path, modes]) => [
            path,
            Object.fromEntries(Object.entries(modes).map(([mode, list]) => [mode, list.map((c) => ({ wallMs: c.wallMs, cpuUs: c.cpuUs, calls: c.calls, latenciesUs: c.latenciesUs.map((v) => Math.round(v * 10) / 10) }))])),
          ]),
        ),
        poolEvents: events,
        acquire: { samplesMs: acquire.samples, errors: acquire.errors, poolEvents: acquire.events },
      },
    };
  },
};
