/**
 * Runs `mcpool serve` as a real process on a port of its own, its config, token and state in a
 * temporary directory: ready when `/readyz` answers 200, its stdout (the daemon's log) and stderr
 * kept, and stopped the way a service manager stops it (SIGTERM, then SIGKILL past a bound).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import { killMarked } from '../../../../test/helpers/processes.js';
import { BIN } from './bridgeProcess.js';

export interface DaemonProcess {
  url: string;
  token: string;
  auth: { authorization: string };
  pid: number;
  /** The temporary directory: HOME, the config and the state dir. Removed by `stop`. */
  dir: string;
  /** Everything the daemon wrote to stdout so far (its JSON log lines). */
  out(): string;
  /** Everything it wrote to stderr so far. */
  err(): string;
  /**
   * SIGTERM, then the exit code (SIGKILL if it has not exited within 30 s); then kills what the
   * marker names and removes the directory. Safe to call again: it answers the same code.
   */
  stop(): Promise<number | null>;
}

/** The bound on a daemon's start: generous, a loaded two-core machine starts Node slowly. */
const START_MS = 60_000;
const STOP_MS = 30_000;

export interface DaemonProcessOptions {
  logLevel?: string;
  /** More `daemon` settings (clients, limits); `port: 0` and `watchConfig: false` stay. */
  daemon?: Record<string, unknown>;
  /** More environment variables (client tokens). */
  env?: Record<string, string>;
}

export async function startDaemonProcess(label: string, mark: string, servers: Record<string, unknown>, options: DaemonProcessOptions = {}): Promise<DaemonProcess> {
  const dir = mkdtempSync(join(tmpdir(), `mcpool-${label}-`));
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify({ mcpServers: servers, daemon: { ...options.daemon, port: 0, watchConfig: false } }));
  const daemon = spawn(process.execPath, [BIN, 'serve', '--config', configPath, '--log-level', options.logLevel ?? 'info'], {
    env: { ...options.env, PATH: process.env.PATH, HOME: dir, XDG_STATE_HOME: join(dir, 'xdg'), MCPOOL_STATE_DIR: join(dir, 'state') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  daemon.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  daemon.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => daemon.once('exit', (code) => resolve(code)));
  let stopped: Promise<number | null> | undefined;
  const stop = (): Promise<number | null> =>
    (stopped ??= (async () => {
      if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGTERM');
      let bound: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        exited,
        new Promise<null>((resolve) => {
          bound = setTimeout(() => {
            daemon.kill('SIGKILL');
            resolve(null);
          }, STOP_MS);
        }),
      ]);
      clearTimeout(bound);
      await exited;
      killMarked(mark);
      rmSync(dir, { recursive: true, force: true });
      return code;
    })());
  try {
    const url = await vi.waitFor(
      () => {
        const found = /listening on (http:\/\/[^"\s]+)/.exec(out);
        if (!found) throw new Error('not listening yet');
        return found[1]!;
      },
      { timeout: START_MS, interval: 50 },
    );
    const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
    const auth = { authorization: `Bearer ${token}` };
    await vi.waitFor(async () => expect((await fetch(`${url}/readyz`, { headers: auth })).status).toBe(200), { timeout: START_MS, interval: 100 });
    return { url, token, auth, pid: daemon.pid!, dir, out: () => out, err: () => err, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
