/**
 * `mcpool config check FILE`: loads a config exactly as `serve` and a reload would — the file as a
 * whole, then each server on its own, its command looked up as spawning it would — and says what
 * `serve` would do with it. Nothing is started.
 *
 * Exit codes: 0 every server can run; 2 the file cannot be loaded (`serve` would refuse it), or
 * some servers cannot run (`serve` would run the others and report these as unavailable).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/daemonConfig.js';
import type { CommandIo } from './clientCommands.js';

export function registerConfigCheckCommand(program: Command, io: CommandIo, done: (exitCode: number) => void): void {
  program
    .command('config')
    .description('config commands')
    .command('check')
    .description('check a config file the way serve would load it: the file, each server entry, each stdio command on PATH (nothing is started; exit 2 when anything cannot run)')
    .argument('<file>', 'the config file')
    .action(async (file: string) => done(await runConfigCheck(resolve(io.cwd, file), io)));
}

/** Prints what `serve` would do with the config at `path`; resolves with the exit code. @throws ConfigError when the file itself cannot be loaded. */
export async function runConfigCheck(path: string, io: CommandIo): Promise<number> {
  const config = await loadConfig({ kind: 'file', path, origin: 'flag' }, io.env);
  const servers = Object.entries(config.servers).map(([name, server]) => `${name} (${server.transport})`);
  const unavailable = Object.entries(config.unavailable);
  const total = servers.length + unavailable.length;
  const s = config.settings;
  io.stdout(unavailable.length === 0 ? `${path}: ok` : `${path}: ${unavailable.length} of ${total} server(s) cannot run (serve would run the others)`);
  io.stdout(`servers: ${servers.length > 0 ? servers.join(', ') : '(none)'}`);
  for (const [name, problem] of unavailable) io.stderr(`unavailable: ${name}: ${problem.code}: ${problem.message}`);
  io.stdout(`daemon: ${s.host}:${s.port}, budget ${s.budget.clientBudget} (${s.budget.mode}), clients: ${s.clients.map((c) => `${c.id} [${c.rights.join(',')}]`).join(', ') || '(operator only)'}`);
  for (const warning of config.warnings) io.stdout(`warning: ${warning.path}: ${warning.message}`);
  return unavailable.length === 0 ? 0 : 2;
}
