#!/usr/bin/env node
// The gateways of part 2 with a client that costs next to nothing: what is left is the server's
// share. Part 2 calls every gateway with the SDK client, whose own work (~0.8 ms of its main
// thread per call over Streamable HTTP here) is most of a call and sets a floor under both gateway
// targets; this client is plain `node:http` with keep-alive and `JSON.parse`, nothing else.
// The daemon (`/mcp`, a legacy session: initialize, then Mcp-Session-Id on every POST; answers as
// JSON or SSE) and mcp-hub (`/mcp`, legacy SSE: GET stream, POSTs to its /messages endpoint,
// answers on the stream) each front server-everything over stdio, started one after the other;
// rounds alternate between them (order reversed every round). Per round: `--n` sequential echo
// calls, then `--n` at concurrency 16; p50 and calls/s, the ratio daemon ÷ mcp-hub per round,
// then the median over rounds [range]. Every gateway is stopped by pid at the end.
// `node test/bench/leanClient.mjs [--rounds=5] [--n=2000] [--warmup=1000]`
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { GATEWAYS, closeSession, startGateway, stopGateway, waitReady } from './lib/gateways.mjs';
import { runCalls } from './lib/load.mjs';
import { marker } from './lib/procs.mjs';
import { fmt, fmtRange, fmtRatio, median } from './lib/stats.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const ROUNDS = Math.min(50, Math.max(1, Number(args.rounds ?? 5)));
const N = Math.min(100_000, Math.max(10, Number(args.n ?? 2000)));
const WARMUP = Math.min(100_000, Math.max(0, Number(args.warmup ?? 1000)));
const CONCURRENCY = 16;
const TIMEOUT_MS = 15_000;
const ECHO = { message: 'hello from mcpool bench' };
const INIT = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'mcpool-bench-lean', version: '0.0.0' } };

/** One POST; resolves with status, headers and body text. Fails after TIMEOUT_MS. */
function post(agent, url, headers, body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(url, { agent, method: 'POST', timeout: TIMEOUT_MS, headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(data) } }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(data);
  });
}

/** The JSON-RPC message of an answer: the body itself, or the SSE event that carries `id`. */
function messageOf(res, id) {
  if (!String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) return JSON.parse(res.body);
  for (const event of res.body.split('\n\n')) {
    const data = event.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('');
    if (data === '') continue;
    const message = JSON.parse(data);
    if (message.id === id) return message;
  }
  throw new Error(`no answer to ${id} in the stream`);
}

/** A legacy Streamable HTTP session on the daemon: `call()` runs one echo. */
async function daemonSession(handle, endpoint, agent) {
  const url = `http://127.0.0.1:${handle.port}${endpoint.path}`;
  const auth = handle.spec.headers;
  const init = await post(agent, url, auth, { jsonrpc: '2.0', id: 0, method: 'initialize', params: INIT });
  const session = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof session !== 'string') throw new Error(`initialize answered ${init.status}`);
  const headers = { ...auth, 'mcp-session-id': session, 'mcp-protocol-version': INIT.protocolVersion };
  await post(agent, url, headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
  let next = 1;
  return {
    async call() {
      const id = next++;
      const message = messageOf(await post(agent, url, headers, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: endpoint.tool, arguments: ECHO } }), id);
      if (message.error || message.result?.isError) throw new Error(`echo failed: ${JSON.stringify(message).slice(0, 200)}`);
    },
    // DELETE ends the session, as a well-behaved client does.
    close: () =>
      new Promise((resolve) => {
        const req = http.request(url, { agent, method: 'DELETE', timeout: TIMEOUT_MS, headers }, (res) => res.resume().on('end', resolve));
        req.on('timeout', () => req.destroy());
        req.on('error', resolve);
        req.end();
      }),
  };
}

