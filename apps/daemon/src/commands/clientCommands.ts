/**
 * `mcpool status | restart | reload | stop | sessions`: thin commands over `@mcpool/client`. The
 * daemon is reached over its local socket in the state directory when it answers there and no
 * address was given (no token needed). Otherwise its URL comes from `--url`, `--port` (on
 * 127.0.0.1), `MCPOOL_URL`, or the host and port of the config `serve` would use; the token from
 * `MCPOOL_TOKEN` or the state directory's token file.
 */
import { InvalidArgumentError } from 'commander';
import { setTimeout as delay } from 'node:timers/promises';
import { McpoolClient, McpoolHttpError, McpoolRequestError, isRestartEntries, type ReloadResult, type RestartResponse, type SessionInfo, type WorkspaceMcpStatus, type WorkspaceSession } from '@mcpool/client';
import { readOperatorToken } from '../auth.js';
import { localDaemonUrl } from '../local/address.js';
import { defaultStateDir } from '../config/paths.js';
import { LOCAL_SOCKET_BASE_URL, localSocketPath, socketAnswers, socketFetch } from '@mcpool/client/node';

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

/**
 * A client of the daemon, with how it reaches it (for the routes the client has no method for):
 * the fetch and token it uses (none over the local socket), and `where` in words.
 */
export type ConnectedClient = McpoolClient & { readonly token: string | undefined; readonly fetch: typeof fetch; readonly where: string };

/**
 * This user's daemon: over its local socket when no address was asked for (`--url`, `--port`,
 * `--config`, `MCPOOL_URL`) and a daemon answers there — no token then, the socket's permissions
 * are the authentication; else over TCP with the token, as the module header says.
 */
