// Part 2: the gateway. The daemon's Streamable HTTP endpoints (`/mcp/everything` and the
// aggregated `/mcp`) against the peers users would pick instead — mcp-hub (`/mcp`, legacy SSE),
// supergateway `--stateful` (a child per session) and mcp-proxy (one shared child) — and a direct
// stdio SDK client (the floor), all fronting @modelcontextprotocol/server-everything over stdio,
// all called the same way (SDK `Client`, tool `echo`), all in this one run:
// - every gateway runs for the whole section, started at once, bound to 127.0.0.1 only
//   (lib/gateways.mjs; its sockets are checked with `ss` before and after the rounds);
// - one long-lived client session per path does the calls; rounds alternate the order of the
//   paths (forward, then reversed), sequential calls in that order, then concurrency 16 in the
//   opposite one; ratios are per round, then the median over rounds, with their range;
// - per round, after the calls: tree RSS of each gateway (one `ps` snapshot), then the time a
//   new session takes to be ready (connect + initialize + tools/list; closed with DELETE).
// A gateway that does not start, or fails during the run, is reported in the table and left out;
// the run goes on.
import { runCalls } from '../lib/load.mjs';
import {
  closeSession,
  connectHttp,
  connectStdio,
  cpuUsOf,
  echoCall,
  EVERYTHING_VERSION,
  GATEWAYS,
  installedVersion,
  listeningOf,
  mainThreadCpuUs,
  missingReason,
  outputTail,
  startGateway,
  stopGateway,
  treePids,
  waitReady,
} from '../lib/gateways.mjs';
import { psSnapshot, treeRss } from '../lib/procs.mjs';
import { measureFootprint, measureSessionReady } from './gatewayAlone.mjs';
import { floor, fmt, fmtMb, fmtRange, fmtRatio, median, ratio, summarize, target } from '../lib/stats.mjs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';

const CONCURRENCY = 16;
const START_TIMEOUT_MS = 30_000;
const DAEMON_PATHS = ['daemon-all', 'daemon-server'];

/** Per-round ratios a/b of one statistic (`rounds[i][key]`), their median and range. */
function paired(a, b, key) {
  const ratios = [];
  for (let i = 0; i < Math.max(a.rounds.length, b.rounds.length); i++) {
    const x = a.rounds[i]?.[key];
    const y = b.rounds[i]?.[key];
    if (x !== undefined && y !== undefined) ratios.push(ratio(x, y));
  }
  const finite = ratios.filter(Number.isFinite);
  return { median: finite.length > 0 ? median(finite) : Number.NaN, ratios, text: finite.length > 0 ? `${fmtRatio(median(finite))} ${fmtRange(finite)}` : '–' };
}

