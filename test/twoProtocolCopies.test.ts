/**
 * Two copies of `@mcpool/protocol` in one process — what an IDE extension's bundle may hold —
 * still agree on what a pool error is: `instanceof` answers by a `Symbol.for` brand, not by the
 * prototype chain of one copy. The second copy is the built package copied to a temp folder and
 * imported from there, so it is a module of its own with classes of its own.
 */
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as here from '@mcpool/protocol';
import { toRpcError } from '@mcpool/gateway';

const root = fileURLToPath(new URL('..', import.meta.url));
let dir: string;
let other: typeof here;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-protocol-copy-'));
  const copy = join(dir, 'protocol');
  cpSync(join(root, 'packages', 'protocol', 'package.json'), join(copy, 'package.json'));
  for (const part of ['dist', 'src']) cpSync(join(root, 'packages', 'protocol', part), join(copy, part), { recursive: true });
  // The copy's own dependencies (zod, jsonc-parser) resolve from the workspace's node_modules.
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  other = (await import(pathToFileURL(join(copy, 'dist', 'index.js')).href)) as typeof here;
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('two copies of @mcpool/protocol in one process', () => {
  it('are two copies: each has its own classes', () => {
    expect(other.PoolError).not.toBe(here.PoolError);
    expect(Object.getPrototypeOf(new other.PoolError(other.ErrorCode.NOT_FOUND, 'x'))).not.toBe(here.PoolError.prototype);
  });

  it('agree on instanceof PoolError, both ways', () => {
    const theirs = new other.PoolError(other.ErrorCode.NOT_FOUND, 'no such thing');
    const ours = new here.PoolError(here.ErrorCode.NOT_FOUND, 'no such thing');
    expect(theirs instanceof here.PoolError).toBe(true);
    expect(ours instanceof other.PoolError).toBe(true);
    expect(here.hasCode(theirs, here.ErrorCode.NOT_FOUND)).toBe(true);
    expect(here.errorToWire(theirs)).toEqual({ code: 'MCPOOL_NOT_FOUND', message: 'no such thing' });
  });

  it('agree on the typed subclass, and only for its code', () => {
    const interrupted = new other.PoolError(other.ErrorCode.CALL_INTERRUPTED, 'lost', { data: { serverName: 'a', entryIndex: 0, clientGeneration: 1 } });
    expect(interrupted instanceof here.MCPCallInterruptedError).toBe(true);
    expect(interrupted instanceof here.PoolError).toBe(true);
    expect(new other.PoolError(other.ErrorCode.NOT_FOUND, 'x') instanceof here.MCPCallInterruptedError).toBe(false);
  });

  it('leave other errors out, and a subclass without a brand of its own to its prototype chain', () => {
    for (const value of [new Error('plain'), { code: 'MCPOOL_NOT_FOUND', message: 'look-alike' }, null, undefined, 'MCPOOL_NOT_FOUND', Object.create(null)]) {
      expect(value instanceof here.PoolError).toBe(false);
    }
    class RouteError extends here.PoolError {}
    expect(new RouteError(here.ErrorCode.NOT_FOUND, 'x') instanceof RouteError).toBe(true);
    expect(new RouteError(here.ErrorCode.NOT_FOUND, 'x') instanceof other.PoolError).toBe(true);
    expect(new here.PoolError(here.ErrorCode.NOT_FOUND, 'x') instanceof RouteError).toBe(false);
    expect(new other.PoolError(other.ErrorCode.NOT_FOUND, 'x') instanceof RouteError).toBe(false);
  });

  it("give the other copy's errors their own JSON-RPC code in the gateway, not -32603", () => {
    const refused = toRpcError(new other.PoolError(other.ErrorCode.BUDGET_EXHAUSTED, 'over budget'), 'tools/call');
    expect(refused.code).toBe(here.JSON_RPC_CODE[here.ErrorCode.BUDGET_EXHAUSTED]);
    expect(refused.code).not.toBe(-32603);
    expect(refused.data).toEqual({ code: 'MCPOOL_BUDGET_EXHAUSTED' });
  });
});
