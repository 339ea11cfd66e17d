/**
 * Pool lifecycle against real fixture servers and real actor threads.
 * Processes are counted by a marker argument unique to each test.
 */
import { describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, PoolError, type PooledConnection } from '@mcpool/core';
import { FIXTURES, fixtureConfig, pidFromResult, pidsWithMarker } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000 });

describe('sharing', () => {
  it('three sessions with the same config share one server process', async () => {
    const pool = newPool();
    const mark = newMark('share3');
    const cfg = fixtureConfig('echo.mjs', mark);
    const views = [await pool.acquire('echo', cfg, 's1'), await pool.acquire('echo', cfg, 's2'), await pool.acquire('echo', cfg, 's3')];

    expect(pidsWithMarker(mark)).toHaveLength(1);
    const pids = await Promise.all(views.map(async (view) => pidFromResult(await view.callTool('pid'))));
    expect(new Set(pids).size).toBe(1);
    expect(pidsWithMarker(mark)).toEqual([pids[0]]);
    const server = pool.getSnapshot().servers.echo!;
    expect(server.entryCount).toBe(1);
    expect(server.entrySummary).toEqual([{ entryIndex: 0, refs: 3, status: 'active', sharing: 'shared', era: 'legacy' }]);
    expect(new Set(views.map((view) => view.id)).size).toBe(1);
  });

  it('five concurrent acquires make exactly one spawn and all get the same entry', async () => {
    const pool = newPool();
    const mark = newMark('five');
    const cfg = fixtureConfig('slowInit.mjs', mark, { env: { FIXTURE_INIT_DELAY_MS: '300' } });

    const views = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((session) => pool.acquire('slow', cfg, session)));

    expect(pidsWithMarker(mark)).toHaveLength(1);
    expect(new Set(views.map((view) => view.id)).size).toBe(1);
    expect(pool.getSnapshot().servers.slow!.entrySummary[0]!.refs).toBe(5);
    expect(pool.getSnapshot().budget.liveCount).toBe(1);
  });

  it('a failing spawn rejects all five waiters with the same error, stores no entry, and the first acquire after its backoff retries', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-spawnfail-'));
    try {
      const pool = newPool({ spawnBackoff: { initialMs: 300, maxMs: 300 } });
      const mark = newMark('spawnfail');
      const script = join(dir, 'server.mjs');
      const cfg = { command: process.execPath, args: [script, mark] };

      // 1. The script does not exist yet: node exits at once and every waiter sees that failure.
      const results = await Promise.allSettled(['a', 'b', 'c', 'd', 'e'].map((session) => pool.acquire('late', cfg, session)));
      const errors = results.map((result) => (result.status === 'rejected' ? (result.reason as PoolError) : undefined));
      expect(errors.every((error) => error instanceof PoolError && error.code === ErrorCode.SPAWN_FAILED)).toBe(true);
      expect(new Set(errors).size).toBe(1);
      expect(errors[0]!.message).toMatch(/Cannot find module|exited/);
      expect(pool.getSnapshot().servers).toEqual({ late: expect.objectContaining({ entryCount: 0, entrySummary: [], spawnBackoff: expect.objectContaining({ failures: 1 }) }) });
      expect(pool.getSnapshot().budget.liveCount).toBe(0);

      // 2. Now it exists: once the backoff is over, the next acquire spawns again and succeeds.
      await new Promise((resolve) => setTimeout(resolve, 400));
      writeFileSync(script, `await import(${JSON.stringify(FIXTURES + 'echo.mjs')});\n`);
      const view = await pool.acquire('late', cfg, 'a');
      expect(view.tools.map((tool) => tool.name)).toContain('echo');
      expect(pidsWithMarker(mark)).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a session that acquires the same entry twice gets the same view (one ref)', async () => {
    const pool = newPool();
    const cfg = fixtureConfig('echo.mjs', newMark('twice'));
    const [first, second] = await Promise.all([pool.acquire('echo', cfg, 's1'), pool.acquire('echo', cfg, 's1')]);
    expect(second).toBe(first);
    expect(pool.getSnapshot().servers.echo!.entrySummary[0]!.refs).toBe(1);
  });
});

