/**
 * The `mcpool` command line (commander): `serve`, `status`, `restart`, `auth`, `reload`, `stop`,
 * `sessions`, `config check`, `bridge`, `import`, `service`, `logs`, `ui`, `token`. `main` returns the exit
 * code instead of exiting, so tests can run it in process. A command that did not do what was
 * asked exits non-zero.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { McpoolHttpError, McpoolRequestError } from '@mcpool/client';
import { ConfigError } from '@mcpool/protocol';
import { registerBridgeCommand } from './commands/bridgeCommand.js';
import { runAuthCommand, type AuthCommandOptions } from './commands/authCommand.js';
import { registerConfigCheckCommand } from './commands/configCheck.js';
import { registerImportCommand } from './commands/importCommand.js';
import { registerLogsCommand } from './commands/logsCommand.js';
import { registerServiceCommand } from './commands/serviceCommand.js';
import { registerTokenCommand } from './commands/tokenCommand.js';
import { registerUiCommand } from './commands/uiCommand.js';
import { connect, durationMs, port, formatReload, formatRestart, formatSessions, formatStatus, restartFailed, stopDaemon, UsageError, type CommandIo } from './commands/clientCommands.js';
import type { LogLevel } from './config/daemonConfig.js';
import { ExitCode } from './exitCodes.js';
import type { StartOptions } from './serve.js';
import { VERSION } from './version.js';

const EXIT_CODES_HELP = `
Exit codes:
  0  success (serve: a clean shutdown)
  1  a request failed, or a forced shutdown
  2  bad usage, a bad config, no token
  3  cannot listen (port in use) or cannot reach the daemon`;

function positiveSeconds(value: string): number {
  if (!/^\d{1,6}$/.test(value) || Number(value) === 0) throw new InvalidArgumentError('expected a positive number of seconds');
  return Number(value);
}

function entryIndex(value: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new InvalidArgumentError('expected an entry index (a non-negative integer)');
  return Number(value);
}

export interface MainIo extends Partial<CommandIo> {
  /** Options passed to `startDaemon` by `serve` (tests). */
  serve?: Partial<StartOptions>;
}

