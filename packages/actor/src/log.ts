/**
 * The actor thread's logger. It is pino (the actor's code uses pino's API: child loggers,
 * `isLevelEnabled`), but its lines go nowhere near a file descriptor: each one is parsed back
 * into a record and handed to `post`, which sends it over the control channel to the
 * supervisor, which writes it to the host's logger or drops it. An embedding host owns its
 * stdout and stderr; a thread writing to fd 2 would bypass both its logger and its redaction.
 *
 * It starts `silent`: nothing is built or sent until the supervisor sets the level it wants.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel, LogRecord } from '@mcpool/protocol';

/**
 * A logger whose every line becomes one {@link LogRecord} passed to `post`. `bindings` are on
 * every line (pino's `base`). A `post` that throws (the channel is gone) loses that line only.
 */
export function createActorLogger(post: (record: LogRecord) => void, bindings: Record<string, unknown> = {}): Logger {
  const destination: DestinationStream = {
    write(line: string): void {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      const { level, msg, ...fields } = parsed;
      try {
        post({ level: levelName(level), msg: typeof msg === 'string' ? msg : '', fields });
      } catch {
        // A log line never breaks the code that logs it.
      }
    },
  };
  return pino({ level: 'silent', base: bindings, timestamp: false }, destination);
}

/** pino's level numbers (trace 10 … fatal 60) folded onto the four levels a host's logger has. */
function levelName(level: unknown): LogLevel {
  const n = typeof level === 'number' ? level : 30;
  if (n < 30) return 'debug';
  if (n < 40) return 'info';
  if (n < 50) return 'warn';
  return 'error';
}
