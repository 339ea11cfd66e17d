/**
 * `mcpool status | restart | reload | stop | sessions`: thin commands over `@mcpool/client`. The
 * daemon's URL comes from `--url`, `--port` (on 127.0.0.1), `MCPOOL_URL`, or the host and port
 * of the config `serve` would use; the token from `MCPOOL_TOKEN` or the state directory's token
 * file.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { McpoolClient, McpoolHttpError, McpoolRequestError, isRestartEntries, type ReloadResult, type RestartResponse, type SessionInfo, type WorkspaceMcpStatus, type WorkspaceSession } from '@mcpool/client';
import { readOperatorToken } from '../auth.js';
import { localDaemonUrl } from '../local/address.js';
import { defaultStateDir } from '../config/paths.js';

export interface CommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  cwd: string;
}

export interface ConnectOptions {
  url?: string;
  /** `--port`: the daemon on 127.0.0.1 at this port. */
  port?: number;
  config?: string;
}

/** A problem with how the command was called (no token, bad URL): exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The URL the daemon listens on, as far as this machine's config says. */
export async function daemonUrl(options: ConnectOptions, io: CommandIo): Promise<string> {
  if (options.url !== undefined && options.port !== undefined) throw new UsageError('give --url or --port, not both');
  return localDaemonUrl(options, io);
}

/** A client of the daemon, with the token it uses (for the routes the client has no method for). */
export type ConnectedClient = McpoolClient & { readonly token: string };

export async function connect(options: ConnectOptions, io: CommandIo): Promise<ConnectedClient> {
  const baseUrl = await daemonUrl(options, io);
  const stateDir = defaultStateDir({ env: io.env });
  const token = await readOperatorToken(stateDir, io.env);
  if (token === undefined) throw new UsageError(`no token: set MCPOOL_TOKEN, or start \`mcpool serve\` once (it writes ${stateDir}/token)`);
  try {
    return Object.assign(new McpoolClient({ baseUrl, token }), { token });
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
      server.entrySummary.map((entry) => `#${entry.entryIndex} ${entry.status} refs=${entry.refs} ${entry.sharing}${entry.ownerLabel === undefined ? '' : `:${entry.ownerLabel}`}${entry.health === undefined ? '' : ` ${entry.health}`}`).join(', ') ||
      (server.lastError ? `${server.lastError.code}: ${server.lastError.message.split('\n')[0]}` : '-');
    const next = server.errorKind === 'auth_required' ? ` — run: mcpool auth ${server.name}` : '';
    rows.push([server.name, server.status, server.mcpStatus, String(server.entryCount), String(refs), detail + next]);
  }
  const b = status.budget;
  const split = Object.entries(b.bySharing ?? {}).filter(([, count]) => count > 0).map(([policy, count]) => `${count} ${policy}`).join(', ');
  const summary = `budget: ${b.liveCount}/${b.clientBudget} live (${b.budgetMode}, ${b.status})${split === '' ? '' : ` · ${split}`} · sessions: ${status.sessions} · ${status.ready ? 'ready' : 'warming up'}`;
  const l = status.limits;
  const limits = `limits: actors ${l.actors.live}/${l.actors.max} · /mcp sessions ${l.mcpSessions.open}/${l.mcpSessions.max} (${l.mcpSessions.perClient} per client) · sessions ${l.sessions.open} (${l.sessions.perClient} per client) · injected ${l.injectedServers.live} (${l.injectedServers.perRequest} per request, ${l.injectedServers.perClient} per client)`;
  return `${status.servers.length > 0 ? table(rows) : '(no servers)'}\n${summary}\n${limits}`;
}

export function formatRestart(server: string, response: RestartResponse): string {
  if (!isRestartEntries(response)) {
    return response.restarted ? `${server}: restarted in ${response.durationMs} ms` : `${server}: not restarted (${response.reason ?? 'skipped'})`;
  }
  return response.entries
    .map((entry) => (entry.restarted ? `${server}#${entry.entryIndex}: restarted in ${entry.durationMs} ms` : `${server}#${entry.entryIndex}: not restarted (${entry.reason ?? 'skipped'})`))
    .join('\n');
}

