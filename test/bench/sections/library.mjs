// Part 1: the library path. A direct in-process SDK Client over stdio vs PooledConnection.callTool
// through the pool (view → MessagePort → actor thread → stdio child), on the same fixture, in the
// same process. Rounds alternate which path goes first (ABBA), so machine noise hits both; the
// headline ratio is the median of the per-round ratios (paired), with their range.
import { closeDirect, connectDirect, directCall, pooledCall, runCalls } from '../lib/load.mjs';
import { createPool, describeEvents } from '../lib/pools.mjs';
import { fixtureConfig } from '../lib/procs.mjs';
import { fmt, fmtRange, fmtRatio, median, ratio, summarize, target } from '../lib/stats.mjs';
import { ACQUIRE_COLUMNS, acquireNotes, acquireRows, measureAcquire } from './acquire.mjs';

const CONCURRENCY = 16;
const MODES = { seq: 1, conc: CONCURRENCY };

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

/** Per-round ratios pool/direct of one statistic, their median and range. */
function pairedRatio(pool, direct, key) {
  const ratios = pool.round[key].map((v, i) => ratio(v, direct.round[key][i]));
  return { median: median(ratios), ratios, text: `${fmtRatio(median(ratios))} ${fmtRange(ratios)}` };
}

export const librarySection = {
  id: 'library',
  part: 1,
  title: 'Library path: PooledConnection.callTool vs a direct SDK client (echo.mjs, tool echo)',
  async run(ctx) {
    // A round is `perRound` calls per path and mode (the 2,000); a short round is all noise
    // at concurrency 16 (2,000 calls last ~0.1–0.3 s), so rounds repeat rather than split it.
    const perRound = ctx.quick ? 1000 : 2000;
    const rounds = ctx.quick ? 4 : 8;
    const warmup = ctx.quick ? 300 : 500;
    const calls = perRound * rounds;
    const chunks = { direct: { seq: [], conc: [] }, pool: { seq: [], conc: [] } };
    const events = {};

    const pool = createPool(events, { drainDelayMs: 30_000 });
    let client;
    try {
      const view = await pool.acquire('echo', fixtureConfig(ctx.mark('lib-pool')), 'bench-library');
      client = await connectDirect(fixtureConfig(ctx.mark('lib-direct')));
      const paths = { direct: directCall(client), pool: pooledCall(view) };
      // Warm-up: JIT on both paths, both children, the actor thread; the spare thread's boot ends meanwhile.
      for (const call of Object.values(paths)) for (const concurrency of Object.values(MODES)) await runCalls(call, warmup, concurrency);
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? ['direct', 'pool'] : ['pool', 'direct'];
        for (const path of order) chunks[path].seq.push(await runCalls(paths[path], perRound, MODES.seq));
        for (const path of [...order].reverse()) chunks[path].conc.push(await runCalls(paths[path], perRound, MODES.conc));
      }
      ctx.checkLoopback('library');
    } finally {
      await closeDirect([client]);
      await pool.drainAll({ timeoutMs: 5000 });
    }

    const acquireRounds = ctx.quick ? 2 : 4;
    const acquire = await measureAcquire(ctx, acquireRounds, 'lib-acq');

    const result = { direct: {}, pool: {} };
    for (const path of ['direct', 'pool']) for (const mode of Object.keys(MODES)) result[path][mode] = aggregate(chunks[path][mode]);
    const paired = {};
    const rows = [];
    for (const mode of Object.keys(MODES)) {
      const d = result.direct[mode];
      const p = result.pool[mode];
      paired[mode] = { p50: pairedRatio(p, d, 'p50'), callsPerSec: pairedRatio(p, d, 'callsPerSec'), cpuUsPerCall: pairedRatio(p, d, 'cpuUsPerCall') };
      const label = mode === 'seq' ? 'sequential' : `concurrency ${CONCURRENCY}`;
      rows.push(['direct SDK Client.callTool', label, d.calls, fmt(d.p50), fmt(d.p99), fmt(d.callsPerSec), fmt(d.cpuUsPerCall), 'baseline', 'baseline', 'baseline']);
      rows.push(['PooledConnection.callTool', label, p.calls, fmt(p.p50), fmt(p.p99), fmt(p.callsPerSec), fmt(p.cpuUsPerCall), paired[mode].p50.text, paired[mode].callsPerSec.text, paired[mode].cpuUsPerCall.text]);
    }
    const seqRatio = paired.seq.p50.median;
    const concRatio = paired.conc.callsPerSec.median;
    const poolEvents = describeEvents(events);
    return {
      tables: [
        {
          title: `${rounds} interleaved rounds of ${perRound} calls per path and mode (${calls} in all), after ${warmup} warm-up calls per path and mode. Ratios: median of per-round pool/direct [range]. CPU = this whole process (all threads), per call`,
          columns: ['path', 'mode', 'calls', 'p50 µs', 'p99 µs', 'calls/s', 'CPU µs/call', 'p50 ratio', 'calls/s ratio', 'CPU ratio'],
          rows,
          notes: poolEvents ? [`pool events during the calls: ${poolEvents}`] : [],
        },
        { title: `Acquire vs direct connect (${acquireRounds} rounds; part 4 has more)`, columns: ACQUIRE_COLUMNS, rows: acquireRows(acquire), notes: acquireNotes(acquire) },
      ],
      targets: [
        target('library p50 ≤ 1.2× direct (sequential)', fmtRatio(seqRatio), seqRatio <= 1.2),
        target('library throughput ≥ 1.0× direct at concurrency 16', fmtRatio(concRatio), concRatio >= 1.0),
      ],
      raw: {
        calls,
        rounds,
        perRound,
        warmup,
        concurrency: CONCURRENCY,
        summary: Object.fromEntries(
          Object.entries(result).map(([path, modes]) => [
            path,
            Object.fromEntries(Object.entries(modes).map(([mode, s]) => [mode, { p50Us: s.p50, p99Us: s.p99, callsPerSec: s.callsPerSec, cpuUsPerCall: s.cpuUsPerCall, perRound: s.round }])),
          ]),
        ),
        pairedRatios: Object.fromEntries(Object.entries(paired).map(([mode, r]) => [mode, Object.fromEntries(Object.entries(r).map(([k, v]) => [k, { median: v.median, perRound: v.ratios }]))])),
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
