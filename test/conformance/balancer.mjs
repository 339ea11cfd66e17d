/**
 * Replicas of the daemon behind HAProxy, run from `deploy/haproxy.cfg` itself with only the
 * addresses swapped for local ones (round-robin, no stickiness): what the conformance suite's
 * server leg is pointed at with `--balancer`, and what the replica tests start. Every replica is
 * a `daemon.mjs` daemon with `daemon.cluster` naming the others and one shared session key;
 * everything is ended by its PID.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../bench/lib/gateways.mjs';
import { ROOT, startDaemon } from './daemon.mjs';

const DEPLOY_HAPROXY = join(ROOT, 'deploy/haproxy.cfg');
const READY_TIMEOUT_MS = 30_000;

/** The deploy file's HAProxy config, listening on 127.0.0.1:`port`, its servers `replicas` ({ id, port }) on 127.0.0.1. */
export function haproxyConfig(port, replicas, text = readFileSync(DEPLOY_HAPROXY, 'utf8')) {
  const local = text.replace(/^(\s*bind )\S+$/m, `$1127.0.0.1:${port}`).replace(/^\s*server \S+ \S+ check\n/gm, '');
  return local + replicas.map((replica) => `    server ${replica.id} 127.0.0.1:${replica.port} check\n`).join('');
}

/**
 * `count` replicas over `mcpServers` (as `startDaemon` takes them) and HAProxy in front.
 * Resolves with `{ base, replicas, stop }`: `base` is the balancer's `http://127.0.0.1:<port>`;
 * `stop()` stops HAProxy and every replica, and resolves with whether each replica exited 0.
 */
export async function startBalancedTeam({ mcpServers, count = 3 }) {
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
  const ids = ports.map((_port, i) => `r${i + 1}`);
  const key = randomBytes(32).toString('base64');
  const started = await Promise.allSettled(
    ports.map((port, i) =>
      startDaemon({
        mcpServers,
        env: { MCPOOL_SESSION_KEYS: key },
        settings: { port, maxConnectionsPerAddress: 10_000, cluster: { replicaId: ids[i], peers: Object.fromEntries(ids.flatMap((other, j) => (j === i ? [] : [[other, `http://127.0.0.1:${ports[j]}`]]))) } },
      }),
    ),
  );
  const replicas = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stopReplicas = async () => (await Promise.all(replicas.map((replica) => replica.stop()))).every(({ code }) => code === 0);
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) {
    await stopReplicas();
    throw failed.reason;
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-conformance-haproxy-'));
  writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfig(port, ids.map((id, i) => ({ id, port: ports[i] }))));
  const haproxy = spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let haproxyErr = '';
  haproxy.stderr.on('data', (chunk) => (haproxyErr += chunk.toString('utf8')));
  const haproxyExited = new Promise((resolve) => haproxy.once('exit', resolve));
  haproxy.once('error', (error) => (haproxyErr += error.message));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (haproxy.exitCode === null && haproxy.signalCode === null) haproxy.kill('SIGTERM');
    await haproxyExited;
    rmSync(dir, { recursive: true, force: true });
    return stopReplicas();
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ready = await fetch(`${base}/readyz`).then((response) => response.status === 200, () => false);
    if (ready) break;
    if (haproxy.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`HAProxy did not become ready at ${base}: ${haproxyErr.slice(-500)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { base, replicas, haproxyPid: haproxy.pid, stop };
}
