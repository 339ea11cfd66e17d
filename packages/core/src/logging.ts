/**
 * The pool's side of logging. A library is a guest in its host: without a logger it writes
 * nothing anywhere, and with one it writes only there (actor threads included: their records
 * come over the control channel and are written here, with the host's bindings and whatever
 * redaction the host's logger does).
 */
import type { LogLevel, LogRecord, Logger } from '@mcpool/protocol';

/** The level an actor thread logs at, or `silent`: below it a line is not even built. */
export type ActorLogLevel = LogLevel | 'silent';

const noop = (): void => undefined;

/** The logger of a pool given none: every line is dropped. */
export const SILENT_LOGGER: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => SILENT_LOGGER,
};

/** pino's level names folded onto the four a pool logs at. */
const FOLDED: Record<string, ActorLogLevel> = {
  trace: 'debug',
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
  fatal: 'error',
  silent: 'silent',
};

/**
 * The level actor threads log at: the one asked for; else the host logger's own `level` when it
 * has a known one (pino does), read at each spawn so a level changed at run time applies to new
 * actors; else `info`. Without a logger, `silent`: the threads send nothing.
 */
export function actorLogLevel(logger: Logger | undefined, wanted: ActorLogLevel | undefined): ActorLogLevel {
  if (logger === undefined) return 'silent';
  if (wanted !== undefined) return wanted;
  const level = (logger as { level?: unknown }).level;
  return (typeof level === 'string' ? FOLDED[level] : undefined) ?? 'info';
}

/** Bindings the supervisor's child logger already carries; a record's copies are dropped. */
const BOUND = ['component', 'server', 'entryIndex'];

/** Writes one actor record to `logger` (a child bound to the actor's entry). Malformed records are dropped. */
export function writeRecord(logger: Logger, record: LogRecord): void {
  if (typeof record !== 'object' || record === null || typeof record.msg !== 'string') return;
  const { level } = record;
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error') return;
  const fields: Record<string, unknown> = { ...record.fields };
  for (const key of BOUND) delete fields[key];
  logger[level](fields, record.msg);
}
