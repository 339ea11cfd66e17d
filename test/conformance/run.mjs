#!/usr/bin/env node
// The official MCP conformance suite (`@modelcontextprotocol/conformance@0.1.13`, server
// scenarios) run through the daemon's gateway:
//   1. start the real daemon (daemon.mjs: compiled `apps/daemon/bin/mcpool.js serve` on a
//      temporary config, 127.0.0.1, a free port, the no-token loopback test mode) whose only
//      server is our fixture `test/fixtures/servers/conformance.mjs` (stdio);
//   2. `conformance server --url http://127.0.0.1:<port>/mcp/conformance --expected-failures …`;
//   3. print the suite's summary and a plain `conformance: N passed, N failed` line;
//   4. stop the daemon with SIGTERM and check that no process of this run is left.
// Exit code: the suite's (0 = no unexpected failure, no stale baseline entry), or 1 when the
// daemon did not start, did not stop cleanly, or left a process behind.
//
// Usage: node test/conformance/run.mjs [--suite active|all] [--scenario NAME] [--verbose]
// (`npm run conformance` builds first.)
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { newMarker, reapMarked, ROOT, startDaemon } from './daemon.mjs';

const FIXTURE = join(ROOT, 'test/fixtures/servers/conformance.mjs');
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const BASELINE = join(ROOT, 'test/conformance/expected-failures.yml');
const SUITE_TIMEOUT_MS = 10 * 60_000;

const passThrough = process.argv.slice(2);
const MARK = newMarker('conformance-run');

function log(line) {
  process.stdout.write(`[conformance run] ${line}\n`);
}

let exitCode = 1;
let daemon;
try {
  daemon = await startDaemon({ mcpServers: { conformance: { command: process.execPath, args: [FIXTURE, MARK] } } });
  const url = `${daemon.base}/mcp/conformance`;
  log(`daemon pid ${daemon.pid} ready; suite against ${url} ${passThrough.join(' ')}`.trimEnd());

  const suite = spawn(process.execPath, [SUITE, 'server', '--url', url, '--expected-failures', BASELINE, ...passThrough], { cwd: daemon.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (stream, sink) =>
    stream.on('data', (chunk) => {
      output += chunk.toString('utf8');
      sink.write(chunk);
    });
  collect(suite.stdout, process.stdout);
  collect(suite.stderr, process.stderr);
  const suiteTimer = setTimeout(() => suite.kill('SIGKILL'), SUITE_TIMEOUT_MS);
  const suiteCode = await new Promise((resolve) => suite.once('exit', (code) => resolve(code ?? 1)));
  clearTimeout(suiteTimer);

  // Its SUMMARY has one `✓`/`✗` line per scenario (then totals of checks). A scenario with only
  // WARNINGs shows `✓` there but is a failure for the baseline, which lists it after `~`.
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
  const summary = plain.slice(plain.lastIndexOf('=== SUMMARY ==='));
  const totals = summary.search(/^Total:/m);
  const names = (mark, text) => [...text.matchAll(new RegExp(`^\\s*${mark} ([\\w-]+)`, 'gm'))].map((m) => m[1]);
  const scenarios = names('[✓✗]', totals === -1 ? summary : summary.slice(0, totals));
  const expected = names('~', totals === -1 ? '' : summary.slice(totals));
  const failedNames = new Set([...names('✗', totals === -1 ? summary : summary.slice(0, totals)), ...expected]);
  const passed = scenarios.filter((name) => !failedNames.has(name)).length;
  const failed = scenarios.length - passed;
  log(`suite exit code ${suiteCode}`);
  if (expected.length > 0) log(`failed as expected (listed in ${BASELINE.slice(ROOT.length)}): ${expected.join(', ')}`);
  process.stdout.write(`conformance: ${passed} passed, ${failed} failed\n`);
  exitCode = suiteCode;
} catch (error) {
  log(`FAILED: ${error.message}`);
  process.stdout.write(`${(error.daemonLog ?? daemon?.log ?? []).slice(-40).join('\n')}\n`);
  exitCode = 1;
} finally {
  if (daemon) {
    const { code, signal } = await daemon.stop();
    log(`daemon stopped (exit code ${code}${signal ? `, signal ${signal}` : ''})`);
    if (code !== 0) exitCode = exitCode || 1;
  }
  const left = reapMarked(MARK);
  if (left.length > 0) {
    log(`LEFT BEHIND: ${left.length} process(es) of this run (${left.join(', ')}); killed them`);
    exitCode = exitCode || 1;
  } else {
    log('no process of this run is left');
  }
}
process.exit(exitCode);