/** True when the restart did not happen (for one entry, or for any of several). */
export function restartFailed(response: RestartResponse): boolean {
  return isRestartEntries(response) ? response.entries.length === 0 || response.entries.some((entry) => !entry.restarted) : !response.restarted;
}

export function formatReload(result: ReloadResult): string {
  const list = (names: string[]): string => (names.length > 0 ? names.join(', ') : '-');
  const lines = [`reloaded ${result.source ?? '(built-in config)'}: added ${list(result.added)} · removed ${list(result.removed)} · changed ${list(result.changed)} · unchanged ${list(result.unchanged)}`];
  if (result.needsRestart.length > 0) lines.push(`these daemon settings apply only after a restart of the daemon: ${result.needsRestart.join(', ')}`);
  return lines.join('\n');
}

/**
 * `POST /workspace/shutdown`, then waits until the daemon no longer answers (its shutdown is
 * bounded by the `timeoutMs` it answered with, plus a margin for the process to end).
 */
export async function stopDaemon(client: ConnectedClient): Promise<{ stopped: boolean; waitedMs: number }> {
  const url = `${client.baseUrl}/workspace/shutdown`;
  let answer: Response;
  try {
    answer = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${client.token}`, accept: 'application/json' }, signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    throw new McpoolRequestError('MCPOOL_UNREACHABLE', `cannot reach the mcpool daemon at ${client.baseUrl}: ${(error as Error).message}`, { cause: error });
  }
  const body = (await answer.json().catch(() => undefined)) as { stopping?: boolean; timeoutMs?: number; statusCode?: number; code?: string; error?: string; message?: string } | undefined;
  if (answer.status !== 202) {
    throw new McpoolHttpError({ statusCode: answer.status, code: body?.code ?? 'MCPOOL_HTTP_ERROR', error: body?.error ?? answer.statusText, message: body?.message ?? `HTTP ${answer.status}` });
  }
  const response = { timeoutMs: typeof body?.timeoutMs === 'number' ? body.timeoutMs : 10_000 };
  const started = Date.now();
  const deadline = started + response.timeoutMs + 10_000;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    try {
      await client.health({ signal: AbortSignal.timeout(1000) });
    } catch (error) {
      if (error instanceof McpoolRequestError && error.code === 'MCPOOL_UNREACHABLE') return { stopped: true, waitedMs: Date.now() - started };
    }
    await delay(Math.min(50 * 2 ** attempt, 500));
  }
  return { stopped: false, waitedMs: Date.now() - started };
}

export function formatSessions(sessions: SessionInfo[], mcpSessions: WorkspaceSession[] = []): string {
  if (sessions.length === 0 && mcpSessions.length === 0) return '(no sessions)';
  const out: string[] = [];
  if (sessions.length > 0) {
    const rows = [['ID', 'CLIENT', 'CREATED', 'LABEL', 'SERVERS']];
    for (const session of sessions) {
      const servers = session.servers.map((server) => `${server.name}${server.injected ? '*' : ''}${server.entryIndex === undefined ? '' : `#${server.entryIndex}`}${server.status === 'connected' ? '' : ` (${server.status})`}`).join(', ');
      rows.push([session.id, session.clientId, session.createdAt, session.label ?? '-', servers || '-']);
    }
    out.push(`${table(rows)}\n(* injected by the session)`);
  }
  if (mcpSessions.length > 0) {
    const rows = [['/MCP SESSION', 'ERA', 'CLIENT', 'CREATED', 'LAST USED', 'ENDPOINT', 'SERVERS']];
    for (const session of mcpSessions) {
      const servers = session.servers.map((server) => `${server.name}${server.status === 'connected' ? '' : ` (${server.status})`}`).join(', ');
      const era = session.era === 'modern' ? `modern (${session.listens ?? 0} listen${session.listens === 1 ? '' : 's'})` : (session.era ?? 'legacy');
      rows.push([session.id, era, session.client === undefined ? session.clientId : `${session.clientId} (${session.client.name} ${session.client.version})`, session.createdAt, session.lastActivityAt, session.scope === undefined ? '/mcp' : `/mcp/${session.scope}`, servers || '-']);
    }
    out.push(table(rows));
  }
  return out.join('\n\n');
}
