#!/usr/bin/env node
// How long does a new `/mcp` session take to be ready when its server is warm? Starts the daemon
// (part 2's config: server-everything over stdio, 127.0.0.1), waits until its server is up, then
// opens N sessions one by one with the bench's own clients (SDK v1 for legacy: initialize +
// notifications/initialized + tools/list; SDK v2 pinned to 2026-07-28 for modern: server/discover
// + tools/list), each closed before the next. Every HTTP request the client makes is timed on the
// client (request sent → body read), so the per-step figures show which step the time goes to.
// `node test/bench/sessionReady.mjs [--n=20] [--warmup=20] [--endpoint=daemon-all|daemon-all-modern|daemon-server] [--prof-dir=DIR] [--gateway=http-floor]`
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from '@modelcontextprotocol/client';
import { GATEWAYS, closeSession, startGateway, stopGateway, waitReady } from './lib/gateways.mjs';
import { marker } from './lib/procs.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const n = Math.min(500, Math.max(1, Number(args.n ?? 20)));
// With 5, the endpoint measured first was the slower one in most runs, whichever it was (the
// daemon's writing of the initialize answer 1–2.3 ms against 0.3–1.3 ms): its code was still
// being compiled. More sessions first bring both endpoints to the same state.
const warmup = Math.min(200, Math.max(0, Number(args.warmup ?? 20)));
// `--gateway=http-floor`: the bare SDK Streamable HTTP server, the floor of these figures.
const gatewayId = args.gateway ?? 'daemon';
const endpointIds = (args.endpoint ?? (gatewayId === 'daemon' ? 'daemon-all,daemon-all-modern' : gatewayId)).split(',');
const TIMEOUT_MS = 30_000;

const daemon = GATEWAYS.find((g) => g.id === gatewayId);
if (!daemon) throw new Error(`--gateway must be one of ${GATEWAYS.map((g) => g.id).join(', ')}`);
// `--prof-dir=DIR`: the daemon runs under V8's CPU profiler and writes its main thread's profile there on exit.
const nodeArgs = args['prof-dir'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${args['prof-dir']}`, '--cpu-prof-interval=100'];
const handle = await startGateway(daemon, { mark: marker(`ready${process.pid}`, 'daemon'), token: randomBytes(24).toString('base64url'), nodeArgs });
try {
  for (const id of endpointIds) {
    const endpoint = daemon.endpoints.find((e) => e.id === id);
    if (!endpoint) throw new Error(`--endpoint must be among ${daemon.endpoints.map((e) => e.id).join(', ')}`);
    const { session, url } = await waitReady(handle, endpoint, 60_000);
    await closeSession(session);
    // Sessions first: the daemon's code paths compiled, the client's too.
    for (let i = 0; i < warmup; i++) await openOne(url, endpoint.transport, handle.spec.headers);
    const steps = new Map();
    const totals = [];
    for (let i = 0; i < n; i++) {
      const { totalMs, timings } = await openOne(url, endpoint.transport, handle.spec.headers);
      totals.push(totalMs);
      for (const [step, ms] of timings) steps.set(step, [...(steps.get(step) ?? []), ms]);
    }
    console.log(`${endpoint.label} (${url}), ${n} sessions one by one, warm server:`);
    console.log(`  ready (client connect + tools/list): p50 ${fmt(quantile(totals, 0.5))} ms, p90 ${fmt(quantile(totals, 0.9))} ms, min ${fmt(Math.min(...totals))} ms`);
    for (const [step, list] of steps) console.log(`  ${step.padEnd(34)} p50 ${fmt(quantile(list, 0.5))} ms, p90 ${fmt(quantile(list, 0.9))} ms (${list.length})`);
  }
} finally {
  await stopGateway(handle, 10_000);
}

/** One session, opened and closed; every request's round trip by its JSON-RPC method. */
async function openOne(url, kind, headers) {
  const timings = [];
  const timedFetch = async (input, init) => {
    const signal = init?.signal;
    if (signal) setMaxListeners(0, signal);
    const method = init?.method ?? 'GET';
    let step = method;
    if (typeof init?.body === 'string') {
      try {
        const body = JSON.parse(init.body);
        step = `${method} ${Array.isArray(body) ? 'batch' : (body.method ?? 'response')}`;
      } catch {
        step = `${method} (body)`;
      }
    }
    const started = performance.now();
    const res = await fetch(input, init);
    if (method === 'GET') return res;
    // The body is read here (it is small), so the step's time includes the whole answer.
    const text = await res.text();
    timings.push([step, performance.now() - started]);
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  const options = { requestInit: { headers }, fetch: timedFetch };
  const started = performance.now();
  if (kind === 'modern') {
    const client = new ClientV2({ name: 'mcpool-session-ready', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const transport = new StreamableHTTPClientTransportV2(new URL(url), options);
    await client.connect(transport, { timeout: TIMEOUT_MS });
    await client.listTools(undefined, { timeout: TIMEOUT_MS });
    const totalMs = performance.now() - started;
    await client.close().catch(() => undefined);
    return { totalMs, timings };
  }
  const client = new Client({ name: 'mcpool-session-ready', version: '0.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), options);
  await client.connect(transport, { timeout: TIMEOUT_MS });
  await client.listTools(undefined, { timeout: TIMEOUT_MS });
  const totalMs = performance.now() - started;
  await closeSession({ client, transport });
  return { totalMs, timings };
}

function quantile(list, q) {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}

function fmt(ms) {
  return ms.toFixed(1);
}

