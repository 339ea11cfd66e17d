#!/usr/bin/env node
// Actor thread memory: RSS growth of this (supervisor) process per pooled entry. Servers are child
// processes and are not in this process's RSS, so the growth is the actor threads' (thread stacks,
// isolates, the modules each one imports) plus the supervisor's bookkeeping. 8 entries of
// echo.mjs told apart by a marker; 3 rounds, each in a fresh process; the median is printed.
// `node test/bench/actorRss.mjs [--entries=8] [--rounds=3]`
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const ENTRIES = Number(args.entries ?? 8);
const ROUNDS = Number(args.rounds ?? 3);

if (args.child === '1') {
  const { McpTransportPool } = await import('@mcpool/core');
  const { fixtureConfig, marker, sweep } = await import('./lib/procs.mjs');
  const run = `rss${process.pid}`;
  const pool = new McpTransportPool({ stateDir: false });
  globalThis.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 300));
  const before = process.memoryUsage().rss;
  const views = [];
  for (let i = 0; i < ENTRIES; i++) views.push(await pool.acquire(`echo${i}`, fixtureConfig(marker(run, String(i))), 's1'));
  await Promise.all(views.map((v) => v.callTool('echo', { text: 'x' })));
  globalThis.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const after = process.memoryUsage().rss;
  await pool.drainAll();
  sweep?.(run);
  process.stdout.write(JSON.stringify({ before, after, perEntry: (after - before) / ENTRIES }) + '\n');
  process.exit(0);
}

const results = [];
for (let r = 0; r < ROUNDS; r++) {
  const out = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--child=1', `--entries=${ENTRIES}`], { encoding: 'utf8', timeout: 120_000 });
  const line = out.stdout.trim().split('\n').pop();
  try {
    results.push(JSON.parse(line));
  } catch {
    process.stderr.write(out.stderr);
    process.exit(1);
  }
}
const per = results.map((r) => r.perEntry / 1048576).sort((a, b) => a - b);
const mb = (n) => (n / 1048576).toFixed(1);
console.log(`actor RSS per entry over ${ENTRIES} entries: median ${per[Math.floor(per.length / 2)].toFixed(1)} MB [${per.map((n) => n.toFixed(1)).join(', ')}]; supervisor before ${mb(results[0].before)} MB, after ${mb(results[0].after)} MB`);
