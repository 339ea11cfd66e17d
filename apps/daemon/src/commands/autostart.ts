/**
 * `mcpool bridge --autostart`: when no daemon answers, start `mcpool serve` detached (its own
 * process group and session, so it outlives the bridge and its client), logging to
 * `<state dir>/daemon.log`, and wait (bounded) until `/healthz` answers.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { isConnectError, type TokenSource } from '@mcpool/gateway';
import { BIN_PATH, DAEMON_LOG_FILE } from '../config/paths.js';

export interface DaemonStarterOptions {
  /** The daemon's base URL (`http://host:port`): `/healthz` is asked there. */
  baseUrl: string;
  token: TokenSource;
  /** Arguments of `mcpool serve` (`--config`, `--port`). @default [] */
  serveArgs?: readonly string[];
  /** Where the log file goes (the daemon's state directory). */
  stateDir: string;
  /** The daemon's environment. */
  env: Record<string, string | undefined>;
  cwd: string;
  logger: Logger;
  /** How long to wait for `/healthz` after starting. @default 15000 */
  healthTimeoutMs?: number;
  /** After a start that did not come up, no new start for this long. @default 30000 */
  cooldownMs?: number;
  /** @default {@link BIN_PATH} */
  bin?: string;
}

type Probe = 'up' | 'down';

export class DaemonStarter {
  readonly #options: DaemonStarterOptions;
  readonly #healthUrl: string;
  #inFlight: Promise<boolean> | undefined;
  #lastFailure = 0;
  #pid: number | undefined;

  constructor(options: DaemonStarterOptions) {
    this.#options = options;
    this.#healthUrl = new URL('/healthz', options.baseUrl).href;
  }

  /** The pid of the daemon this starter spawned, if it did. */
  get pid(): number | undefined {
    return this.#pid;
  }

  /** Resolves true when a daemon answers, after starting one if none did; false when it could not be started. */
  ensure(): Promise<boolean> {
    this.#inFlight ??= this.#ensure().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  async #probe(): Promise<Probe> {
    const token = await this.#options.token.refresh();
    try {
      const response = await fetch(this.#healthUrl, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(1000), redirect: 'manual' });
      await response.body?.cancel().catch(() => undefined);
      // Any answer means someone listens there: a token problem is not solved by a second daemon.
      return 'up';
    } catch (error) {
      return isConnectError(error) ? 'down' : 'up';
    }
  }

  async #ensure(): Promise<boolean> {
    const { logger } = this.#options;
    if ((await this.#probe()) === 'up') return true;
    const cooldown = this.#options.cooldownMs ?? 30_000;
    if (Date.now() - this.#lastFailure < cooldown) return false;
    const started = this.#start();
    if (started === undefined) {
      this.#lastFailure = Date.now();
      return false;
    }
    const deadline = Date.now() + (this.#options.healthTimeoutMs ?? 15_000);
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      if (started.exited !== undefined) {
        logger.error({ exitCode: started.exited, log: started.logFile }, `the daemon started by --autostart exited (code ${started.exited}); see ${started.logFile}`);
        this.#lastFailure = Date.now();
        return false;
      }
      if ((await this.#probe()) === 'up') {
        logger.info({ pid: started.pid }, `the daemon is up (pid ${started.pid})`);
        return true;
      }
      await delay(Math.min(50 * 2 ** attempt, 500));
    }
    logger.error({ pid: started.pid, log: started.logFile }, `the daemon started by --autostart did not answer /healthz in time; see ${started.logFile}`);
    this.#lastFailure = Date.now();
    return false;
  }

  #start(): { pid: number; logFile: string; exited: number | undefined } | undefined {
    const { stateDir, env, cwd, logger } = this.#options;
    const logFile = join(stateDir, DAEMON_LOG_FILE);
    let fd: number;
    try {
      mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      fd = openSync(logFile, 'a', 0o600);
    } catch (error) {
      logger.error({ err: error, log: logFile }, `--autostart cannot open ${logFile}`);
      return undefined;
    }
    try {
      const args = [this.#options.bin ?? BIN_PATH, 'serve', ...(this.#options.serveArgs ?? [])];
      // Detached: its own session and process group, stdout/stderr to the log file (never our stdout).
      const child = spawn(process.execPath, args, { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
      if (child.pid === undefined) {
        logger.error('--autostart could not spawn `mcpool serve`');
        return undefined;
      }
      const started = { pid: child.pid, logFile, exited: undefined as number | undefined };
      child.once('exit', (code, signal) => (started.exited = code ?? (signal ? 128 : 1)));
      child.once('error', () => (started.exited ??= 1));
      child.unref();
      this.#pid = child.pid;
      logger.info({ pid: child.pid, log: logFile }, `no daemon answered: started \`mcpool serve\` (pid ${child.pid}), logging to ${logFile}`);
      return started;
    } finally {
      closeSync(fd);
    }
  }
}