export const gatewaySection = {
  id: 'gateway',
  part: 2,
  title: 'Gateway: daemon /mcp vs mcp-hub, supergateway, mcp-proxy (server-everything over stdio, tool echo)',
  async run(ctx) {
    const rounds = ctx.quick ? 3 : 5;
    const seqPerRound = ctx.quick ? 150 : 400;
    const concPerRound = ctx.quick ? 400 : 1000;
    const warmup = ctx.quick ? { seq: 200, conc: 400 } : { seq: 300, conc: 600 };
    const readyPerRound = ctx.quick ? 1 : 2;
    const token = randomBytes(24).toString('base64url');

    /** Every measured path: the direct floor and one per gateway endpoint. */
    const paths = [{ id: 'direct', label: 'direct SDK client over stdio (floor)', gatewayId: undefined, transport: 'stdio', tool: 'echo', rounds: [], ready: [], status: 'pending' }];
    const handles = new Map();
    const gatewayInfo = [];
    const notes = [];
    const loopbackFindings = [];

    const checkSockets = (when) => {
      ctx.checkLoopback(`gateway: ${when}`);
      const snap = psSnapshot();
      for (const handle of handles.values()) {
        if (handle.exit) continue;
        const found = listeningOf(treePids(handle.pid, snap));
        loopbackFindings.push({ when, gateway: handle.gateway.id, ...found });
        if (!found.checked) notes.push(`could not list ${handle.gateway.label}'s sockets (no ss, no /proc/net): loopback-only was not verified`);
        const bad = found.sockets.filter((s) => !s.loopback);
        if (bad.length > 0) {
          // The shim should make this impossible; if it happens anyway, stop that gateway now.
          const reason = `listened on ${bad.map((s) => s.local).join(', ')} (not loopback): stopped`;
          for (const path of paths.filter((p) => p.gatewayId === handle.gateway.id)) path.status = reason;
          handle.child.kill('SIGKILL');
          notes.push(`${handle.gateway.label} ${reason}`);
        }
      }
    };

    let direct;
    try {
      // --- Start everything at once ----------------------------------------------------------
      const starting = GATEWAYS.map(async (gateway) => {
        const version = gateway.pkg ? installedVersion(gateway.pkg) : undefined;
        const info = { id: gateway.id, pkg: gateway.pkg, expectedVersion: gateway.version, installedVersion: version };
        gatewayInfo.push(info);
        const missing = missingReason(gateway);
        if (missing) {
          info.error = missing;
          return { gateway, error: `failed to start: ${missing}` };
        }
        if (gateway.version && version !== gateway.version) notes.push(`${gateway.pkg} ${version} is installed, the bench expects ${gateway.version}`);
        let handle;
        try {
          handle = await startGateway(gateway, { mark: ctx.mark(`gw-${gateway.id}`), token });
        } catch (error) {
          info.error = error.message;
          return { gateway, error: `failed to start: ${error.message}` };
        }
        handles.set(gateway.id, handle);
        info.pid = handle.pid;
        info.port = handle.port;
        const sessions = [];
        for (const endpoint of gateway.endpoints) {
          try {
            const { session, url } = await waitReady(handle, endpoint, START_TIMEOUT_MS);
            sessions.push({ endpoint, session, url });
          } catch (error) {
            sessions.push({ endpoint, error: `failed to start: ${error.message}` });
          }
        }
        info.readyAfterMs = Math.round(performance.now() - handle.startedAt);
        return { gateway, handle, sessions };
      });
      const started = await Promise.all(starting);
      direct = await connectStdio(ctx.mark('gw-direct')).catch((error) => ({ error }));
      if (direct.error) paths[0].status = `failed to start: ${direct.error.message}`;
      else {
        paths[0].session = direct;
        paths[0].status = 'ok';
      }
      for (const { gateway, error, handle, sessions } of started) {
        for (const endpoint of gateway.endpoints) {
          const s = sessions?.find((x) => x.endpoint.id === endpoint.id);
          paths.push({
            id: endpoint.id,
            label: endpoint.label,
            gatewayId: gateway.id,
            reference: gateway.reference === true,
            transport: endpoint.transport,
            tool: endpoint.tool,
            endpoint,
            handle,
            url: s?.url,
            session: s?.session,
            status: error ?? s?.error ?? 'ok',
            rounds: [],
            ready: [],
          });
        }
      }
      checkSockets('all started');

      const live = () => paths.filter((p) => p.status === 'ok');
      const fail = (path, when, error) => {
        path.status = `failed during the ${when}: ${String(error?.message ?? error).split('\n')[0].slice(0, 200)}${path.handle?.exit ? ` (gateway exited: ${outputTail(path.handle, 2)})` : ''}`;
      };

      // --- Warm-up: JIT on every path, client and gateway ------------------------------------
      for (const path of live()) {
        try {
          await runCalls(echoCall(path.session, path.tool), warmup.seq, 1);
          await runCalls(echoCall(path.session, path.tool), warmup.conc, CONCURRENCY);
        } catch (error) {
          fail(path, 'warm-up', error);
        }
      }

      // --- Rounds ----------------------------------------------------------------------------
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? live() : live().reverse();
        const snap = psSnapshot();
        const pidsOf = (path) => (path.id === 'direct' ? [path.session.transport.pid].filter(Boolean) : treePids(path.handle.pid, snap));
        const chunk = async (path, count, concurrency) => {
          const pids = pidsOf(path);
          const server0 = cpuUsOf(pids);
          const bytes0 = path.handle?.outputBytes ?? 0;
          const main0 = mainThreadCpuUs();
          const result = await runCalls(echoCall(path.session, path.tool), count, concurrency);
          return { ...result, mainCpuUs: mainThreadCpuUs() - main0, serverCpuUs: cpuUsOf(pids) - server0, loggedBytes: (path.handle?.outputBytes ?? 0) - bytes0 };
        };
        const measured = new Map();
        for (const path of order) {
          if (path.status !== 'ok') continue;
          try {
            measured.set(path, { seq: await chunk(path, seqPerRound, 1) });
          } catch (error) {
            fail(path, `sequential calls of round ${round + 1}`, error);
          }
        }
        for (const path of [...order].reverse()) {
          if (path.status !== 'ok' || !measured.has(path)) continue;
          try {
            measured.get(path).conc = await chunk(path, concPerRound, CONCURRENCY);
          } catch (error) {
            fail(path, `concurrent calls of round ${round + 1}`, error);
          }
        }
        // Tree RSS with each path's one measuring session open (direct: its server child).
        const rssSnap = psSnapshot();
        for (const [path, m] of measured) {
          if (path.status !== 'ok' || !m.conc) continue;
          const rssRoot = path.id === 'direct' ? path.session.transport.pid : path.handle.pid;
          const tree = treeRss(rssRoot, rssSnap);
          path.rounds[round] = {
            seqP50: median(m.seq.latenciesUs),
            seqP99: summarize(m.seq.latenciesUs).p99,
            seqCallsPerSec: (m.seq.calls / m.seq.wallMs) * 1000,
            concP50: median(m.conc.latenciesUs),
            concP99: summarize(m.conc.latenciesUs).p99,
            concCallsPerSec: (m.conc.calls / m.conc.wallMs) * 1000,
            serverCpuSeq: m.seq.serverCpuUs / m.seq.calls,
            serverCpuConc: m.conc.serverCpuUs / m.conc.calls,
            clientCpuSeq: m.seq.cpuUs / m.seq.calls,
            clientCpuConc: m.conc.cpuUs / m.conc.calls,
            clientMainCpuSeq: m.seq.mainCpuUs / m.seq.calls,
            clientMainCpuConc: m.conc.mainCpuUs / m.conc.calls,
            loggedBytesPerCall: (m.seq.loggedBytes + m.conc.loggedBytes) / (m.seq.calls + m.conc.calls),
            rssBytes: tree.bytes,
            processes: tree.processes,
            latenciesUs: { seq: m.seq.latenciesUs.map((v) => Math.round(v * 10) / 10), conc: m.conc.latenciesUs.map((v) => Math.round(v * 10) / 10) },
          };
        }
        // A new session on the running gateway (direct: a new child). Closed at once (DELETE).
        for (const path of order) {
          if (path.status !== 'ok') continue;
          for (let i = 0; i < readyPerRound; i++) {
            const t0 = performance.now();
            let session;
            try {
              session = path.id === 'direct' ? await connectStdio(ctx.mark('gw-direct-ready')) : await connectHttp(path.url, { transport: path.transport, headers: path.handle.spec.headers });
              const ms = performance.now() - t0;
              path.ready.push({ round, ms });
              if (path.rounds[round]) path.rounds[round].readyMs = ms;
            } catch (error) {
              path.ready.push({ round, error: String(error?.message ?? error).slice(0, 200) });
            } finally {
              await closeSession(session);
            }
          }
        }
        // Let what a session close sets off finish before the next round's calls (mcp-hub logs
        // thousands of lines per closed SSE session; supergateway stops that session's child).
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      checkSockets('after the rounds');
    } finally {
      for (const path of paths) if (path.id !== 'direct') await closeSession(path.session);
      await closeSession(direct?.error ? undefined : direct);
      const stops = await Promise.all([...handles.values()].map(async (handle) => ({ id: handle.gateway.id, killed: await stopGateway(handle), exit: handle.exit, outputBytes: handle.outputBytes })));
      for (const stop of stops) {
        const info = gatewayInfo.find((g) => g.id === stop.id);
        Object.assign(info, { stop });
        if (stop.killed.length > 0) notes.push(`${stop.id} did not stop within 5 s of SIGTERM: SIGKILLed ${stop.killed.length} process(es)`);
      }
    }

    const main = report({ paths, rounds, seqPerRound, concPerRound, warmup, readyPerRound, notes, gatewayInfo, loopbackFindings });
    // The two targets the shared rounds cannot judge as worded, each on a gateway of its own.
    const ready = await measureSessionReady(ctx, { warmup: 20, sessions: ctx.quick ? 10 : 20, token });
    const footprint = await measureFootprint(ctx, { rounds: ctx.quick ? 2 : 3, calls: { rounds: 2, seq: seqPerRound, conc: concPerRound }, token });
    return {
      tables: [...main.tables, ready.table, footprint.table],
      targets: [...main.targets, ...ready.targets, ...footprint.targets],
      raw: { ...main.raw, sessionReady: ready.raw, footprint: footprint.raw },
    };
  },
};

