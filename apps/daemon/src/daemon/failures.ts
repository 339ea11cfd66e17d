/**
 * How the daemon records a server that could not be acquired: a plain `{code, message}` (what a
 * session's status and the warm hold's `lastError` show), and whether it was a failed spawn
 * (whose one log line the entry watcher writes, with the server's stderr).
 */
import { ErrorCode, errorToWire } from '@mcpool/protocol';

export interface PlainError {
  code: ErrorCode;
  message: string;
}

export function plainError(error: unknown): PlainError {
  const { code, message } = errorToWire(error);
  return { code, message };
}

export function isSpawnFailure(code: string): boolean {
  return code === ErrorCode.SPAWN_FAILED || code === ErrorCode.SPAWN_TIMEOUT;
}
