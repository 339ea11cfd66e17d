/**
 * A held entry whose actor thread dies comes back by itself, and the sessions' views move to the
 * replacement: each gets `disconnected`, then `reconnected` with the new actor's snapshot, and
 * serves again as the same object — instead of ending `failed` and forcing every session to
 * acquire again. The thread is killed for real (the crashable worker exits on a broadcast order),
 * and so is its child.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { describe, expect, it, vi } from 'vitest';
import { ErrorCode, MCPCallInterruptedError, type PoolEvent } from '@mcpool/core';
import { fixtureConfig, isRunning, pidFromResult, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const CRASHABLE = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url);
const crashes = new BroadcastChannel('mcpool-test-crash');
crashes.unref();

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

describe('views of a dead actor move to its replacement', () => {
  it('two sessions keep their views: disconnected, then reconnected with the new snapshot, and their calls reach the new child', async () => {
    const events: PoolEvent[] = [];
    const pool = newPool({ actorHost: { workerUrl: CRASHABLE }, onEvent: (event) => events.push(event) });
    const config = fixtureConfig('echo.mjs', newMark('reattach'));
    const a = await pool.acquire('phoenix', config, 'A');
    const b = await pool.acquire('phoenix', { ...config, excludeTools: ['pid'] }, 'B');
    const oldPid = pidFromResult(await a.callTool('pid'));
    const seen: string[] = [];
    for (const [label, view] of [['A', a], ['B', b]] as const) {
      view.on('disconnected', (event) => seen.push(`${label}:disconnected:${event.reason}`));
      view.on('reconnected', () => seen.push(`${label}:reconnected`));
      view.on('failed', () => seen.push(`${label}:failed`));
    }
    const reconnected = Promise.all([a, b].map((view) => new Promise<void>((resolve) => view.on('reconnected', () => resolve()))));

    const inFlight = a.callTool('slow', { ms: 30_000 }).catch((error: unknown) => error);
    crashes.postMessage({ serverName: 'phoenix', kind: 'exit', sentAt: Date.now() });

    // The call in flight is interrupted (its result is unknown), never replayed.
    expect(await inFlight).toBeInstanceOf(MCPCallInterruptedError);
    await reconnected;
    expect(seen.filter((line) => line.startsWith('A:'))).toEqual(['A:disconnected:actor_died', 'A:reconnected']);
    expect(seen.filter((line) => line.startsWith('B:'))).toEqual(['B:disconnected:actor_died', 'B:reconnected']);
    expect(events.find((event) => event.type === 'failed')).toMatchObject({ entryIndex: 0, lastError: { code: ErrorCode.ACTOR_DIED } });

    // The same objects serve again, on the replacement, each with its own filter.
    expect(a.status).toBe('connected');
    expect(a.entryIndex).toBe(1);
    expect(b.entryIndex).toBe(1);
    const newPid = pidFromResult(await a.callTool('pid'));
    expect(newPid).not.toBe(oldPid);
    expect(textOf(await b.callTool('echo', { text: 'back' }))).toBe('back');
    expect(b.tools.map((tool) => tool.name)).not.toContain('pid');
    await expect(b.callTool('pid')).rejects.toMatchObject({ code: ErrorCode.TOOL_NOT_ALLOWED });
    await vi.waitFor(() => expect(isRunning(oldPid)).toBe(false), { timeout: 15_000, interval: 20 });
    expect(pool.getSnapshot().servers.phoenix).toMatchObject({ entryCount: 1, entrySummary: [{ entryIndex: 1, status: 'active', refs: 2 }] });

    // Released as usual: the replacement then drains like any idle entry.
    await a.release();
    await b.release();
    expect(pool.getSnapshot().servers.phoenix?.entrySummary).toMatchObject([{ entryIndex: 1, refs: 0 }]);
  });

  it('a view released while its actor was dead stays released: no replacement takes it', async () => {
    const pool = newPool({ actorHost: { workerUrl: CRASHABLE } });
    const config = fixtureConfig('echo.mjs', newMark('gone'));
    const a = await pool.acquire('gone', config, 'A');
    const disconnected = new Promise<void>((resolve) => a.on('disconnected', () => resolve()));
    crashes.postMessage({ serverName: 'gone', kind: 'exit', sentAt: Date.now() });
    await disconnected;
    await a.release();
    // Whether the pool saw the death before or after the release, nobody holds the server now.
    await vi.waitFor(() => expect(pool.getSnapshot().servers.gone?.status ?? 'closed').not.toBe('spawning'), { timeout: 30_000, interval: 50 });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((pool.getSnapshot().servers.gone?.entrySummary ?? []).every((entry) => entry.refs === 0)).toBe(true);
    expect(a.status).toBe('released');
    await expect(a.callTool('echo', { text: 'x' })).rejects.toMatchObject({ code: ErrorCode.CONNECTION_RELEASED });
  });
});