const CLIENT_ROW_NAME = { 'daemon-all': 'daemon /mcp', 'daemon-server': 'daemon /mcp/everything', 'http-floor': 'bare SDK server' };

/**
 * The floor under "p50 ≤ 0.5× mcp-hub's": each call's latency includes the client's own work for
 * it, on the one thread that runs the client's JS, and that work is about the same for every call
 * (so its CPU per call bounds the p50, and strictly the mean: wall time ≥ that thread's CPU time).
 * A server that answers in no time still leaves the client's share.
 */
function p50Floor(hub, clientRows) {
  const budget = 0.5 * hub.summary.seq.p50;
  const each = clientRows.map((p) => `${CLIENT_ROW_NAME[p.id]} ${fmt(p.summary.clientCpuSeq)} (main thread ${fmt(p.summary.clientMainCpuSeq)})`).join(', ');
  const least = Math.min(...clientRows.map((p) => p.summary.clientMainCpuSeq).filter(Number.isFinite));
  const verdict = !Number.isFinite(least)
    ? 'not judged (no main-thread CPU from /proc)'
    : least > budget
      ? `not reachable by any server with this client (its main thread alone: ${fmt(least)} µs per call, ${fmtRatio(least / budget)} the budget)`
      : `not excluded by the client (its main thread: ${fmt(least)} µs per call, ${fmtRatio(least / budget)} the budget)`;
  return floor(`client CPU per sequential call vs 0.5× mcp-hub's p50`, `budget ${fmt(budget)} µs; client CPU µs/call: ${each}: ${verdict}`);
}

