// Part 4: acquire latency. Per round, interleaved (the direct baseline alternates first/last):
//   direct      a new SDK client over stdio: spawn + initialize + tools/list (the floor)
//   cold        a fresh pool, acquire at once: the actor thread is still booting (SDK import)
//   warm        another session attaching to a live entry (no process, no thread)
//   cold+spare  a new config on a pool whose warm spare thread is ready: spawn + discovery only
//   re-acquire  after the drain closed the entry (short drainDelayMs): the warm spare again
// A round that fails is recorded with its error and the next round runs.
import { closeDirect, connectDirect, sleep, waitFor } from '../lib/load.mjs';
import { createPool, describeEvents } from '../lib/pools.mjs';
import { fixtureConfig, pidsWithMarker } from '../lib/procs.mjs';
import { fmt, fmtRatio, ratio, summarize, target } from '../lib/stats.mjs';

const DRAIN_MS = 100;
const WARM_PER_ROUND = 10;
/** The spare thread has no public readiness signal; its boot (SDK import) takes ~150–300 ms here. */
const SPARE_BOOT_WAIT_MS = 700;

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

/**
 * Runs `rounds` interleaved rounds; returns the samples in ms per kind, the errors, and the pool
 * events. Every pool is drained and every direct client closed, even when a round throws.
 */
export async function measureAcquire(ctx, rounds, label) {
  const samples = { direct: [], cold: [], warm: [], coldSpare: [], reacquire: [] };
  const errors = [];
  const events = {};
  for (let round = 0; round < rounds; round++) {
    const mark = ctx.mark(`${label}-r${round}`);
    const config = fixtureConfig(mark);
    const directFirst = round % 2 === 0;
    const direct = async () => {
      let client;
      try {
        const { ms, value } = await timed(() => connectDirect(fixtureConfig(`${mark}-direct`)));
        client = value;
        samples.direct.push(ms);
      } catch (error) {
        errors.push(`round ${round} direct: ${error.message}`);
      } finally {
        await closeDirect([client]);
      }
    };
    if (directFirst) await direct();
    const pool = createPool(events, { drainDelayMs: DRAIN_MS });
    try {
      const cold = await timed(() => pool.acquire('echo', config, 'cold'));
      samples.cold.push(cold.ms);
      // Attach once the replacement spare has booted, so the attach path is what is timed.
      await sleep(SPARE_BOOT_WAIT_MS);
      for (let i = 0; i < WARM_PER_ROUND; i++) {
        const warm = await timed(() => pool.acquire('echo', config, `warm-${i}`));
        samples.warm.push(warm.ms);
      }
      const other = await timed(() => pool.acquire('echo2', fixtureConfig(`${mark}-spare`), 'cold'));
      samples.coldSpare.push(other.ms);
      // Everyone leaves; the entries drain after DRAIN_MS and their processes end.
      await pool.releaseSession('cold');
      for (let i = 0; i < WARM_PER_ROUND; i++) await pool.releaseSession(`warm-${i}`);
      const drained = await waitFor(() => Object.keys(pool.getSnapshot().servers).length === 0 && pidsWithMarker(mark).length === 0, 10_000, 20);
      if (!drained) throw new Error('the drain did not close the entries within 10 s');
      await sleep(SPARE_BOOT_WAIT_MS);
      const again = await timed(() => pool.acquire('echo', config, 'again'));
      samples.reacquire.push(again.ms);
    } catch (error) {
      errors.push(`round ${round} pool: ${error.code ?? ''} ${error.message}`);
    } finally {
      await pool.drainAll({ timeoutMs: 5000 });
    }
    if (!directFirst) await direct();
  }
  return { samples, errors, events };
}

/** Table rows for the samples, ratios against the direct connect. */
export function acquireRows({ samples }) {
  const direct = summarize(samples.direct);
  const row = (name, key, vsDirect) => {
    const s = summarize(samples[key]);
    return [name, s.n, fmt(s.p50), fmt(s.p99), vsDirect ? fmtRatio(ratio(s.p50, direct.p50)) : 'baseline'];
  };
  return [
    row('direct SDK client: spawn + initialize + tools/list', 'direct', false),
    row('pool cold acquire, fresh pool (thread boot + spawn + discovery)', 'cold', true),
    row('pool cold acquire, warm spare thread ready (spawn + discovery)', 'coldSpare', true),
    row('pool re-acquire after the drain closed the entry (warm spare)', 'reacquire', true),
    row('pool warm acquire (live entry, another session attaches)', 'warm', true),
  ];
}

export const ACQUIRE_COLUMNS = ['acquire path', 'n', 'p50 ms', 'p99 ms', 'p50 vs direct'];

/** Notes under the table: failed rounds and pool events. */
export function acquireNotes(measured) {
  const notes = measured.errors.map((e) => `failed: ${e}`);
  const events = describeEvents(measured.events);
  if (events) notes.push(`pool events: ${events}`);
  return notes;
}

export const acquireSection = {
  id: 'acquire',
  part: 4,
  title: 'Acquire latency: cold (spawn), warm (live entry), re-acquire after drain',
  async run(ctx) {
    const rounds = ctx.quick ? 4 : 12;
    const measured = await measureAcquire(ctx, rounds, 'acq');
    const { samples } = measured;
    const warm = summarize(samples.warm);
    const reacq = summarize(samples.reacquire);
    const cold = summarize(samples.cold);
    const spare = summarize(samples.coldSpare);
    const direct = summarize(samples.direct);
    const judged = (ok, ...values) => (values.every(Number.isFinite) ? ok : undefined);
    return {
      tables: [
        {
          title: `${rounds} interleaved rounds, ${WARM_PER_ROUND} warm attaches per round, drainDelayMs ${DRAIN_MS}`,
          columns: ACQUIRE_COLUMNS,
          rows: acquireRows(measured),
          notes: acquireNotes(measured),
        },
      ],
      targets: [
        target('warm acquire p50 ≤ 1 ms', `${fmt(warm.p50, 3)} ms`, judged(warm.p50 <= 1, warm.p50)),
        target('cold acquire with the warm spare ≤ 1.1× a direct connect + tools/list (p50)', `${fmtRatio(ratio(spare.p50, direct.p50))}`, judged(spare.p50 <= 1.1 * direct.p50, spare.p50, direct.p50)),
        target('cold acquire on a fresh pool ≤ 1.5× a direct connect + tools/list (p50)', `${fmtRatio(ratio(cold.p50, direct.p50))}`, judged(cold.p50 <= 1.5 * direct.p50, cold.p50, direct.p50)),
        target('re-acquire after drain cheaper than a cold acquire (p50)', `${fmt(reacq.p50)} vs ${fmt(cold.p50)} ms (${fmtRatio(ratio(reacq.p50, cold.p50))})`, judged(reacq.p50 < cold.p50, reacq.p50, cold.p50)),
      ],
      raw: { rounds, drainDelayMs: DRAIN_MS, warmPerRound: WARM_PER_ROUND, samplesMs: samples, errors: measured.errors, poolEvents: measured.events },
    };
  },
};
