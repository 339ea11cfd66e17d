/**
 * The warm hold (`keepWarm`) survives failures: when the heartbeat ends the actor of a warm
 * entry, the pool brings the entry back and the daemon's hold goes onto it; after the restart
 * intensity trips, a REST restart brings the server back held (refs 1, active), not draining.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WorkspaceMcpServer, WorkspaceMcpStatus } from '@mcpool/client';
import { fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

const CRASHABLE = new URL('../../../test/fixtures/workers/crashableWorker.mjs', import.meta.url);
const crashes = new BroadcastChannel('mcpool-test-crash');
crashes.unref();

// The warm hold holds eager servers only (`start: "eager"`; the default starts them on first use).
const EAGER = { start: 'eager' };

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function echoCell(): Promise<WorkspaceMcpServer> {
  const status = (await h!.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
  return status.servers.find((server) => server.name === 'echo')!;
}

describe('the warm hold', () => {
  it('goes onto the entry the pool brings back after the heartbeat ended its actor', async () => {
    const mark = marker('warmbusy');
    h = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: EAGER }, { marks: [mark], poolOptions: { actorHost: { workerUrl: CRASHABLE }, heartbeatTimeoutMs: 1000 } });
    expect((await echoCell()).entrySummary).toMatchObject([{ entryIndex: 0, refs: 1, status: 'active' }]);
    crashes.postMessage({ serverName: 'echo', kind: 'busy', sentAt: Date.now() });
    // A spinning thread is ended after 1 s of its own CPU time: many seconds of wall time on a loaded machine.
    await vi.waitFor(async () => expect((await echoCell()).entrySummary).toMatchObject([{ entryIndex: 1, refs: 1, status: 'active' }]), { timeout: 90_000, interval: 100 });
  });

  it('is restored by a REST restart after the restart intensity tripped', async () => {
    const mark = marker('warmtrip');
    h = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: EAGER }, { marks: [mark], poolOptions: { restartIntensity: { maxRestarts: 1, periodMs: 120_000 } } });
    // 1. Two transport losses in the period (each after the reconnect settled): the key trips and stays failed.
    const seen: string[] = [];
    h.daemon.events.subscribe((event) => seen.push(event.payload.type));
    for (let kill = 0; kill < 2; kill++) {
      const pids = pidsWithMarker(mark);
      expect(pids).toHaveLength(1);
      process.kill(pids[0]!, 'SIGKILL');
      if (kill === 0) await vi.waitFor(() => expect(seen).toContain('reconnected'), { timeout: 20_000, interval: 50 });
    }
    await vi.waitFor(async () => expect((await echoCell()).status).toBe('failed'), { timeout: 20_000, interval: 100 });
    // 2. The operator restarts it: it is back, and held.
    const restarted = await h.request({ method: 'POST', url: '/workspace/mcp/echo/restart' });
    expect(restarted.statusCode).toBe(200);
    expect(restarted.json()).toMatchObject({ restarted: true });
    await vi.waitFor(async () => expect((await echoCell()).entrySummary).toMatchObject([{ refs: 1, status: 'active' }]), { timeout: 20_000, interval: 100 });
  });
});
