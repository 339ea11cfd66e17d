#!/usr/bin/env node
/**
 * The injection flood, measured on a real daemon: one `POST /sessions` of ~110 KB that injects
 * 2,500 `http` servers (what once took a daemon to 13 GB and 900 threads). Reports how long the
 * refusal took, the daemon's RSS and thread count before, during and after, and `/healthz`
 * latency while it happened. A script, not a test: it reports, it asserts nothing (exit 0 unless
 * something crashed). Targets: refused in ≤ 100 ms, RSS growth ≤ 50 MB, /healthz still fast.
 *
 *   npm run build && node test/bench/injectionFlood.mjs [--servers=2500] [--rounds=5]
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { runDaemonBench } from './lib/daemon.mjs';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const SERVERS = arg('servers', 2500);
const ROUNDS = arg('rounds', 5);
const ECHO = new URL('../fixtures/servers/echo.mjs', import.meta.url).pathname;
const ide = `ide-${randomUUID()}`;

await runDaemonBench(
  {
    label: 'flood',
    config: (port) => ({
      mcpServers: { echo: { command: process.execPath, args: [ECHO, '--marker=flood-bench'] } },
      daemon: { port, watchConfig: false, logLevel: 'warn', clients: [{ id: 'ide', tokenEnv: 'IDE_TOKEN', rights: ['read', 'write'] }] },
    }),
    env: { IDE_TOKEN: ide },
  },
  async ({ base, pid: daemonPid, operator }) => {
    const proc = () => {
      const text = readFileSync(`/proc/${daemonPid}/status`, 'utf8');
      return { rssMB: Number(/VmRSS:\s+(\d+)/.exec(text)[1]) / 1024, threads: Number(/Threads:\s+(\d+)/.exec(text)[1]) };
    };
    const timed = async (run) => {
      const started = performance.now();
      const result = await run();
      return { ms: performance.now() - started, result };
    };
    const healthz = () => timed(() => fetch(`${base}/healthz`).then((r) => r.status));
    const body = JSON.stringify({ mcpServers: Object.fromEntries(Array.from({ length: SERVERS }, (_, i) => [`s${i}`, { url: `http://127.0.0.1:1/mcp${i}` }])) });
    await delay(500);
    const before = proc();
    const rounds = [];
    let peak = before;
    for (let round = 0; round < ROUNDS; round++) {
      const sampler = setInterval(() => {
        const now = proc();
        if (now.rssMB > peak.rssMB) peak = { ...now };
        if (now.threads > peak.threads) peak.threads = now.threads;
      }, 5);
      const probes = [];
      const prober = setInterval(() => probes.push(healthz()), 20);
      const post = await timed(() =>
        fetch(`${base}/sessions`, { method: 'POST', headers: { authorization: `Bearer ${ide}`, 'content-type': 'application/json' }, body }).then(async (r) => ({ status: r.status, body: await r.json() })),
      );
      await delay(300);
      clearInterval(prober);
      clearInterval(sampler);
      const health = await Promise.all(probes);
      rounds.push({ ms: Math.round(post.ms * 10) / 10, status: post.result.status, code: post.result.body.code, healthzMaxMs: Math.round(Math.max(...health.map((h) => h.ms)) * 10) / 10, healthzOk: health.every((h) => h.result === 200) });
    }
    await delay(500);
    const after = proc();
    const status = await fetch(`${base}/workspace/mcp`, { headers: { authorization: `Bearer ${operator}` } }).then((r) => r.json());
    return {
      servers: SERVERS,
      bodyBytes: Buffer.byteLength(body),
      rounds,
      rss: { beforeMB: Math.round(before.rssMB), peakMB: Math.round(peak.rssMB), afterMB: Math.round(after.rssMB), growthMB: Math.round(peak.rssMB - before.rssMB) },
      threads: { before: before.threads, peak: peak.threads, after: after.threads },
      liveActors: status.limits?.actors,
      sessions: status.sessions,
    };
  },
);