describe('drain', () => {
  it('releases n…1 start the drain only at 1 → 0, and a re-acquire within the grace reuses the same pid', async () => {
    // The grace is long: a re-acquire must land within it even on a loaded machine. How long an
    // entry stays up is the machine tests' business (simulated clock); here, when the drain starts.
    const statuses: string[] = [];
    const pool = newPool({ drainDelayMs: 60_000, onEvent: (event) => event.type === 'statusChanged' && statuses.push(event.status) });
    const mark = newMark('drain');
    const cfg = fixtureConfig('echo.mjs', mark);
    const views = await Promise.all(['s1', 's2', 's3'].map((session) => pool.acquire('echo', cfg, session)));
    const pid = pidFromResult(await views[0]!.callTool('pid'));

    // 1. Two of three leave: the entry stays active, no drain began.
    await views[0]!.release();
    await pool.release(views[1]!.id, 's2');
    expect(pool.getSnapshot().servers.echo!.entrySummary).toEqual([{ entryIndex: 0, refs: 1, status: 'active', sharing: 'shared', era: 'legacy' }]);
    expect(statuses).toEqual(['spawning', 'active']);

    // 2. The last one leaves: now it drains.
    await pool.releaseSession('s3');
    await vi.waitFor(() => expect(pool.getSnapshot().servers.echo?.entrySummary[0]?.status).toBe('draining'), { timeout: 15_000, interval: 10 });
    expect(statuses).toEqual(['spawning', 'active', 'draining']);

    // 3. Back within the grace: same process, active again.
    const again = await pool.acquire('echo', cfg, 's4');
    expect(pidFromResult(await again.callTool('pid'))).toBe(pid);
    expect(pool.getSnapshot().servers.echo!.entrySummary).toEqual([{ entryIndex: 0, refs: 1, status: 'active', sharing: 'shared', era: 'legacy' }]);
  });

  it('after the grace the entry closes with its process, and the next acquire spawns anew', async () => {
    const statuses: string[] = [];
    const pool = newPool({ drainDelayMs: 150, onEvent: (event) => event.type === 'statusChanged' && statuses.push(`${event.entryIndex}:${event.status}`) });
    const mark = newMark('drained');
    const cfg = fixtureConfig('echo.mjs', mark);
    const view = await pool.acquire('echo', cfg, 's1');
    const pid = pidFromResult(await view.callTool('pid'));

    await view.release();
    await vi.waitFor(() => expect(pool.getSnapshot().servers).toEqual({}), { timeout: 15_000, interval: 20 });
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 15_000, interval: 20 });
    expect(pool.getSnapshot().budget.liveCount).toBe(0);

    const next = await pool.acquire('echo', cfg, 's1');
    const nextPid = pidFromResult(await next.callTool('pid'));
    expect(nextPid).not.toBe(pid);
    expect(next.entryIndex).toBe(1);
    // One event per lifecycle change.
    expect(statuses).toEqual(['0:spawning', '0:active', '0:draining', '0:closed', '1:spawning', '1:active']);
  });

  // That the hard idle cap never closes an entry that has refs is a timing rule of the connection
  // machine, tested there on a simulated clock ('does nothing while busy, and forgets the old idle
  // moment'); the test below proves the pool hands `maxIdleMs` to it.

  it('the hard idle cap closes an entry whose refs flap, although the grace never elapses', async () => {
    const pool = newPool({ drainDelayMs: 60_000, maxIdleMs: 300 });
    const mark = newMark('flap');
    const cfg = fixtureConfig('echo.mjs', mark);
    let view: PooledConnection = await pool.acquire('echo', cfg, 's1');
    await view.release();
    view = await pool.acquire('echo', cfg, 's1');
    await view.release();
    // Idle since the first release; the drain grace is a minute, the cap 300 ms.
    await vi.waitFor(() => expect(pool.getSnapshot().servers).toEqual({}), { timeout: 15_000, interval: 20 });
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 15_000, interval: 20 });
  });
});

describe('release and sessions', () => {
  it('releaseSession racing an in-flight acquire leaks no ref', async () => {
    const pool = newPool({ drainDelayMs: 60_000 });
    const cfg = fixtureConfig('slowInit.mjs', newMark('race'), { env: { FIXTURE_INIT_DELAY_MS: '300' } });
    const acquiring = pool.acquire('slow', cfg, 'gone');
    const staying = pool.acquire('slow', cfg, 'stays');
    await pool.releaseSession('gone');

    await expect(acquiring).rejects.toMatchObject({ code: ErrorCode.CONNECTION_RELEASED });
    await staying;
    expect(pool.getSnapshot().servers.slow!.entrySummary[0]!.refs).toBe(1);
  });

  it('a released connection refuses calls with MCPOOL_CONNECTION_RELEASED and release is idempotent', async () => {
    const pool = newPool();
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', newMark('released')), 's1');
    await view.release();
    await view.release();
    await expect(view.callTool('echo', { text: 'x' })).rejects.toMatchObject({ code: ErrorCode.CONNECTION_RELEASED });
    expect(view.status).toBe('released');
    await pool.release(view.id, 'nobody');
  });

  it('`await using` releases the connection', async () => {
    const pool = newPool();
    const cfg = fixtureConfig('echo.mjs', newMark('dispose'));
    {
      await using view = await pool.acquire('echo', cfg, 's1');
      expect(pool.getSnapshot().servers.echo!.entrySummary[0]!.refs).toBe(1);
      void view;
    }
    expect(pool.getSnapshot().servers.echo!.entrySummary[0]!.refs).toBe(0);
  });

  it('drainAll refuses new acquires and leaves no process', async () => {
    const pool = newPool();
    const mark = newMark('drainall');
    await pool.acquire('a', fixtureConfig('echo.mjs', mark), 's1');
    await pool.acquire('b', fixtureConfig('promptsOnly.mjs', mark), 's1');
    expect(pidsWithMarker(mark)).toHaveLength(2);

    const result = await pool.drainAll();
    expect(result).toEqual({ drained: 2, forced: 0, errors: [] });
    expect(pidsWithMarker(mark)).toEqual([]);
    await expect(pool.acquire('a', fixtureConfig('echo.mjs', mark), 's2')).rejects.toMatchObject({ code: ErrorCode.POOL_DRAINING });
  });
});

