/**
 * The one error registry: every code has one class it arrives as (in process and after a thread
 * hop over a real MessagePort), one HTTP status and one JSON-RPC code, and the tables hold nothing
 * else. The error-code subpath loads with no import at all (a browser may load it).
 */
import { MessageChannel } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  ErrorCode,
  HTTP_STATUS,
  JSON_RPC_CODE,
  JsonRpcCode,
  MCPCallInterruptedError,
  PoolError,
  errorFromWire,
  errorToWire,
  httpStatusOf,
  isErrorCode,
  jsonRpcCodeOf,
  type WireError,
} from '@mcpool/protocol';
import * as subpath from '@mcpool/protocol/errorCodes';

const codes = Object.values(ErrorCode);

/** The class a code must arrive as. */
const classOf = (code: ErrorCode): typeof PoolError | typeof MCPCallInterruptedError => (code === ErrorCode.CALL_INTERRUPTED ? MCPCallInterruptedError : PoolError);

/** Posts `wire` through a real MessagePort and returns what arrives. */
async function hop(wire: WireError): Promise<WireError> {
  const { port1, port2 } = new MessageChannel();
  try {
    const arrived = new Promise<WireError>((resolve) => port2.once('message', resolve));
    port1.postMessage(wire);
    return await arrived;
  } finally {
    port1.close();
    port2.close();
  }
}

