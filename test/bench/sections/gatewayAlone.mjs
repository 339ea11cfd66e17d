// Part 2's measurements that need a gateway started for them alone, after the interleaved rounds:
// - footprint: the daemon and mcp-hub each started fresh in turn (order alternating by round),
//   fronting the same one server, with exactly one client session doing the same calls; then the
//   tree RSS (the gateway and its descendants, one `ps` snapshot). In the interleaved rounds the
//   daemon's tree holds three measuring sessions (both eras, each with its calls) against one for
//   every peer, so its RSS there is not the "one session" of the target.
// - session ready: a daemon whose config also has a server that never answers `initialize`
//   (fixtures/servers/hanging.mjs); after warm-up sessions, new sessions opened one by one on
//   `/mcp`, legacy (SDK v1: initialize + notifications/initialized + tools/list) and modern
//   (SDK v2 pinned to 2026-07-28: server/discover + tools/list) alternating, each closed before
//   the next. The first session waits the daemon's join window for the hanging server once;
//   warm-up sessions absorb it, as they absorb compiling the daemon's code.
import { closeSession, connectHttp, echoCall, GATEWAYS, missingReason, outputTail, startGateway, stopGateway, waitReady } from '../lib/gateways.mjs';
import { runCalls } from '../lib/load.mjs';
import { psSnapshot, treeRss } from '../lib/procs.mjs';
import { fmt, fmtMb, fmtRange, fmtRatio, median, percentile, ratio, target } from '../lib/stats.mjs';

const CONCURRENCY = 16;
const START_TIMEOUT_MS = 30_000;
/** The daemon's endpoint in both measurements: the aggregated `/mcp` most clients are given. */
const DAEMON_LEGACY = 'daemon-all';
const DAEMON_MODERN = 'daemon-all-modern';

/** One gateway started alone: one session, its calls, then its tree's RSS. Always stopped. */
async function footprintOnce(ctx, gateway, endpointId, calls, token) {
  const endpoint = gateway.endpoints.find((e) => e.id === endpointId);
  const handle = await startGateway(gateway, { mark: ctx.mark(`fp-${gateway.id}`), token });
  let session;
  try {
    ({ session } = await waitReady(handle, endpoint, START_TIMEOUT_MS));
    const call = echoCall(session, endpoint.tool);
    for (let i = 0; i < calls.rounds; i++) {
      await runCalls(call, calls.seq, 1);
      await runCalls(call, calls.conc, CONCURRENCY);
    }
    // What the calls left behind settles (timers, sockets, a collection) before the reading.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const tree = treeRss(handle.pid, psSnapshot());
    return { rssBytes: tree.bytes, processes: tree.processes };
  } catch (error) {
    return { error: `${String(error?.message ?? error).split('\n')[0].slice(0, 200)}${handle.exit ? ` (exited: ${outputTail(handle, 2)})` : ''}` };
  } finally {
    await closeSession(session);
    await stopGateway(handle);
  }
}

/** Tree RSS of the daemon and of mcp-hub, each alone with one session, over `rounds` alternating rounds. */
export async function measureFootprint(ctx, { rounds, calls, token }) {
  const daemon = GATEWAYS.find((g) => g.id === 'daemon');
  const hub = GATEWAYS.find((g) => g.id === 'mcp-hub');
  const hubMissing = missingReason(hub);
  const runs = { daemon: [], hub: [] };
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['daemon', 'hub'] : ['hub', 'daemon'];
    for (const which of order) {
      if (which === 'hub' && hubMissing) continue;
      runs[which][round] = which === 'daemon' ? await footprintOnce(ctx, daemon, DAEMON_LEGACY, calls, token) : await footprintOnce(ctx, hub, 'mcp-hub', calls, token);
    }
  }
  const ok = (list) => list.filter((r) => r?.rssBytes !== undefined);
  const ratios = [];
  for (let round = 0; round < rounds; round++) {
    const d = runs.daemon[round]?.rssBytes;
    const h = runs.hub[round]?.rssBytes;
    if (d !== undefined && h !== undefined) ratios.push(ratio(d, h));
  }
  const row = (label, list) => {
    const done = ok(list);
    const errors = list.filter((r) => r?.error).map((r) => r.error);
    if (done.length === 0) return [label, errors[0] ?? hubMissing ?? 'not measured', '', ''];
    return [label, fmtMb(median(done.map((r) => r.rssBytes))), done.map((r) => fmtMb(r.rssBytes)).join(', '), String(Math.max(...done.map((r) => r.processes)))];
  };
  const label = 'daemon tree RSS with one session ≤ mcp-hub\'s on the same server';
  const dMedian = median(ok(runs.daemon).map((r) => r.rssBytes));
  const hMedian = median(ok(runs.hub).map((r) => r.rssBytes));
  const targets = [
    ratios.length === 0
      ? target(label, `not measured (${runs.daemon.find((r) => r?.error)?.error ?? runs.hub.find((r) => r?.error)?.error ?? hubMissing ?? 'no round completed'})`, undefined)
      : target(label, `${fmtRatio(median(ratios))} ${fmtRange(ratios)} (${fmtMb(dMedian)} vs ${fmtMb(hMedian)})`, median(ratios) <= 1),
  ];
  return {
    table: {
      title: `Footprint with one session: each gateway started alone, fronting server-everything over stdio, one client session doing ${calls.rounds} × (${calls.seq} sequential + ${calls.conc} at concurrency ${CONCURRENCY}) echo calls, then its tree RSS after 1 s; ${rounds} rounds, order alternating (daemon: /mcp, SDK v1 client)`,
      columns: ['gateway', 'tree RSS (median)', 'per round', 'processes'],
      rows: [row('mcpool daemon /mcp', runs.daemon), row('mcp-hub 4.2.1 /mcp (SSE)', runs.hub)],
    },
    targets,
    raw: { rounds, calls, runs, ratios },
  };
}

