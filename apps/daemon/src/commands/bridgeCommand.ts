/**
 * The `mcpool bridge` command: resolves the daemon's `/mcp` URL and token the way the other
 * client commands do (the local socket, without a token, when no address was given and a daemon
 * answers there), logs to stderr only (stdout carries MCP), optionally starts the daemon, runs the
 * {@link Bridge} on this process's stdin/stdout, and ends on stdin EOF or SIGTERM/SIGINT/SIGHUP.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { pino } from 'pino';
import type { Readable, Writable } from 'node:stream';
import { TOKEN_FILE } from '../auth.js';
import { daemonUrl, httpUrlOption, port, UsageError, type CommandIo } from './clientCommands.js';
import type { LogLevel } from '../config/daemonConfig.js';
import { BIN_PATH, defaultStateDir } from '../config/paths.js';
import { createLogger } from '../logger.js';
import { SecretRedactor } from '../secrets.js';
import { VERSION } from '../version.js';
import type { TokenSource } from '@mcpool/gateway';
import { DaemonStarter } from '../local/daemonStarter.js';
import { LOCAL_SOCKET_BASE_URL, localSocketPath, socketAnswers, socketFetch } from '@mcpool/client/node';

export interface BridgeCommandOptions {
  /** `--url`: the MCP endpoint. @default `$MCPOOL_URL/mcp`, else `http://<host>:<port>/mcp` of the config */
  url?: string;
  /** `--port`: the daemon on this port of 127.0.0.1, endpoint `/mcp` (instead of `--url`). */
  port?: number;
  /** `--token-file`. @default `$MCPOOL_TOKEN`, else `<state dir>/token` */
  tokenFile?: string;
  /** `--autostart` */
  autostart?: boolean;
  /** `--config`: where the daemon address comes from (and what an autostarted daemon runs). */
  config?: string;
  /** `--log-level` (stderr). @default `$MCPOOL_LOG_LEVEL`, else info */
  logLevel?: LogLevel;
}

