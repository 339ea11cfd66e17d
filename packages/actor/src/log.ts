/**
 * The actor thread's logger: pino's calling shape (child loggers, a settable `level`,
 * `isLevelEnabled`, `(obj, msg)` or `(msg)`), but no pino: each line becomes one record handed to
 * `post`, which sends it over the control channel to the supervisor, which writes it to the
 * host's logger or drops it. An embedding host owns its stdout and stderr; a thread writing to
 * fd 2 would bypass both its logger and its redaction.
 *
 * Not pino itself because a thread that boots on the path of a fresh pool's first acquire would
 * load pino's ~30 modules (its transports, thread-stream, sonic-boom) only to serialize a line
 * to JSON that is parsed right back into a record here. The fields are still made JSON-safe the
 * way pino makes them: `err` through pino's error serializer shape, the rest as JSON would write
 * them, so a record is the same plain data a pino line parsed back gave.
 *
 * It starts `silent`: nothing is built or sent until the supervisor sets the level it wants.
 */
import type { LogLevel, LogRecord } from '@mcpool/protocol';

/** pino's level names and numbers (trace 10 … fatal 60); `silent` is above every line. */
const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;

export type ActorLogLevelName = keyof typeof LEVELS;

type LineLevel = Exclude<ActorLogLevelName, 'silent'>;

type LogFn = (objOrMsg?: object | string, msg?: string) => void;

/** The logger an actor thread uses: the part of pino's API the actor's code calls. */
export interface ActorLogger {
  /** The level below which a line is not even built; set by name. */
  level: string;
  child(bindings: Record<string, unknown>): ActorLogger;
  isLevelEnabled(level: string): boolean;
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  /** Records leave as they are logged: nothing is held back to flush. */
  flush(): void;
}

/**
 * A logger whose every line becomes one {@link LogRecord} passed to `post`. `bindings` are on
 * every line (pino's `base`). A `post` that throws (the channel is gone) loses that line only.
 */
export function createActorLogger(post: (record: LogRecord) => void, bindings: Record<string, unknown> = {}): ActorLogger {
  return makeLogger(post, bindings, LEVELS.silent);
}

function makeLogger(post: (record: LogRecord) => void, bindings: Record<string, unknown>, threshold: number): ActorLogger {
  const line =
    (level: LineLevel): LogFn =>
    (objOrMsg, msg) => {
      if (LEVELS[level] < threshold) return;
      const obj = typeof objOrMsg === 'object' && objOrMsg !== null ? objOrMsg : undefined;
      const text = obj === undefined ? (typeof objOrMsg === 'string' ? objOrMsg : '') : (msg ?? '');
      let fields: Record<string, unknown>;
      try {
        fields = jsonSafe({ ...bindings, ...obj });
      } catch {
        return;
      }
      try {
        post({ level: folded(level), msg: text, fields });
      } catch {
        // A log line never breaks the code that logs it.
      }
    };
  const logger: ActorLogger = {
    get level(): string {
      return nameOf(threshold);
    },
    set level(name: string) {
      const value = LEVELS[name as ActorLogLevelName];
      if (value === undefined) throw new Error(`unknown log level ${name}`);
      threshold = value;
    },
    child: (more) => makeLogger(post, { ...bindings, ...more }, threshold),
    isLevelEnabled: (name) => {
      const value = LEVELS[name as ActorLogLevelName];
      // `silent` and unknown names are no level a line is written at.
      return value !== undefined && value !== Infinity && value >= threshold;
    },
    trace: line('trace'),
    debug: line('debug'),
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    fatal: line('fatal'),
    flush: () => undefined,
  };
  return logger;
}

function nameOf(threshold: number): string {
  for (const [name, value] of Object.entries(LEVELS)) if (value === threshold) return name;
  return 'silent';
}

/** The six line levels folded onto the four a host's logger has. */
function folded(level: LineLevel): LogLevel {
  if (level === 'trace') return 'debug';
  if (level === 'fatal') return 'error';
  return level;
}

/**
 * The fields as plain data, as a pino line parsed back gave them: `err` as pino's error
 * serializer writes an Error (type, message, stack, its own fields, its cause), everything else
 * as JSON writes it (an Error elsewhere keeps its enumerable fields only). A value met again
 * inside itself is written `[Circular]`, as pino's stringifier does.
 */
function jsonSafe(fields: Record<string, unknown>): Record<string, unknown> {
  const err = fields.err;
  const prepared = err instanceof Error ? { ...fields, err: serializeError(err, new Set()) } : fields;
  const seen: object[] = [];
  const text = JSON.stringify(prepared, function (this: unknown, _key, value: unknown) {
    if (typeof value !== 'object' || value === null) return typeof value === 'bigint' ? value.toString() : value;
    // `this` is the holder: the chain of holders above `value` is what `seen` keeps.
    while (seen.length > 0 && seen[seen.length - 1] !== this) seen.pop();
    if (seen.includes(value)) return '[Circular]';
    seen.push(value);
    return value;
  });
  return JSON.parse(text) as Record<string, unknown>;
}

/** pino's `err` serializer: type, message, stack, the error's own enumerable fields, and its cause. */
function serializeError(error: Error, seen: Set<Error>): Record<string, unknown> {
  seen.add(error);
  const out: Record<string, unknown> = { type: error.constructor?.name ?? error.name, message: error.message, stack: error.stack };
  for (const [key, value] of Object.entries(error)) {
    if (key in out) continue;
    out[key] = value instanceof Error ? (seen.has(value) ? '[Circular]' : serializeError(value, seen)) : value;
  }
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error && !seen.has(cause)) out.cause = serializeError(cause, seen);
  return out;
}
