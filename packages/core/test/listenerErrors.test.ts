/**
 * A listener that throws is reported through the host's logger, never swallowed, and the other
 * listeners still run: a view's event listeners (the host's own code) and an actor handle's event
 * listeners (the pool's). Real threads and real children.
 */
import { describe, expect, it } from 'vitest';
import { normalizeServerConfig } from '@mcpool/protocol';
import type { Logger } from '@mcpool/core';
import { ActorHost } from '../src/actorHost.js';
import { fixtureConfig } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

type Line = Record<string, unknown>;

function collecting(lines: Line[], bindings: Line = {}): Logger {
  const at =
    (level: string) =>
    (fields: object | string, msg?: string): void => {
      lines.push(typeof fields === 'string' ? { level, ...bindings, msg: fields } : { level, ...bindings, ...fields, msg });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => collecting(lines, { ...bindings, ...more }) };
}

const errorOf = (line: Line | undefined): string | undefined => (line?.err as Error | undefined)?.message;

describe('listeners that throw', () => {
  it("a view's listener: logged with the event, and the next listener still hears it", async () => {
    const lines: Line[] = [];
    const pool = newPool({ logger: collecting(lines), budget: { clientBudget: 2, mode: 'warn' } });
    const a = await pool.acquire('a', fixtureConfig('echo.mjs', newMark('a')), 's1');
    const heard: string[] = [];
    a.on('budget', () => {
      throw new Error('the host listener broke');
    });
    a.on('budget', (event) => heard.push(event.type));
    // The second live connection of two crosses the 75 % warning line: every view hears it.
    await pool.acquire('b', fixtureConfig('echo.mjs', newMark('b')), 's1');
    await expect.poll(() => heard).toEqual(['mcp_budget_warning']);
    const reported = lines.find((line) => line.msg === 'a view event listener threw');
    expect(reported).toMatchObject({ level: 'error', event: 'budget', server: 'a' });
    expect(errorOf(reported)).toBe('the host listener broke');
  });

  it("an actor handle's listener: logged with the event, and the next listener still hears it", async () => {
    const lines: Line[] = [];
    const host = new ActorHost({ warmSpare: false });
    try {
      const handle = host.create(collecting(lines));
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
      const reported = lines.find((line) => line.msg === 'an actor event listener threw' && line.event === 'spawned');
      expect(reported).toMatchObject({ level: 'error' });
      expect(errorOf(reported)).toBe('the pool listener broke');
      await handle.shutdown('test over', 10_000);
    } finally {
      await host.close();
    }
  });
});
