/**
 * Sharing policies against real fixture servers: who may share one server process. Processes
 * are counted by a marker argument unique to each test, and by the pid each view's server reports.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { describe, expect, it, vi } from 'vitest';
import { ErrorCode, McpTransportPool, PoolError, type PooledConnection, type SharingDefaultInfo } from '@mcpool/core';
import { fixtureConfig, pidFromResult, pidsWithMarker } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000 });
/** The real actor worker, reporting each attach's declared client (test/fixtures/workers). */
const ATTACH_RECORDING = new URL('../../../test/fixtures/workers/attachRecordingWorker.mjs', import.meta.url);

async function pidOf(view: PooledConnection): Promise<number> {
  return pidFromResult(await view.callTool('pid'));
}

async function rejection(promise: Promise<unknown>): Promise<PoolError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(PoolError);
  return error as PoolError;
}

// Each test starts several real servers: generous budgets for a loaded machine (time is not the point here).
describe('sharing policies', { timeout: 120_000 }, () => {
  it('the library default is shared: sessions of different principals share one process', async () => {
    const pool = newPool();
    const mark = newMark('default');
    const cfg = fixtureConfig('echo.mjs', mark);
    const a = await pool.acquire('echo', cfg, 's1', { principal: 'alice' });
    const b = await pool.acquire('echo', cfg, 's2', { principal: 'bob' });
    const c = await pool.acquire('echo', cfg, 's3');

    expect(pidsWithMarker(mark)).toHaveLength(1);
    expect(new Set([await pidOf(a), await pidOf(b), await pidOf(c)]).size).toBe(1);
    expect(pool.getSnapshot().servers.echo!.entrySummary).toEqual([{ entryIndex: 0, refs: 3, status: 'active', sharing: 'shared', era: 'legacy' }]);
  });

  it('per-principal: two principals get two processes, two sessions of one principal share one', async () => {
    const pool = newPool();
    const mark = newMark('principal');
    const cfg = fixtureConfig('echo.mjs', mark, { sharing: 'per-principal' });
    const alice1 = await pool.acquire('thinking', cfg, 's1', { principal: 'alice' });
    const alice2 = await pool.acquire('thinking', cfg, 's2', { principal: 'alice' });
    const bob = await pool.acquire('thinking', cfg, 's3', { principal: 'bob' });

    expect(pidsWithMarker(mark)).toHaveLength(2);
    const [p1, p2, p3] = [await pidOf(alice1), await pidOf(alice2), await pidOf(bob)];
    expect(p1).toBe(p2);
    expect(p3).not.toBe(p1);
    expect(alice1.id).toBe(alice2.id);
    expect(bob.id).not.toBe(alice1.id);

    const entries = pool.getSnapshot().servers.thinking!.entrySummary;
    expect(entries.map(({ refs, sharing }) => ({ refs, sharing }))).toEqual([
      { refs: 2, sharing: 'per-principal' },
      { refs: 1, sharing: 'per-principal' },
    ]);
    expect(entries[0]!.ownerLabel).toMatch(/^[0-9a-f]{12}$/);
    expect(entries[1]!.ownerLabel).toMatch(/^[0-9a-f]{12}$/);
    expect(entries[0]!.ownerLabel).not.toBe(entries[1]!.ownerLabel);

    // One principal leaving drains only its own process.
    await pool.releaseSession('s3');
    await vi.waitFor(() => expect(pool.getSnapshot().servers.thinking!.entrySummary.map((e) => e.status)).toEqual(['active', 'draining']), { timeout: 5000, interval: 10 });
    expect(await pidOf(alice1)).toBe(p1);
  });

  it('per-session: every session gets its own process, whoever the principal', async () => {
    const pool = newPool();
    const mark = newMark('session');
    const cfg = fixtureConfig('echo.mjs', mark, { sharing: 'per-session' });
    const views = [
      await pool.acquire('memory', cfg, 's1', { principal: 'alice' }),
      await pool.acquire('memory', cfg, 's2', { principal: 'alice' }),
      await pool.acquire('memory', cfg, 's3'),
    ];

    expect(pidsWithMarker(mark)).toHaveLength(3);
    expect(new Set(await Promise.all(views.map(pidOf))).size).toBe(3);
    // The same session acquiring again still gets its own view back.
    expect(await pool.acquire('memory', cfg, 's1')).toBe(views[0]);
    const entries = pool.getSnapshot().servers.memory!.entrySummary;
    expect(entries.map((entry) => [entry.refs, entry.sharing])).toEqual([
      [1, 'per-session'],
      [1, 'per-session'],
      [1, 'per-session'],
    ]);
    expect(new Set(entries.map((entry) => entry.ownerLabel)).size).toBe(3);
  });

  it('five concurrent acquires of one key make one spawn; two keys racing make two', async () => {
    const pool = newPool();
    const mark = newMark('race');
    const cfg = fixtureConfig('slowInit.mjs', mark, { sharing: 'per-principal', env: { FIXTURE_INIT_DELAY_MS: '300' } });
    const acquires = ['a', 'b', 'c', 'd', 'e'].flatMap((s) => [
      pool.acquire('slow', cfg, `alice-${s}`, { principal: 'alice' }),
      pool.acquire('slow', cfg, `bob-${s}`, { principal: 'bob' }),
    ]);
    const views = await Promise.all(acquires);

    expect(pidsWithMarker(mark)).toHaveLength(2);
    expect(new Set(views.map((view) => view.id)).size).toBe(2);
    expect(pool.getSnapshot().servers.slow!.entrySummary.map((entry) => entry.refs)).toEqual([5, 5]);
    expect(pool.getSnapshot().budget).toMatchObject({ liveCount: 2, bySharing: { shared: 0, 'per-principal': 2, 'per-session': 0 } });
  });

  it('refuses a per-principal server acquired without a principal, and spawns nothing', async () => {
    const pool = newPool();
    const mark = newMark('noprincipal');
    const error = await rejection(pool.acquire('thinking', fixtureConfig('echo.mjs', mark, { sharing: 'per-principal' }), 's1'));
    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.message).toContain('options.principal');
    expect(pool.getSnapshot().servers).toEqual({});
    expect(pool.getSnapshot().budget.liveCount).toBe(0);
    expect(pidsWithMarker(mark)).toEqual([]);

    for (const principal of ['', 42]) {
      const bad = await rejection(pool.acquire('echo', fixtureConfig('echo.mjs', mark), 's1', { principal: principal as string }));
      expect(bad.code).toBe(ErrorCode.INVALID_ARGUMENT);
    }
    const uncloneable = await rejection(pool.acquire('echo', fixtureConfig('echo.mjs', mark), 's1', { client: { capabilities: { run: () => 1 } } }));
    expect(uncloneable.code).toBe(ErrorCode.INVALID_ARGUMENT);
  });

  it('never shows a principal or session id: keys and labels are salted digests', async () => {
    const pool = newPool();
    const cfg = fixtureConfig('echo.mjs', newMark('opaque'), { sharing: 'per-principal' });
    const principal = 'tok_0123456789abcdef-a-credential-looking-principal';
    const sessionId = 'session-id-that-must-not-show';
    const view = await pool.acquire('thinking', cfg, sessionId, { principal });
    await pool.acquire('memory', { ...cfg, sharing: 'per-session' }, sessionId);

    const shown = JSON.stringify(pool.getSnapshot());
    expect(shown).not.toContain(principal);
    expect(shown).not.toContain(sessionId);
    expect(view.id).not.toContain(principal);
    // Another pool labels the same principal differently: a label cannot be looked up elsewhere.
    const other = newPool();
    await other.acquire('thinking', cfg, sessionId, { principal });
    expect(other.getSnapshot().servers.thinking!.entrySummary[0]!.ownerLabel).not.toBe(pool.getSnapshot().servers.thinking!.entrySummary[0]!.ownerLabel);
  });

  it('takes the pool default when the config sets none, and the config when it does', async () => {
    const asked: SharingDefaultInfo[] = [];
    const pool = newPool({
      defaultSharing: (info) => {
        asked.push(info);
        // An era not known yet must take the safe branch.
        return info.fingerprintEra === 'modern' ? 'shared' : 'per-principal';
      },
    });
    const mark = newMark('fallback');
    const cfg = fixtureConfig('echo.mjs', mark);
    await pool.acquire('legacy', cfg, 's1', { principal: 'alice' });
    await pool.acquire('legacy', cfg, 's2', { principal: 'bob' });
    // The first acquire knows no era yet; the second sees the verdict the first connection settled.
    expect(asked).toEqual([
      { serverName: 'legacy', fingerprintEra: undefined, config: { transport: 'stdio', ...cfg } },
      { serverName: 'legacy', fingerprintEra: 'legacy', config: { transport: 'stdio', ...cfg } },
    ]);
    expect(pidsWithMarker(mark)).toHaveLength(2);

    // An explicit policy wins and is not asked about.
    const sharedMark = newMark('explicit');
    await pool.acquire('open', fixtureConfig('echo.mjs', sharedMark, { sharing: 'shared' }), 's1', { principal: 'alice' });
    await pool.acquire('open', fixtureConfig('echo.mjs', sharedMark, { sharing: 'shared' }), 's2', { principal: 'bob' });
    expect(pidsWithMarker(sharedMark)).toHaveLength(1);
    expect(asked).toHaveLength(2);

    const constant = newPool({ defaultSharing: 'per-session' });
    const perSession = newMark('constant');
    await constant.acquire('x', fixtureConfig('echo.mjs', perSession), 's1');
    await constant.acquire('x', fixtureConfig('echo.mjs', perSession), 's2');
    expect(pidsWithMarker(perSession)).toHaveLength(2);
  });

  it('checks the default it is given', async () => {
    expect(() => new McpTransportPool({ defaultSharing: 'private' as 'shared', stateDir: false })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    const pool = newPool({ defaultSharing: () => 'nobody' as 'shared' });
    const mark = newMark('badfn');
    const error = await rejection(pool.acquire('x', fixtureConfig('echo.mjs', mark), 's1'));
    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(pidsWithMarker(mark)).toEqual([]);
  });

  it('the budget counts every entry, whatever its policy, and refuses past it in enforce mode', async () => {
    const pool = newPool({ budget: { clientBudget: 4, mode: 'enforce' } });
    const mark = newMark('budget');
    await pool.acquire('open', fixtureConfig('echo.mjs', mark), 's1');
    await pool.acquire('open', fixtureConfig('echo.mjs', mark), 's2');
    await pool.acquire('thinking', fixtureConfig('echo.mjs', mark, { sharing: 'per-principal' }), 's1', { principal: 'alice' });
    await pool.acquire('thinking', fixtureConfig('echo.mjs', mark, { sharing: 'per-principal' }), 's2', { principal: 'bob' });
    await pool.acquire('memory', fixtureConfig('echo.mjs', mark, { sharing: 'per-session' }), 's1');

    const refused = await rejection(pool.acquire('memory', fixtureConfig('echo.mjs', mark, { sharing: 'per-session' }), 's2'));
    expect(refused.code).toBe(ErrorCode.BUDGET_EXHAUSTED);
    expect(pidsWithMarker(mark)).toHaveLength(4);
    const { budget, servers } = pool.getSnapshot();
    expect(budget).toMatchObject({ liveCount: 4, bySharing: { shared: 1, 'per-principal': 2, 'per-session': 1 } });
    expect(Object.values(servers).reduce((sum, server) => sum + server.entryCount, 0)).toBe(4);
  });

  it('an unpooled transport is per-session whatever the config says', async () => {
    const { startHttpFixture } = await import('../../../test/fixtures/servers/httpHeaders.mjs');
    const fixture = await startHttpFixture();
    try {
      const pool = newPool();
      const cfg = { url: fixture.url, sharing: 'shared' };
      await pool.acquire('remote', cfg, 's1');
      await pool.acquire('remote', cfg, 's2');
      const entries = pool.getSnapshot().servers.remote!.entrySummary;
      expect(entries.map((entry) => entry.sharing)).toEqual(['per-session', 'per-session']);
      expect(pool.getSnapshot().budget.bySharing['per-session']).toBe(2);
    } finally {
      await fixture.close();
    }
  });

  it('a view may declare its own client; the acquire carries it to the actor', async () => {
    const seen: { serverName: string; sessionId: string; client?: unknown }[] = [];
    const reports = new BroadcastChannel('mcpool-test-attach');
    reports.onmessage = (event) => seen.push((event as MessageEvent).data as (typeof seen)[number]);
    try {
      const pool = newPool({ actorHost: { workerUrl: ATTACH_RECORDING } });
      const cfg = fixtureConfig('echo.mjs', newMark('client'));
      const client = { protocolVersion: '2026-07-28', capabilities: { sampling: {} }, clientInfo: { name: 'ide', version: '1.0.0' }, logLevel: 'info' };
      await pool.acquire('declared', cfg, 's1', { client });
      await pool.acquire('declared', cfg, 's2');
      await vi.waitFor(() => expect(seen.filter((r) => r.serverName === 'declared')).toHaveLength(2), { timeout: 5000, interval: 10 });
      const bySession = new Map(seen.filter((r) => r.serverName === 'declared').map((r) => [r.sessionId, r.client]));
      expect(bySession.get('s1')).toEqual(client);
      expect(bySession.get('s2')).toBeUndefined();
    } finally {
      reports.close();
    }
  });
});