describe('the code table', () => {
  it('holds every code once, each spelled MCPOOL_<its key>', () => {
    expect(new Set(codes).size).toBe(codes.length);
    for (const [key, code] of Object.entries(ErrorCode)) expect(code).toBe(`MCPOOL_${key}`);
    expect(codes.length).toBeGreaterThanOrEqual(40);
  });

  it('is the same table through the package root and the plain-data subpath', () => {
    expect(subpath.ErrorCode).toBe(ErrorCode);
    expect(subpath.HTTP_STATUS).toBe(HTTP_STATUS);
    expect(subpath.JSON_RPC_CODE).toBe(JSON_RPC_CODE);
  });

  it('the subpath module imports nothing (plain data for any runtime)', () => {
    const built = readFileSync(fileURLToPath(import.meta.resolve('@mcpool/protocol/errorCodes')), 'utf8');
    expect(built).not.toMatch(/^\s*import\s/m);
    expect(built).not.toMatch(/\brequire\(|import\(/);
  });

  it('keeps the strings clients already match on', () => {
    // A rename here breaks every client that matches on the string: docs/decisions.md lists the history.
    expect(ErrorCode).toMatchObject({
      CONFIG_INVALID: 'MCPOOL_CONFIG_INVALID',
      TOOL_NOT_ALLOWED: 'MCPOOL_TOOL_NOT_ALLOWED',
      CALL_INTERRUPTED: 'MCPOOL_CALL_INTERRUPTED',
      UPSTREAM_ERROR: 'MCPOOL_UPSTREAM_ERROR',
      NOT_FOUND: 'MCPOOL_NOT_FOUND',
      BRIDGE_UNREACHABLE: 'MCPOOL_BRIDGE_UNREACHABLE',
      UNREACHABLE: 'MCPOOL_UNREACHABLE',
      HTTP_ERROR: 'MCPOOL_HTTP_ERROR',
    });
  });

  it('isErrorCode knows exactly the table', () => {
    for (const code of codes) expect(isErrorCode(code)).toBe(true);
    for (const other of ['MCPOOL_', 'MCPOOL_NOPE', 'mcpool_internal', 'CONFIG_INVALID', 42, undefined]) expect(isErrorCode(other)).toBe(false);
  });
});

describe('each code arrives as its one class', () => {
  for (const code of codes) {
    it(`${code}`, async () => {
      const made = new PoolError(code, `a ${code}`, { data: { serverName: 's', entryIndex: 0, clientGeneration: 1 } });
      expect(made).toBeInstanceOf(classOf(code));
      expect(made.code).toBe(code);
      const rebuilt = errorFromWire(await hop(errorToWire(made)));
      expect(rebuilt).toBeInstanceOf(classOf(code));
      expect(rebuilt.code).toBe(code);
      expect(rebuilt.message).toBe(`a ${code}`);
      // Without data too: the class follows the code, not whether data came along.
      const bare = errorFromWire(await hop({ code, message: 'bare' }));
      expect(bare).toBeInstanceOf(classOf(code));
      expect(bare.code).toBe(code);
    });
  }
});

describe('MCPCallInterruptedError and its code always agree', () => {
  it('new PoolError(CALL_INTERRUPTED) is an MCPCallInterruptedError with the fields it was given', () => {
    const error = new PoolError(ErrorCode.CALL_INTERRUPTED, 'lost', { data: { serverName: 'gh', entryIndex: 2, clientGeneration: 5, extra: 'kept' }, cause: 'why' });
    expect(error).toBeInstanceOf(MCPCallInterruptedError);
    expect(error).toMatchObject({ name: 'MCPCallInterruptedError', serverName: 'gh', entryIndex: 2, clientGeneration: 5, message: 'lost', cause: 'why' });
    expect(error.data).toMatchObject({ extra: 'kept' });
  });

  it('fields nobody knew are "" and -1, never undefined', () => {
    const error = errorFromWire({ code: ErrorCode.CALL_INTERRUPTED, message: 'lost' }) as MCPCallInterruptedError;
    expect([error.serverName, error.entryIndex, error.clientGeneration]).toEqual(['', -1, -1]);
  });

  it('no other code is an MCPCallInterruptedError', () => {
    for (const code of codes.filter((c) => c !== ErrorCode.CALL_INTERRUPTED)) expect(new PoolError(code, 'x')).not.toBeInstanceOf(MCPCallInterruptedError);
  });
});

describe('what is not ours', () => {
  it('anything thrown that is not a PoolError is MCPOOL_INTERNAL (our bug), never an upstream error', () => {
    expect(errorToWire(new TypeError('oops'))).toEqual({ code: ErrorCode.INTERNAL, message: 'oops' });
    expect(errorToWire(Object.assign(new Error('io'), { code: 'EPIPE' }))).toEqual({ code: ErrorCode.INTERNAL, message: 'io', data: { originalCode: 'EPIPE' } });
    expect(errorToWire('text')).toEqual({ code: ErrorCode.INTERNAL, message: 'text' });
  });

  it('a code this version does not know (a newer peer) arrives as MCPOOL_INTERNAL keeping the original', () => {
    const error = errorFromWire({ code: 'MCPOOL_FROM_THE_FUTURE' as ErrorCode, message: 'm', data: { a: 1 } });
    expect(error.code).toBe(ErrorCode.INTERNAL);
    expect(error.data).toEqual({ a: 1, originalCode: 'MCPOOL_FROM_THE_FUTURE' });
  });

  it('ConfigError is CONFIG_INVALID', () => {
    expect(new ConfigError([{ path: 'a', expected: 'b', received: 'c' }]).code).toBe(ErrorCode.CONFIG_INVALID);
  });
});

describe('one HTTP status and one JSON-RPC code per code', () => {
  const rpcCodes = new Set<number>(Object.values(JsonRpcCode));
  for (const code of codes) {
    it(`${code} → ${HTTP_STATUS[code]} / ${JSON_RPC_CODE[code]}`, () => {
      expect(Number.isInteger(HTTP_STATUS[code])).toBe(true);
      expect(HTTP_STATUS[code]).toBeGreaterThanOrEqual(400);
      expect(HTTP_STATUS[code]).toBeLessThan(600);
      expect(httpStatusOf(code)).toBe(HTTP_STATUS[code]);
      expect(rpcCodes.has(JSON_RPC_CODE[code])).toBe(true);
      expect(jsonRpcCodeOf(code)).toBe(JSON_RPC_CODE[code]);
    });
  }

  it('the tables hold no key that is not a code', () => {
    expect(Object.keys(HTTP_STATUS).sort()).toEqual([...codes].sort());
    expect(Object.keys(JSON_RPC_CODE).sort()).toEqual([...codes].sort());
  });

  it('a string that is not ours is 500 / internal error', () => {
    expect(httpStatusOf('MCPOOL_NOPE')).toBe(500);
    expect(jsonRpcCodeOf('MCPOOL_NOPE')).toBe(JsonRpcCode.INTERNAL_ERROR);
  });

  it('classes of cause keep their meaning: bugs, client faults, unavailability, deadlines', () => {
    expect([HTTP_STATUS[ErrorCode.INTERNAL], JSON_RPC_CODE[ErrorCode.INTERNAL]]).toEqual([500, -32603]);
    // Only our own bugs (and an upstream's / downstream's error without a code of its own) are "internal error".
    expect(codes.filter((code) => JSON_RPC_CODE[code] === JsonRpcCode.INTERNAL_ERROR).sort()).toEqual([ErrorCode.DOWNSTREAM_ERROR, ErrorCode.INTERNAL, ErrorCode.UPSTREAM_ERROR].sort());
    for (const code of [ErrorCode.CONFIG_INVALID, ErrorCode.INVALID_ARGUMENT, ErrorCode.TOOL_NOT_ALLOWED, ErrorCode.BAD_REQUEST, ErrorCode.UNAUTHORIZED, ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND]) {
      expect(HTTP_STATUS[code]).toBeLessThan(500);
    }
    for (const code of [ErrorCode.UPSTREAM_ERROR, ErrorCode.SPAWN_FAILED, ErrorCode.ENTRY_LOST, ErrorCode.CALL_INTERRUPTED, ErrorCode.SERVER_FAILED, ErrorCode.ACTOR_DIED]) {
      expect(HTTP_STATUS[code]).toBeGreaterThanOrEqual(500);
    }
    expect(HTTP_STATUS[ErrorCode.CALL_CANCELLED]).toBe(499);
    expect(JSON_RPC_CODE[ErrorCode.CALL_TIMEOUT]).toBe(JsonRpcCode.REQUEST_TIMEOUT);
    // A tool hidden by a filter answers like an unknown one.
    expect(JSON_RPC_CODE[ErrorCode.TOOL_NOT_ALLOWED]).toBe(JsonRpcCode.INVALID_PARAMS);
    // The loss of an entry and the interruption of a call are two codes with the same answers.
    expect(ErrorCode.ENTRY_LOST).not.toBe(ErrorCode.CALL_INTERRUPTED);
  });
});
