/**
 * The spawn policy on a clock the test moves (`SpawnBackoff`, `spawnTimeoutFor`): a config's
 * failed spawn holds its acquires back for `initialMs`, doubling per failure in a row up to
 * `maxMs`; failures that are not the server's fault hold nothing back; a record is forgotten
 * `maxMs` after its wait ended. The pool's own use of it, with real spawns, is `spawnBackoff.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode, PoolError, normalizeServerConfig } from '@mcpool/protocol';
import { SpawnBackoff, spawnTimeoutFor } from '../src/spawnPolicy.js';

const FAILED = { code: ErrorCode.SPAWN_FAILED, message: 'exited with code 3' };

function refusal(backoff: SpawnBackoff): PoolError | undefined {
  try {
    backoff.check('flaky::0000', 'flaky');
    return undefined;
  } catch (error) {
    return error as PoolError;
  }
}

describe('SpawnBackoff', () => {
  it('doubles the wait per failure in a row, up to maxMs, and lets one spawn through when it is over', () => {
    let now = 0;
    const backoff = new SpawnBackoff({ initialMs: 1000, maxMs: 4000 }, () => now);
    const waits: number[] = [];
    for (let failure = 1; failure <= 5; failure++) {
      backoff.failed('flaky::0000', 'flaky', FAILED);
      const started = now;
      while (refusal(backoff) !== undefined) now += 100;
      waits.push(now - started);
    }
    expect(waits).toEqual([1000, 2000, 4000, 4000, 4000]);
  });

  it('refuses with the spawn’s own code, the count and when to try again', () => {
    const now = 0;
    const backoff = new SpawnBackoff({ initialMs: 1000, maxMs: 4000 }, () => now);
    backoff.failed('flaky::0000', 'flaky', FAILED);
    expect(refusal(backoff)).toMatchObject({ code: ErrorCode.SPAWN_FAILED, data: { serverName: 'flaky', failures: 1, lastError: FAILED, retryAt: expect.any(String) } });
    expect([...backoff.active()]).toMatchObject([{ serverName: 'flaky', summary: { failures: 1 } }]);
  });

  it('holds nothing back for a failure that is not the server’s, and nothing once turned off', () => {
    const backoff = new SpawnBackoff({ initialMs: 1000, maxMs: 4000 }, () => 0);
    for (const code of [ErrorCode.CONNECTION_RELEASED, ErrorCode.POOL_DRAINING, ErrorCode.AUTH_REQUIRED, ErrorCode.ACTOR_DIED]) backoff.failed('flaky::0000', 'flaky', { code, message: 'not the server' });
    expect(refusal(backoff)).toBeUndefined();
    const off = new SpawnBackoff(false, () => 0);
    off.failed('flaky::0000', 'flaky', FAILED);
    expect(refusal(off)).toBeUndefined();
  });

  it('forgets a record on success, on an operator’s restart, and maxMs after its wait ended', () => {
    let now = 0;
    const backoff = new SpawnBackoff({ initialMs: 1000, maxMs: 4000 }, () => now);
    backoff.failed('a::1', 'a', FAILED);
    backoff.failed('b::1', 'b', FAILED);
    backoff.failed('c::1', 'c', FAILED);
    backoff.succeeded('a::1');
    backoff.clearServer('b');
    expect(backoff.size).toBe(1);
    now = 1000 + 4000 + 1;
    expect([...backoff.active()]).toEqual([]);
    expect(backoff.size).toBe(0);
  });
});

describe('spawnTimeoutFor', () => {
  const timeout = (config: Record<string, unknown>, override?: number): number => spawnTimeoutFor(normalizeServerConfig(config).config, override);

  it('gives stdio 30 s, package runners 120 s, remote servers 10 s, and clamps the host’s own', () => {
    expect(timeout({ command: 'node', args: ['server.mjs'] })).toBe(30_000);
    expect(timeout({ command: 'npx', args: ['-y', 'server'] })).toBe(120_000);
    expect(timeout({ command: 'pnpm', args: ['dlx', 'server'] })).toBe(120_000);
    expect(timeout({ url: 'https://example.com/mcp' })).toBe(10_000);
    expect(timeout({ command: 'node' }, 5)).toBe(100);
    expect(timeout({ command: 'node' }, 10_000_000)).toBe(300_000);
  });
});