/** A legacy SSE session on mcp-hub: one GET stream, POSTs to the endpoint it names, answers on the stream. */
async function sseSession(handle, endpoint, agent) {
  const waiting = new Map();
  let stream;
  const endpointPath = await new Promise((resolve, reject) => {
    const req = http.request(`http://127.0.0.1:${handle.port}${endpoint.path}`, { method: 'GET', headers: { accept: 'text/event-stream' } }, (res) => {
      stream = res;
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let type = 'message';
          let data = '';
          for (const line of event.split('\n')) {
            if (line.startsWith('event:')) type = line.slice(6).trim();
            else if (line.startsWith('data:')) data += line.slice(5).trim();
          }
          if (type === 'endpoint') resolve(data);
          else if (type === 'message' && data !== '') {
            const message = JSON.parse(data);
            waiting.get(message.id)?.(message);
            waiting.delete(message.id);
          }
        }
      });
    });
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error('no endpoint event')));
    req.on('error', reject);
    req.end();
  });
  const url = new URL(endpointPath, `http://127.0.0.1:${handle.port}`).href;
  const request = async (id, method, params) => {
    const answered = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${method} within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
      waiting.set(id, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
    });
    const res = await post(agent, url, {}, { jsonrpc: '2.0', id, method, params });
    if (res.status >= 300) throw new Error(`${method} answered ${res.status}`);
    return answered;
  };
  await request(0, 'initialize', INIT);
  await post(agent, url, {}, { jsonrpc: '2.0', method: 'notifications/initialized' });
  let next = 1;
  return {
    async call() {
      const message = await request(next++, 'tools/call', { name: endpoint.tool, arguments: ECHO });
      if (message.error || message.result?.isError) throw new Error(`echo failed: ${JSON.stringify(message).slice(0, 200)}`);
    },
    close: async () => stream?.destroy(),
  };
}

/** `count` calls, `concurrency` at a time: p50 (µs) and calls/s. */
async function measure(call, count, concurrency) {
  const run = await runCalls(call, count, concurrency);
  return { p50: median(run.latenciesUs), callsPerSec: (count / run.wallMs) * 1000 };
}

const token = randomBytes(24).toString('base64url');
const subjects = [
  { id: 'daemon', label: 'mcpool daemon /mcp', endpoint: 'daemon-all', open: daemonSession },
  { id: 'mcp-hub', label: 'mcp-hub 4.2.1 /mcp (SSE)', endpoint: 'mcp-hub', open: sseSession },
];
const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY * 2 });
const started = [];
try {
  for (const subject of subjects) {
    const gateway = GATEWAYS.find((g) => g.id === subject.id);
    const endpoint = gateway.endpoints.find((e) => e.id === subject.endpoint);
    const handle = await startGateway(gateway, { mark: marker(`lean${process.pid}`, subject.id), token });
    started.push(handle);
    // Ready as the bench means it: an SDK session lists the tool; then this client's own session.
    const ready = await waitReady(handle, endpoint, 60_000);
    await closeSession(ready.session);
    subject.session = await subject.open(handle, endpoint, agent);
    await measure(() => subject.session.call(), WARMUP, 1);
    await measure(() => subject.session.call(), WARMUP, CONCURRENCY);
    subject.rounds = [];
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? subjects : [...subjects].reverse();
    for (const subject of order) subject.rounds[round] = { seq: await measure(() => subject.session.call(), N, 1) };
    for (const subject of [...order].reverse()) subject.rounds[round].conc = await measure(() => subject.session.call(), N, CONCURRENCY);
  }
  const [daemon, hub] = subjects;
  const ratios = (pick) => daemon.rounds.map((r, i) => pick(r) / pick(hub.rounds[i]));
  console.log(`Lean client (node:http, keep-alive), ${ROUNDS} rounds of ${N} sequential + ${N} at concurrency ${CONCURRENCY} echo calls, after ${WARMUP} + ${WARMUP} warm-up:`);
  for (const s of subjects) console.log(`  ${s.label.padEnd(26)} seq p50 ${fmt(median(s.rounds.map((r) => r.seq.p50)))} µs, c${CONCURRENCY} ${fmt(median(s.rounds.map((r) => r.conc.callsPerSec)))} calls/s`);
  const p50 = ratios((r) => r.seq.p50);
  const cps = ratios((r) => r.conc.callsPerSec);
  console.log(`  daemon ÷ mcp-hub: seq p50 ${fmtRatio(median(p50))} ${fmtRange(p50)}, c${CONCURRENCY} calls/s ${fmtRatio(median(cps))} ${fmtRange(cps)}`);
} finally {
  for (const subject of subjects) await subject.session?.close();
  agent.destroy();
  for (const handle of started) await stopGateway(handle);
}
