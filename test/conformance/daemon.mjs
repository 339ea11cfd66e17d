// The real daemon for the conformance runs (run.mjs, runNext.mjs, client.mjs): the compiled
// `apps/daemon/bin/mcpool.js serve` on a temporary config, bound to 127.0.0.1 on a free port, in
// the no-token loopback test mode (the suite cannot send headers), with its state in a temporary
// directory. The caller puts a marker argument on every server's `args` (`newMarker`), so a run
// can check that no process it caused is left once the daemon has stopped.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sweep } from '../bench/lib/procs.mjs';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'apps/daemon/bin/mcpool.js');
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/** A marker argument unique to one run: `--marker=<label>-<uuid>`. */
export function newMarker(label) {
  return `--marker=${label}-${randomUUID()}`;
}

/**
 * Kills (SIGKILL) every live process that carries `marker` and returns their pids: an empty
 * list means nothing of the run was left. Only processes this run started carry the marker.
 */
export const reapMarked = sweep;

/**
 * Starts the daemon with `mcpServers` (a config's map) and waits until it listens and every
 * server has started. Resolves with `{ base, pid, dir, log, stop }`: `base` is
 * `http://127.0.0.1:<port>`; `stop()` sends SIGTERM (SIGKILL after 30 s), resolves with
 * `{ code, signal }` and removes the temporary directory. Rejects (after stopping it) when the
 * daemon exits first, a server fails to start (unless `allowFailed`), or 60 s pass. `stderr`,
 * when given, receives the daemon's stderr as it comes; `env` is added to the daemon's environment.
 */
export async function startDaemon({ mcpServers, settings = {}, env = {}, logLevel = 'info', stderr, allowFailed = false }) {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-conformance-'));
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(
    configPath,
    JSON.stringify({ mcpServers, daemon: { host: '127.0.0.1', port: 0, insecureNoAuthLoopback: true, watchConfig: false, logLevel, ...settings } }, null, 2),
  );
  const log = [];
  const daemon = spawn(process.execPath, [BIN, 'serve', '--config', configPath], {
    cwd: dir,
    env: { ...process.env, MCPOOL_STATE_DIR: join(dir, 'state'), MCPOOL_CONFIG: '', MCPOOL_TOKEN: '', MCPOOL_PORT: '', MCPOOL_HOST: '', MCPOOL_LOG_LEVEL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => daemon.once('exit', (code, signal) => resolve({ code, signal })));
  daemon.stderr.on('data', (chunk) => {
    log.push(chunk.toString('utf8').trimEnd());
    stderr?.write(chunk);
  });

  let stopped;
  const stop = () =>
    (stopped ??= (async () => {
      if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGTERM');
      const timer = setTimeout(() => daemon.kill('SIGKILL'), STOP_TIMEOUT_MS);
      const result = await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      return result;
    })());

  // Reads the daemon's JSON log lines until both "listening on" and "N/M servers ready" came.
  const ready = new Promise((resolve, reject) => {
    let buffered = '';
    let base;
    let done = false;
    const timer = setTimeout(() => finish(new Error(`timed out after ${START_TIMEOUT_MS} ms waiting for the daemon`)), START_TIMEOUT_MS);
    const onData = (chunk) => {
      buffered += chunk.toString('utf8');
      let newline;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        const text = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        log.push(text);
        let line;
        try {
          line = JSON.parse(text);
        } catch {
          continue;
        }
        if (typeof line.msg !== 'string') continue;
        if (line.msg.startsWith('listening on ')) base = line.msg.slice('listening on '.length).trim();
        if (/^\d+\/\d+ servers ready/.test(line.msg)) {
          if (line.failed > 0 && !allowFailed) finish(new Error(`a server behind the daemon did not start: ${line.msg}`));
          else if (base) finish(undefined, base);
        }
      }
    };
    function finish(error, value) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      daemon.stdout.off('data', onData);
      // Later lines are still kept for a failure report.
      daemon.stdout.on('data', (chunk) => log.push(chunk.toString('utf8').trimEnd()));
      if (error) reject(error);
      else resolve(value);
    }
    daemon.stdout.on('data', onData);
    void exited.then(({ code, signal }) => finish(new Error(`the daemon exited (code ${code}, signal ${signal}) before it was ready`)));
  });
  try {
    const base = await ready;
    return { base, pid: daemon.pid, dir, log, stop };
  } catch (error) {
    await stop();
    error.daemonLog = log;
    throw error;
  }
}