/**
 * The floor under "calls/s at concurrency 16 ≥ 2× the best peer": two upper bounds on the calls/s
 * of this client whatever the server, from its CPU per call at concurrency 16. (1) Its JS runs on
 * one thread, which cannot be busy longer than the wall clock: calls/s ≤ 1 s ÷ that thread's CPU
 * per call. (2) All its threads share the machine's CPUs with the servers, which cost ≥ 0:
 * calls/s ≤ CPUs × 1 s ÷ the process's CPU per call. The lower of the two holds; the best row
 * (the cheapest client side) is what any server could reach at most.
 */
function concFloor(measuredPeers, clientRows, rounds) {
  const cpus = os.availableParallelism?.() ?? os.cpus().length;
  const bestPerRound = [];
  for (let i = 0; i < rounds; i++) {
    const values = measuredPeers.map((p) => p.rounds[i]?.concCallsPerSec).filter(Number.isFinite);
    if (values.length > 0) bestPerRound.push(Math.max(...values));
  }
  const need = 2 * median(bestPerRound);
  const bounds = clientRows.map((p) => {
    const thread = 1e6 / p.summary.clientMainCpuConc;
    const cores = (cpus * 1e6) / p.summary.clientCpuConc;
    return { p, thread, cores, bound: Math.min(...[thread, cores].filter(Number.isFinite)) };
  });
  const best = bounds.reduce((a, b) => (b.bound > a.bound ? b : a));
  const each = bounds
    .map(({ p, thread, cores, bound }) => `${CLIENT_ROW_NAME[p.id]} ≤ ${fmt(bound)} (${fmt(p.summary.clientMainCpuConc)} µs → ${fmt(thread)}; ${fmt(p.summary.clientCpuConc)} µs → ${fmt(cores)})`)
    .join(', ');
  const verdict = !Number.isFinite(best.bound) ? 'not judged' : best.bound < need ? 'not reachable by any server with this client' : 'not excluded by the client';
  return floor(`client CPU per call at concurrency ${CONCURRENCY} vs 2× the best peer`, `need ${fmt(need)} calls/s; this client allows at most the lower of 1 thread ÷ its main-thread CPU/call and ${cpus} CPUs ÷ its process CPU/call: ${each}: ${verdict}`);
}

