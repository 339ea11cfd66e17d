/**
 * `mcpool serve`: find and load the config, get the operator token, build the daemon and its
 * HTTP app, listen, warm the servers, and shut down in order on SIGTERM/SIGINT (a
 * second signal forces the exit). A bad config or a port in use ends the start with a clear
 * message and its own exit code.
 */
import { join } from 'node:path';
import { ConfigError } from '@mcpool/protocol';
import type { McpTransportPoolOptions } from '@mcpool/core';
import type { FastifyInstance } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import { ensureOperatorToken } from './auth.js';
import { listenLocalSocket } from './http/localSocket.js';
import { loadConfig, type LoadedConfig, type LogLevel, type SettingsOverrides } from './config/daemonConfig.js';
import { discoverConfig } from './config/discovery.js';
import { DAEMON_LOG_FILE, defaultStateDir } from './config/paths.js';
import { watchConfigFile, type ConfigWatcher } from './config/watch.js';
import { Daemon } from './daemon.js';
import { buildApp } from './http/app.js';
import { killDescendantsSync } from './forceKill.js';
import { firstScreen, firstScreenLine, type FirstScreenInfo } from './firstScreen.js';
import { startHeapWatch } from './heapWatch.js';
import { createLogger, LogFileBound } from './logger.js';
import { SecretRedactor } from './secrets.js';
import type { Telemetry, TelemetryExporters } from './telemetry/contract.js';
import { startTelemetry } from './telemetry/telemetry.js';
import { VERSION } from './version.js';
import { openStore } from './store/openStore.js';
import type { SharedStore } from './store/sharedStore.js';
import { ExitCode } from './exitCodes.js';

export { ExitCode } from './exitCodes.js';

/** The daemon could not start; `exitCode` says why, `message` has already been logged. */
export class StartError extends Error {
  override name = 'StartError';
  readonly exitCode: number;

  constructor(exitCode: number, message: string) {
    super(message);
    this.exitCode = exitCode;
  }
}

export interface StartOptions {
  /** `--config` */
  configPath?: string;
  /** `--port`, `--host`, `--log-level` */
  overrides?: SettingsOverrides;
  /** @default process.env */
  env?: Record<string, string | undefined>;
  /** @default process.cwd() */
  cwd?: string;
  /** Where log lines go. @default stdout */
  destination?: DestinationStream;
  /** @default whether stdout is a terminal */
  pretty?: boolean;
  /** Tests shorten pool timings. */
  poolOptions?: Partial<McpTransportPoolOptions>;
  /**
   * What to print once listening about connecting clients: `full`, the whole first screen on
   * stdout; `line`, one log line (a service log gets no banner at every start); `none`.
   * @default `full` when stdout is a terminal, else `line`
   */
  firstScreen?: 'full' | 'line' | 'none';
  /** Replace the OTLP exporters when telemetry is configured on (tests: in-memory ones). */
  telemetryExporters?: TelemetryExporters;
}

export interface RunningDaemon {
  daemon: Daemon;
  app: FastifyInstance;
  logger: Logger;
  /** `http://host:port` the daemon answers on. */
  url: string;
  port: number;
  /** The local socket the daemon also answers on (no token), when it has one. */
  socketPath: string | undefined;
  /** Resolves when the configured servers have all been started once. */
  warmed: Promise<void>;
  /** Shuts down (calls first, servers last), closes the HTTP server; resolves with the exit code. */
  stop(reason: string): Promise<number>;
  /** Resolves with the exit code once a stop, whoever asked for it (a signal, `POST /workspace/shutdown`), is done. */
  stopped: Promise<number>;
}

