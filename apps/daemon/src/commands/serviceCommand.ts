/**
 * `mcpool service install | uninstall | status`: run the daemon as a per-user service — a
 * systemd user unit on Linux, a launchd agent on macOS — restarted when it fails, logging to
 * `<state dir>/daemon.log` (`mcpool logs` reads it).
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { BIN_PATH, defaultStateDir } from '../config/paths.js';
import { LAUNCHD_LABEL, SYSTEMD_UNIT_NAME, launchdPlist, systemdUnit, type ServiceSpec } from '../service/units.js';
import { UsageError, type CommandIo } from './clientCommands.js';

export interface ServiceOptions {
  config?: string;
  /** Write the unit only; do not ask systemctl/launchctl to load and start it. */
  start?: boolean;
}

interface Platform {
  kind: 'systemd' | 'launchd';
  file: string;
  render: (spec: ServiceSpec) => string;
  load: string[][];
  unload: string[][];
  state: string[];
}

/** How long one systemctl/launchctl call may take. */
const MANAGER_TIMEOUT_MS = 15_000;

function platformOf(io: CommandIo, home: string): Platform {
  if (process.platform === 'linux') {
    const configHome = io.env.XDG_CONFIG_HOME || join(home, '.config');
    return {
      kind: 'systemd',
      file: join(configHome, 'systemd', 'user', SYSTEMD_UNIT_NAME),
      render: systemdUnit,
      load: [['systemctl', '--user', 'daemon-reload'], ['systemctl', '--user', 'enable', '--now', SYSTEMD_UNIT_NAME]],
      unload: [['systemctl', '--user', 'disable', '--now', SYSTEMD_UNIT_NAME]],
      state: ['systemctl', '--user', 'is-active', SYSTEMD_UNIT_NAME],
    };
  }
  if (process.platform === 'darwin') {
    const file = join(home, 'Library', 'LaunchAgents', `${LAUNCHD_LABEL}.plist`);
    const domain = `gui/${userInfo().uid}`;
    return {
      kind: 'launchd',
      file,
      render: launchdPlist,
      load: [['launchctl', 'bootstrap', domain, file]],
      unload: [['launchctl', 'bootout', `${domain}/${LAUNCHD_LABEL}`]],
      state: ['launchctl', 'print', `${domain}/${LAUNCHD_LABEL}`],
    };
  }
  throw new UsageError(`mcpool service supports Linux (systemd) and macOS (launchd), not ${process.platform}`);
}

function run(argv: string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((done) => {
    execFile(argv[0]!, argv.slice(1), { timeout: MANAGER_TIMEOUT_MS }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim();
      done({ ok: error === null, output: output || (error?.message ?? '') });
    });
  });
}

export function registerServiceCommand(program: Command, io: CommandIo, done: (exitCode: number) => void): void {
  const service = program.command('service').description('run the daemon as a per-user service (systemd on Linux, launchd on macOS)');
  service
    .command('install')
    .description('write the service and start it; it restarts on failure and logs to <state dir>/daemon.log')
    .option('-c, --config <file>', 'the config the service runs (default: what `serve` would find from the state directory)')
    .option('--no-start', 'write the service file only')
    .action(async (options: ServiceOptions) => done(await install(options, io)));
  service
    .command('uninstall')
    .description('stop the service and remove it')
    .action(async () => done(await uninstall(io)));
  service
    .command('status')
    .description('whether the service is installed and running')
    .action(async () => done(await status(io)));
}

function homeOf(io: CommandIo): string {
  return io.env.HOME || homedir();
}

export async function install(options: ServiceOptions, io: CommandIo): Promise<number> {
  const home = homeOf(io);
  const platform = platformOf(io, home);
  const stateDir = resolve(defaultStateDir({ env: io.env, home }));
  const configText = options.config ?? io.env.MCPOOL_CONFIG;
  const spec: ServiceSpec = {
    node: process.execPath,
    bin: BIN_PATH,
    config: configText ? resolve(io.cwd, configText) : undefined,
    stateDir,
    // A service manager starts with a bare PATH: keep this one, or `npx`-started servers are not found.
    env: { MCPOOL_STATE_DIR: stateDir, ...(io.env.PATH ? { PATH: io.env.PATH } : {}) },
  };
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  await mkdir(dirname(platform.file), { recursive: true });
  await writeFile(platform.file, platform.render(spec), { mode: 0o644 });
  io.stdout(`wrote ${platform.file}`);
  if (options.start === false) {
    io.stdout(`not started (--no-start): ${platform.load.map((argv) => argv.join(' ')).join(' && ')}`);
    return 0;
  }
  for (const argv of platform.load) {
    const result = await run(argv);
    if (!result.ok) {
      io.stderr(`${argv.join(' ')} failed: ${result.output}`);
      io.stderr(`the service file is written; start it yourself once the ${platform.kind === 'systemd' ? 'user systemd session' : 'launchd session'} is there`);
      return 1;
    }
  }
  io.stdout(`started; logs: ${join(stateDir, 'daemon.log')} (mcpool logs -f)`);
  return 0;
}

export async function uninstall(io: CommandIo): Promise<number> {
  const platform = platformOf(io, homeOf(io));
  const present = await readFile(platform.file, 'utf8').then(
    () => true,
    () => false,
  );
  if (!present) {
    io.stderr(`not installed: no ${platform.file}`);
    return 1;
  }
  let failed = false;
  for (const argv of platform.unload) {
    const result = await run(argv);
    // Not loaded is fine: there is nothing to stop. Anything else is reported.
    if (!result.ok) {
      failed = true;
      io.stderr(`${argv.join(' ')}: ${result.output}`);
    }
  }
  await rm(platform.file, { force: true });
  if (platform.kind === 'systemd') await run(['systemctl', '--user', 'daemon-reload']);
  io.stdout(`removed ${platform.file}`);
  return failed ? 1 : 0;
}

export async function status(io: CommandIo): Promise<number> {
  const platform = platformOf(io, homeOf(io));
  const text = await readFile(platform.file, 'utf8').catch(() => undefined);
  if (text === undefined) {
    io.stdout(`not installed (${platform.file})`);
    return 1;
  }
  const state = await run(platform.state);
  const running = platform.kind === 'systemd' ? state.output.split('\n')[0] === 'active' : state.ok;
  io.stdout(`installed: ${platform.file}`);
  io.stdout(`running: ${running ? 'yes' : 'no'}${state.output && platform.kind === 'systemd' ? ` (${state.output.split('\n')[0]})` : ''}`);
  return running ? 0 : 3;
}
