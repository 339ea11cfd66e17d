/**
 * The start lock (`mcpool/local`): one holder at a time across processes; a lock whose holder's
 * process is gone, or that is older than its bound, is taken over; a fresh lock is never broken;
 * release removes only the holder's own lock.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tryStartLock } from 'mcpool/local';

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-lock-'));
  file = join(dir, 'daemon.start.lock');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A pid that surely names no process: one that ran and was reaped. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid;
}

describe('the start lock', () => {
  it('has one holder: a second taker is refused until the first releases', async () => {
    const first = await tryStartLock({ file });
    expect(first).toBeDefined();
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pid: process.pid });
    expect(await tryStartLock({ file })).toBeUndefined();
    await first!.release();
    expect(existsSync(file)).toBe(false);
    const second = await tryStartLock({ file });
    expect(second).toBeDefined();
    await second!.release();
  });

  it('takes over a lock whose holder process is gone', async () => {
    writeFileSync(file, JSON.stringify({ pid: deadPid(), nonce: 'old', at: Date.now() }));
    const lock = await tryStartLock({ file });
    expect(lock).toBeDefined();
    expect(JSON.parse(readFileSync(file, 'utf8')).nonce).not.toBe('old');
    await lock!.release();
  });

  it('takes over a lock older than its bound even when its holder lives (a start that hung)', async () => {
    writeFileSync(file, JSON.stringify({ pid: process.pid, nonce: 'hung', at: 1_000 }));
    expect(await tryStartLock({ file, staleMs: 60_000, now: () => 30_000 })).toBeUndefined();
    const lock = await tryStartLock({ file, staleMs: 60_000, now: () => 62_000 });
    expect(lock).toBeDefined();
    await lock!.release();
  });

  it('treats a torn lock (created, not written yet) by its age', async () => {
    writeFileSync(file, '');
    expect(await tryStartLock({ file, staleMs: 60_000 })).toBeUndefined();
    const old = (Date.now() - 120_000) / 1000;
    utimesSync(file, old, old);
    const lock = await tryStartLock({ file, staleMs: 60_000 });
    expect(lock).toBeDefined();
    await lock!.release();
  });

  it('a release after a takeover leaves the new holder its lock', async () => {
    const slow = await tryStartLock({ file, now: () => 0 });
    // Another process finds it past its bound and takes it over.
    const next = await tryStartLock({ file, staleMs: 10, now: () => 1_000 });
    expect(next).toBeDefined();
    const held = readFileSync(file, 'utf8');
    // The slow one ends its start late and releases: not its lock any more, so it stays.
    await slow!.release();
    expect(readFileSync(file, 'utf8')).toBe(held);
    await next!.release();
    expect(existsSync(file)).toBe(false);
  });

  it('twenty takers at once in one process: exactly one holds it', async () => {
    const taken = await Promise.all(Array.from({ length: 20 }, () => tryStartLock({ file })));
    expect(taken.filter((lock) => lock !== undefined)).toHaveLength(1);
    for (const lock of taken) await lock?.release();
  });
});
