/**
 * Starting the daemon when none answers, once per state directory even when many processes ask
 * at once (`mcpool bridge --autostart`, every window of the IDE extension): `mcpool serve` is
 * started detached (its own process group and session, so it outlives whoever started it),
 * logging to `<state dir>/daemon.log`, and waited for (bounded) until its port answers.
 *
 * - Whether a daemon is up is a TCP connect to its address: any listener there means someone
 *   answers, and a token problem is not solved by a second daemon.
 * - Only the holder of the start lock ({@link tryStartLock}) spawns; the others wait for the port
 *   or for the lock to go, and then look again. The holder looks once more after taking the lock,
 *   so a start that finished meanwhile is not repeated.
 * - A start that did not come up is recorded in the state directory (`daemon.start-failed.json`):
 *   for `cooldownMs` no process starts it again, and each reports that failure instead.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, closeSync } from 'node:fs';
import { readFile, unlink, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { tryStartLock } from './startLock.js';

import { DAEMON_LOG_FILE } from './paths.js';
/** The start lock, in the state directory. */
export const START_LOCK_FILE = 'daemon.start.lock';
/** The last failed start, in the state directory. */
export const START_FAILED_FILE = 'daemon.start-failed.json';

/** The lines a starter logs (pino's `Logger` is one). */
export interface StarterLogger {
  info(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export interface DaemonStarterOptions {
  /** The daemon's base URL (`http://host:port`): its port is probed there. */
  baseUrl: string;
  /** The `mcpool` command, as `[executable, ...arguments]` before `serve`. */
  command: readonly [string, ...string[]];
  /** Arguments of `mcpool serve` (`--config`, `--port`). @default [] */
  serveArgs?: readonly string[];
  /** The daemon's state directory: the log file, the start lock and the failure record go there. */
  stateDir: string;
  /** The daemon's environment. */
  env: Record<string, string | undefined>;
  cwd: string;
  logger: StarterLogger;
  /** How long to wait for the port after starting. @default 15000 */
  healthTimeoutMs?: number;
  /** After a start that did not come up, no new start for this long. @default 30000 */
  cooldownMs?: number;
  /** @default Date.now */
  now?: () => number;
}

interface FailureRecord {
  at: number;
  message: string;
}

export class DaemonStarter {
  readonly #options: DaemonStarterOptions;
  readonly #host: string;
  readonly #port: number;
  #inFlight: Promise<boolean> | undefined;
  #pid: number | undefined;
  #failure: string | undefined;

  constructor(options: DaemonStarterOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`options.baseUrl must be an http(s) URL, got ${options.baseUrl}`);
    if (options.command.length === 0 || options.command[0] === '') throw new TypeError('options.command must name the mcpool executable');
    this.#options = options;
    this.#host = url.hostname.replace(/^\[|\]$/g, '');
    this.#port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  }

  /** The pid of the daemon this starter spawned, if it did. */
  get pid(): number | undefined {
    return this.#pid;
  }

  /** Why the last `ensure` answered false. */
  get failure(): string | undefined {
    return this.#failure;
  }

  /** Resolves true when a daemon answers, after starting one if none did; false when it could not be started (see {@link failure}). */
  ensure(): Promise<boolean> {
    this.#inFlight ??= this.#ensure().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  /** Whether anything accepts a connection at the daemon's address. */
  #probe(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = connect({ host: this.#host, port: this.#port });
      const done = (up: boolean): void => {
        socket.destroy();
        resolve(up);
      };
      socket.setTimeout(1000, () => done(true));
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
    });
  }

