/**
 * Services from Debian that tests run for themselves (never the machine's own): each on 127.0.0.1,
 * on a free port, with its config and data in a temporary directory, ended by its PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './ports.js';

/**
 * Why a test that runs `command` cannot run on this machine (it is on no directory of `PATH`), or
 * `undefined` when it can. `.ci/run` installs every such command, so CI never skips.
 */
export function absent(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      if (dir) {
        accessSync(join(dir, command), constants.X_OK);
        return undefined;
      }
    } catch {
      // Not in this directory.
    }
  }
  return `${command} is not installed (Debian's package; .ci/run installs it)`;
}

/** Resolves once something accepts TCP connections on `port` (bounded by `timeoutMs`). */
export async function waitForPort(port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface Service {
  port: number;
  pid: number;
  child: ChildProcess;
  /** Everything it wrote (stdout and stderr). */
  output(): string;
  /** SIGTERM (SIGKILL past 10 s), then its directory is removed. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL at once (a crash). */
  kill(): Promise<void>;
}

/** Runs `command` until stopped; ready when `port` accepts connections. */
export async function startService(command: string, args: string[], port: number, dir: string): Promise<Service> {
  const child = spawn(command, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    const bound = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(bound);
  };
  let stopped: Promise<void> | undefined;
  const service: Service = {
    port,
    pid: child.pid!,
    child,
    output: () => output,
    stop: () =>
      (stopped ??= (async () => {
        await end('SIGTERM');
        rmSync(dir, { recursive: true, force: true });
      })()),
    kill: () => end('SIGKILL'),
  };
  try {
    await Promise.race([waitForPort(port), exited.then(() => Promise.reject(new Error(`${command} exited: ${output}`)))]);
  } catch (error) {
    await service.stop();
    throw error;
  }
  return service;
}

/** A `redis-server` of the test's own: no persistence, loopback only. `port` reuses one (a restart). */
export async function startRedis(port?: number): Promise<Service & { url: string }> {
  const chosen = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-redis-'));
  const service = await startService('redis-server', ['--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], chosen, dir);
  return { ...service, url: `redis://127.0.0.1:${chosen}` };
}
