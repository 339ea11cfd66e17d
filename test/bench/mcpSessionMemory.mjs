#!/usr/bin/env node
/**
 * Memory per held legacy `/mcp` session, on a real daemon process: N sessions (initialize +
 * initialized, on the aggregating `/mcp` over one echo server) are opened and held, then N more;
 * the growth between the two steps divided by N is the cost of one held session (the first step
 * absorbs one-time costs: code paths warming up, pools of buffers). RSS comes from `/proc`, the
 * used heap from the daemon's `/metrics`; each is the smallest of five samples (GC runs when it will).
 * A script, not a test: it reports, it asserts nothing. Target: ≤ 50 KB per held session.
 *
 *   npm run build && node test/bench/mcpSessionMemory.mjs [--sessions=200]
 */
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { runDaemonBench } from './lib/daemon.mjs';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const SESSIONS = arg('sessions', 200);
const ECHO = new URL('../fixtures/servers/echo.mjs', import.meta.url).pathname;
const VERSION = '2025-11-25';

await runDaemonBench(
  {
    label: 'sessmem',
    config: (port) => ({
      mcpServers: { echo: { command: process.execPath, args: [ECHO, '--marker=sessmem-bench'], sharing: 'shared' } },
      // Eager: each held session holds its view of echo from its initialize, as the target was set
      // for (with the default, lazy start, a session that calls nothing holds no view).
      daemon: { port, watchConfig: false, logLevel: 'warn', start: 'eager', mcpMaxSessionsPerClient: 10_000, mcpMaxSessions: 10_000 },
    }),
  },
  async ({ base, pid, auth }) => {
    const rssKB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
    const heapKB = async () => {
      const text = await fetch(`${base}/metrics`, { headers: auth }).then((r) => r.text());
      return Number(/^mcpool_nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? NaN) / 1024;
    };

    async function openSession() {
      const headers = { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const init = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'sessmem', version: '1' } } }),
      });
      await init.text();
      const id = init.headers.get('mcp-session-id');
      if (init.status !== 200 || id === null) throw new Error(`initialize answered ${init.status}`);
      const done = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': VERSION }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
      await done.text();
    }

    async function openMany(count) {
      for (let i = 0; i < count; i += 20) await Promise.all(Array.from({ length: Math.min(20, count - i) }, () => openSession()));
    }

    // The daemon's GC runs on its own schedule: the smallest of a few samples.
    async function settled() {
      const samples = [];
      for (let i = 0; i < 5; i++) {
        await delay(400);
        samples.push({ rss: rssKB(), heap: await heapKB() });
      }
      return { rss: Math.min(...samples.map((s) => s.rss)), heap: Math.min(...samples.map((s) => s.heap)) };
    }

    const base0 = await settled();
    await openMany(SESSIONS);
    const first = await settled();
    await openMany(SESSIONS);
    const second = await settled();
    const per = (a, b) => Math.round(((b - a) / SESSIONS) * 10) / 10;
    return {
      sessionsPerStep: SESSIONS,
      rssMB: { baseline: Math.round(base0.rss / 1024), afterFirst: Math.round(first.rss / 1024), afterSecond: Math.round(second.rss / 1024) },
      perSessionKB: { rss: per(first.rss, second.rss), heapUsed: per(first.heap, second.heap), rssFirstStep: per(base0.rss, first.rss) },
      target: '≤ 50 KB per held legacy session',
    };
  },
);
