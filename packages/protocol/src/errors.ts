/**
 * Errors with stable codes that survive a thread hop.
 *
 * In process there is one base class, {@link PoolError}; subclasses exist only where callers need
 * typed extra fields ({@link MCPCallInterruptedError}). Across a MessagePort an error travels as
 * {@link WireError} (`{code, message, data}`) and is rebuilt by {@link errorFromWire}, keyed on
 * `code`, so `instanceof` and `code` hold on both sides.
 */

/** Every error code mcpool raises. Stable: clients match on these strings. */
export const ErrorCode = {
  /** A config file or server entry is malformed; `data` names the file and JSON path. */
  CONFIG_INVALID: 'MCPOOL_CONFIG_INVALID',
  /** Options passed to a constructor or method are invalid. */
  INVALID_ARGUMENT: 'MCPOOL_INVALID_ARGUMENT',
  /** The session's filters hide this tool or prompt. */
  TOOL_NOT_ALLOWED: 'MCPOOL_TOOL_NOT_ALLOWED',
  /** The transport was lost while the call was in flight; the call is never replayed. */
  CALL_INTERRUPTED: 'MCPOOL_CALL_INTERRUPTED',
  /** The call did not finish within its timeout (a cancellation was sent upstream). */
  CALL_TIMEOUT: 'MCPOOL_CALL_TIMEOUT',
  /** The caller aborted the call (a cancellation was sent upstream). */
  CALL_CANCELLED: 'MCPOOL_CALL_CANCELLED',
  /** The upstream MCP server answered with a JSON-RPC error; `data.mcpCode` holds its code. */
  UPSTREAM_ERROR: 'MCPOOL_UPSTREAM_ERROR',
  /** Starting the server (spawn, connect, initialize, discovery) failed. */
  SPAWN_FAILED: 'MCPOOL_SPAWN_FAILED',
  /** Starting the server took longer than the spawn timeout. */
  SPAWN_TIMEOUT: 'MCPOOL_SPAWN_TIMEOUT',
  /** The workspace budget refuses a new live connection (mode `enforce`). */
  BUDGET_EXHAUSTED: 'MCPOOL_BUDGET_EXHAUSTED',
  /** The pool is draining (drainAll) and accepts no new acquire. */
  POOL_DRAINING: 'MCPOOL_POOL_DRAINING',
  /** The server entry is failed (restart intensity exceeded) until a manual restart. */
  SERVER_FAILED: 'MCPOOL_SERVER_FAILED',
  /** The connection actor (worker thread) died or stopped answering. */
  ACTOR_DIED: 'MCPOOL_ACTOR_DIED',
  /** The PooledConnection was released; no call can go through it any more. */
  CONNECTION_RELEASED: 'MCPOOL_CONNECTION_RELEASED',
  /** The server is reconnecting after a transport loss; retry after the `reconnected` event. */
  NOT_CONNECTED: 'MCPOOL_NOT_CONNECTED',
  /** The entry was closing when the request reached it. */
  ENTRY_CLOSING: 'MCPOOL_ENTRY_CLOSING',
  /** A message port closed before the answer came. */
  PORT_CLOSED: 'MCPOOL_PORT_CLOSED',
  /** An internal invariant broke; a bug in mcpool. */
  INTERNAL: 'MCPOOL_INTERNAL',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The shape an error takes on the wire (between threads, and in HTTP bodies). */
export interface WireError {
  code: string;
  message: string;
  data?: Record<string, unknown>;
}

export interface PoolErrorOptions {
  data?: Record<string, unknown>;
  cause?: unknown;
}

/** The one base class of mcpool errors: a stable `code`, optional structured `data` and `cause`. */
export class PoolError extends Error {
  override name = 'PoolError';
  readonly code: string;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: string, message: string, options: PoolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = options.data;
  }

  toWire(): WireError {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

/** Fields that identify the interrupted call's connection. */
export interface CallInterruptedData {
  serverName: string;
  entryIndex: number;
  /** The transport generation the call was sent on; a reconnect makes a new one. */
  clientGeneration: number;
  [key: string]: unknown;
}

/**
 * The transport died while this call was in flight. Its result is unknown: the server may or may
 * not have acted on it. The pool never replays it.
 */
export class MCPCallInterruptedError extends PoolError {
  override name = 'MCPCallInterruptedError';
  readonly serverName: string;
  readonly entryIndex: number;
  readonly clientGeneration: number;

  constructor(message: string, data: CallInterruptedData, cause?: unknown) {
    super(ErrorCode.CALL_INTERRUPTED, message, { data, cause });
    this.serverName = data.serverName;
    this.entryIndex = data.entryIndex;
    this.clientGeneration = data.clientGeneration;
  }
}

/** Turns anything thrown into a wire error, keeping `code` and `data` when they exist. */
export function errorToWire(error: unknown): WireError {
  if (error instanceof PoolError) return error.toWire();
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      code: ErrorCode.INTERNAL,
      message: error.message,
      ...(code === undefined ? {} : { data: { originalCode: code } }),
    };
  }
  return { code: ErrorCode.INTERNAL, message: String(error) };
}

/** Rebuilds a {@link PoolError} (or its typed subclass) from its wire form. */
export function errorFromWire(wire: WireError): PoolError {
  if (wire.code === ErrorCode.CALL_INTERRUPTED && wire.data !== undefined) {
    const data = wire.data as CallInterruptedData;
    return new MCPCallInterruptedError(wire.message, data);
  }
  return new PoolError(wire.code, wire.message, wire.data === undefined ? {} : { data: wire.data });
}

/** True when `error` is a PoolError with this code. */
export function hasCode(error: unknown, code: ErrorCode): error is PoolError {
  return error instanceof PoolError && error.code === code;
}
