/**
 * A listener that throws is reported through the host's logger, never swallowed, and the other
 * listeners still run: a view's event listeners (the host's own code) and an actor handle's event
 * listeners (the pool's). Real threads and real children.
 */
import { describe, expect, it, vi } from 'vitest';
import { normalizeServerConfig } from '@mcpool/protocol';
import type { Logger } from '@mcpool/core';
import { ActorHost } from '../src/actorHost.js';
import { fixtureConfig } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

/** A logger whose `error` records its calls; every other level is dropped (children are itself). */
function errorSpy(): { logger: Logger; errors: ReturnType<typeof vi.fn> } {
  const errors = vi.fn();
  const drop = (): void => undefined;
  const logger: Logger = { debug: drop, info: drop, warn: drop, error: errors, child: () => logger };
  return { logger, errors };
}

describe('listeners that throw', () => {
  it("a view's listener: logged with the event, and the next listener still hears it", async () => {
    const { logger, errors } = errorSpy();
    const pool = newPool({ logger, budget: { clientBudget: 2, mode: 'warn' } });
    const a = await pool.acquire('a', fixtureConfig('echo.mjs', newMark('a')), 's1');
    const heard: string[] = [];
    a.on('budget', () => {
      throw new Error('the host listener broke');
    });
    a.on('budget', (event) => heard.push(event.type));
    // The second live connection of two crosses the 75 % warning line: every view hears it.
    await pool.acquire('b', fixtureConfig('echo.mjs', newMark('b')), 's1');
    await expect.poll(() => heard).toEqual(['mcp_budget_warning']);
    expect(errors).toHaveBeenCalledWith({ err: new Error('the host listener broke'), event: 'budget', server: 'a' }, 'a view event listener threw');
  });

  it("an actor handle's listener: logged with the event, and the next listener still hears it", async () => {
    const { logger, errors } = errorSpy();
    const host = new ActorHost({ warmSpare: false });
    try {
      const handle = host.create(logger);
      const heard: string[] = [];
      handle.onEvent(() => {
        throw new Error('the pool listener broke');
      });
      handle.onEvent((ev) => heard.push(ev));
      const config = normalizeServerConfig(fixtureConfig('echo.mjs', newMark('actor')), { path: 'echo' }).config;
      await handle.request('start', {
        serverName: 'echo',
        entryIndex: 0,
        config,
        spawnTimeoutMs: 60_000,
        callTimeoutMs: 60_000,
        drainDelayMs: 60_000,
        maxIdleMs: 300_000,
        shutdownStepMs: 300,
        logLevel: 'silent',
      });
      await expect.poll(() => heard).toContain('spawned');
      expect(errors).toHaveBeenCalledWith({ err: new Error('the pool listener broke'), event: 'spawned' }, 'an actor event listener threw');
      await handle.shutdown('test over', 10_000);
    } finally {
      await host.close();
    }
  });
});
