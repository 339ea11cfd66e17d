/**
 * `mcpool logs [server] [-f]`: the daemon's log as a person reads it, from
 * `<state dir>/daemon.log` (where the service and an autostarted daemon write). One line per
 * record: time, level, where (component, server, entry), message. `server` keeps the lines of
 * one server (its lifecycle and the stderr lines the daemon logged for it); `-f` follows the
 * file until Ctrl-C.
 */
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { DAEMON_LOG_FILE, defaultStateDir } from '../config/paths.js';
import type { CommandIo } from './clientCommands.js';

export interface LogsOptions {
  follow?: boolean;
  lines?: number;
  json?: boolean;
  file?: string;
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** How often `-f` looks for new lines. */
const FOLLOW_POLL_MS = 250;
/** At most this much of the file's end is read for the last lines. */
const TAIL_WINDOW_BYTES = 4 * 1024 * 1024;

function count(value: string): number {
  if (!/^\d{1,7}$/.test(value)) throw new InvalidArgumentError('expected a number of lines');
  return Number(value);
}

export function registerLogsCommand(program: Command, io: CommandIo, done: (exitCode: number) => void): void {
  program
    .command('logs')
    .description("the daemon's log (<state dir>/daemon.log), optionally of one server")
    .argument('[server]', 'only the lines about this server')
    .option('-f, --follow', 'keep printing new lines until Ctrl-C')
    .option('-n, --lines <n>', 'how many of the last lines to print first', count, 50)
    .option('--json', 'print the records as the daemon wrote them')
    .option('--file <file>', 'read this log file instead')
    .action(async (server: string | undefined, options: LogsOptions) => done(await runLogs(server, options, io)));
}

/** A record's field as text: strings and numbers as they are, anything else as JSON. */
function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}

/** One record as a line a person reads, or `undefined` when it is not about `server`. */
export function formatRecord(line: string, server: string | undefined, json: boolean): string | undefined {
  let record: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== 'object' || parsed === null) throw new Error('not a record');
    record = parsed as Record<string, unknown>;
  } catch {
    // Not one of the daemon's records (a crash trace, say): shown as it is, but only unfiltered.
    return server === undefined ? line : undefined;
  }
  if (server !== undefined && record.server !== server) return undefined;
  if (json) return line;
  const time = typeof record.time === 'number' ? new Date(record.time).toISOString().slice(11, 23) : '';
  const level = LEVELS[record.level as number] ?? text(record.level);
  const where = [record.component === undefined ? undefined : text(record.component), record.server === undefined ? undefined : `${text(record.server)}${record.entryIndex === undefined ? '' : `#${text(record.entryIndex)}`}`]
    .filter((part): part is string => part !== undefined)
    .join(' ');
  const error = typeof record.error === 'object' && record.error !== null ? (record.error as { code?: unknown; message?: unknown }) : undefined;
  const detail = error === undefined ? '' : ` — ${text(error.code)}${error.message === undefined ? '' : `: ${text(error.message)}`}`;
  return `${time} ${level.padEnd(5)} ${where ? `[${where}] ` : ''}${text(record.msg)}${detail}`;
}

export async function runLogs(server: string | undefined, options: LogsOptions, io: CommandIo): Promise<number> {
  const file = options.file ?? join(defaultStateDir({ env: io.env }), DAEMON_LOG_FILE);
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch {
    io.stderr(`no log at ${file}: the daemon writes it there when it runs as a service (mcpool service install) or was autostarted; \`mcpool serve\` logs to its terminal`);
    return 1;
  }
  const handle = await open(file, 'r');
  try {
    const start = Math.max(0, size - TAIL_WINDOW_BYTES);
    const buffer = Buffer.alloc(size - start);
    await handle.read(buffer, 0, buffer.length, start);
    let lines = buffer.toString('utf8').split('\n');
    if (start > 0) lines = lines.slice(1);
    const shown = lines.filter((line) => line.length > 0).map((line) => formatRecord(line, server, options.json === true)).filter((line): line is string => line !== undefined);
    const keep = options.lines ?? 50;
    for (const line of keep === 0 ? [] : shown.slice(-keep)) io.stdout(line);
    if (!options.follow) return 0;

    let position = size;
    let partial = '';
    let stopped = false;
    const stop = (): void => void (stopped = true);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      while (!stopped) {
        const now = (await stat(file).catch(() => undefined))?.size ?? position;
        // Truncated or replaced: start over from its beginning.
        if (now < position) position = 0;
        if (now > position) {
          const chunk = Buffer.alloc(now - position);
          await handle.read(chunk, 0, chunk.length, position);
          position = now;
          const text = partial + chunk.toString('utf8');
          const parts = text.split('\n');
          partial = parts.pop() ?? '';
          for (const line of parts) {
            const out = line.length > 0 ? formatRecord(line, server, options.json === true) : undefined;
            if (out !== undefined) io.stdout(out);
          }
        }
        await delay(FOLLOW_POLL_MS);
      }
    } finally {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
    }
    return 0;
  } finally {
    await handle.close();
  }
}
