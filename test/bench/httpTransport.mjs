#!/usr/bin/env node
// The actor's HTTP transports against the SDK's, on the same fixture servers (each in its own
// process, 127.0.0.1 only):
//  1. Round trip: sequential `tools/call echo` through the bare transport (send, then wait for
//     the response on onmessage; no Client, no validation on our side), p50/p95 per round, rounds
//     interleaved (ABBA) so machine noise lands on every contender.
//     Legacy v1 server: ours over node:http, ours over global fetch, SDK v1
//     StreamableHTTPClientTransport. Modern v2 server: ours over node:http, SDK v2
//     StreamableHTTPClientTransport.
//  2. Worker RSS: a fresh worker thread imports one transport and makes 50 calls; RSS growth
//     inside the worker, median of 5 workers.
// Needs `npx turbo run build` first (imports packages/actor/dist). Usage:
//   node test/bench/httpTransport.mjs [--calls=300] [--rounds=4]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const CALLS = arg('calls', 300);
const ROUNDS = arg('rounds', 4);
const root = fileURLToPath(new URL('../../', import.meta.url));
const ours = `${root}packages/actor/dist/transports/streamableHttpTransport.js`;
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};

async function startFixture(file, args = []) {
  const child = spawn(process.execPath, [`${root}test/fixtures/servers/${file}`, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let buffer = '';
  for await (const chunk of child.stdout) {
    buffer += chunk;
    const match = /LISTENING (\S+)/.exec(buffer);
    if (match) return { url: match[1], stop: async () => { child.kill('SIGTERM'); await once(child, 'exit'); } };
  }
  throw new Error(`${file} did not start`);
}

/** A bare transport with request/response correlation. */
function correlate(transport) {
  const waiting = new Map();
  transport.onmessage = (message) => {
    if (message.id !== undefined && message.method === undefined) {
      waiting.get(message.id)?.(message);
      waiting.delete(message.id);
    }
  };
  let id = 0;
  return async (method, params) => {
    const myId = ++id;
    const answered = new Promise((resolve) => waiting.set(myId, resolve));
    await transport.send({ jsonrpc: '2.0', id: myId, method, params });
    return answered;
  };
}

async function legacyContender(name, make) {
  const transport = await make();
  await transport.start();
  const call = correlate(transport);
  const init = await call('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  transport.setProtocol?.('legacy', init.result.protocolVersion);
  transport.setProtocolVersion?.(init.result.protocolVersion);
  await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { name, call: () => call('tools/call', { name: 'echo', arguments: { text: 'hello' } }), close: () => transport.close() };
}

async function modernContender(name, make) {
  const transport = await make();
  await transport.start();
  transport.setProtocol?.('modern', '2026-07-28');
  const call = correlate(transport);
  return { name, call: () => call('tools/call', { name: 'echo', arguments: { text: 'hello' }, _meta: MODERN_META }), close: () => transport.close() };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

async function measure(contender) {
  for (let i = 0; i < 30; i++) await contender.call();
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const start = process.hrtime.bigint();
    await contender.call();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p95: percentile(times, 0.95) };
}

async function roundTrips(title, contenders) {
  const results = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    for (const contender of order) results[contender.name].push(await measure(contender));
  }
  const baseline = contenders.at(-1).name;
  console.log(`\n${title} — ${CALLS} sequential calls × ${ROUNDS} rounds; median of per-round p50/p95 (ms); ratio to ${baseline} per round, median`);
  for (const contender of contenders) {
    const rounds = results[contender.name];
    const p50 = median(rounds.map((r) => r.p50));
    const p95 = median(rounds.map((r) => r.p95));
    const ratio = median(rounds.map((r, i) => r.p50 / results[baseline][i].p50));
    console.log(`  ${contender.name.padEnd(40)} p50 ${p50.toFixed(3)}  p95 ${p95.toFixed(3)}  p50 ratio ${ratio.toFixed(2)}`);
  }
  for (const contender of contenders) await contender.close();
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function workerRss(label, url, importCode, makeCode) {
  const samples = [];
  for (let i = 0; i < 5; i++) {
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      (async () => {
        await sleep(150);
        const before = process.memoryUsage().rss;
        ${importCode}
        const transport = ${makeCode};
        await transport.start();
        const waiting = new Map();
        transport.onmessage = (m) => { if (m.id !== undefined && m.method === undefined) { waiting.get(m.id)?.(m); waiting.delete(m.id); } };
        let id = 0;
        const call = async (method, params) => { const my = ++id; const p = new Promise((r) => waiting.set(my, r)); await transport.send({ jsonrpc: '2.0', id: my, method, params }); return p; };
        const init = await call('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
        if (transport.setProtocol) transport.setProtocol('legacy', init.result.protocolVersion);
        for (let i = 0; i < 50; i++) await call('tools/call', { name: 'echo', arguments: { text: 'hi' } });
        await sleep(150);
        const after = process.memoryUsage().rss;
        await transport.close();
        parentPort.postMessage((after - before) / 1048576);
      })();`;
    const worker = new Worker(code, { eval: true, workerData: url });
    const [value] = await once(worker, 'message');
    await worker.terminate();
    samples.push(value);
  }
  samples.sort((a, b) => a - b);
  console.log(`  ${label.padEnd(40)} +${median(samples).toFixed(1)} MB  [${samples.map((s) => s.toFixed(1)).join(' ')}]`);
}

const legacy = await startFixture('httpLegacyServer.mjs');
const modern = await startFixture('httpModernServer.mjs');
try {
  const { StreamableHttpTransport } = await import(ours);
  const { StreamableHTTPClientTransport: SdkV1 } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { StreamableHTTPClientTransport: SdkV2 } = await import('@modelcontextprotocol/client');

  await roundTrips('Legacy v1 server (Streamable HTTP, sessions)', [
    await legacyContender('ours, node:http', () => new StreamableHttpTransport({ url: new URL(legacy.url) })),
    await legacyContender('ours, global fetch', () => new StreamableHttpTransport({ url: new URL(legacy.url), fetch: globalThis.fetch })),
    await legacyContender('SDK v1 StreamableHTTPClientTransport', () => new SdkV1(new URL(legacy.url))),
  ]);
  await roundTrips('Modern v2 server (2026-07-28, stateless)', [
    await modernContender('ours, node:http', () => new StreamableHttpTransport({ url: new URL(modern.url) })),
    await modernContender('SDK v2 StreamableHTTPClientTransport', () => new SdkV2(new URL(modern.url))),
  ]);

  console.log('\nWorker thread RSS growth: import + start + initialize + 50 calls (legacy v1 server), median of 5 workers');
  await workerRss('ours, node:http', legacy.url, `const { StreamableHttpTransport } = await import(${JSON.stringify(ours)});`, 'new StreamableHttpTransport({ url: new URL(workerData) })');
  await workerRss('ours, global fetch', legacy.url, `const { StreamableHttpTransport } = await import(${JSON.stringify(ours)});`, 'new StreamableHttpTransport({ url: new URL(workerData), fetch })');
  await workerRss('SDK v1 StreamableHTTPClientTransport', legacy.url, `const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');`, 'new StreamableHTTPClientTransport(new URL(workerData))');
} finally {
  await legacy.stop();
  await modern.stop();
}