export interface BridgeStdio {
  /** @default process.stdin */
  stdin?: Readable;
  /** @default process.stdout */
  stdout?: Writable;
  /** Stop on SIGTERM/SIGINT/SIGHUP. @default true */
  signals?: boolean;
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Reads the token from `path` now and again on `refresh()`; a missing file is no token. */
function fileToken(path: string): TokenSource {
  let cached: Promise<string | undefined> | undefined;
  const read = (): Promise<string | undefined> => (cached = readFile(path, 'utf8').then((text) => text.trim() || undefined, () => undefined));
  return { get: () => cached ?? read(), refresh: read };
}

/** Adds `mcpool bridge` to the program; `done` receives its exit code. */
export function registerBridgeCommand(program: Command, io: CommandIo, done: (exitCode: number) => void): void {
  program
    .command('bridge')
    .description("stdio ↔ the daemon's /mcp: the command a stdio-only MCP client runs to use the pool")
    .option('--url <url>', "the daemon's MCP endpoint, e.g. http://127.0.0.1:7070/mcp/<server> (default: $MCPOOL_URL/mcp, else host and port of the config + /mcp)")
    .option('-p, --port <port>', 'the daemon on this port of 127.0.0.1, endpoint /mcp (instead of --url)', port)
    .option('--token-file <file>', 'read the bearer token from this file (default: $MCPOOL_TOKEN, else the daemon’s token file in its state directory)')
    .option('--autostart', 'start `mcpool serve` (detached, logging to the state directory) when no daemon answers')
    .option('-c, --config <file>', 'config to read the daemon address from (and to start the daemon with)')
    .addOption(new Option('--log-level <level>', 'stderr log level (default: $MCPOOL_LOG_LEVEL, else info)').choices(LOG_LEVELS))
    .action(async (options: BridgeCommandOptions) => done(await runBridge(options, io)));
}

/** Runs the bridge until its client closes stdin or a signal; resolves with the exit code (0). @throws UsageError for a bad URL or token file. */
export async function runBridge(options: BridgeCommandOptions, io: CommandIo, stdio: BridgeStdio = {}): Promise<number> {
  const env = io.env;
  // The URL: explicit (--url, or MCPOOL_URL + /mcp), else the daemon's configured address.
  if (options.url !== undefined && options.port !== undefined) throw new UsageError('give --url or --port, not both');
  const explicitBase = options.url === undefined ? (options.port === undefined ? env.MCPOOL_URL : `http://127.0.0.1:${options.port}`) : undefined;
  const urlText = options.url ?? `${(await daemonUrl({ ...(options.config ? { config: options.config } : {}), ...(options.port === undefined ? {} : { port: options.port }) }, io)).replace(/\/+$/, '')}/mcp`;
  const url = httpUrlOption(urlText);

  const stateDir = defaultStateDir({ env });
  // No address or token asked for: this user's daemon on its local socket, where no token is needed.
  const addressed = options.url !== undefined || explicitBase !== undefined || options.config !== undefined || options.tokenFile !== undefined;
  const socketPath = addressed ? undefined : localSocketPath(stateDir);
  const socket = socketPath !== undefined && (await socketAnswers(socketPath)) ? socketPath : undefined;
  const redactor = new SecretRedactor();
  let token: TokenSource;
  if (socket !== undefined) {
    token = { get: async () => undefined, refresh: async () => undefined };
  } else if (options.tokenFile !== undefined) {
    const path = resolve(io.cwd, options.tokenFile);
    token = fileToken(path);
    if ((await token.get()) === undefined && !options.autostart) throw new UsageError(`--token-file: cannot read a token from ${path}`);
  } else if (env.MCPOOL_TOKEN) {
    const value = env.MCPOOL_TOKEN;
    token = { get: async () => value, refresh: async () => value };
  } else {
    token = fileToken(resolve(stateDir, TOKEN_FILE));
  }
  const first = await token.get();
  redactor.setCredentials('token', [first]);
  const tracked: TokenSource = {
    get: () => token.get(),
    refresh: async () => {
      const value = await token.refresh();
      // The token the bridge holds now; a replaced one is no longer a credential of this process.
      redactor.setCredentials('token', [first, value]);
      return value;
    },
  };

  const envLevel = env.MCPOOL_LOG_LEVEL as LogLevel | undefined;
  const level = options.logLevel ?? (envLevel && LOG_LEVELS.includes(envLevel) ? envLevel : 'info');
  // stderr only, synchronously (nothing lost at exit). Never stdout: it carries MCP.
  const logger = createLogger({ level, redactor, pretty: false, destination: pino.destination({ dest: 2, sync: true }) }).child({ component: 'bridge' });
  if (socket !== undefined) logger.info({ socket }, `bridging over the local socket ${socket} (no token needed)`);
  else if (first === undefined && !options.autostart) logger.warn(`no token yet (set MCPOOL_TOKEN, pass --token-file, or start \`mcpool serve\` once: it writes ${resolve(stateDir, TOKEN_FILE)}); requests go without one`);

  let starter: DaemonStarter | undefined;
  if (options.autostart) {
    const explicit = options.url !== undefined || explicitBase !== undefined;
    if (explicit && !LOOPBACK.has(url.hostname)) {
      logger.warn({ host: url.hostname }, '--autostart only starts a daemon on this machine: the URL is not loopback, so it is off');
    } else {
      // The daemon serves the whole machine: it must not depend on where its first client ran.
      // It runs in the state directory, with the config it was given (flag or MCPOOL_CONFIG) by
      // absolute path; with none, it finds the user's config as `serve` anywhere would.
      const serveArgs: string[] = [];
      const config = options.config ?? (env.MCPOOL_CONFIG || undefined);
      if (config) serveArgs.push('--config', resolve(io.cwd, config));
      if (explicit && url.port !== '') serveArgs.push('--port', url.port);
      starter = new DaemonStarter({ baseUrl: url.origin, command: [process.execPath, BIN_PATH], serveArgs, stateDir, env, cwd: stateDir, logger });
    }
  }

  // Loaded here: the gateway is most of what a CLI start would load, and only the bridge runs it.
  const { Bridge } = await import('@mcpool/gateway');
  const bridge = new Bridge({
    // Over the socket the URL's host is only the Host header; the path picks the endpoint as on TCP.
    url: socket === undefined ? url.href : new URL(`${url.pathname}${url.search}`, LOCAL_SOCKET_BASE_URL).href,
    ...(socket === undefined ? {} : { fetch: socketFetch(socket) }),
    token: tracked,
    input: stdio.stdin ?? process.stdin,
    output: stdio.stdout ?? process.stdout,
    logger,
    version: VERSION,
    ...(starter ? { ready: starter.ensure(), onUnreachable: () => starter.ensure() } : {}),
  });
  const onSignal = (signal: NodeJS.Signals): void => void bridge.close(signal);
  const signals: NodeJS.Signals[] = stdio.signals === false ? [] : ['SIGTERM', 'SIGINT', 'SIGHUP'];
  for (const signal of signals) process.on(signal, onSignal);
  try {
    await bridge.run();
  } finally {
    for (const signal of signals) process.off(signal, onSignal);
  }
  return 0;
}
