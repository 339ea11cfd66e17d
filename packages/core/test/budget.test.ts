/**
 * The workspace budget: unit rules on WorkspaceBudget, then the pool
 * counting live entries, warning every session once, and refusing in `enforce` mode.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, McpTransportPool, isWorkspaceScopedBudgetEvent, type PoolEvent } from '@mcpool/core';
// Not public: the pool's own budget bookkeeping, tested as a unit.
import { WorkspaceBudget } from '../src/budget.js';
import type { BudgetEvent } from '@mcpool/protocol';
import { expectNoSurvivors, fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('WorkspaceBudget', () => {
  it('warns once when usage rises through 75 % and re-arms only below 37.5 %', () => {
    const events: BudgetEvent[] = [];
    const budget = new WorkspaceBudget({ clientBudget: 8, mode: 'warn' }, (event) => events.push(event));
    for (let i = 0; i < 5; i++) budget.tryReserve('s', 'x');
    expect(events).toHaveLength(0); // 5/8 = 62.5 %
    budget.tryReserve('s', 'x'); // 6/8 = 75 %
    expect(events).toEqual([{ type: 'mcp_budget_warning', scope: 'workspace', liveCount: 6, clientBudget: 8, budgetMode: 'warn' }]);
    budget.tryReserve('s', 'x');
    budget.release();
    budget.release(); // 5/8: below 75 % but not below 37.5 %
    budget.tryReserve('s', 'x'); // back to 6/8: still disarmed
    expect(events).toHaveLength(1);
    budget.release();
    budget.release();
    budget.release(); // 3/8 = 37.5 %: not below yet
    budget.tryReserve('s', 'x');
    budget.tryReserve('s', 'x');
    budget.tryReserve('s', 'x'); // 6/8 again
    expect(events).toHaveLength(1);
    for (let i = 0; i < 4; i++) budget.release(); // 2/8 = 25 %: re-armed
    for (let i = 0; i < 4; i++) budget.tryReserve('s', 'x'); // 6/8: fires again
    expect(events).toHaveLength(2);
  });

  it('in warn mode it never refuses; in enforce mode it refuses past the budget and batches the refusals of one pass', async () => {
    const warnEvents: BudgetEvent[] = [];
    const warn = new WorkspaceBudget({ clientBudget: 1, mode: 'warn' }, (event) => warnEvents.push(event));
    expect([warn.tryReserve('a', '1'), warn.tryReserve('b', '1')]).toEqual([true, true]);
    expect(warn.cell()).toMatchObject({ liveCount: 2, status: 'exhausted' });

    const events: BudgetEvent[] = [];
    const enforce = new WorkspaceBudget({ clientBudget: 2, mode: 'enforce' }, (event) => events.push(event));
    expect([enforce.tryReserve('a', '1'), enforce.tryReserve('b', '1'), enforce.tryReserve('c', '1'), enforce.tryReserve('d', '2')]).toEqual([true, true, false, false]);
    await nextTurn();
    const batches = events.filter((event) => event.type === 'mcp_child_refused_batch');
    expect(batches).toEqual([
      { type: 'mcp_child_refused_batch', scope: 'workspace', refused: [{ serverName: 'c', sessionId: '1' }, { serverName: 'd', sessionId: '2' }], liveCount: 2, clientBudget: 2, budgetMode: 'enforce' },
    ]);
    enforce.tryReserve('e', '3');
    await nextTurn();
    expect(events.filter((event) => event.type === 'mcp_child_refused_batch')).toHaveLength(2);
    expect(enforce.wouldRefuse()).toBe(true);
    enforce.release();
    expect(enforce.wouldRefuse()).toBe(false);
  });

  it('off mode counts but never warns or refuses; bad options are refused eagerly', () => {
    const events: BudgetEvent[] = [];
    const off = new WorkspaceBudget({ clientBudget: 1, mode: 'off' }, (event) => events.push(event));
    expect([off.tryReserve('a', '1'), off.tryReserve('b', '1')]).toEqual([true, true]);
    expect(events).toEqual([]);
    expect(off.cell()).toEqual({ kind: 'mcp_budget', scope: 'workspace', liveCount: 2, clientBudget: 1, budgetMode: 'off', status: 'off' });
    expect(() => new WorkspaceBudget({ clientBudget: 0 }, () => undefined)).toThrow(/clientBudget must be a positive integer/);
    expect(() => new WorkspaceBudget({ mode: 'loud' as never }, () => undefined)).toThrow(/mode must be/);
  });

  it('budget events are workspace-scoped; events without scope are not', () => {
    expect(isWorkspaceScopedBudgetEvent({ type: 'mcp_budget_warning', scope: 'workspace' })).toBe(true);
    expect(isWorkspaceScopedBudgetEvent({ type: 'mcp_budget_warning' })).toBe(false);
    expect(isWorkspaceScopedBudgetEvent({ type: 'toolsChanged', scope: 'workspace' })).toBe(false);
  });
});

describe('the pool and its budget', () => {
  const pools: McpTransportPool[] = [];
  const marks: string[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.drainAll({ force: true })));
    for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
  });

  it('budget 2 with 4 sessions × 3 servers: liveCount counts entries (3, not 12) and one warning reaches every session', async () => {
    const events: PoolEvent[] = [];
    const pool = new McpTransportPool({ budget: { clientBudget: 2, mode: 'warn' }, onEvent: (event) => events.push(event) });
    pools.push(pool);
    const mark = marker('budget3');
    marks.push(mark);
    const servers = ['alpha', 'beta', 'gamma'];
    const configs = Object.fromEntries(servers.map((name) => [name, fixtureConfig('envTools.mjs', mark, { env: { FIXTURE_TOOLS: name } })]));

    // Every session holds the first server before the others spawn, so all four hear the warning.
    const first = await Promise.all(['s1', 's2', 's3', 's4'].map((session) => pool.acquire('alpha', configs.alpha!, session)));
    const heard = first.map(() => [] as BudgetEvent[]);
    first.forEach((view, i) => view.on('budget', (event) => heard[i]!.push(event)));
    for (const session of ['s1', 's2', 's3', 's4']) for (const name of ['beta', 'gamma']) await pool.acquire(name, configs[name]!, session);

    const snapshot = pool.getSnapshot();
    expect(snapshot.budget).toEqual({ kind: 'mcp_budget', scope: 'workspace', liveCount: 3, clientBudget: 2, budgetMode: 'warn', status: 'exhausted', bySharing: { shared: 3, 'per-workspace': 0, 'per-principal': 0, 'per-session': 0 } });
    expect(pidsWithMarker(mark)).toHaveLength(3);
    expect(Object.values(snapshot.servers).map((server) => server.entrySummary[0]!.refs)).toEqual([4, 4, 4]);
    const warnings = events.filter((event) => event.type === 'mcp_budget_warning');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ scope: 'workspace', liveCount: 2, clientBudget: 2 });
    for (const received of heard) expect(received).toEqual([warnings[0]]);
  });

  it('enforce mode refuses the entry past the budget with MCPOOL_BUDGET_EXHAUSTED, spawns nothing, and frees the slot on close', async () => {
    const events: PoolEvent[] = [];
    const pool = new McpTransportPool({ budget: { clientBudget: 2, mode: 'enforce' }, drainDelayMs: 50, onEvent: (event) => events.push(event) });
    pools.push(pool);
    const mark = marker('enforce');
    marks.push(mark);
    const cfg = (name: string): Record<string, unknown> => fixtureConfig('envTools.mjs', mark, { env: { FIXTURE_TOOLS: name } });
    const a = await pool.acquire('a', cfg('a'), 's1');
    await pool.acquire('b', cfg('b'), 's1');
    // Sharing an existing entry costs nothing.
    await pool.acquire('a', cfg('a'), 's2');

    await expect(pool.acquire('c', cfg('c'), 's1')).rejects.toMatchObject({ code: ErrorCode.BUDGET_EXHAUSTED, data: { serverName: 'c', liveCount: 2, clientBudget: 2 } });
    expect(pidsWithMarker(mark)).toHaveLength(2);
    await nextTurn();
    expect(events.filter((event) => event.type === 'mcp_child_refused_batch')).toMatchObject([{ refused: [{ serverName: 'c', sessionId: 's1' }] }]);

    // `a` drains and closes: its slot comes back and `c` fits.
    await a.release();
    await pool.releaseSession('s2');
    const { vi } = await import('vitest');
    await vi.waitFor(() => expect(pool.getSnapshot().budget.liveCount).toBe(1), { timeout: 15_000, interval: 20 });
    await pool.acquire('c', cfg('c'), 's1');
    expect(pool.getSnapshot().budget.liveCount).toBe(2);
  });
});
