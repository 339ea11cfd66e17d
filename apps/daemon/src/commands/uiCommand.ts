/**
 * `mcpool ui`: opens the dashboard signed in. It asks the daemon (with this machine's token)
 * for a one-time code and opens `http://<daemon>/?code=…`; the page trades the code for an
 * HttpOnly cookie at once and drops it from the address, so no token ever sits in a URL, a
 * browser history or a shell history.
 *
 * It says "opened" only when a browser was opened: on a machine with no display (an SSH
 * session, a container: neither DISPLAY nor WAYLAND_DISPLAY on Linux) nothing is tried, and an
 * opener that is missing or fails (`xdg-open: no method available`) is not taken for success;
 * either way the address is printed and the exit code is 1 (the command did not do what was
 * asked). `--no-open` prints it and exits 0.
 */
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { McpoolClient, McpoolHttpError } from '@mcpool/client';
import { readOperatorToken } from '../auth.js';
import { defaultStateDir } from '../config/paths.js';
import { UsageError, daemonUrl, port, type CommandIo } from './clientCommands.js';

export interface UiOptions {
  url?: string;
  port?: number;
  config?: string;
  open?: boolean;
}

/** How long an opener may run before it counts as a browser that opened in the foreground. */
const OPENER_WAIT_MS = 5000;

/** The platform's "open this URL" program, run without a shell (the URL is one argument). */
function opener(): [string, string[]] {
  if (process.platform === 'darwin') return ['open', []];
  if (process.platform === 'win32') return ['explorer.exe', []];
  return ['xdg-open', []];
}

/** Why no browser can be opened here, or undefined when one may be: Linux and the BSDs need a display. */
function noDisplay(env: Record<string, string | undefined>): string | undefined {
  if (process.platform === 'darwin' || process.platform === 'win32') return undefined;
  return env.DISPLAY || env.WAYLAND_DISPLAY ? undefined : 'no display here (neither DISPLAY nor WAYLAND_DISPLAY is set)';
}

/** Runs the opener; resolves undefined once it opened the address, else why not. */
async function openAddress(address: string, env: Record<string, string | undefined>): Promise<string | undefined> {
  const [program, args] = opener();
  const child = spawn(program, [...args, address], { detached: true, stdio: 'ignore', env });
  const outcome = await new Promise<string | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), OPENER_WAIT_MS);
    const settle = (why: string | undefined): void => {
      clearTimeout(timer);
      resolve(why);
    };
    child.once('error', (error: NodeJS.ErrnoException) => settle(`no browser opener (${program}: ${error.code ?? error.message})`));
    child.once('exit', (code, signal) => settle(code === 0 ? undefined : `${program} failed (${signal ?? `exit code ${code}`})`));
  });
  child.unref();
  return outcome;
}

export function registerUiCommand(program: Command, io: CommandIo, done: (exitCode: number) => void): void {
  program
    .command('ui')
    .description('open the dashboard in a browser, signed in with a one-time code (exit 1 when no browser could be opened: the address is printed)')
    .option('--url <url>', 'the daemon (default: $MCPOOL_URL, else host and port of the config)')
    .option('-p, --port <port>', 'the daemon on this port of 127.0.0.1 (instead of --url)', port)
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
  const why = noDisplay(io.env) ?? (await openAddress(address, io.env));
  if (why !== undefined) {
    io.stderr(`could not open a browser: ${why}`);
    io.stdout(`open this address in a browser within ${Math.round(expiresInMs / 1000)} s (the code works once):`);
    io.stdout(address);
    return 1;
  }
  io.stdout(`opened ${base}/ in your browser`);
  return 0;
}