  async #ensure(): Promise<boolean> {
    this.#failure = undefined;
    if (await this.#probe()) return true;
    const healthTimeoutMs = this.#options.healthTimeoutMs ?? 15_000;
    mkdirSync(this.#options.stateDir, { recursive: true, mode: 0o700 });
    const lockFile = join(this.#options.stateDir, START_LOCK_FILE);
    // A waiter gives the holder its whole start, and then some.
    const deadline = this.#now() + 2 * healthTimeoutMs;
    for (let attempt = 0; this.#now() < deadline; attempt++) {
      const lock = await tryStartLock({ file: lockFile, staleMs: 2 * healthTimeoutMs, ...(this.#options.now ? { now: this.#options.now } : {}) });
      if (lock !== undefined) {
        try {
          return await this.#startHoldingLock(healthTimeoutMs);
        } finally {
          await lock.release();
        }
      }
      // Another process is starting it: wait for its port, or for its lock to go.
      await delay(Math.min(50 * 2 ** attempt, 500));
      if (await this.#probe()) return true;
    }
    this.#failure = `another process was starting the daemon, and it did not answer within ${2 * healthTimeoutMs} ms`;
    return false;
  }

  async #startHoldingLock(healthTimeoutMs: number): Promise<boolean> {
    const { logger, stateDir } = this.#options;
    if (await this.#probe()) return true;
    const failedFile = join(stateDir, START_FAILED_FILE);
    const last = await readFailure(failedFile);
    if (last !== undefined && this.#now() - last.at < (this.#options.cooldownMs ?? 30_000)) {
      this.#failure = last.message;
      return false;
    }
    const fail = async (message: string, fields: Record<string, unknown>): Promise<boolean> => {
      logger.error(fields, message);
      this.#failure = message;
      await writeFile(failedFile, JSON.stringify({ at: this.#now(), message } satisfies FailureRecord), { mode: 0o600 }).catch(() => undefined);
      return false;
    };
    const started = this.#spawn();
    if ('error' in started) return fail(started.error, {});
    const deadline = this.#now() + healthTimeoutMs;
    for (let attempt = 0; this.#now() < deadline; attempt++) {
      if (started.exited !== undefined) {
        return fail(`the daemon it started exited (code ${started.exited}); see ${started.logFile}`, { exitCode: started.exited, log: started.logFile });
      }
      if (await this.#probe()) {
        logger.info({ pid: started.pid }, `the daemon is up (pid ${started.pid})`);
        await unlink(failedFile).catch(() => undefined);
        return true;
      }
      await delay(Math.min(50 * 2 ** attempt, 500));
    }
    return fail(`the daemon it started did not answer in time; see ${started.logFile}`, { pid: started.pid, log: started.logFile });
  }

  #spawn(): { pid: number; logFile: string; exited: number | undefined } | { error: string } {
    const { stateDir, env, cwd, logger, command } = this.#options;
    const logFile = join(stateDir, DAEMON_LOG_FILE);
    let fd: number;
    try {
      fd = openSync(logFile, 'a', 0o600);
    } catch (error) {
      return { error: `cannot open ${logFile}: ${(error as Error).message}` };
    }
    try {
      const [executable, ...prefix] = command;
      const args = [...prefix, 'serve', ...(this.#options.serveArgs ?? [])];
      // Detached: its own session and process group, stdout/stderr to the log file (never ours).
      const child = spawn(executable, args, { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
      const started = { pid: child.pid ?? 0, logFile, exited: undefined as number | undefined };
      child.once('exit', (code, signal) => (started.exited = code ?? (signal ? 128 : 1)));
      child.once('error', () => (started.exited ??= 127));
      child.unref();
      if (child.pid === undefined) return { error: `cannot run \`${[executable, ...args].join(' ')}\` (is mcpool installed?)` };
      this.#pid = child.pid;
      logger.info({ pid: child.pid, log: logFile }, `no daemon answered: started \`mcpool serve\` (pid ${child.pid}), logging to ${logFile}`);
      return started;
    } finally {
      closeSync(fd);
    }
  }
}

async function readFailure(file: string): Promise<FailureRecord | undefined> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<FailureRecord>;
    return typeof parsed.at === 'number' && typeof parsed.message === 'string' ? { at: parsed.at, message: parsed.message } : undefined;
  } catch {
    return undefined;
  }
}