describe('timeouts and errors', () => {
  it('a server slower than the spawn timeout fails with MCPOOL_SPAWN_TIMEOUT and leaves no process', async () => {
    const pool = newPool({ spawnTimeoutMs: 300 });
    const mark = newMark('spawntimeout');
    const cfg = fixtureConfig('slowInit.mjs', mark, { env: { FIXTURE_INIT_DELAY_MS: '5000' } });
    await expect(pool.acquire('slow', cfg, 's1')).rejects.toMatchObject({ code: ErrorCode.SPAWN_TIMEOUT });
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 15_000, interval: 20 });
    expect(pool.getSnapshot().budget.liveCount).toBe(0);
  });

  it('a command that does not exist fails with MCPOOL_SPAWN_FAILED naming the cause', async () => {
    const pool = newPool();
    const error = await pool.acquire('nope', { command: '/nonexistent/mcp-server' }, 's1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PoolError);
    expect(error).toMatchObject({ code: ErrorCode.SPAWN_FAILED });
    expect((error as Error).message).toMatch(/ENOENT/);
  });

  it('calls carry timeouts, cancellation and upstream errors as typed errors', async () => {
    const pool = newPool();
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', newMark('errors')), 's1');

    await expect(view.callTool('slow', { ms: 5000 }, { timeoutMs: 100 })).rejects.toMatchObject({ code: ErrorCode.CALL_TIMEOUT });
    const controller = new AbortController();
    const cancelled = view.callTool('slow', { ms: 5000 }, { signal: controller.signal });
    controller.abort();
    await expect(cancelled).rejects.toMatchObject({ code: ErrorCode.CALL_CANCELLED });
    await expect(view.callTool('throw')).rejects.toMatchObject({ code: ErrorCode.UPSTREAM_ERROR, data: { mcpCode: -32603 } });
    // A tool error is a result, not an exception, and is passed on as received.
    expect(await view.callTool('fail')).toMatchObject({ isError: true });
    // The connection still serves after all of that.
    expect(await view.callTool('echo', { text: 'still here' })).toEqual({ content: [{ type: 'text', text: 'still here' }] });
  });

  it('progress reaches only the calling view', async () => {
    const pool = newPool();
    const cfg = fixtureConfig('echo.mjs', newMark('progress'));
    const a = await pool.acquire('echo', cfg, 'a');
    const b = await pool.acquire('echo', cfg, 'b');
    const seenA: number[] = [];
    const seenB: number[] = [];
    const [resultA, resultB] = await Promise.all([
      a.callTool('slow', { ms: 200, steps: 3 }, { onProgress: (p) => seenA.push(p.progress) }),
      b.callTool('slow', { ms: 100, steps: 2 }, { onProgress: (p) => seenB.push(p.progress) }),
    ]);
    expect(resultA).toMatchObject({ content: [{ text: 'done after 200' }] });
    expect(resultB).toMatchObject({ content: [{ text: 'done after 100' }] });
    expect(seenA).toEqual([1, 2, 3]);
    expect(seenB).toEqual([1, 2]);
  });
});

describe('drainAll racing an acquire', () => {
  it('an acquire waiting on a spawn when drainAll starts fails with MCPOOL_POOL_DRAINING and leaves nothing', async () => {
    const pool = newPool();
    const mark = newMark('drainrace');
    const acquiring = pool.acquire('slow', fixtureConfig('slowInit.mjs', mark, { env: { FIXTURE_INIT_DELAY_MS: '300' } }), 's1');
    const drained = pool.drainAll();
    await expect(acquiring).rejects.toMatchObject({ code: ErrorCode.POOL_DRAINING });
    await drained;
    expect(pidsWithMarker(mark)).toEqual([]);
  });
});
