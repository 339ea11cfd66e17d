/**
 * `mcpool status | restart | sessions`: thin commands over `@mcpool/client`. The daemon's URL
 * comes from `--url`, `MCPOOL_URL`, or the host and port of the config `serve` would use; the
 * token from `MCPOOL_TOKEN` or the state directory's token file.
 */
import { readFile } from 'node:fs/promises';
import { McpoolClient, isRestartEntries, type RestartResponse, type SessionInfo, type WorkspaceMcpStatus } from '@mcpool/client';
import { readOperatorToken } from '../auth.js';
import { DEFAULT_SETTINGS, parseJsonDocument, resolveSettings } from '../config/daemonConfig.js';
import { discoverConfig } from '../config/discovery.js';
import { defaultStateDir } from '../config/paths.js';

export interface CommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  cwd: string;
}

export interface ConnectOptions {
  url?: string;
  config?: string;
}

/** A problem with how the command was called (no token, bad URL): exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The URL the daemon listens on, as far as this machine's config says. */
export async function daemonUrl(options: ConnectOptions, io: CommandIo): Promise<string> {
  const explicit = options.url ?? io.env.MCPOOL_URL;
  if (explicit) return explicit;
  // A config `serve` would refuse tells nothing better than the defaults: fall back to them.
  let settings: { host: string; port: number } = DEFAULT_SETTINGS;
  try {
    settings = resolveSettings({}, io.env);
    const source = discoverConfig({ ...(options.config ? { flag: options.config } : {}), env: io.env, cwd: io.cwd });
    if (source.kind === 'file') settings = resolveSettings(parseJsonDocument(await readFile(source.path, 'utf8'), source.path), io.env, {}, source.path);
  } catch {
    // keep what we have
  }
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host.includes(':') ? `[${settings.host}]` : settings.host;
  return `http://${host}:${settings.port}`;
}

export async function connect(options: ConnectOptions, io: CommandIo): Promise<McpoolClient> {
  const baseUrl = await daemonUrl(options, io);
  const stateDir = defaultStateDir({ env: io.env });
  const token = await readOperatorToken(stateDir, io.env);
  if (token === undefined) throw new UsageError(`no token: set MCPOOL_TOKEN, or start \`mcpool serve\` once (it writes ${stateDir}/token)`);
  try {
    return new McpoolClient({ baseUrl, token });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ').trimEnd()).join('\n');
}

export function formatStatus(status: WorkspaceMcpStatus): string {
  const rows = [['SERVER', 'STATUS', 'MCP', 'ENTRIES', 'REFS', 'DETAIL']];
  for (const server of status.servers) {
    const refs = server.entrySummary.reduce((sum, entry) => sum + entry.refs, 0);
    const detail =
      server.entrySummary.map((entry) => `#${entry.entryIndex} ${entry.status} refs=${entry.refs} ${entry.sharing}${entry.ownerLabel === undefined ? '' : `:${entry.ownerLabel}`}`).join(', ') ||
      (server.lastError ? `${server.lastError.code}: ${server.lastError.message.split('\n')[0]}` : '-');
    rows.push([server.name, server.status, server.mcpStatus, String(server.entryCount), String(refs), detail]);
  }
  const b = status.budget;
  const split = Object.entries(b.bySharing ?? {}).filter(([, count]) => count > 0).map(([policy, count]) => `${count} ${policy}`).join(', ');
  const summary = `budget: ${b.liveCount}/${b.clientBudget} live (${b.budgetMode}, ${b.status})${split === '' ? '' : ` · ${split}`} · sessions: ${status.sessions} · ${status.ready ? 'ready' : 'warming up'}`;
  return `${status.servers.length > 0 ? table(rows) : '(no servers)'}\n${summary}`;
}

export function formatRestart(server: string, response: RestartResponse): string {
  if (!isRestartEntries(response)) {
    return response.restarted ? `${server}: restarted in ${response.durationMs} ms` : `${server}: not restarted (${response.reason ?? 'skipped'})`;
  }
  return response.entries
    .map((entry) => (entry.restarted ? `${server}#${entry.entryIndex}: restarted in ${entry.durationMs} ms` : `${server}#${entry.entryIndex}: not restarted (${entry.reason ?? 'skipped'})`))
    .join('\n');
}

export function formatSessions(sessions: SessionInfo[]): string {
  if (sessions.length === 0) return '(no sessions)';
  const rows = [['ID', 'CLIENT', 'CREATED', 'LABEL', 'SERVERS']];
  for (const session of sessions) {
    const servers = session.servers.map((server) => `${server.name}${server.injected ? '*' : ''}${server.entryIndex === undefined ? '' : `#${server.entryIndex}`}${server.status === 'connected' ? '' : ` (${server.status})`}`).join(', ');
    rows.push([session.id, session.clientId, session.createdAt, session.label ?? '-', servers || '-']);
  }
  return `${table(rows)}\n(* injected by the session)`;
}
