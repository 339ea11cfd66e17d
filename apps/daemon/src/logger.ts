/**
 * The daemon's one pino logger: pretty on a terminal, JSON lines otherwise. Secrets are kept out
 * three ways: bindings and fields come only from our own values, `redact` removes the
 * usual secret-bearing paths, and every line is scrubbed of the secrets the daemon knows.
 * The pool's actor threads log through it too (their records are written to a child of it), so
 * their lines get the same redaction and go to the same destination.
 */
import { copyFileSync, fstatSync, ftruncateSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type PinoPrettyModule from 'pino-pretty';
import type { LogLevel } from './config/daemonConfig.js';
import type { SecretRedactor } from './secrets.js';

export interface LoggerOptions {
  /** @default 'info' */
  level?: LogLevel;
  /** Pretty output. @default whether stdout is a terminal */
  pretty?: boolean;
  /** Where lines go. @default stdout (synchronously, so nothing is lost on exit) */
  destination?: DestinationStream;
  redactor: SecretRedactor;
  /** Told the size of each line written (after scrubbing), e.g. to bound a log file. */
  onWrite?: (bytes: number) => void;
}

/** Paths pino censors whatever the value: set here, never from input (pino docs/redaction.md). */
export const REDACT_PATHS: readonly string[] = Object.freeze([
  'env',
  '*.env',
  '*.*.env',
  'headers',
  '*.headers',
  '*.*.headers',
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'req.headers',
  'config',
  '*.config',
  'mcpServers',
  '*.mcpServers',
]);

/**
 * pino-pretty and what it pulls in, loaded only for a terminal: a daemon run by a service, by
 * autostart or by a script writes JSON lines and never needs it (~1 MB of heap and its code).
 * A CommonJS package, so `require` loads it at the point of use, synchronously.
 */
function prettyStream(): DestinationStream {
  const { PinoPretty } = createRequire(import.meta.url)('pino-pretty') as typeof PinoPrettyModule;
  return PinoPretty({ colorize: true, destination: 1, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

export function createLogger(options: LoggerOptions): Logger {
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  const destination =
    options.destination ??
    (pretty ? prettyStream() : pino.destination({ dest: 1, sync: true }));
  const redactor = options.redactor;
  return pino(
    {
      level: options.level ?? 'info',
      base: { pid: process.pid },
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      hooks: {
        streamWrite: (line) => {
          const scrubbed = redactor.scrubLine(line);
          options.onWrite?.(scrubbed.length);
          return scrubbed;
        },
      },
    },
    destination,
  );
}

/**
 * Keeps the log file the daemon's stdout appends to (`<state dir>/daemon.log`, where an
 * autostarted daemon and the service unit write) under `maxBytes`: past it, the file is copied to
 * `<file>.1` (replacing the previous one) and truncated in place, as logrotate's `copytruncate`
 * does — the writer's descriptor is opened for appending by whoever started the daemon, so the
 * file cannot be renamed under it. At most `2 × maxBytes` on disk. A line written between the
 * copy and the truncation is lost. Only that file is bounded: stdout redirected anywhere else is
 * the redirecting user's to rotate.
 */
export class LogFileBound {
  readonly #path: string;
  readonly #maxBytes: number;
  readonly #fd: number;
  /** Bytes written since the size was last looked at: the file is checked every eighth of the bound. */
  #sinceCheck = 0;
  #enabled: boolean;

  /** A bound when `fd` appends to `path` (same file), else undefined. */
  static forDescriptor(path: string, maxBytes: number, fd = 1): LogFileBound | undefined {
    try {
      const out = fstatSync(fd);
      const file = statSync(path);
      if (!out.isFile() || out.ino !== file.ino || out.dev !== file.dev) return undefined;
    } catch {
      return undefined;
    }
    return new LogFileBound(path, maxBytes, fd);
  }

  private constructor(path: string, maxBytes: number, fd: number) {
    this.#path = path;
    this.#maxBytes = maxBytes;
    this.#fd = fd;
    this.#enabled = true;
  }

  /** Counts a line about to be written; rotates first when the file has reached its bound. */
  written(bytes: number): void {
    if (!this.#enabled) return;
    this.#sinceCheck += bytes;
    if (this.#sinceCheck < this.#maxBytes / 8) return;
    this.#sinceCheck = 0;
    try {
      if (fstatSync(this.#fd).size < this.#maxBytes) return;
      copyFileSync(this.#path, `${this.#path}.1`);
      ftruncateSync(this.#fd, 0);
    } catch {
      // A full disk or a file moved away: stop bounding rather than fail the line.
      this.#enabled = false;
    }
  }
}
