/**
 * The daemon's one pino logger: pretty on a terminal, JSON lines otherwise. Secrets are kept out
 * three ways: bindings and fields come only from our own values, `redact` removes the
 * usual secret-bearing paths, and every line is scrubbed of the secrets the daemon knows.
 * The pool's actor threads log through it too (their records are written to a child of it), so
 * their lines get the same redaction and go to the same destination.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';
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

export function createLogger(options: LoggerOptions): Logger {
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  const destination =
    options.destination ??
    (pretty
      ? PinoPretty({ colorize: true, destination: 1, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      : pino.destination({ dest: 1, sync: true }));
  const redactor = options.redactor;
  return pino(
    {
      level: options.level ?? 'info',
      base: { pid: process.pid },
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      hooks: { streamWrite: (line) => redactor.scrub(line) },
    },
    destination,
  );
}