export async function connect(options: ConnectOptions, io: CommandIo): Promise<ConnectedClient> {
  const stateDir = defaultStateDir({ env: io.env });
  const addressed = options.url !== undefined || options.port !== undefined || options.config !== undefined || Boolean(io.env.MCPOOL_URL);
  const socket = addressed ? undefined : localSocketPath(stateDir);
  if (socket !== undefined && (await socketAnswers(socket))) {
    const viaSocket = socketFetch(socket);
    return Object.assign(new McpoolClient({ baseUrl: LOCAL_SOCKET_BASE_URL, fetch: viaSocket }), { token: undefined, fetch: viaSocket, where: socket });
  }
  const baseUrl = await daemonUrl(options, io);
  const token = await readOperatorToken(stateDir, io.env);
  if (token === undefined) throw new UsageError(`no token: set MCPOOL_TOKEN, or start \`mcpool serve\` once (it writes ${stateDir}/token)`);
  try {
    return Object.assign(new McpoolClient({ baseUrl, token }), { token, fetch: globalThis.fetch, where: baseUrl });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ').trimEnd()).join('\n');
}

/** Lines of one error the status table shows under its server (the end of a long stderr tail is where the cause usually is). */
const ERROR_LINES_SHOWN = 12;

/** An error as lines: `code: message`, each line of a multi-line message (a server's stderr tail) kept, the last ones when there are many. */
function errorLines(error: { code: string; message: string }): string[] {
  const lines = `${error.code}: ${error.message}`.split('\n').map((line) => line.trimEnd()).filter((line) => line.length > 0);
  if (lines.length <= ERROR_LINES_SHOWN) return lines;
  return [lines[0]!, `… (${lines.length - ERROR_LINES_SHOWN} more lines; --json has them all)`, ...lines.slice(-(ERROR_LINES_SHOWN - 1))];
}

/** A server's life state, the cost of its last start and whether it uses roots: `running · start 420 ms · uses roots`, `stopped (idle)`, `cold`. */
function stateCell(server: WorkspaceMcpStatus['servers'][number]): string {
  const roots = server.learned?.usesRoots === true ? ' · uses roots' : '';
  if (server.state === undefined) return roots === '' ? '-' : roots.slice(3);
  const state = server.state === 'stopped' ? 'stopped (idle)' : server.state;
  return (server.lastStartMs === undefined ? state : `${state} · start ${server.lastStartMs} ms`) + roots;
}

export function formatStatus(status: WorkspaceMcpStatus): string {
  const rows = [['SERVER', 'STATUS', 'STATE', 'MCP', 'ENTRIES', 'REFS', 'DETAIL']];
  const below = (detail: string): string[] => ['', '', '', '', '', '', `  ${detail}`];
  for (const server of status.servers) {
    const refs = server.entrySummary.reduce((sum, entry) => sum + entry.refs, 0);
    const entries = server.entrySummary.map((entry) => `#${entry.entryIndex} ${entry.status} refs=${entry.refs} ${entry.sharing}${entry.ownerLabel === undefined ? '' : `:${entry.ownerLabel}`}${entry.health === undefined ? '' : ` ${entry.health}`}`).join(', ');
    // A multi-line error (a server's stderr tail) is shown whole, under its row.
    const [headline = '-', ...more] = entries !== '' ? [entries] : server.lastError ? errorLines(server.lastError) : [];
    const next = server.errorKind === 'auth_required' ? ` — run: mcpool auth ${server.name}` : '';
    rows.push([server.name, server.status, stateCell(server), server.mcpStatus, String(server.entryCount), String(refs), headline + next]);
    for (const line of more) rows.push(below(line));
    if (server.configProblem) for (const line of errorLines(server.configProblem).map((l, i) => (i === 0 ? `config not applied (it runs its previous one): ${l}` : l))) rows.push(below(line));
  }
  const b = status.budget;
  const split = Object.entries(b.bySharing ?? {}).filter(([, count]) => count > 0).map(([policy, count]) => `${count} ${policy}`).join(', ');
  const l = status.limits;
  const summary = `budget: ${b.liveCount}/${b.clientBudget} live (${b.budgetMode}, ${b.status})${split === '' ? '' : ` · ${split}`} · sessions: ${l.mcpSessions.open} /mcp, ${status.sessions} REST · ${status.ready ? 'ready' : 'warming up'}`;
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
  for (const rejected of result.rejected ?? []) {
    lines.push(`not applied: ${rejected.name}: ${rejected.code}: ${rejected.message} (${rejected.keptRunning ? 'it keeps running its previous config' : 'it is unavailable'})`);
  }
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
    const authorization: Record<string, string> = client.token === undefined ? {} : { authorization: `Bearer ${client.token}` };
    answer = await client.fetch(url, { method: 'POST', headers: { ...authorization, accept: 'application/json' }, signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    throw new McpoolRequestError('MCPOOL_UNREACHABLE', `cannot reach the mcpool daemon at ${client.where}: ${(error as Error).message}`, { cause: error });
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

/** `value` as an http(s) URL. @throws UsageError naming `option` for anything else. */
export function httpUrlOption(value: string, option = '--url'): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${option}: not a URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${option}: expected an http(s) URL, got ${url.protocol}`);
  return url;
}

/** A `--port` value. @throws InvalidArgumentError (commander's) for anything but 0-65535. */
export function port(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('expected a port number (0-65535)');
  return Number(value);
}

/**
 * A duration as people write it: `500ms`, `90s`, `10m`, `2h`, or a number of seconds.
 * @throws InvalidArgumentError (commander's) for anything else.
 */
export function durationMs(value: string): number {
  const match = /^(\d{1,9})(ms|s|m|h)?$/.exec(value.trim());
  if (match === null) throw new InvalidArgumentError('expected a duration such as 30s, 10m or 1h');
  const scale = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(match[1]) * scale;
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
    const rows = [['/MCP SESSION', 'ERA', 'CLIENT', 'MCP CLIENT', 'CREATED', 'LAST USED', 'ENDPOINT', 'SERVERS']];
    for (const session of mcpSessions) {
      const servers = session.servers.map((server) => `${server.name}${server.status === 'connected' ? '' : ` (${server.status})`}`).join(', ');
      const era = session.era === 'modern' ? `modern (${session.listens ?? 0} listen${session.listens === 1 ? '' : 's'})` : (session.era ?? 'legacy');
      const client = session.client === undefined ? '-' : `${session.client.name} ${session.client.version}`;
      rows.push([session.id, era, session.clientId, client, session.createdAt, session.lastActivityAt, session.scope === undefined ? '/mcp' : `/mcp/${session.scope}`, servers || '-']);
    }
    out.push(table(rows));
  }
  return out.join('\n\n');
}
