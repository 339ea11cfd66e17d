#!/usr/bin/env node
/**
 * Heartbeat false positives under CPU starvation, measured: a pool of 6 entries (the echo
 * fixture) with calls going for 60 s while `stress-ng --cpu 8` runs beside it (started here, and
 * ended by its pid). Reports actors declared dead (target: 0), calls made and failed, the worst
 * call latency, and how late the supervisor's own timer ran. A script, not a test.
 *
 *   npm run build && node test/bench/heartbeatStress.mjs [--seconds=60] [--entries=6] [--cpu=8]
 */
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { McpTransportPool } from '@mcpool/core';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const SECONDS = arg('seconds', 60);
const ENTRIES = arg('entries', 6);
const CPU = arg('cpu', 8);
const ECHO = fileURLToPath(new URL('../fixtures/servers/echo.mjs', import.meta.url));

const lines = [];
const logger = {
  debug: (fields, msg) => lines.push({ level: 'debug', msg, ...fields }),
  info: (fields, msg) => lines.push({ level: 'info', msg, ...fields }),
  warn: (fields, msg) => lines.push({ level: 'warn', msg, ...fields }),
  error: (fields, msg) => lines.push({ level: 'error', msg, ...fields }),
  child() {
    return logger;
  },
  level: 'debug',
};
const deaths = [];
const pool = new McpTransportPool({
  logger,
  logLevel: 'warn',
  onEvent: (event) => {
    if (event.type === 'failed') deaths.push({ server: event.serverName, code: event.lastError.code, message: event.lastError.message });
  },
});
const views = await Promise.all(Array.from({ length: ENTRIES }, (_, i) => pool.acquire(`echo${i}`, { command: process.execPath, args: [ECHO, `--marker=hb-stress-${i}`] }, 'bench')));

const stress = spawn('stress-ng', ['--cpu', String(CPU), '--timeout', `${SECONDS + 10}s`, '--quiet'], { stdio: 'ignore' });
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const started = Date.now();
let calls = 0;
let failures = 0;
let worstMs = 0;
const errors = {};
await Promise.all(
  views.map(async (view) => {
    while (Date.now() - started < SECONDS * 1000) {
      const t = performance.now();
      try {
        await view.callTool('echo', { text: 'x' });
        calls += 1;
      } catch (error) {
        failures += 1;
        errors[error.code ?? 'other'] = (errors[error.code ?? 'other'] ?? 0) + 1;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      worstMs = Math.max(worstMs, performance.now() - t);
    }
  }),
);
loop.disable();
stress.kill('SIGTERM');
await new Promise((resolve) => stress.once('exit', resolve));
const missed = lines.filter((line) => line.msg === 'actor missed a heartbeat');
console.log(
  JSON.stringify(
    {
      seconds: SECONDS,
      entries: ENTRIES,
      stressCpu: CPU,
      actorsDeclaredDead: lines.filter((line) => line.msg === 'actor stopped answering its heartbeat').length,
      failedEvents: deaths,
      missedHeartbeats: missed.length,
      worstMissedStreak: Math.max(0, ...missed.map((line) => line.missed)),
      calls,
      failures,
      errors,
      worstCallMs: Math.round(worstMs),
      supervisorLoopDelayMs: { p50: Math.round(loop.percentile(50) / 1e6), p99: Math.round(loop.percentile(99) / 1e6), max: Math.round(loop.max / 1e6) },
    },
    null,
    2,
  ),
);
await pool.drainAll();
