#!/usr/bin/env node
// mcpool benchmarks: `npm run bench [-- --quick] [-- --only=library,acquire] [-- --out=FILE]`.
// Prints one table per section with ratios against a baseline measured in the same run,
// interleaved, and writes raw numbers plus the environment to bench-results/. Benchmarks report;
// they never fail on a missed target (the exit code is non-zero only when a section crashed or a
// process leaked). See test/bench/README.md.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { listeningSockets, marker, pidsWithMarker, sweep, treeRss } from './lib/procs.mjs';
import { renderTable, renderTargets } from './lib/stats.mjs';
import { librarySection } from './sections/library.mjs';
import { gatewaySection } from './sections/gateway.mjs';
import { sessionsSection } from './sections/sessions.mjs';
import { acquireSection } from './sections/acquire.mjs';
import { scaleSection } from './sections/scale.mjs';
import { crashSection } from './sections/crash.mjs';
import { isolationSection } from './sections/isolation.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCENARIO = fileURLToPath(new URL('./scenario.mjs', import.meta.url));

/**
 * The sections, in issue order. A section is `{id, part, title, run(ctx) → {tables, targets, raw}}`
 * or `{id, part, title, skip: 'why'}`.
 */
const SECTIONS = [
  librarySection,
  gatewaySection,
  sessionsSection,
  acquireSection,
  scaleSection,
  crashSection,
  isolationSection,
];

function parseArgs(argv) {
  const options = { quick: false, only: undefined, out: undefined };
  for (const arg of argv) {
    if (arg === '--quick') options.quick = true;
    else if (arg.startsWith('--only=')) options.only = arg.slice(7).split(',').filter(Boolean);
    else if (arg.startsWith('--out=')) options.out = arg.slice(6);
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: node test/bench/run.mjs [--quick] [--only=library,gateway,sessions,acquire,scale,crash,isolation|1,2,3,4,5,6,7] [--out=FILE]');
      process.exit(0);
    } else {
      console.error(`unknown argument ${arg} (try --help)`);
      process.exit(2);
    }
  }
  return options;
}

function environment() {
  let commit;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    commit = undefined;
  }
  const version = (path) => {
    try {
      return JSON.parse(readFileSync(new URL(path, `file://${ROOT}`), 'utf8')).version;
    } catch {
      return undefined;
    }
  };
  const cpus = os.cpus();
  return {
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpuCount: cpus.length,
    availableParallelism: os.availableParallelism?.(),
    cpuModel: cpus[0]?.model,
    totalMemMb: Math.round(os.totalmem() / 1024 / 1024),
    freeMemMbAtStart: Math.round(os.freemem() / 1024 / 1024),
    commit,
    sdk: version('node_modules/@modelcontextprotocol/sdk/package.json'),
    core: version('packages/core/package.json'),
  };
}

