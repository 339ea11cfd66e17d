/**
 * A config whose spawn failed is not spawned again for every acquire: acquires fail at once with
 * the spawn's error while its backoff lasts (doubling per failure), then one spawns again; a
 * successful spawn or an operator's restart ends the backoff.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, PoolError } from '@mcpool/core';
import { usePools } from '../../../test/helpers/pools.js';
import { FIXTURES } from '../../../test/helpers/processes.js';

const { newPool, newMark } = usePools();
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A server that counts its starts in `counter`, then exits at once while `broken` exists, and is
 * the echo fixture once it is gone.
 */
function flakyServer(mark: string): { config: Record<string, unknown>; starts: () => number; repair: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-backoff-'));
  dirs.push(dir);
  const counter = join(dir, 'starts');
  const broken = join(dir, 'broken');
  writeFileSync(broken, '');
  const script = [
    `const fs = require('node:fs');`,
    `fs.appendFileSync(${JSON.stringify(counter)}, 'x');`,
    `if (fs.existsSync(${JSON.stringify(broken)})) process.exit(3);`,
    `import(${JSON.stringify(FIXTURES + 'echo.mjs')});`,
  ].join(' ');
  return {
    config: { command: process.execPath, args: ['-e', script, '--', mark] },
    starts: () => (existsSync(counter) ? readFileSync(counter, 'utf8').length : 0),
    repair: () => rmSync(broken),
  };
}

async function failure(promise: Promise<unknown>): Promise<PoolError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PoolError);
  return error as PoolError;
}

describe('spawn backoff', () => {
  it('fails acquires at once with the spawn’s error while it lasts, shows it in the snapshot, then spawns again', async () => {
    const pool = newPool({ spawnBackoff: { initialMs: 1500, maxMs: 60_000 } });
    const server = flakyServer(newMark('backoff'));
    const first = await failure(pool.acquire('flaky', server.config, 's1'));
    expect(first.code).toBe(ErrorCode.SPAWN_FAILED);
    // One spawn may start the process twice: a server that exits on the era probe gets one legacy try.
    const perSpawn = server.starts();
    expect([1, 2]).toContain(perSpawn);

    // 20 sessions asking during the backoff: no spawn, the same code, when to try again.
    const refused = await Promise.all(Array.from({ length: 20 }, (_, i) => failure(pool.acquire('flaky', server.config, `s-${i}`))));
    expect(server.starts()).toBe(perSpawn);
    for (const error of refused) {
      expect(error.code).toBe(ErrorCode.SPAWN_FAILED);
      expect(error.message).toMatch(/failed to start once and is not tried again for \d+ s/);
      expect(error.data).toMatchObject({ serverName: 'flaky', failures: 1, retryAt: expect.any(String), lastError: { code: ErrorCode.SPAWN_FAILED } });
    }
    const cell = pool.getSnapshot().servers.flaky!;
    expect(cell).toMatchObject({ status: 'failed', entryCount: 0, spawnBackoff: { failures: 1, lastError: { code: ErrorCode.SPAWN_FAILED } } });

    // Once it is over, one acquire spawns again; a second failure doubles the wait.
    await new Promise((resolve) => setTimeout(resolve, 1700));
    expect((await failure(pool.acquire('flaky', server.config, 's2'))).code).toBe(ErrorCode.SPAWN_FAILED);
    expect(server.starts()).toBe(2 * perSpawn);
    const second = pool.getSnapshot().servers.flaky!.spawnBackoff!;
    expect(second.failures).toBe(2);
    expect(Date.parse(second.retryAt) - Date.now()).toBeGreaterThan(1500);

    // An operator's restart is "try now": the repaired server starts, and the backoff is gone.
    server.repair();
    expect(await pool.restartByName('flaky')).toEqual([]);
    const view = await pool.acquire('flaky', server.config, 's3');
    expect(server.starts()).toBeGreaterThan(2 * perSpawn);
    expect(pool.getSnapshot().servers.flaky).not.toHaveProperty('spawnBackoff');
    await view.release();
  });

  it('is per config: another config of the same name spawns at once; spawnBackoff: false spawns on every acquire', async () => {
    const pool = newPool({ spawnBackoff: { initialMs: 60_000, maxMs: 60_000 } });
    const mark = newMark('backoff-cfg');
    const server = flakyServer(mark);
    await failure(pool.acquire('flaky', server.config, 's1'));
    const other = flakyServer(mark);
    other.repair();
    const view = await pool.acquire('flaky', other.config, 's2');
    expect(other.starts()).toBe(1);
    await view.release();

    const eager = newPool({ spawnBackoff: false });
    const again = flakyServer(mark);
    await failure(eager.acquire('flaky', again.config, 'e1'));
    const perSpawn = again.starts();
    await failure(eager.acquire('flaky', again.config, 'e2'));
    expect(again.starts()).toBe(2 * perSpawn);
  });

  it('refuses a malformed spawnBackoff', () => {
    expect(() => newPool({ spawnBackoff: { initialMs: 10, maxMs: 5 } })).toThrow(/spawnBackoff/);
  });
});
