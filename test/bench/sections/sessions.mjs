// Part 3: many sessions acquiring the same 3 servers (3 fixture configs told apart by marker) vs
// one process per session and server (direct clients, up to 20 sessions). Each measurement runs
// in a fresh process (scenario.mjs), so "tree RSS" is that supervisor plus its descendants only,
// and "ready" starts from nothing (no warm thread, no child). Pool and direct runs alternate.
import { describeEvents } from '../lib/pools.mjs';
import { fmt, fmtMb, fmtRatio, median, ratio, target } from '../lib/stats.mjs';

const SERVERS = 3;
const POOL_SIZES = [1, 10, 20, 50, 200];
const DIRECT_SIZES = [1, 10, 20];

export const sessionsSection = {
  id: 'sessions',
  part: 3,
  title: `Sessions: N sessions acquiring the same ${SERVERS} servers, pool vs one process per session and server`,
  async run(ctx) {
    // Pool runs are cheap (3 processes); direct runs at 20 sessions start 60 processes (~4 GB),
    // so quick mode repeats the pool runs only.
    const rounds = ctx.quick ? 2 : 3;
    const directRounds = ctx.quick ? 1 : rounds;
    const runs = [];
    for (let round = 0; round < rounds; round++) {
      for (const [i, sessions] of POOL_SIZES.entries()) {
        const modes = DIRECT_SIZES.includes(sessions) && round < directRounds ? ['pool', 'direct'] : ['pool'];
        if ((round + i) % 2 === 1) modes.reverse();
        for (const mode of modes) {
          const mark = ctx.mark(`sess-${mode}-${sessions}-r${round}`);
          try {
            const result = await ctx.runScenario({ kind: 'sessions', mode, sessions, servers: SERVERS, mark }, { timeoutMs: 120_000 });
            runs.push({ round, mode, sessions, ...result });
          } catch (error) {
            runs.push({ round, mode, sessions, error: error.message });
          }
        }
      }
    }
    const ok = runs.filter((r) => r.error === undefined);
    const cell = (mode, sessions) => {
      const list = ok.filter((r) => r.mode === mode && r.sessions === sessions);
      if (list.length === 0) return undefined;
      const servers = list.map((r) => r.processes.reduce((a, b) => a + b, 0));
      return { readyMs: median(list.map((r) => r.readyMs)), rss: median(list.map((r) => r.tree.bytes)), servers: median(servers), maxServers: Math.max(...servers) };
    };
    const pool1 = cell('pool', 1);
    const failedCell = (mode, sessions) => (runs.some((r) => r.mode === mode && r.sessions === sessions) ? 'failed' : '–');
    const rows = POOL_SIZES.map((sessions) => {
      const p = cell('pool', sessions);
      const d = cell('direct', sessions);
      const f = failedCell('direct', sessions);
      return [
        sessions,
        p ? fmt(p.servers) : failedCell('pool', sessions),
        p ? fmtMb(p.rss) : '–',
        p ? fmtRatio(ratio(p.rss, pool1?.rss)) : '–',
        p ? fmt(p.readyMs) : '–',
        d ? fmt(d.servers) : f,
        d ? fmtMb(d.rss) : '–',
        d ? fmt(d.readyMs) : '–',
        d && p ? fmtRatio(ratio(p.rss, d.rss)) : '–',
        d && p ? fmtRatio(ratio(p.readyMs, d.readyMs)) : '–',
      ];
    });
    const notes = runs.filter((r) => r.error).map((r) => `failed (round ${r.round}): ${r.error.slice(0, 600)}`);
    for (const r of ok.filter((run) => run.logErrors?.length > 0)) {
      notes.push(`${r.mode} × ${r.sessions} (round ${r.round}): the pool logged ${r.logErrors.length} error(s): ${[...new Set(r.logErrors)].slice(0, 3).join(' | ')}`);
    }
    const events = {};
    for (const r of ok) for (const [type, n] of Object.entries(r.poolEvents ?? {})) events[type] = (events[type] ?? 0) + n;
    if (describeEvents(events)) notes.push(`pool events: ${describeEvents(events)}`);

    const p200 = cell('pool', 200);
    const rss200 = ratio(p200?.rss, pool1?.rss);
    const pool200Runs = ok.filter((r) => r.mode === 'pool' && r.sessions === 200);
    return {
      tables: [
        {
          title: `${SERVERS} servers per session, median of ${rounds} round(s) (direct: ${directRounds}). Tree RSS = the supervisor process (all threads) + its descendants. Ready = from the first acquire (pool created) or connect until every view is usable`,
          columns: ['sessions', 'pool servers', 'pool tree RSS', 'vs pool@1', 'pool ready ms', 'direct servers', 'direct tree RSS', 'direct ready ms', 'RSS pool/direct', 'ready pool/direct'],
          rows,
          notes,
        },
      ],
      targets: [
        target(
          '200 sessions on 3 servers: exactly 3 server processes',
          p200 ? `${pool200Runs.map((r) => r.processes.join('+')).join(', ')} (per server, per round)` : 'no successful run',
          p200 ? pool200Runs.every((r) => r.processes.every((n) => n === 1)) : undefined,
        ),
        target('200 sessions: tree RSS ≤ 1.2× that of 1 session', p200 && pool1 ? `${fmtRatio(rss200)} (${fmtMb(p200.rss)} vs ${fmtMb(pool1.rss)})` : 'no successful run', Number.isFinite(rss200) ? rss200 <= 1.2 : undefined),
      ],
      raw: { rounds, directRounds, servers: SERVERS, poolSizes: POOL_SIZES, directSizes: DIRECT_SIZES, runs },
    };
  },
};