const loadavg = () => os.loadavg().map((v) => Math.round(v * 100) / 100);

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  const runMark = marker(runId, '');
  const startedAt = new Date();
  const env = { ...environment(), loadavgStart: loadavg() };
  const children = new Set();
  const loopback = [];

  const ctx = {
    quick: options.quick,
    runId,
    mark: (label) => marker(runId, label),
    /** Runs scenario.mjs in a fresh process and returns its result; kills it past `timeoutMs`. */
    runScenario(spec, { timeoutMs = 120_000, exposeGc = false } = {}) {
      return new Promise((resolve, reject) => {
        const args = [...(exposeGc ? ['--expose-gc'] : []), SCENARIO, JSON.stringify(spec), runMark];
        const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
        children.add(child);
        let stdout = '';
        let stderr = '';
        // Error-level log lines are kept as they stream (the tail below is only for the failure
        // message): a scenario that logs many warnings (part 6 kills children) must not push them out.
        let partial = '';
        const errorLines = [];
        child.stderr.setEncoding('utf8');
        child.stdout.on('data', (chunk) => (stdout += chunk));
        child.stderr.on('data', (chunk) => {
          stderr = (stderr + chunk).slice(-8000);
          const lines = (partial + chunk).split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) if (/"level":(50|60)/.test(line) && errorLines.length < 1000) errorLines.push(line);
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        child.on('close', (code, signal) => {
          clearTimeout(timer);
          children.delete(child);
          const last = stdout.trim().split('\n').pop() ?? '';
          let message;
          try {
            message = JSON.parse(last);
          } catch {
            message = { ok: false, error: `scenario exited (code ${code}, signal ${signal}) without a result${signal === 'SIGKILL' ? ` (killed after ${timeoutMs} ms)` : ''}; stderr: ${stderr.slice(-2000)}` };
          }
          // The pool logs to stderr (pino JSON): keep what it logged at error level or worse.
          const logged = /"level":(50|60)/.test(partial) ? [...errorLines, partial] : errorLines;
          const logErrors = logged.map((line) => {
            try {
              const entry = JSON.parse(line);
              return [entry.server, entry.msg, entry.err?.message ?? entry.error].filter(Boolean).join(': ');
            } catch {
              return line.slice(0, 200);
            }
          });
          if (message.ok) resolve({ ...message.result, logErrors });
          else {
            const firstLine = String(message.error).split('\n')[0];
            const logs = logErrors.length > 0 ? `; the pool logged: ${[...new Set(logErrors)].slice(0, 3).join(' | ')}` : '';
            reject(new Error(`${spec.kind} ${spec.mode ?? ''} ×${spec.sessions}: ${firstLine}${logs}`));
          }
        });
      });
    },
    /** Records the listening sockets of this process tree; anything not on loopback is reported. */
    checkLoopback(label) {
      const found = listeningSockets(treeRss(process.pid).pids);
      loopback.push({ label, ...found });
      for (const s of found.sockets) if (!s.loopback) console.error(`!! ${label}: a socket listens on ${s.local}, not on loopback`);
    },
  };

  const cleanupAndExit = (signal) => {
    console.error(`\n${signal}: stopping scenarios and sweeping processes of this run`);
    for (const child of children) child.kill('SIGKILL');
    sweep(runMark);
    process.exit(130);
  };
  process.once('SIGINT', () => cleanupAndExit('SIGINT'));
  process.once('SIGTERM', () => cleanupAndExit('SIGTERM'));

  const wanted = (section) => !options.only || options.only.includes(section.id) || options.only.includes(String(section.part));
  console.log(`mcpool bench${options.quick ? ' --quick' : ''} · node ${env.node} · ${env.cpuCount} CPUs · load ${env.loadavgStart.join(' ')} · ${env.commit?.slice(0, 10) ?? 'no commit'}`);
  console.log('Ratios compare paths measured in this same run, interleaved; read them rather than absolute numbers.');

  const results = [];
  let crashed = false;
  for (const section of SECTIONS) {
    if (!wanted(section)) continue;
    console.log(`\n## Part ${section.part}. ${section.title}`);
    if (section.skip) {
      console.log(`skipped: ${section.skip}`);
      results.push({ id: section.id, part: section.part, title: section.title, skipped: section.skip });
      continue;
    }
    const t0 = performance.now();
    const loadBefore = loadavg();
    try {
      const out = await section.run(ctx);
      const seconds = (performance.now() - t0) / 1000;
      for (const table of out.tables) {
        console.log(`\n${table.title}`);
        console.log(renderTable(table.columns, table.rows));
        for (const note of table.notes ?? []) console.log(`  note: ${note}`);
      }
      if (out.targets.length > 0) console.log(`\n${renderTargets(out.targets)}`);
      console.log(`  (${seconds.toFixed(1)} s)`);
      results.push({ id: section.id, part: section.part, title: section.title, seconds, loadavgBefore: loadBefore, loadavgAfter: loadavg(), tables: out.tables, targets: out.targets, raw: out.raw });
    } catch (error) {
      crashed = true;
      console.error(`section ${section.id} failed: ${error?.stack ?? error}`);
      results.push({ id: section.id, part: section.part, title: section.title, error: String(error?.stack ?? error) });
    } finally {
      // Nothing of this section may survive it.
      const left = sweep(runMark);
      if (left.length > 0) {
        crashed = true;
        console.error(`!! ${left.length} process(es) of this run were still alive after section ${section.id}; killed: ${left.join(', ')}`);
        results.at(-1).leakedPids = left;
      }
    }
  }

  const targets = results.flatMap((r) => (r.targets ?? []).map((t) => ({ part: r.part, ...t })));
  if (targets.length > 0) {
    console.log('\n## Targets — reported, never asserted');
    for (const t of targets) console.log(`  part ${t.part}  ${t.label}: ${t.measured} ${t.mark}`);
  }

  const finishedAt = new Date();
  const leftovers = pidsWithMarker(runMark);
  const report = {
    schema: 'mcpool-bench/1',
    quick: options.quick,
    runId,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    seconds: (finishedAt - startedAt) / 1000,
    environment: { ...env, loadavgEnd: loadavg(), freeMemMbAtEnd: Math.round(os.freemem() / 1024 / 1024) },
    loopbackChecks: loopback,
    leftoverProcesses: leftovers,
    sections: results,
  };
  const out = options.out ?? `${ROOT}bench-results/bench-${startedAt.toISOString().replace(/[:.]/g, '-')}${options.quick ? '-quick' : ''}.json`;
  mkdirSync(new URL('.', `file://${out}`), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 1));
  console.log(`\nload average ${env.loadavgStart.join(' ')} → ${report.environment.loadavgEnd.join(' ')} · ${report.seconds.toFixed(1)} s · raw numbers: ${out}`);
  if (leftovers.length > 0) {
    crashed = true;
    console.error(`!! leftover processes: ${leftovers.join(', ')}`);
    sweep(runMark);
  }
  process.exitCode = crashed ? 1 : 0;
}

await main();
