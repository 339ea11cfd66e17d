/**
 * Errors with stable codes that survive a thread hop.
 *
 * In process there is one base class, {@link PoolError}; subclasses exist only where callers need
 * typed extra fields ({@link MCPCallInterruptedError}). Across a MessagePort an error travels as
 * {@link WireError} (`{code, message, data}`) and is rebuilt by {@link errorFromWire}, keyed on
 * `code`, so `instanceof` and `code` hold on both sides.
 *
 * `instanceof` also holds across copies of this package in one process (an IDE bundle may hold
 * two): each class carries a brand registered with `Symbol.for` and answers `instanceof` by it,
 * as undici's errors do (`Symbol.for('undici.error.UND_ERR')`), not by its prototype chain alone.
 */

import { ErrorCode, isErrorCode } from './errorCodes.js';

export { ErrorCode } from './errorCodes.js';

/** The shape an error takes on the wire (between threads, and in HTTP bodies). */
export interface WireError {
  code: ErrorCode;
  message: string;
  data?: Record<string, unknown>;
}

/** The brands: `Symbol.for` gives every copy of this package the same symbol. */
const kPoolError: unique symbol = Symbol.for('mcpool.error.MCPOOL');
const kCallInterrupted: unique symbol = Symbol.for('mcpool.error.MCPOOL_CALL_INTERRUPTED');

function hasBrand(value: unknown, brand: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}

export interface PoolErrorOptions {
  data?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * The one base class of mcpool errors: a stable `code`, optional structured `data` and `cause`.
 *
 * `new PoolError(ErrorCode.CALL_INTERRUPTED, …)` builds an {@link MCPCallInterruptedError}: that
 * code and that class always go together, whoever raises it.
 */
export class PoolError extends Error {
  /**
   * `instanceof PoolError` is true for a PoolError of any copy of this package. A subclass that
   * declares no brand of its own is matched by its prototype chain, as usual.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return this === PoolError ? hasBrand(value, kPoolError) : Function.prototype[Symbol.hasInstance].call(this, value);
  }

  /** @internal */
  get [kPoolError](): true {
    return true;
  }

  override name = 'PoolError';
  readonly code: ErrorCode;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: PoolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = options.data;
    if (code === ErrorCode.CALL_INTERRUPTED && new.target === PoolError) {
      // A constructor may return another object: the caller gets the typed subclass.
      return new MCPCallInterruptedError(message, interruptedData(options.data), options.cause);
    }
  }

  toWire(): WireError {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

/** Fields that identify the interrupted call's connection; -1 / '' where the raiser did not know them. */
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
  /** True for an MCPCallInterruptedError of any copy of this package. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return this === MCPCallInterruptedError ? hasBrand(value, kCallInterrupted) : Function.prototype[Symbol.hasInstance].call(this, value);
  }

  /** @internal */
  get [kCallInterrupted](): true {
    return true;
  }

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

function interruptedData(data: Record<string, unknown> | undefined): CallInterruptedData {
  const number = (value: unknown): number => (typeof value === 'number' && Number.isInteger(value) ? value : -1);
  return {
    ...data,
    serverName: typeof data?.serverName === 'string' ? data.serverName : '',
    entryIndex: number(data?.entryIndex),
    clientGeneration: number(data?.clientGeneration),
  };
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

/**
 * Rebuilds a {@link PoolError} (or its typed subclass) from its wire form. A code this version
 * does not know (a newer peer) becomes `MCPOOL_INTERNAL` with `data.originalCode`.
 */
export function errorFromWire(wire: WireError): PoolError {
  if (!isErrorCode(wire.code)) {
    return new PoolError(ErrorCode.INTERNAL, wire.message, { data: { ...wire.data, originalCode: wire.code } });
  }
  return new PoolError(wire.code, wire.message, wire.data === undefined ? {} : { data: wire.data });
}

/** True when `error` is a PoolError with this code. */
export function hasCode(error: unknown, code: ErrorCode): error is PoolError {
  return error instanceof PoolError && error.code === code;
}