const LOG_LEVELS = new Set<LogLevel>(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** Starts the daemon. @throws StartError (already logged) for a bad config, token or listen failure. */
export async function startDaemon(options: StartOptions = {}): Promise<RunningDaemon> {
  const env = options.env ?? process.env;
  const overrides = options.overrides ?? {};
  const redactor = new SecretRedactor();
  const envLevel = env.MCPOOL_LOG_LEVEL as LogLevel | undefined;
  // Set once the state directory and the settings are known (the logger is needed before).
  let logBound: LogFileBound | undefined;
  const logger = createLogger({
    level: overrides.logLevel ?? (envLevel && LOG_LEVELS.has(envLevel) ? envLevel : 'info'),
    redactor,
    onWrite: (bytes) => logBound?.written(bytes),
    ...(options.destination ? { destination: options.destination } : {}),
    ...(options.pretty === undefined ? {} : { pretty: options.pretty }),
  });
  const fail = (exitCode: number, message: string, fields: Record<string, unknown> = {}): never => {
    logger.fatal({ exitCode, ...fields }, message);
    throw new StartError(exitCode, message);
  };

  // 1. The config. The first log line says which one (or that it is the built-in default).
  let config: LoadedConfig;
  let reload: () => Promise<LoadedConfig>;
  try {
    const source = discoverConfig({ ...(options.configPath ? { flag: options.configPath } : {}), env, ...(options.cwd ? { cwd: options.cwd } : {}) });
    config = await loadConfig(source, env, overrides);
    reload = () => loadConfig(source, env, overrides);
  } catch (error) {
    if (error instanceof ConfigError) return fail(ExitCode.CONFIG, `cannot start: ${error.message}`, { code: error.code });
    throw error;
  }
  const names = Object.keys(config.servers);
  if (config.source.kind === 'builtin') {
    logger.info({ searched: config.source.searched }, 'no config file found: running the built-in default config (the bundled demo server); write .mcp.json or ~/.config/mcpool/config.json, or pass --config');
  } else {
    const unavailable = Object.keys(config.unavailable);
    const cannotRun = unavailable.length > 0 ? `; ${unavailable.length} cannot run (${unavailable.join(', ')})` : '';
    logger.info({ file: config.source.path, origin: config.source.origin, servers: names, ...(unavailable.length > 0 ? { unavailable } : {}) }, `config ${config.source.path}: ${names.length} server(s)${names.length ? ` (${names.join(', ')})` : ''}${cannotRun}`);
  }
  if (overrides.logLevel === undefined) logger.level = config.settings.logLevel;
  for (const warning of config.warnings) logger.warn({ path: warning.path }, `config: ${warning.message}`);

  // 2. The operator token.
  const stateDir = defaultStateDir({ env });
  if (options.destination === undefined) logBound = LogFileBound.forDescriptor(join(stateDir, DAEMON_LOG_FILE), config.settings.logMaxBytes);
  let operator: Awaited<ReturnType<typeof ensureOperatorToken>>;
  try {
    operator = await ensureOperatorToken(stateDir, env);
  } catch (error) {
    if (error instanceof ConfigError) return fail(ExitCode.CONFIG, `cannot start: ${error.message}`);
    throw error;
  }
  if (operator.source === 'env') logger.info('operator token from MCPOOL_TOKEN');
  else logger.info({ tokenFile: operator.path, created: operator.created }, `operator token ${operator.created ? 'created in' : 'read from'} ${operator.path}`);
  if (operator.tightened) logger.warn({ tokenFile: operator.path }, 'the token file was readable by others; its mode is now 0600');

  // The shared store of OAuth grants: the state directory, or Redis for replicas.
  let store: SharedStore;
  try {
    store = await openStore(config.settings.store, stateDir, env, logger.child({ component: 'store' }));
  } catch (error) {
    if (error instanceof ConfigError) return fail(ExitCode.CONFIG, `cannot start: ${error.message}`);
    throw error;
  }
  if (store.kind === 'redis') logger.info('upstream OAuth grants are kept in Redis (daemon.store)');

  // 3. Telemetry, when an OTLP endpoint is configured (the SDK is loaded only then), before the
  // pool exists so its first call is already traced.
  const telemetry: Telemetry | undefined = await startTelemetry({ settings: config.settings.telemetry, env, logger, version: VERSION, exporters: options.telemetryExporters });

  // 4. The daemon and its API.
  const daemon = new Daemon({
    config,
    logger,
    redactor,
    operatorToken: operator.token,
    env,
    reloadConfig: reload,
    version: VERSION,
    groupLedgerDir: join(stateDir, 'groups'),
    catalogDir: join(stateDir, 'catalog'),
    oauthStateDir: stateDir,
    store,
    ...(telemetry ? { telemetry } : {}),
    ...(options.poolOptions ? { poolOptions: options.poolOptions } : {}),
  });
  let stopRequested: (reason: string) => void = () => undefined;
  const app = await buildApp({ daemon, logger, redactor, stop: (reason) => stopRequested(reason) });
  const { host, port } = config.settings;
  try {
    await app.listen({ host, port, listenTextResolver: (address) => `listening on ${address}` });
  } catch (error) {
    await daemon.shutdown('listen failed').catch(() => undefined);
    await app.close().catch(() => undefined);
    await store.close();
    await telemetry?.shutdown();
    const code = (error as NodeJS.ErrnoException).code;
    const where = `${host}:${port}`;
    if (code === 'EADDRINUSE') return fail(ExitCode.UNAVAILABLE, `cannot start: ${where} is already in use (another mcpool?); choose another port with --port or MCPOOL_PORT`, { host, port });
    if (code === 'EACCES') return fail(ExitCode.UNAVAILABLE, `cannot start: no permission to listen on ${where}`, { host, port });
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return fail(ExitCode.UNAVAILABLE, `cannot start: ${host} is not an address of this machine`, { host, port });
    return fail(ExitCode.UNAVAILABLE, `cannot start: listening on ${where} failed (${code ?? (error as Error).message})`, { host, port });
  }
  const address = app.server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${boundPort}`;
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) logger.warn({ host }, `bound to ${host}, not loopback: the control API can start processes, keep the token safe`);
  // The same API on the state directory's socket, for this user's CLI, bridge and clients (no token).
  const local = await listenLocalSocket(app, stateDir, config.settings, logger.child({ component: 'http' }));
  if (local !== undefined) logger.info({ socket: local.path }, `also listening on ${local.path} (local socket: this user's commands need no token there)`);
  // What to do next. Never the token: where it is, and commands that read it there.
  const screen: FirstScreenInfo = { url, token: operator.path === undefined ? 'env' : { file: operator.path } };
  const firstScreenMode = options.firstScreen ?? (process.stdout.isTTY === true ? 'full' : 'line');
  if (firstScreenMode === 'full') process.stdout.write(firstScreen(screen));
  else if (firstScreenMode === 'line') logger.info({ mcp: `${url}/mcp` }, firstScreenLine(screen));

  // 5. Warm the servers; watch the config file.
  const warmed = daemon.start();
  let watcher: ConfigWatcher | undefined;
  if (config.source.kind === 'file' && config.settings.watchConfig) {
    watcher = watchConfigFile(
      config.source.path,
      () => void daemon.reload('file').catch(() => undefined),
      (error) => logger.warn({ err: error }, 'cannot watch the config file; use SIGHUP or POST /workspace/mcp/reload-all'),
    );
  }

  let stopping: Promise<number> | undefined;
  let markStopped!: (code: number) => void;
  const stopped = new Promise<number>((resolve) => (markStopped = resolve));
  const stop = (reason: string): Promise<number> => {
    stopping ??= (async () => {
      watcher?.close();
      // 1. Drain: not ready at once, no new session, calls in flight finish (within drainTimeoutMs).
      await daemon.drain();
      // 2. Stop listening (new requests get 503); what is still in flight is cancelled by the shutdown.
      const closed = app.close();
      const localClosed = local?.close();
      const result = await daemon.shutdown(reason);
      // Every request has had its answer by now (calls cancelled, streams ended); sockets still
      // open would hold the close until the clients' keep-alive runs out, so they get a moment
      // to flush and are then closed.
      const servers = local === undefined ? [app.server] : [app.server, local.server];
      for (const server of servers) server.closeIdleConnections();
      const straggler = setTimeout(() => {
        for (const server of servers) server.closeAllConnections();
      }, 250);
      await closed;
      await localClosed;
      clearTimeout(straggler);
      await store.close();
      // The spans of the last calls leave before the process does.
      await telemetry?.shutdown();
      logger.info({ reason }, 'stopped');
      return result.errors.length > 0 ? ExitCode.FAILURE : ExitCode.OK;
    })();
    void stopping.then(markStopped, () => markStopped(ExitCode.FAILURE));
    return stopping;
  };
  stopRequested = (reason) => void stop(reason).catch(() => undefined);
  return { daemon, app, logger, url, port: boundPort, socketPath: local?.path, warmed, stop, stopped };
}

/**
 * Runs `mcpool serve` until SIGTERM or SIGINT; SIGHUP reloads the config. Resolves with the exit
 * code: 0 after a clean shutdown, 1 when forced (second signal, or a shutdown over its deadline).
 */
export async function runServe(options: StartOptions = {}): Promise<number> {
  let running: RunningDaemon;
  try {
    running = await startDaemon(options);
  } catch (error) {
    if (error instanceof StartError) return error.exitCode;
    throw error;
  }
  const { daemon, logger } = running;
  const heapWatch = startHeapWatch((info) => logger.debug(info, 'main-thread heap above its bound: collected'), { holdYoung: true });
  return new Promise<number>((resolveExit) => {
    let first: string | undefined;
    let deadline: NodeJS.Timeout | undefined;
    // Listeners and timer go away with the answer: nothing of this daemon acts after it.
    const resolve = (code: number): void => {
      clearTimeout(deadline);
      heapWatch.stop();
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.off('SIGHUP', onHangup);
      resolveExit(code);
    };
    const onSignal = (signal: NodeJS.Signals): void => {
      if (first !== undefined) {
        logger.warn({ signal, killed: killDescendantsSync() }, `second signal (${signal}): forcing exit`);
        resolve(ExitCode.FAILURE);
        return;
      }
      first = signal;
      logger.info({ signal }, `${signal}: shutting down`);
      // A shutdown that overruns its own deadline by far is forced too.
      deadline = setTimeout(() => {
        logger.error({ killed: killDescendantsSync() }, 'shutdown overran its deadline: forcing exit');
        resolve(ExitCode.FAILURE);
      }, daemon.settings.shutdownTimeoutMs + 10_000);
      deadline.unref();
      void running.stop(signal).then(
        (code) => resolve(code),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          resolve(ExitCode.FAILURE);
        },
      );
    };
    // SIGHUP reloads a daemon running as a service; on a terminal it means the terminal went
    // away, and a daemon that outlived it would hold the port with nobody to stop it.
    const onTerminal = process.stdout.isTTY === true || process.stdin.isTTY === true;
    const onHangup = (): void => {
      if (onTerminal) return onSignal('SIGHUP');
      logger.info('SIGHUP: reloading the config');
      void daemon.reload('signal').catch(() => undefined);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('SIGHUP', onHangup);
    // A stop asked for through the API ends the process as a signal would.
    void running.stopped.then((code) => {
      if (first === undefined) resolve(code);
    });
  });
}
