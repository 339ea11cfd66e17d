/**
 * Acquiring one server's view for a gateway caller (a legacy session or a modern principal's
 * hold), the same way for both: the server's current config, the caller's principal and client
 * declaration, readiness awaited, and the view given back at once when its caller went away
 * meanwhile (the pool may have released the session before this view was indexed).
 */
import { ErrorCode, PoolError, type AcquireOptions, type McpTransportPool, type PooledConnection, type ServerConfig } from '@mcpool/core';

/** A server's failure to start, as a caller keeps it until its next try. */
export interface AcquireFailure {
  code: ErrorCode;
  message: string;
}

/**
 * @param gone true once the caller closed: the view is released, and undefined returned.
 * @throws PoolError when the server is no longer configured or could not start.
 */
export async function acquireView(pool: McpTransportPool, name: string, config: ServerConfig | undefined, poolSessionId: string, options: AcquireOptions, gone: () => boolean): Promise<PooledConnection | undefined> {
  if (config === undefined) throw new PoolError(ErrorCode.SERVER_FAILED, `${name} is no longer configured`);
  const view = await pool.acquire(name, config, poolSessionId, options);
  await view.ready;
  if (!gone()) return view;
  void view.release().catch(() => undefined);
  return undefined;
}

/** Any acquire failure as a code and a message (a pool error keeps its own). */
export function acquireFailure(error: unknown): AcquireFailure {
  return error instanceof PoolError ? { code: error.code, message: error.message } : { code: ErrorCode.INTERNAL, message: String(error) };
}