/** A status cut for a table cell; the whole of it goes in a note. */
function short(text, max = 90) {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function aggregate(path) {
  const done = path.rounds.filter(Boolean);
  if (done.length === 0) return undefined;
  const seq = done.flatMap((r) => r.latenciesUs.seq);
  const conc = done.flatMap((r) => r.latenciesUs.conc);
  const readyMs = path.ready.filter((r) => r.ms !== undefined).map((r) => r.ms);
  return {
    rounds: done.length,
    seq: summarize(seq),
    conc: summarize(conc),
    concCallsPerSec: median(done.map((r) => r.concCallsPerSec)),
    seqCallsPerSec: median(done.map((r) => r.seqCallsPerSec)),
    serverCpuSeq: median(done.map((r) => r.serverCpuSeq)),
    serverCpuConc: median(done.map((r) => r.serverCpuConc)),
    clientCpuSeq: median(done.map((r) => r.clientCpuSeq)),
    clientCpuConc: median(done.map((r) => r.clientCpuConc)),
    clientMainCpuSeq: median(done.map((r) => r.clientMainCpuSeq)),
    clientMainCpuConc: median(done.map((r) => r.clientMainCpuConc)),
    loggedBytesPerCall: median(done.map((r) => r.loggedBytesPerCall)),
    rssBytes: median(done.map((r) => r.rssBytes)),
    processes: Math.max(...done.map((r) => r.processes)),
    readyMs: readyMs.length > 0 ? median(readyMs) : Number.NaN,
    readyN: readyMs.length,
    readyErrors: path.ready.filter((r) => r.error).length,
  };
}

function report({ paths, rounds, seqPerRound, concPerRound, warmup, readyPerRound, notes, gatewayInfo, loopbackFindings }) {
  for (const path of paths) path.summary = aggregate(path);
  const byId = new Map(paths.map((p) => [p.id, p]));
  const directPath = byId.get('direct');
  const measured = (p) => p?.summary !== undefined;
  const peers = paths.filter((p) => p.gatewayId !== undefined && p.gatewayId !== 'daemon' && !p.reference);
  const references = paths.filter((p) => p.reference);

  // Table 1: every path, absolute numbers and ratios to the direct floor.
  const rows = paths.map((p) => {
    const s = p.summary;
    if (!s) return [p.label, p.transport, p.status === 'ok' ? 'no round completed' : short(p.status), '', '', '', '', '', '', '', '', ''];
    const vsDirect = measured(directPath) && p !== directPath;
    return [
      p.label,
      p.transport,
      fmt(s.seq.p50),
      fmt(s.seq.p99),
      fmt(s.concCallsPerSec),
      `${fmt(s.serverCpuSeq)} / ${fmt(s.serverCpuConc)}`,
      `${fmt(s.clientCpuSeq)} / ${fmt(s.clientCpuConc)}`,
      `${fmt(s.clientMainCpuSeq)} / ${fmt(s.clientMainCpuConc)}`,
      s.readyN > 0 ? fmt(s.readyMs) : s.readyErrors > 0 ? 'failed' : '–',
      `${fmtMb(s.rssBytes)} (${s.processes})`,
      vsDirect ? paired(p, directPath, 'seqP50').text : p === directPath ? 'floor' : '–',
      vsDirect ? paired(p, directPath, 'concCallsPerSec').text : p === directPath ? 'floor' : '–',
    ];
  });
  for (const p of paths) {
    if (p.status !== 'ok' && p.summary) notes.push(`${p.label}: ${p.status} (the rounds before that are kept)`);
    else if (p.status !== 'ok' && short(p.status) !== p.status) notes.push(`${p.label}: ${p.status}`);
  }

  // Table 2: each daemon endpoint against each peer and the floor.
  const versus = [];
  for (const other of [...peers, ...references, directPath]) {
    for (const id of DAEMON_PATHS) {
      const d = byId.get(id);
      if (!d) continue;
      if (!measured(d) || !measured(other)) {
        versus.push([d.label, other.label, `not measured (${!measured(other) ? 'see above' : d.status.split(':')[0]})`, '', '', '', '', '']);
        continue;
      }
      versus.push([
        d.label,
        other.label,
        paired(d, other, 'seqP50').text,
        paired(d, other, 'seqP99').text,
        paired(d, other, 'concCallsPerSec').text,
        Number.isFinite(d.summary.readyMs) && Number.isFinite(other.summary.readyMs) ? fmtRatio(ratio(d.summary.readyMs, other.summary.readyMs)) : '–',
        fmtRatio(ratio(d.summary.rssBytes, other.summary.rssBytes)),
        fmtRatio(ratio(d.summary.serverCpuConc, other.summary.serverCpuConc)),
      ]);
    }
  }

  // Targets: daemon /mcp p50 ≤ 0.5× mcp-hub's; calls/s at concurrency 16 ≥ 2× the best peer.
  const targets = [];
  const hub = byId.get('mcp-hub');
  for (const id of DAEMON_PATHS) {
    const d = byId.get(id);
    const label = `daemon ${id === 'daemon-all' ? '/mcp' : '/mcp/everything'} p50 ≤ 0.5× mcp-hub's /mcp (sequential)`;
    if (!measured(d) || !measured(hub)) targets.push(target(label, `not measured (${!measured(hub) ? `mcp-hub: ${short(hub?.status ?? 'absent', 60)}` : `daemon: ${short(d?.status ?? 'absent', 60)}`})`, undefined));
    else {
      const r = paired(d, hub, 'seqP50');
      targets.push(target(label, `${r.text} (${fmt(d.summary.seq.p50)} vs ${fmt(hub.summary.seq.p50)} µs)`, r.median <= 0.5));
    }
  }
  // The client's share: every path is called by the same SDK client in this process, on the same
  // CPUs as the servers. Its rows over Streamable HTTP (the daemon's, and the bare SDK server's,
  // which has nothing behind it) say what the client alone costs per call.
  const clientRows = [...DAEMON_PATHS, 'http-floor'].map((id) => byId.get(id)).filter(measured);
  if (measured(hub) && clientRows.length > 0) targets.push(p50Floor(hub, clientRows));

  const bestPeer = {};
  for (const id of DAEMON_PATHS) {
    const d = byId.get(id);
    const label = `daemon ${id === 'daemon-all' ? '/mcp' : '/mcp/everything'} calls/s at concurrency ${CONCURRENCY} ≥ 2× the best peer`;
    const measuredPeers = peers.filter(measured);
    if (!measured(d) || measuredPeers.length === 0) {
      targets.push(target(label, `not measured (${measuredPeers.length === 0 ? 'no peer measured' : `daemon: ${short(d?.status ?? 'absent', 60)}`})`, undefined));
      continue;
    }
    // Per round: the daemon ÷ the fastest peer of that round.
    const ratios = [];
    const winners = {};
    for (let i = 0; i < rounds; i++) {
      const x = d.rounds[i]?.concCallsPerSec;
      const candidates = measuredPeers.filter((p) => p.rounds[i]?.concCallsPerSec !== undefined);
      if (x === undefined || candidates.length === 0) continue;
      const best = candidates.reduce((a, b) => (b.rounds[i].concCallsPerSec > a.rounds[i].concCallsPerSec ? b : a));
      winners[best.id] = (winners[best.id] ?? 0) + 1;
      ratios.push(ratio(x, best.rounds[i].concCallsPerSec));
    }
    const m = median(ratios);
    const names = Object.entries(winners)
      .sort((a, b) => b[1] - a[1])
      .map(([pid, n]) => `${pid} ${n}/${ratios.length}`)
      .join(', ');
    bestPeer[id] = { median: m, ratios, winners };
    targets.push(target(label, `${fmtRatio(m)} ${fmtRange(ratios)} (best peer per round: ${names})`, m >= 2));
  }
  const measuredPeers = peers.filter(measured);
  if (measuredPeers.length > 0 && clientRows.length > 0) targets.push(concFloor(measuredPeers, clientRows, rounds));

  const concLabel = `c${CONCURRENCY}`;
  return {
    tables: [
      {
        title: `${rounds} interleaved rounds (order forward / reversed) per path: ${seqPerRound} sequential calls, ${concPerRound} at concurrency ${CONCURRENCY}, ${readyPerRound} new session(s); after ${warmup.seq} + ${warmup.conc} warm-up calls. p50/p99 over all rounds; calls/s, CPU, RSS: median of rounds; ratios: median of per-round path ÷ direct [range]`,
        columns: ['path', 'transport', 'seq p50 µs', 'seq p99 µs', `${concLabel} calls/s`, 'server CPU µs/call seq / c16', 'client CPU µs/call seq / c16', 'client main thread µs/call seq / c16', 'new session ready ms', 'tree RSS (procs)', 'p50 ÷ direct', `${concLabel} calls/s ÷ direct`],
        rows,
        notes: [
          'server CPU = the gateway and its children (the server-everything processes), from /proc (10 ms ticks); direct: its server child. client CPU = this bench process, every thread; client main thread = the one thread that runs the client\'s JS (/proc schedstat, ns).',
          'tree RSS = the gateway and its descendants with its measuring sessions open (direct: its server child; the client side is never counted). The daemon endpoints share one daemon, so its tree holds three sessions and their calls: the one-session comparison is the footprint table below.',
          ...notes,
        ],
      },
      {
        title: 'The daemon against each peer and the floor: median of per-round daemon ÷ other [range] (lower is better for latency, CPU and RSS; higher for calls/s)',
        columns: ['daemon endpoint', 'against', 'seq p50', 'seq p99', `${concLabel} calls/s`, 'new session ready', 'tree RSS', `server CPU/call ${concLabel}`],
        rows: versus,
      },
    ],
    targets,
    raw: {
      rounds,
      seqPerRound,
      concPerRound,
      warmup,
      readyPerRound,
      concurrency: CONCURRENCY,
      serverEverything: { expectedVersion: EVERYTHING_VERSION, installedVersion: installedVersion('@modelcontextprotocol/server-everything') },
      gateways: gatewayInfo,
      loopback: loopbackFindings,
      bestPeer,
      paths: paths.map((p) => ({
        id: p.id,
        label: p.label,
        gateway: p.gatewayId,
        reference: p.reference === true,
        transport: p.transport,
        tool: p.tool,
        url: p.url,
        status: p.status,
        summary: p.summary,
        ready: p.ready,
        rounds: p.rounds,
      })),
    },
  };
}
