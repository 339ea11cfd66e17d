/**
 * Finding the daemon from an editor window, as the `mcpool` command finds it (`mcpool/local`:
 * the `mcpool.url` setting as `--url`, `$MCPOOL_URL`, else the host and port of its config), and
 * starting it when none answers — once per user however many windows ask at once, under the
 * start lock in its state directory. The token is read from the state directory (or
 * `$MCPOOL_TOKEN`) and kept in memory only: nothing here writes it anywhere.
 */
import { resolve } from 'node:path';
import { McpoolClient } from '@mcpool/client';
import { ErrorCode } from '@mcpool/protocol/errorCodes';
import { PoolError } from '@mcpool/protocol/errors';
import { DaemonStarter, defaultStateDir, localDaemonUrl, readOperatorToken, type StarterLogger } from 'mcpool/local';

export interface DaemonLinkOptions {
  /** The extension host's environment: `MCPOOL_URL`, `MCPOOL_TOKEN`, `MCPOOL_STATE_DIR`, `MCPOOL_CONFIG`, `HOME`. */
  env: Record<string, string | undefined>;
  /** The `mcpool.url` setting. @default '' (found as the command finds it) */
  url?: string;
  /** The `mcpool.config` setting. @default '' (`$MCPOOL_CONFIG`, else the user config) */
  config?: string;
  /** The `mcpool` command that starts the daemon; empty: never start it. @default [] */
  command?: readonly string[];
  logger: StarterLogger;
  /** How long a start may take before it counts as failed. @default 15000 */
  startTimeoutMs?: number;
}

/** A daemon that answered, with what it takes to talk to it. */
export interface DaemonLink {
  baseUrl: string;
  stateDir: string;
  /** The bearer token, in memory only. */
  token: string;
  client: McpoolClient;
  /** The pid of the daemon this window started, when it did. */
  startedPid: number | undefined;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * The variables a daemon started from an editor must not inherit: the editor's own plumbing
 * (`VSCODE_*` IPC handles, `ELECTRON_RUN_AS_NODE`), meaningless to a daemon that outlives it.
 */
export function daemonEnvironment(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('VSCODE_') && !name.startsWith('ELECTRON_')));
}

/**
 * Finds the daemon, starting it when none answers and a command is given.
 *
 * @throws PoolError `MCPOOL_DAEMON_START_FAILED` when none answered and starting one failed;
 *   `MCPOOL_NO_TOKEN` when the machine has no operator token; the client's `MCPOOL_UNREACHABLE`
 *   when none answers and no command was given.
 */
export async function linkDaemon(options: DaemonLinkOptions): Promise<DaemonLink> {
  const { env } = options;
  const stateDir = defaultStateDir({ env });
  const config = options.config ? resolve(options.config) : undefined;
  // The daemon serves the whole machine: its address is looked up as from its own directory,
  // never from wherever the editor happened to start.
  const baseUrl = (await localDaemonUrl({ url: options.url || undefined, config }, { env, cwd: stateDir })).replace(/\/+$/, '');
  const url = new URL(baseUrl);
  const command = options.command ?? [];
  let startedPid: number | undefined;
  let answered = false;
  if (command.length > 0 && command[0] !== '' && LOOPBACK.has(url.hostname)) {
    const serveArgs: string[] = [];
    const configFile = config ?? (env.MCPOOL_CONFIG ? resolve(stateDir, env.MCPOOL_CONFIG) : undefined);
    if (configFile) serveArgs.push('--config', configFile);
    if (options.url && url.port !== '') serveArgs.push('--port', url.port);
    const starter = new DaemonStarter({
      baseUrl,
      command: command as [string, ...string[]],
      serveArgs,
      stateDir,
      env: daemonEnvironment(env),
      cwd: stateDir,
      logger: options.logger,
      ...(options.startTimeoutMs === undefined ? {} : { healthTimeoutMs: options.startTimeoutMs }),
    });
    if (!(await starter.ensure())) {
      throw new PoolError(ErrorCode.DAEMON_START_FAILED, `no mcpool daemon answers at ${baseUrl}, and starting one failed: ${starter.failure ?? 'unknown reason'}`);
    }
    startedPid = starter.pid;
    answered = true;
  }
  const token = await readOperatorToken(stateDir, env);
  if (token === undefined) {
    throw new PoolError(ErrorCode.NO_TOKEN, `no mcpool token: set MCPOOL_TOKEN, or start \`mcpool serve\` once (it writes ${resolve(stateDir, 'token')})`);
  }
  const client = new McpoolClient({ baseUrl, token, timeoutMs: 15_000 });
  // A link is to a daemon that answers (the starter saw its port answer): a dead address is the
  // caller's to report, not a link.
  if (!answered) await client.health();
  return { baseUrl, stateDir, token, client, startedPid };
}
