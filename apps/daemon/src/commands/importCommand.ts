/**
 * `mcpool import`: moves the MCP servers a user already configured in their clients into the
 * daemon's config, and with `--rewrite` points those clients at the pool instead, keeping a
 * backup of every file it touches (`--undo` puts them back byte for byte). `--dry-run` prints
 * the diff of every file it would write and writes nothing.
 */
import { realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { readFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { createTwoFilesPatch } from 'diff';
import { resolveCommand } from '../config/commandPath.js';
import { BIN_PATH, defaultStateDir, userConfigFile } from '../config/paths.js';
import { applyChanges, undoLastImport } from '../import/backup.js';
import { planImport, type ImportPlan, type PoolAddress } from '../import/plan.js';
import { CLIENT_IDS, readClientFiles, type ClientId, type ServersLocation } from '../import/sources.js';
import { daemonUrl, httpUrlOption, port, UsageError, type CommandIo } from './clientCommands.js';

export interface ImportOptions {
  from?: ClientId[];
  project?: string;
  config?: string;
  rewrite?: boolean;
  dryRun?: boolean;
  undo?: boolean;
  /** `--url`: the daemon the rewritten clients use. @default the host and port of the config imported into */
  url?: string;
  /** `--port`: the daemon on this port of 127.0.0.1. */
  port?: number;
}

/**
 * The command a stdio client runs to reach the pool: `mcpool` when the one on PATH is this very
 * command (an npm install: the entry then works on any machine that has it), else this Node and
 * this package's bin by absolute path.
 */
function bridgeCommand(env: Record<string, string | undefined>): [string, ...string[]] {
  // npm and npx put a project's `node_modules/.bin` on PATH for the command they run; a client
  // started from a dock does not have it.
  const path = (env.PATH ?? '').split(':').filter((dir) => !/(^|\/)node_modules\/\.bin\/?$/.test(dir)).join(':');
  const onPath = resolveCommand({ transport: 'stdio', command: 'mcpool' }, { path });
  const same = (a: string, b: string): boolean => {
    try {
      return realpathSync(a) === realpathSync(b);
    } catch {
      return false;
    }
  };
  return 'found' in onPath && same(onPath.found, BIN_PATH) ? ['mcpool'] : [process.execPath, BIN_PATH];
}

/** `http://host:port` of a `--url` (an `/mcp` endpoint given for it is cut back to its daemon). */
function baseUrlOf(value: string): string {
  return httpUrlOption(value).href.replace(/\/+$/, '').replace(/\/mcp$/, '');
}

function clientList(value: string): ClientId[] {
  const clients = value.split(',').map((part) => part.trim()).filter(Boolean);
  for (const client of clients) {
    if (!(CLIENT_IDS as readonly string[]).includes(client)) throw new InvalidArgumentError(`unknown client "${client}" (known: ${CLIENT_IDS.join(', ')})`);
  }
  return clients as ClientId[];
}

export function registerImportCommand(program: Command, io: CommandIo, done: (exitCode: number) => void): void {
  program
    .command('import')
    .description('import the MCP servers of Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Gemini CLI and Codex into the daemon config')
    .option('--from <clients>', `only these clients, comma-separated (${CLIENT_IDS.join(', ')})`, clientList)
    .option('--project <dir>', 'the project whose project files (.mcp.json, .vscode/mcp.json, …) are read (default: the current folder)')
    .option('-c, --config <file>', 'the daemon config to merge into (default: $MCPOOL_CONFIG, else ~/.config/mcpool/config.json)')
    .option('--rewrite', 'also point each client at the pool (VS Code: its /mcp URL, the token asked once and kept in its secret storage; the others: `mcpool bridge --autostart`), keeping a backup; no token is written anywhere')
    .option('--url <url>', 'the daemon the rewritten clients use (default: host and port of the config imported into)')
    .option('-p, --port <port>', 'the daemon on this port of 127.0.0.1 (instead of --url)', port)
    .option('--dry-run', 'print the diff of every file that would change; write nothing')
    .option('--undo', 'restore the files the last import changed')
    .action(async (options: ImportOptions) => done(await runImport(options, io)));
}

export async function runImport(options: ImportOptions, io: CommandIo): Promise<number> {
  const home = io.env.HOME || homedir();
  const stateDir = defaultStateDir({ env: io.env, home });
  const tilde = (path: string): string => (path === home || path.startsWith(home + sep) ? `~${path.slice(home.length)}` : path);

  if (options.undo) {
    const result = await undoLastImport(stateDir);
    if (result.backup === undefined) {
      io.stderr('nothing to undo: no import backup in ' + tilde(stateDir));
      return 1;
    }
    for (const file of result.restored) io.stdout(`restored ${tilde(file)}`);
    for (const file of result.removed) io.stdout(`removed  ${tilde(file)} (the import created it)`);
    for (const file of result.changedSince) io.stderr(`left     ${tilde(file)}: changed since the import (its original is in ${tilde(result.backup)})`);
    return result.changedSince.length > 0 ? 1 : 0;
  }

  const project = resolve(io.cwd, options.project ?? '.');
  const target = resolve(io.cwd, options.config ?? (io.env.MCPOOL_CONFIG || userConfigFile({ env: io.env, home })));
  const targetText = await readFile(target, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  const { files, problems } = await readClientFiles({ home, env: io.env, platform: process.platform, project, clients: options.from });
  if (options.url !== undefined && options.port !== undefined) throw new UsageError('give --url or --port, not both');
  const baseUrl =
    options.url !== undefined
      ? baseUrlOf(options.url)
      : (await daemonUrl({ ...(targetText === undefined ? {} : { config: target }), ...(options.port === undefined ? {} : { port: options.port }) }, { ...io, cwd: project })).replace(/\/+$/, '');
  // A daemon the bridge autostarts finds the user config by itself; any other must be named.
  const bridgeArgs = target === userConfigFile({ env: io.env, home }) ? [] : ['--config', target];
  const pool: PoolAddress = { baseUrl, bridgeCommand: bridgeCommand(io.env), bridgeArgs };
  const plan = planImport({ files, target: { file: target, text: targetText }, rewrite: options.rewrite === true, pool, commandLookup: { path: io.env.PATH } });

  report(plan, files.map((file) => file.locations).flat(), problems.map((p) => `${p.source.client} ${tilde(p.source.file)}: ${p.message}`), tilde, io);
  if (plan.changes.length === 0) {
    io.stdout('nothing to write');
    return problems.length > 0 ? 1 : 0;
  }
  if (options.dryRun) {
    for (const change of plan.changes) {
      io.stdout(createTwoFilesPatch(tilde(change.file), tilde(change.file), change.before ?? '', change.after, change.before === undefined ? '(new file)' : '', '', { context: 3 }).trimEnd());
    }
    io.stdout(`dry run: ${plan.changes.length} file(s) would change; nothing was written`);
    return 0;
  }
  const backup = await applyChanges(stateDir, plan.changes);
  for (const change of plan.changes) io.stdout(`wrote ${tilde(change.file)}`);
  io.stdout(`backups in ${tilde(backup)}; \`mcpool import --undo\` restores them`);
  if (options.rewrite !== true) io.stdout('the clients still start their own servers: run `mcpool import --rewrite` to point them at the pool');
  else if (plan.changes.some((change) => change.client === 'vscode')) {
    io.stdout('VS Code asks once for the mcpool token: paste what `mcpool token` prints (it can use the pool, not start commands)');
  }
  return problems.length > 0 ? 1 : 0;
}

function where(location: ServersLocation, tilde: (path: string) => string): string {
  return `${location.source.client} ${tilde(location.source.file)}${location.label === undefined ? '' : ` (project ${tilde(location.label)})`}`;
}

function report(plan: ImportPlan, locations: ServersLocation[], problems: string[], tilde: (path: string) => string, io: CommandIo): void {
  const count = locations.reduce((sum, location) => sum + Object.keys(location.servers).length, 0);
  io.stdout(count === 0 ? 'found no MCP servers in any client config' : `found ${count} server(s) in ${locations.length} place(s):`);
  for (const location of locations) io.stdout(`  ${where(location, tilde)}: ${Object.keys(location.servers).join(', ')}`);
  for (const problem of problems) io.stderr(`unreadable: ${problem}`);
  for (const skip of plan.skipped) io.stdout(`skipped  ${skip.name} (${where(skip.location, tilde)}): ${skip.reason}`);
  for (const server of plan.imported) {
    const from = [...new Set(server.from.map((f) => f.location.source.client))].join(', ');
    if (server.outcome === 'added') io.stdout(`added    ${server.name} (${server.transport}, from ${from})`);
    else if (server.outcome === 'same') io.stdout(`same     ${server.name} (already in the daemon config; from ${from})`);
    else io.stdout(`renamed  ${server.originalName} → ${server.name} (a different "${server.originalName}" is already there; from ${from})`);
  }
}