/** Opens one session on `url` and lists its tools; the time it took. Closed before returning. */
async function openTimed(url, transport, headers) {
  const started = performance.now();
  const session = await connectHttp(url, { transport, headers });
  const ms = performance.now() - started;
  await closeSession(session);
  return { ms, tools: session.tools };
}

/** New `/mcp` sessions, legacy and modern, on a daemon one of whose two servers hangs. */
export async function measureSessionReady(ctx, { warmup, sessions, token }) {
  const daemon = GATEWAYS.find((g) => g.id === 'daemon');
  const kinds = [DAEMON_LEGACY, DAEMON_MODERN].map((id) => daemon.endpoints.find((e) => e.id === id));
  const times = new Map(kinds.map((k) => [k.id, []]));
  const notes = [];
  let error;
  const handle = await startGateway(daemon, { mark: ctx.mark('ready-daemon'), token, hanging: true });
  try {
    const url = `http://127.0.0.1:${handle.port}${kinds[0].path}`;
    const first = await waitReady(handle, kinds[0], START_TIMEOUT_MS);
    await closeSession(first.session);
    for (let i = 0; i < warmup; i++) for (const kind of kinds) await openTimed(url, kind.transport, handle.spec.headers);
    for (let i = 0; i < sessions; i++) {
      for (const kind of i % 2 === 0 ? kinds : [...kinds].reverse()) {
        const { ms, tools } = await openTimed(url, kind.transport, handle.spec.headers);
        // The hanging server must still be out of the session for the figure to mean anything.
        if (tools.some((name) => name.startsWith('hanging__'))) notes.push('the hanging server answered: these sessions did not have a server hanging');
        times.get(kind.id).push(ms);
      }
    }
  } catch (e) {
    error = `${String(e?.message ?? e).split('\n')[0].slice(0, 200)}${handle.exit ? ` (exited: ${outputTail(handle, 2)})` : ''}`;
  } finally {
    await stopGateway(handle);
  }
  const names = { [DAEMON_LEGACY]: 'legacy (initialize + notifications/initialized + tools/list)', [DAEMON_MODERN]: 'modern (server/discover + tools/list)' };
  const rows = kinds.map((kind) => {
    const list = times.get(kind.id);
    if (list.length === 0) return [kind.label, error ?? 'not measured', '', '', ''];
    return [kind.label, String(list.length), fmt(median(list), 2), fmt(percentile(list, 90), 2), fmt(Math.min(...list), 2)];
  });
  const targets = kinds.map((kind) => {
    const list = times.get(kind.id);
    const label = `new /mcp session ready ≤ 10 ms, ${names[kind.id]}, its server warm, another server hanging`;
    return list.length === 0 ? target(label, `not measured (${error ?? 'no session'})`, undefined) : target(label, `p50 ${fmt(median(list), 2)} ms (p90 ${fmt(percentile(list, 90), 2)} ms, ${list.length} sessions)`, median(list) <= 10);
  });
  return {
    table: {
      title: `New /mcp sessions on a warm daemon whose config also has a server that never answers (fixtures/servers/hanging.mjs): after ${warmup} warm-up sessions of each kind, ${sessions} of each, one by one, kinds alternating; ready = connect + tools/list on the client, each session closed before the next`,
      columns: ['endpoint', 'sessions', 'ready p50 ms', 'p90 ms', 'min ms'],
      rows,
      notes: [...new Set(notes)],
    },
    targets,
    raw: { warmup, sessions, times: Object.fromEntries(times), error },
  };
}
