/**
 * A team gateway on one machine: replicas of `mcpool serve` as real processes (each on its own
 * port of 127.0.0.1, its own state directory, one shared operator token, `daemon.cluster` naming
 * the others), and HAProxy or nginx in front of them, run from the deploy files themselves with
 * only the addresses swapped for local ones. Everything is ended by its PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killMarked } from '../../../../test/helpers/processes.js';
import { freePort } from '../../../../test/helpers/ports.js';
import { startService, type Service } from '../../../../test/helpers/services.js';
import { BIN } from './bridgeProcess.js';
import { haproxyConfig } from '../../../../test/conformance/balancer.mjs';

const DEPLOY = new URL('../../../../deploy/', import.meta.url);

export interface Replica {
  id: string;
  port: number;
  url: string;
  child: ChildProcess;
  out(): string;
  /** Its process has not exited. */
  running(): boolean;
  /** SIGTERM, resolves with the exit code (SIGKILL past 60 s). */
  stop(): Promise<number | null>;
  /** SIGKILL at once. */
  kill(): Promise<void>;
  /** Starts it again on the same port, with `keys` (default: the ones it started with). */
  restart(keys?: string): Promise<void>;
}

export interface Team {
  token: string;
  replicas: Replica[];
  dir: string;
  close(): Promise<void>;
}

export const newKey = (): string => randomBytes(32).toString('base64');

/**
 * Starts `count` replicas over `servers`, with `daemon` settings added to each; `keys` are their
 * `MCPOOL_SESSION_KEYS`, by index (default: one new key for all); `env` is added to each one's.
 */
export async function startTeam(count: number, servers: Record<string, unknown>, options: { daemon?: Record<string, unknown>; marks?: string[]; keys?: string[]; env?: Record<string, string> } = {}): Promise<Team> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-team-'));
  const token = `team-${randomUUID()}`;
  const shared = newKey();
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
  const ids = ports.map((_port, i) => `r${i + 1}`);
  const replicas: Replica[] = [];
  const launches: Promise<void>[] = [];
  for (const [i, port] of ports.entries()) {
    const id = ids[i]!;
    const keys = options.keys?.[i] ?? shared;
    const peers = Object.fromEntries(ids.flatMap((other, j) => (other === id ? [] : [[other, `http://127.0.0.1:${ports[j]}`]])));
    const home = join(dir, id);
    const configPath = join(dir, `${id}.json`);
    writeFileSync(configPath, JSON.stringify({ mcpServers: servers, daemon: { port, watchConfig: false, maxConnectionsPerAddress: 10_000, cluster: { replicaId: id, peers }, ...options.daemon } }));
    let child!: ChildProcess;
    let out = '';
    let exited!: Promise<number | null>;
    const launch = async (keysNow: string): Promise<void> => {
      out = '';
      child = spawn(process.execPath, [BIN, 'serve', '--config', configPath, '--log-level', 'info'], {
        env: { PATH: process.env.PATH, HOME: home, MCPOOL_STATE_DIR: join(home, 'state'), MCPOOL_TOKEN: token, MCPOOL_SESSION_KEYS: keysNow, ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
      const deadline = Date.now() + 90_000;
      for (;;) {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
        if (ready) return;
        if (child.exitCode !== null) throw new Error(`replica ${id} exited: ${out}`);
        if (Date.now() > deadline) throw new Error(`replica ${id} not ready: ${out}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    launches.push(launch(keys));
    const replica: Replica = {
      id,
      port,
      url: `http://127.0.0.1:${port}`,
      get child() {
        return child;
      },
      out: () => out,
      running: () => child.exitCode === null && child.signalCode === null,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        const bound = setTimeout(() => child.kill('SIGKILL'), 60_000);
        const code = await exited;
        clearTimeout(bound);
        return code;
      },
      async kill() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      },
      restart: (keysNow = keys) => launch(keysNow),
    };
    replicas.push(replica);
  }
  // All at once: each start is mostly waiting on its own process.
  const started = await Promise.allSettled(launches);
  const failed = started.find((result) => result.status === 'rejected');
  if (failed !== undefined) {
    await Promise.all(replicas.map((replica) => replica.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw failed.reason;
  }
  return {
    token,
    replicas,
    dir,
    async close() {
      await Promise.all(replicas.map((replica) => replica.stop()));
      for (const mark of options.marks ?? []) killMarked(mark);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** HAProxy from `deploy/haproxy.cfg`, its replicas the team's. */
export async function startHaproxy(team: Team): Promise<Service & { url: string }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-haproxy-'));
  writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfig(port, team.replicas));
  const service = await startService('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], port, dir);
  return { ...service, url: `http://127.0.0.1:${port}` };
}

/** nginx from `deploy/nginx.conf`, its replicas the team's. */
export async function startNginx(team: Team): Promise<Service & { url: string }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-nginx-'));
  let text = readFileSync(new URL('nginx.conf', DEPLOY), 'utf8').replace(/^(\s*listen )\S+;$/m, `$1127.0.0.1:${port};`);
  text = text.replace(/^\s*server \S+:7070 [^;]*;\n/gm, '');
  text = text.replace(/(upstream mcpool_replicas \{\n)/, `$1${team.replicas.map((replica) => `        server 127.0.0.1:${replica.port} max_fails=1 fail_timeout=5s;\n`).join('')}`);
  writeFileSync(join(dir, 'nginx.conf'), text);
  const service = await startService('nginx', ['-c', join(dir, 'nginx.conf'), '-p', `${dir}/`, '-e', join(dir, 'error.log'), '-g', `daemon off; pid ${join(dir, 'nginx.pid')};`], port, dir);
  return { ...service, url: `http://127.0.0.1:${port}` };
}
