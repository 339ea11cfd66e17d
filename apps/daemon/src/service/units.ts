/**
 * The service definitions that keep `mcpool serve` running for a user: a systemd user unit on
 * Linux, a launchd agent on macOS. Both restart the daemon when it fails (not after a clean
 * stop), start it from the state directory (so `.mcp.json` discovery never depends on where
 * the command was typed), and append its log to `<state dir>/daemon.log`, where `mcpool logs`
 * reads it.
 */
import { join } from 'node:path';
import { DAEMON_LOG_FILE } from '../config/paths.js';

export const SYSTEMD_UNIT_NAME = 'mcpool.service';
export const LAUNCHD_LABEL = 'dev.mcpool.daemon';

export interface ServiceSpec {
  /** The Node executable. */
  node: string;
  /** This package's `bin/mcpool.js`. */
  bin: string;
  /** Absolute path of the config file the daemon runs, if one was chosen. */
  config?: string | undefined;
  stateDir: string;
  /** Variables the service sets (the state dir, so the daemon and `mcpool logs` agree). */
  env: Record<string, string>;
}

export function serveArgs(spec: ServiceSpec): string[] {
  return [spec.bin, 'serve', ...(spec.config === undefined ? [] : ['--config', spec.config])];
}

/** systemd quotes: a word with spaces, quotes or backslashes goes in double quotes, escaped. */
function systemdWord(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `"${word.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%')}"`;
}

/** Path settings take the rest of the line as it is (spaces included); only `%` needs escaping. */
function systemdPath(path: string): string {
  return path.replace(/%/g, '%%');
}

export function systemdUnit(spec: ServiceSpec): string {
  const exec = [spec.node, ...serveArgs(spec)].map(systemdWord).join(' ');
  const env = Object.entries(spec.env)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `Environment=${systemdWord(`${name}=${value}`)}`);
  return [
    '[Unit]',
    'Description=mcpool: one MCP connection pool for every client on this machine',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${exec}`,
    `WorkingDirectory=${systemdPath(spec.stateDir)}`,
    ...env,
    // A failure restarts it; `mcpool stop` or `systemctl --user stop` (a clean exit) does not.
    'Restart=on-failure',
    'RestartSec=2',
    // The daemon stops its servers within its own shutdown timeout; leave it room before SIGKILL.
    'TimeoutStopSec=20',
    'KillMode=mixed',
    `StandardOutput=append:${systemdPath(join(spec.stateDir, DAEMON_LOG_FILE))}`,
    `StandardError=append:${systemdPath(join(spec.stateDir, DAEMON_LOG_FILE))}`,
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function launchdPlist(spec: ServiceSpec): string {
  const strings = (values: string[]): string => values.map((value) => `    <string>${xml(value)}</string>`).join('\n');
  const env = Object.entries(spec.env)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `    <key>${xml(name)}</key>\n    <string>${xml(value)}</string>`)
    .join('\n');
  const log = xml(join(spec.stateDir, DAEMON_LOG_FILE));
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>${LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>
${strings([spec.node, ...serveArgs(spec)])}
  </array>
  <key>WorkingDirectory</key>
  <string>${xml(spec.stateDir)}</string>
  <key>EnvironmentVariables</key>
  <dict>
${env}
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>ThrottleInterval</key>
  <integer>2</integer>
  <key>StandardOutPath</key>
  <string>${log}</string>
  <key>StandardErrorPath</key>
  <string>${log}</string>
</dict>
</plist>
`;
}
