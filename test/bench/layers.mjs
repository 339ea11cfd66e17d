#!/usr/bin/env node
// Where does the library path's overhead come from? Builds the pool's call path up one layer at a
// time, from a direct client to the real pool, and measures each step in one process, rounds
// interleaved (median of per-round ratios to direct):
//   direct   SDK Client + the SDK's StdioClientTransport in this thread
//   hop      + a worker thread: raw postMessage, SDK client and SDK stdio transport in the worker
//   pgStdio  + our ProcessGroupStdioTransport instead of the SDK's (own process group, stderr drained)
//   rpc      + @mcpool/protocol RpcChannel on both ends (timeouts, AbortSignal, typed errors)
//   pool     the real PooledConnection.callTool (view filter, actor, machine, heartbeat)
// `node test/bench/layers.mjs [--calls=5000] [--rounds=8]`
import { Worker, isMainThread, workerData, MessageChannel } from 'node:worker_threads';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ProcessGroupStdioTransport } from '@mcpool/actor';
import { RpcChannel } from '@mcpool/protocol';
import { z } from 'zod';
import { ECHO, marker, sweep } from './lib/procs.mjs';

const loose = z.looseObject({});
const ARGS = { name: 'echo', arguments: { text: 'hello from mcpool bench' } };

if (!isMainThread) {
  const { port, step, mark } = workerData;
  const client = new Client({ name: 'layers', version: '0' });
  const transport =
    step === 'hop' ? new StdioClientTransport({ command: process.execPath, args: [ECHO, mark], stderr: 'ignore' }) : new ProcessGroupStdioTransport({ command: process.execPath, args: [ECHO, mark] });
  await client.connect(transport);
  if (step === 'rpc') {
    new RpcChannel(port, {
      handler: (_op, args, ctx) => client.request({ method: 'tools/call', params: { name: args.name, arguments: args.arguments } }, loose, { signal: ctx.signal, timeout: args.timeoutMs }),
      onClose: () => void client.close(),
    });
  } else {
    port.on('message', (m) => client.request({ method: 'tools/call', params: m.params }, loose, { timeout: 60_000 }).then((result) => port.postMessage({ id: m.id, result })));
    port.on('close', () => void client.close());
  }
  port.postMessage('ready');
} else {
  const opts = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
  const N = Number(opts.calls ?? 5000);
  const ROUNDS = Number(opts.rounds ?? 8);
  const runMark = marker(`layers${process.pid}`, '');
  const { McpTransportPool } = await import('@mcpool/core');
  const pool = new McpTransportPool();
  const client = new Client({ name: 'layers', version: '0' });
  const closers = [];
  try {
    const view = await pool.acquire('echo', { command: process.execPath, args: [ECHO, `${runMark}pool`] }, 'layers');
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [ECHO, `${runMark}direct`], stderr: 'ignore' }));
    const inWorker = async (step) => {
      const { port1, port2 } = new MessageChannel();
      const worker = new Worker(new URL(import.meta.url), { workerData: { port: port2, step, mark: `${runMark}${step}` }, transferList: [port2] });
      closers.push(async () => {
        port1.close();
        await new Promise((resolve) => setTimeout(resolve, 300));
        await worker.terminate();
      });
      await new Promise((resolve) => port1.once('message', resolve));
      if (step === 'rpc') {
        const channel = new RpcChannel(port1, {});
        return () => channel.request('callTool', { ...ARGS, wantProgress: false, timeoutMs: 60_000 }, { timeoutMs: 62_000 });
      }
      let id = 0;
      const pending = new Map();
      port1.on('message', (m) => {
        pending.get(m.id)(m.result);
        pending.delete(m.id);
      });
      return () =>
        new Promise((resolve) => {
          const i = ++id;
          pending.set(i, resolve);
          port1.postMessage({ id: i, params: ARGS });
        });
    };
    const paths = {
      direct: () => client.callTool(ARGS),
      hop: await inWorker('hop'),
      pgStdio: await inWorker('pgStdio'),
      rpc: await inWorker('rpc'),
      pool: () => view.callTool(ARGS.name, ARGS.arguments),
    };
    const results = {};
    for (const concurrency of [1, 16]) {
      for (let round = 0; round < ROUNDS; round++) {
        const names = round % 2 ? Object.keys(paths).reverse() : Object.keys(paths);
        for (const name of names) {
          const call = paths[name];
          for (let i = 0; i < 300; i++) await call();
          const latencies = [];
          let n = 0;
          const cpu0 = process.cpuUsage();
          const t0 = performance.now();
          const lane = async () => {
            while (n < N) {
              n++;
              const t = performance.now();
              await call();
              latencies.push((performance.now() - t) * 1000);
            }
          };
          await Promise.all(Array.from({ length: concurrency }, lane));
          const wall = performance.now() - t0;
          const cpu = process.cpuUsage(cpu0);
          latencies.sort((a, b) => a - b);
          ((results[concurrency] ??= {})[name] ??= []).push({ p50: latencies[N >> 1], rate: (N / wall) * 1000, cpu: (cpu.user + cpu.system) / N });
        }
      }
    }
    const median = (a) => [...a].sort((x, y) => x - y)[(a.length - 1) >> 1];
    console.log(`${N} calls × ${ROUNDS} interleaved rounds per step; ratios = median of per-round step/direct; CPU = whole process`);
    console.log('| concurrency | step | p50 µs | p50 ratio | calls/s | calls/s ratio | CPU µs/call |\n|---|---|--:|--:|--:|--:|--:|');
    for (const concurrency of [1, 16]) {
      const direct = results[concurrency].direct;
      for (const name of Object.keys(paths)) {
        const r = results[concurrency][name];
        const p50Ratio = median(r.map((x, i) => x.p50 / direct[i].p50));
        const rateRatio = median(r.map((x, i) => x.rate / direct[i].rate));
        console.log(`| ${concurrency} | ${name} | ${median(r.map((x) => x.p50)).toFixed(0)} | ${p50Ratio.toFixed(2)}× | ${Math.round(median(r.map((x) => x.rate)))} | ${rateRatio.toFixed(2)}× | ${median(r.map((x) => x.cpu)).toFixed(1)} |`);
      }
    }
  } finally {
    await client.close().catch(() => undefined);
    for (const close of closers) await close();
    await pool.drainAll({ timeoutMs: 5000 });
    sweep(runMark);
  }
}