/** Runs the command line `argv` (as `process.argv`: node, script, args…); resolves with the exit code. */
export async function main(argv: readonly string[], ioOverrides: MainIo = {}): Promise<number> {
  const io: CommandIo = {
    stdout: ioOverrides.stdout ?? ((text) => process.stdout.write(`${text}\n`)),
    stderr: ioOverrides.stderr ?? ((text) => process.stderr.write(`${text}\n`)),
    env: ioOverrides.env ?? process.env,
    cwd: ioOverrides.cwd ?? process.cwd(),
  };
  let exitCode: number = ExitCode.OK;
  const program = new Command('mcpool')
    .description('One MCP connection pool for every client on this machine.')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout(text.trimEnd()), writeErr: (text) => io.stderr(text.trimEnd()) })
    .addHelpText('after', EXIT_CODES_HELP)
    .showHelpAfterError();

  program
    .command('serve')
    .description('run the daemon: REST control API, event stream, pooled servers')
    .option('-c, --config <file>', 'config file (default: $MCPOOL_CONFIG, ./.mcp.json, ~/.config/mcpool/config.json, else a built-in demo)')
    .option('-p, --port <port>', 'port to listen on (default 7070, or $MCPOOL_PORT)', port)
    .option('-H, --host <host>', 'address to listen on (default 127.0.0.1, or $MCPOOL_HOST)')
    .addOption(new Option('--log-level <level>', 'log level').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']))
    .action(async (options: { config?: string; port?: number; host?: string; logLevel?: LogLevel }) => {
      // Loaded here: the daemon's module graph is most of the package, and no other command needs it.
      const { runServe } = await import('./serve.js');
      exitCode = await runServe({
        ...ioOverrides.serve,
        env: io.env,
        cwd: io.cwd,
        ...(options.config ? { configPath: options.config } : {}),
        overrides: { ...(options.port === undefined ? {} : { port: options.port }), ...(options.host ? { host: options.host } : {}), ...(options.logLevel ? { logLevel: options.logLevel } : {}) },
      });
    });

  const clientOptions = (command: Command): Command =>
    command
      .option('--url <url>', 'the daemon (default: $MCPOOL_URL, else host and port of the config)')
      .option('-p, --port <port>', 'the daemon on this port of 127.0.0.1 (instead of --url)', port)
      .option('-c, --config <file>', 'config to read the daemon address from');

  clientOptions(program.command('status').description('servers, entries, refs, status and budget'))
    .option('--json', 'print the raw JSON answer')
    .action(async (options: { url?: string; port?: number; config?: string; json?: boolean }) => {
      const client = await connect(options, io);
      const status = await client.getWorkspaceMcp();
      io.stdout(options.json ? JSON.stringify(status, null, 2) : formatStatus(status));
    });

  clientOptions(program.command('restart').description('restart a server’s entries').argument('<server>', 'server name'))
    .option('-e, --entry <n>', 'only this entry index', entryIndex)
    .option('--json', 'print the raw JSON answer')
    .action(async (server: string, options: { url?: string; port?: number; config?: string; entry?: number; json?: boolean }) => {
      const client = await connect(options, io);
      const response = await client.restartServer(server, options.entry === undefined ? {} : { entryIndex: options.entry });
      io.stdout(options.json ? JSON.stringify(response, null, 2) : formatRestart(server, response));
      if (!restartFailed(response)) return;
      // Not restarted: say why, as `status` would, and fail.
      const why = (await client.getWorkspaceMcp().catch(() => undefined))?.servers.find((s) => s.name === server)?.lastError;
      if (why && !options.json) io.stderr(`${server}: ${why.code}: ${why.message}`);
      exitCode = ExitCode.FAILURE;
    });

  clientOptions(program.command('auth').description('authorize a remote server behind OAuth: opens the authorization page, waits until the daemon holds the token').argument('<server>', 'server name'))
    .option('--device', 'use the device authorization grant (a code to enter on another device)')
    .option('--no-open', 'print the URL, do not start a browser')
    .option('--no-wait', 'return once the flow is started')
    .option('--timeout <seconds>', 'wait at most this long', (value) => positiveSeconds(value))
    .action(async (server: string, options: { url?: string; port?: number; config?: string } & AuthCommandOptions) => {
      const client = await connect(options, io);
      if (!(await runAuthCommand(client, server, options, io))) exitCode = ExitCode.FAILURE;
    });

  clientOptions(program.command('reload').description('re-read the daemon’s config (as SIGHUP does): changed servers get new entries, old ones drain'))
    .option('--json', 'print the raw JSON answer')
    .action(async (options: { url?: string; port?: number; config?: string; json?: boolean }) => {
      const client = await connect(options, io);
      const result = await client.reloadAll();
      io.stdout(options.json ? JSON.stringify(result, null, 2) : formatReload(result));
    });

  clientOptions(program.command('stop').description('stop the daemon (as SIGTERM does) and wait until it is gone'))
    .action(async (options: { url?: string; port?: number; config?: string }) => {
      const client = await connect(options, io);
      const outcome = await stopDaemon(client);
      if (outcome.stopped) {
        io.stdout(`the daemon at ${client.where} stopped`);
      } else {
        io.stderr(`error: the daemon at ${client.where} is still answering ${outcome.waitedMs} ms after it was asked to stop`);
        exitCode = ExitCode.FAILURE;
      }
    });

  clientOptions(program.command('sessions').description('list the daemon sessions, REST and /mcp; or end one, or every idle one'))
    .option('--json', 'print the raw JSON answer')
    .option('--close <id>', 'end the session with this id (REST or /mcp)')
    .option('--close-idle', 'end every session with nothing in flight (no call, no open stream); /mcp clients re-initialize on their next request')
    .option('--idle-for <duration>', 'with --close-idle: only those without a request for this long (30s, 10m, 1h; default 0)', durationMs)
    .action(async (options: { url?: string; port?: number; config?: string; json?: boolean; close?: string; closeIdle?: boolean; idleFor?: number }) => {
      if (options.idleFor !== undefined && !options.closeIdle) throw new UsageError('--idle-for goes with --close-idle');
      const client = await connect(options, io);
      if (options.closeIdle) {
        const { closed } = await client.closeIdleSessions(options.idleFor === undefined ? {} : { idleForMs: options.idleFor });
        if (options.json) io.stdout(JSON.stringify({ closed }, null, 2));
        else io.stdout(closed.length === 0 ? 'no idle session' : `ended ${closed.length} idle session(s): ${closed.map((s) => `${s.id} (${s.kind})`).join(', ')}`);
        return;
      }
      if (options.close !== undefined) {
        await client.closeWorkspaceSession(options.close);
        io.stdout(`session ${options.close} ended`);
        return;
      }
      const [sessions, all] = await Promise.all([client.listSessions(), client.listWorkspaceSessions()]);
      const mcpSessions = all.filter((session) => session.kind === 'mcp');
      io.stdout(options.json ? JSON.stringify({ sessions, mcpSessions }, null, 2) : formatSessions(sessions, mcpSessions));
    });

  registerConfigCheckCommand(program, io, (code) => (exitCode = code));
  registerBridgeCommand(program, io, (code) => (exitCode = code));
  registerImportCommand(program, io, (code) => (exitCode = code));
  registerServiceCommand(program, io, (code) => (exitCode = code));
  registerLogsCommand(program, io, (code) => (exitCode = code));
  registerUiCommand(program, io, (code) => (exitCode = code));
  registerTokenCommand(program, io);

  try {
    await program.parseAsync([...argv]);
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.OK : ExitCode.CONFIG;
    if (error instanceof ConfigError) {
      io.stderr(error.message);
      return ExitCode.CONFIG;
    }
    if (error instanceof UsageError) {
      io.stderr(`error: ${error.message}`);
      return ExitCode.CONFIG;
    }
    if (error instanceof McpoolHttpError) {
      io.stderr(`error: ${error.statusCode} ${error.code}: ${error.message}`);
      return ExitCode.FAILURE;
    }
    if (error instanceof McpoolRequestError) {
      io.stderr(`error: ${error.message}`);
      return ExitCode.UNAVAILABLE;
    }
    io.stderr(`error: ${(error as Error).stack ?? String(error)}`);
    return ExitCode.FAILURE;
  }
}
