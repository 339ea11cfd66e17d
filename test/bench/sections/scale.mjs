// Part 5: 1,000 sessions × 5 servers attached (5 entries, 5,000 views) in a fresh process started
// with --expose-gc: supervisor heap and RSS growth, attach p50/p99, releaseSession time.
import { describeEvents } from '../lib/pools.mjs';
import { fmt, fmtMb, target } from '../lib/stats.mjs';

const SERVERS = 5;

export const scaleSection = {
  id: 'scale',
  part: 5,
  title: `Scale: many sessions × ${SERVERS} servers attached to ${SERVERS} entries`,
  async run(ctx) {
    const sessions = ctx.quick ? 300 : 1000;
    const mark = ctx.mark('scale');
    const r = await ctx.runScenario({ kind: 'scale', sessions, servers: SERVERS, mark }, { timeoutMs: 300_000, exposeGc: true });
    const { before, attached, released } = r.memory;
    const heapGrowth = attached.heapUsed - before.heapUsed;
    const views = sessions * SERVERS;
    const rows = [
      ['entries / server processes', `${r.entries} / ${r.processes.reduce((a, b) => a + b, 0)}`],
      ['views attached (refs)', `${r.refs} (expected ${views + SERVERS}, incl. one seed session)`],
      ['attach p50 / p99 / max', `${fmt(r.attach.p50, 3)} / ${fmt(r.attach.p99, 3)} / ${fmt(r.attach.max, 1)} ms`],
      ['all attaches (sequential)', `${fmt(r.attach.wallMs)} ms`],
      ['releaseSession p50 / p99', `${fmt(r.release.p50, 3)} / ${fmt(r.release.p99, 3)} ms`],
      [`releaseSession × ${sessions} (sequential, total)`, `${fmt(r.release.wallMs)} ms`],
      ['supervisor heapUsed: before → attached → released', `${fmtMb(before.heapUsed)} → ${fmtMb(attached.heapUsed)} → ${fmtMb(released.heapUsed)}`],
      ['heap growth per view', `${fmt(heapGrowth / views / 1024, 2)} KB`],
      ['supervisor RSS (all threads): before → attached → released', `${fmtMb(before.rss)} → ${fmtMb(attached.rss)} → ${fmtMb(released.rss)}`],
      ['RSS growth per view', `${fmt((attached.rss - before.rss) / views / 1024, 2)} KB`],
      ['tree RSS (supervisor + servers): before → attached', `${fmtMb(r.tree.before)} → ${fmtMb(r.tree.attached)}`],
      ['refs left after releasing every session', `${r.refsAfter} (expected ${SERVERS}: the seed session)`],
    ];
    return {
      tables: [
        {
          title: `${sessions} sessions × ${SERVERS} servers = ${views} views, attached one by one in a fresh supervisor process; heap read after gc()`,
          columns: ['measure', 'value'],
          rows,
          notes: [
            ...(describeEvents(r.poolEvents ?? {}) ? [`pool events: ${describeEvents(r.poolEvents)}`] : []),
            ...(r.logErrors?.length > 0 ? [`the pool logged ${r.logErrors.length} error(s): ${[...new Set(r.logErrors)].slice(0, 3).join(' | ')}`] : []),
          ],
        },
      ],
      targets: [
        target(
          `${sessions} × ${SERVERS} attached within 200 MB of supervisor heap${ctx.quick ? ' (quick mode; the target is for 1,000 × 5)' : ''}`,
          `${fmtMb(attached.heapUsed)} heapUsed (growth ${fmtMb(heapGrowth)})`,
          attached.heapUsed <= 200 * 1024 * 1024,
        ),
      ],
      raw: { sessions, servers: SERVERS, ...r },
    };
  },
};
