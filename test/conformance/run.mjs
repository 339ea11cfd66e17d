#!/usr/bin/env node
// The official MCP conformance suite (`@modelcontextprotocol/conformance@0.1.13`, server
// scenarios) run through the daemon's gateway:
//   1. start the real daemon (compiled `apps/daemon/bin/mcpool.js serve`) on a temporary config
//      whose only server is our fixture `test/fixtures/servers/conformance.mjs` (stdio), bound to
//      127.0.0.1 on a free port, in the no-token loopback test mode (the suite cannot send headers);
//   2. `conformance server --url http://127.0.0.1:<port>/mcp/conformance --expected-failures …`;
//   3. print the suite's summary and a plain `conformance: N passed, N failed` line;
//   4. stop the daemon with SIGTERM and check that no process of this run is left.
// Exit code: the suite's (0 = no unexpected failure, no stale baseline entry), or 1 when the
// daemon did not start, did not stop cleanly, or left a process behind.
//
// Usage: node test/conformance/run.mjs [--suite active|all] [--scenario NAME] [--verbose]
// (`npm run conformance` builds first.)
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'apps/daemon/bin/mcpool.js');
const FIXTURE = join(ROOT, 'test/fixtures/servers/conformance.mjs');
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const BASELINE = join(ROOT, 'test/conformance/expected-failures.yml');
const START_TIMEOUT_MS = 60_000;
const SUITE_TIMEOUT_MS = 10 * 60_000;
const STOP_TIMEOUT_MS = 30_000;

const passThrough = process.argv.slice(2);
const MARK = `--marker=conformance-run-${randomUUID()}`;
const dir = mkdtempSync(join(tmpdir(), 'mcpool-conformance-'));
const configPath = join(dir, 'mcpool.json');
writeFileSync(
  configPath,
  JSON.stringify(
    {
      mcpServers: { conformance: { command: process.execPath, args: [FIXTURE, MARK] } },
      daemon: { host: '127.0.0.1', port: 0, insecureNoAuthLoopback: true, watchConfig: false, logLevel: 'info' },
    },
    null,
    2,
  ),
);

function log(line) {
  process.stdout.write(`[conformance run] ${line}\n`);
}

/** Pids of live processes whose command line carries this run's marker (the daemon passes it to the fixture). */
function markedPids() {
  const out = execFileSync('ps', ['-A', '-o', 'pid=,stat=,args='], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  return out
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((m) => m && !m[2].startsWith('Z') && m[3].includes(MARK) && !m[3].startsWith('ps '))
    .map((m) => Number(m[1]));
}

const daemonLog = [];
const daemon = spawn(process.execPath, [BIN, 'serve', '--config', configPath], {
  cwd: dir,
  env: { ...process.env, MCPOOL_STATE_DIR: join(dir, 'state'), MCPOOL_CONFIG: '', MCPOOL_TOKEN: '', MCPOOL_PORT: '', MCPOOL_HOST: '', MCPOOL_LOG_LEVEL: '' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
const exited = new Promise((resolve) => daemon.once('exit', (code, signal) => resolve({ code, signal })));

/** Resolves with the first daemon log line `match` accepts; rejects when the daemon exits or time runs out. */
function waitForLine(match, timeoutMs) {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => finish(new Error(`timed out after ${timeoutMs} ms waiting for the daemon`)), timeoutMs);
    const onData = (chunk) => {
      buffered += chunk.toString('utf8');
      let newline;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        const text = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        daemonLog.push(text);
        let line;
        try {
          line = JSON.parse(text);
        } catch {
          continue;
        }
        if (match(line)) finish(undefined, line);
      }
    };
    const onExit = ({ code, signal }) => finish(new Error(`the daemon exited (code ${code}, signal ${signal}) before it was ready`));
    function finish(error, line) {
      clearTimeout(timer);
      daemon.stdout.off('data', onData);
      if (error) reject(error);
      else resolve(line);
    }
    daemon.stdout.on('data', onData);
    void exited.then(onExit);
  });
}
daemon.stderr.on('data', (chunk) => daemonLog.push(chunk.toString('utf8').trimEnd()));

async function stopDaemon() {
  if (daemon.exitCode !== null || daemon.signalCode !== null) return exited;
  daemon.kill('SIGTERM');
  const timer = setTimeout(() => daemon.kill('SIGKILL'), STOP_TIMEOUT_MS);
  const result = await exited;
  clearTimeout(timer);
  return result;
}

let exitCode = 1;
try {
  const listening = waitForLine((line) => typeof line.msg === 'string' && line.msg.startsWith('listening on '), START_TIMEOUT_MS);
  const ready = waitForLine((line) => typeof line.msg === 'string' && /^\d+\/\d+ servers ready/.test(line.msg), START_TIMEOUT_MS);
  const { msg } = await listening;
  const base = msg.slice('listening on '.length).trim();
  const readyLine = await ready;
  if (readyLine.failed > 0) throw new Error(`the conformance fixture did not start: ${readyLine.msg}`);
  const url = `${base}/mcp/conformance`;
  log(`daemon pid ${daemon.pid} ready; suite against ${url} ${passThrough.join(' ')}`.trimEnd());

  const suite = spawn(process.execPath, [SUITE, 'server', '--url', url, '--expected-failures', BASELINE, ...passThrough], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
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
  process.stdout.write(`${daemonLog.slice(-40).join('\n')}\n`);
  exitCode = 1;
} finally {
  const { code, signal } = await stopDaemon();
  log(`daemon stopped (exit code ${code}${signal ? `, signal ${signal}` : ''})`);
  if (code !== 0) exitCode = exitCode || 1;
  const left = markedPids();
  if (left.length > 0) {
    log(`LEFT BEHIND: ${left.length} process(es) of this run (${left.join(', ')}); killing them`);
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    exitCode = exitCode || 1;
  } else {
    log('no process of this run is left');
  }
  rmSync(dir, { recursive: true, force: true });
}
process.exit(exitCode);
