/**
 * The pool's hard cap on live actor threads (`maxActors`): it holds in every budget mode (the
 * budget only warns in `warn`), counts unpooled entries (one thread per acquire), refuses with
 * `MCPOOL_ACTOR_CAP_REACHED` naming the cap and how to raise it, and frees a slot when a thread exits.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, McpTransportPool, PoolError, type PoolEvent } from '@mcpool/core';
import { startHttpFixture } from '../../../test/fixtures/servers/httpHeaders.mjs';
import { expectNoSurvivors, fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';

describe('the actor cap', () => {
  const pools: McpTransportPool[] = [];
  const marks: string[] = [];
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.drainAll({ force: true })));
    await Promise.all(closers.splice(0).map((close) => close()));
    for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
  });

  it('refuses past maxActors in budget mode warn, spawning nothing, and admits again once a thread exits', async () => {
    const events: PoolEvent[] = [];
    const pool = new McpTransportPool({ maxActors: 2, drainDelayMs: 50, budget: { clientBudget: 1, mode: 'warn' }, onEvent: (event) => events.push(event) });
    pools.push(pool);
    const mark = marker('cap');
    marks.push(mark);
    const config = (name: string): Record<string, unknown> => fixtureConfig('envTools.mjs', mark, { env: { FIXTURE_TOOLS: name } });
    const a = await pool.acquire('alpha', config('alpha'), 's1');
    await pool.acquire('beta', config('beta'), 's1');
    // The budget (1) is already past and only warned; the cap refuses.
    expect(events.some((event) => event.type === 'mcp_budget_warning')).toBe(true);
    const refused = await pool.acquire('gamma', config('gamma'), 's1').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PoolError);
    expect((refused as PoolError).code).toBe(ErrorCode.ACTOR_CAP_REACHED);
    expect((refused as PoolError).message).toMatch(/maxActors 2/);
    expect((refused as PoolError).message).toMatch(/raise maxActors/);
    expect((refused as PoolError).data).toMatchObject({ serverName: 'gamma', liveActors: 2, maxActors: 2 });
    expect(pidsWithMarker(mark)).toHaveLength(2);
    expect(pool.getSnapshot()).toMatchObject({ liveActors: 2, maxActors: 2 });
    expect(pool.getSnapshot().servers.gamma).toBeUndefined();
    // An attach to an existing entry needs no thread: still fine at the cap.
    await pool.acquire('alpha', config('alpha'), 's2');

    // 2. Freed: alpha's entry drains (50 ms grace) and closes, its thread exits, gamma gets in.
    await a.release();
    await pool.releaseSession('s2');
    const deadline = Date.now() + 20_000;
    while (pool.getSnapshot().liveActors >= 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const gamma = await pool.acquire('gamma', config('gamma'), 's1');
    expect(gamma.tools.map((tool) => tool.name)).toContain('gamma');
  });

  it('counts unpooled entries: each http acquire is a thread, the one past the cap is refused', async () => {
    const fixture = await startHttpFixture();
    closers.push(() => fixture.close());
    const pool = new McpTransportPool({ maxActors: 2, budget: { clientBudget: 100, mode: 'off' } });
    pools.push(pool);
    const config = { url: fixture.url };
    await pool.acquire('remote', config, 's1');
    await pool.acquire('remote', config, 's2');
    await expect(pool.acquire('remote', config, 's3')).rejects.toMatchObject({ code: ErrorCode.ACTOR_CAP_REACHED });
    expect(pool.getSnapshot().servers.remote!.entryCount).toBe(2);
  });

  it('refuses a bad maxActors eagerly', () => {
    expect(() => new McpTransportPool({ maxActors: 0 })).toThrow(/maxActors must be an integer/);
    expect(() => new McpTransportPool({ maxActors: 1.5 })).toThrow(/maxActors must be an integer/);
  });
});
