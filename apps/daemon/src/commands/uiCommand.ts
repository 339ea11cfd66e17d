/**
 * `mcpool ui`: opens the dashboard signed in. It asks the daemon (with this machine's token)
 * for a one-time code and opens `http://<daemon>/?code=…`; the page trades the code for an
 * HttpOnly cookie at once and drops it from the address, so no token ever sits in a URL, a
 * browser history or a shell history.
 */
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { McpoolClient, McpoolHttpError } from '@mcpool/client';
import { readOperatorToken } from '../auth.js';
import { defaultStateDir } from '../config/paths.js';
import { UsageError, daemonUrl, type CommandIo } from './clientCommands.js';

export interface UiOptions {
  url?: string;
  config?: string;
  open?: boolean;
}

/** The platform's "open this URL" program, run without a shell (the URL is one argument). */
function opener(): [string, string[]] {
  if (process.platform === 'darwin') return ['open', []];
  if (process.platform === 'win32') return ['explorer.exe', []];
  return ['xdg-open', []];
}

export function registerUiCommand(program: Command, io: CommandIo, done: (exitCode: number) => void): void {
  program
    .command('ui')
    .description('open the dashboard in a browser, signed in with a one-time code')
    .option('--url <url>', 'the daemon (default: $MCPOOL_URL, else host and port of the config)')
    .option('-c, --config <file>', 'config to read the daemon address from')
    .option('--no-open', 'print the sign-in address instead of opening a browser')
    .action(async (options: UiOptions) => done(await runUi(options, io)));
}

export async function runUi(options: UiOptions, io: CommandIo): Promise<number> {
  const base = (await daemonUrl(options, io)).replace(/\/+$/, '');
  const token = await readOperatorToken(defaultStateDir({ env: io.env }), io.env);
  if (token === undefined) throw new UsageError('no token: set MCPOOL_TOKEN, or start `mcpool serve` once');
  let code: string;
  let expiresInMs: number;
  try {
    ({ code, expiresInMs } = await new McpoolClient({ baseUrl: base, token, timeoutMs: 10_000 }).dashboardCode());
  } catch (error) {
    if (error instanceof McpoolHttpError) {
      io.stderr(`the daemon refused a sign-in code: ${error.statusCode} ${error.code}: ${error.message}`);
      return 1;
    }
    io.stderr(`cannot reach the daemon at ${base}: ${(error as Error).message}`);
    return 3;
  }
  const address = `${base}/?code=${encodeURIComponent(code)}`;
  if (options.open === false) {
    io.stdout(address);
    io.stdout(`(the code works once, within ${Math.round(expiresInMs / 1000)} s)`);
    return 0;
  }
  const [program, args] = opener();
  const child = spawn(program, [...args, address], { detached: true, stdio: 'ignore' });
  const opened = await new Promise<boolean>((resolve) => {
    child.once('error', () => resolve(false));
    child.once('spawn', () => resolve(true));
  });
  child.unref();
  if (!opened) {
    io.stdout(`no browser opener (${program}); open this address within ${Math.round(expiresInMs / 1000)} s:`);
    io.stdout(address);
    return 0;
  }
  io.stdout(`opened ${base}/ in your browser`);
  return 0;
}
