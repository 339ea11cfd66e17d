/**
 * Both protocol eras upstream, against real servers in real processes and real actor threads:
 * era detection per config, the verdict cache (reused by a new pool, probed again when stale),
 * each session's own `_meta` on a shared modern server, the listen stream after a restart,
 * multi-round-trip results, and progress extending a call's deadline up to its total bound.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { ErrorCode, type McpTransportPool } from '@mcpool/core';
// Not public (a view is made by the pool): this test drives one over its own channel.
import { PooledConnection } from '../src/pooledConnection.js';
import { spawnChild } from '../src/childSpawner.js';
import { RpcChannel, fingerprint, normalizeServerConfig, type ActorStartArgs, type ActorStartResult, type SupervisorOps } from '@mcpool/protocol';
import { fixtureConfig, pidFromResult, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000 });
const LONG = 60_000;

function eraOf(pool: McpTransportPool, name: string): string | undefined {
  return pool.getSnapshot().servers[name]?.entrySummary[0]?.era;
}

function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `mcpool-${label}-`));
}

describe('era detection', () => {
  it('a dual-era v2 server is spoken to in the modern era, with the pool defaults in _meta', async () => {
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('dual', fixtureConfig('v2EraServer.mjs', newMark('dual')), 's1');
    expect(eraOf(pool, 'dual')).toBe('modern');
    expect(view.serverInfo?.name).toBe('fixture-dual-era');
    const seen = JSON.parse(textOf(await view.callTool('meta', {}))) as { envelope: Record<string, unknown> };
    expect(seen.envelope['io.modelcontextprotocol/protocolVersion']).toBe('2026-07-28');
    expect(seen.envelope['io.modelcontextprotocol/clientInfo']).toMatchObject({ name: 'mcpool' });
    expect(seen.envelope['io.modelcontextprotocol/clientCapabilities']).toEqual({ sampling: {}, elicitation: {}, roots: {} });
  }, LONG);

  it('a modern-only server (legacy: reject) is reached at all, as modern', async () => {
    const pool = newPool({ stateDir: false });
    const mark = newMark('modern2');
    const cfg = fixtureConfig('v2EraServer.mjs', mark);
    (cfg.args as string[]).push('--modern-only');
    const modern = await pool.acquire('modern2', cfg, 's1');
    expect(eraOf(pool, 'modern2')).toBe('modern');
    expect(modern.serverInfo?.name).toBe('fixture-modern-only');
    expect(textOf(await modern.callTool('echo', { text: 'hi' }))).toBe('hi');
  }, LONG);

  it('a v1 (legacy-only) server is opened with initialize', async () => {
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('legacy', fixtureConfig('echo.mjs', newMark('legacy')), 's1');
    expect(eraOf(pool, 'legacy')).toBe('legacy');
    expect(textOf(await view.callTool('echo', { text: 'hi' }))).toBe('hi');
  }, LONG);

  it('a server that exits on the probe is spawned again as legacy, once; a new pool reuses the cached verdict', async () => {
    const dir = tempDir('eras');
    try {
      const exits = join(dir, 'exits.log');
      const mark = newMark('exits');
      const cfg = fixtureConfig('exitsBeforeInitialize.mjs', mark, { env: { FIXTURE_EXIT_LOG: exits } });
      const first = newPool({ stateDir: dir });
      const view = await first.acquire('exits', cfg, 's1');
      expect(eraOf(first, 'exits')).toBe('legacy');
      expect(textOf(await view.callTool('echo', { text: 'after respawn' }))).toBe('after respawn');
      expect(readFileSync(exits, 'utf8')).toBe('server/discover\n');
      // The verdict is on disk, with its date.
      const fp = fingerprint(normalizeServerConfig(cfg, { path: 'exits' }).config);
      const saved = JSON.parse(readFileSync(join(dir, 'eras.json'), 'utf8')) as { verdicts: Record<string, { era: string; decidedAt: string }> };
      expect(saved.verdicts[fp]).toMatchObject({ era: 'legacy', protocolVersion: '2025-11-25' });
      expect(Date.parse(saved.verdicts[fp]!.decidedAt)).toBeGreaterThan(Date.now() - 10 * 60_000);
      await first.drainAll({ force: true });

      // A new pool on the same state dir skips the probe: the server never sees a pre-initialize request.
      const second = newPool({ stateDir: dir });
      const again = await second.acquire('exits', cfg, 's1');
      expect(eraOf(second, 'exits')).toBe('legacy');
      expect(textOf(await again.callTool('echo', { text: 'cached' }))).toBe('cached');
      expect(readFileSync(exits, 'utf8')).toBe('server/discover\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, LONG);

  it('a stale cached verdict (legacy for a modern-only server) is probed again and replaced', async () => {
    const dir = tempDir('stale');
    try {
      const mark = newMark('stale');
      const cfg = fixtureConfig('v2EraServer.mjs', mark);
      (cfg.args as string[]).push('--modern-only');
      const fp = fingerprint(normalizeServerConfig(cfg, { path: 'stale' }).config);
      const old = '2026-01-01T00:00:00.000Z';
      writeFileSync(join(dir, 'eras.json'), JSON.stringify({ version: 1, verdicts: { [fp]: { era: 'legacy', protocolVersion: '2025-11-25', decidedAt: old } } }));
      const pool = newPool({ stateDir: dir });
      const view = await pool.acquire('stale', cfg, 's1');
      expect(eraOf(pool, 'stale')).toBe('modern');
      expect(textOf(await view.callTool('echo', { text: 'hi' }))).toBe('hi');
      const saved = JSON.parse(readFileSync(join(dir, 'eras.json'), 'utf8')) as { verdicts: Record<string, { era: string; decidedAt: string }> };
      expect(saved.verdicts[fp]!.era).toBe('modern');
      expect(saved.verdicts[fp]!.decidedAt > old).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, LONG);
});

describe('a shared modern upstream', () => {
  it('two sessions with different capabilities each reach it with their own _meta', async () => {
    // The actor thread is driven directly here: two views attach with their own client
    // declarations (what acquire options fill in), on one connection to one server process.
    const mark = newMark('twoviews');
    const workerPath = createRequire(import.meta.url).resolve('@mcpool/actor/worker');
    const worker = new Worker(workerPath);
    // The thread hosts one connection; its control channel is the worker's own port. The actor
    // asks its supervisor to spawn its server: this test is the supervisor.
    const control = new RpcChannel(worker, {
      ownsPort: false,
      handler: (_op, spawnArgs, ctx) => spawnChild(spawnArgs as SupervisorOps['spawnChild']['args'], ctx, () => undefined),
    });
    worker.on('exit', () => control.close('exited'));
    const views: PooledConnection[] = [];
    try {
      const { config } = normalizeServerConfig(fixtureConfig('v2EraServer.mjs', mark), { path: 'two' });
      const args: ActorStartArgs = {
        serverName: 'two',
        entryIndex: 0,
        config,
        spawnTimeoutMs: 45_000,
        callTimeoutMs: 30_000,
        drainDelayMs: 30_000,
        maxIdleMs: 600_000,
        shutdownStepMs: 2000,
        logLevel: 'silent',
        client: { clientInfo: { name: 'pool-default', version: '9' } },
      };
      const started = await control.request<ActorStartResult>('start', args, { timeoutMs: 50_000 });
      expect(started.era).toBe('modern');
      const declarations = [
        { protocolVersion: '2026-07-28', capabilities: { elicitation: {} }, clientInfo: { name: 'editor-a', version: '1.0' }, logLevel: 'debug' },
        { protocolVersion: '2026-07-28', capabilities: { sampling: {}, roots: { listChanged: false } }, clientInfo: { name: 'agent-b', version: '2.0' } },
        undefined,
      ];
      for (const [i, client] of declarations.entries()) {
        const { port1, port2 } = new MessageChannel();
        const view = new PooledConnection({
          id: 'two::0000000000000000' as never,
          serverName: 'two',
          entryIndex: 0,
          sessionId: `s${i}`,
          port: port1,
          fields: {},
          callTimeoutMs: 30_000,
          onRelease: async () => undefined,
        });
        views.push(view);
        await control.request('attach', { viewId: `v${i}`, sessionId: `s${i}`, port: port2, client }, { transfer: [port2], timeoutMs: 10_000 });
        await view.ready;
      }
      const seen = await Promise.all(views.map(async (view) => (JSON.parse(textOf(await view.callTool('meta', {}))) as { envelope: Record<string, unknown> }).envelope));
      expect(seen[0]).toEqual({
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
        'io.modelcontextprotocol/clientInfo': { name: 'editor-a', version: '1.0' },
        'io.modelcontextprotocol/logLevel': 'debug',
      });
      expect(seen[1]).toEqual({
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { sampling: {}, roots: { listChanged: false } },
        'io.modelcontextprotocol/clientInfo': { name: 'agent-b', version: '2.0' },
      });
      // A view that declares nothing gets the pool's defaults.
      expect(seen[2]!['io.modelcontextprotocol/clientInfo']).toEqual({ name: 'pool-default', version: '9' });
      // One server process served all three.
      const pids = await Promise.all(views.map(async (view) => pidFromResult(await view.callTool('pid', {}))));
      expect(new Set(pids).size).toBe(1);
      expect(pidsWithMarker(mark)).toEqual([pids[0]]);
    } finally {
      await control.request('close', { reason: 'test done' }, { timeoutMs: 20_000 }).catch(() => undefined);
      await worker.terminate();
    }
  }, LONG);

  it('the listen stream is opened again after the child is killed, and a list change then reaches every view', async () => {
    const pool = newPool({ stateDir: false });
    const mark = newMark('listen');
    const cfg = fixtureConfig('v2EraServer.mjs', mark);
    const a = await pool.acquire('listen', cfg, 'A');
    const b = await pool.acquire('listen', cfg, 'B');
    const pid = pidFromResult(await a.callTool('pid', {}));
    const reconnected = new Promise<void>((resolve) => a.on('reconnected', () => resolve()));
    process.kill(pid, 'SIGKILL');
    await reconnected;
    const newPid = pidFromResult(await a.callTool('pid', {}));
    expect(newPid).not.toBe(pid);
    const seenA = new Promise<string[]>((resolve) => a.on('toolsChanged', (event) => resolve(event.tools.map((tool) => tool.name))));
    const seenB = new Promise<string[]>((resolve) => b.on('toolsChanged', (event) => resolve(event.tools.map((tool) => tool.name))));
    // The server only sends list changes on a listen stream that asked for them.
    await a.callTool('add_tool', { name: 'late_tool' });
    expect(await seenA).toContain('late_tool');
    expect(await seenB).toContain('late_tool');
    expect(b.tools.map((tool) => tool.name)).toContain('late_tool');
  }, LONG);
});

describe('multi-round-trip results', () => {
  it('input_required passes through unchanged; the retry with the same requestState reaches the same server; a tampered state is refused', async () => {
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('mrtr', fixtureConfig('v2EraServer.mjs', newMark('mrtr')), 's1');
    const first = await view.callTool('confirm', { item: 'box' });
    expect(first.resultType).toBe('input_required');
    expect(first.inputRequests).toMatchObject({ confirm: { method: 'elicitation/create' } });
    const state = first.requestState as string;
    expect(typeof state).toBe('string');
    const answer = { confirm: { action: 'accept', content: { ok: true } } };
    const retry = await view.request('tools/call', { name: 'confirm', arguments: { item: 'box' }, inputResponses: answer, requestState: state });
    expect(textOf(retry)).toBe('confirmed box: {"action":"accept","content":{"ok":true}}');

    // One character of the MAC changed (not the last: base64url's last character may hold padding bits).
    const at = state.length - 2;
    const tampered = `${state.slice(0, at)}${state[at] === 'A' ? 'B' : 'A'}${state.slice(at + 1)}`;
    expect(tampered).not.toBe(state);
    await expect(view.request('tools/call', { name: 'confirm', arguments: { item: 'box' }, inputResponses: answer, requestState: tampered })).rejects.toMatchObject({
      code: ErrorCode.UPSTREAM_ERROR,
      data: { mcpCode: -32602 },
    });
  }, LONG);

  it('an onInputRequired handler answers and the call is retried for the caller', async () => {
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('mrtr2', fixtureConfig('v2EraServer.mjs', newMark('mrtr2')), 's1');
    const asked: unknown[] = [];
    const result = await view.callTool('confirm', { item: 'cup' }, {
      onInputRequired: async (request) => {
        asked.push(request.inputRequests);
        return { confirm: { action: 'accept', content: { ok: false } } };
      },
    });
    expect(asked).toHaveLength(1);
    expect(textOf(result)).toBe('confirmed cup: {"action":"accept","content":{"ok":false}}');
  }, LONG);
});

describe('deadlines', () => {
  it('progress keeps a call alive past its timeout; the total bound still ends it', async () => {
    const pool = newPool({ stateDir: false });
    const view = await pool.acquire('prog', fixtureConfig('v2EraServer.mjs', newMark('prog')), 's1');
    const steps: number[] = [];
    // 8 steps 400 ms apart (3.2 s) under a 2 s timeout: each progress re-arms it.
    const done = await view.callTool('progress', { steps: 8, intervalMs: 400 }, { timeoutMs: 2000, onProgress: (p) => steps.push(p.progress) });
    expect(textOf(done)).toBe('done 8');
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);

    // The same call without progress dies at its timeout.
    await expect(view.callTool('progress', { steps: 8, intervalMs: 400 }, { timeoutMs: 2000 })).rejects.toMatchObject({ code: ErrorCode.CALL_TIMEOUT });

    // With progress but a total bound of 2.5 s, a 20-step call ends at the bound.
    const started = Date.now();
    await expect(
      view.callTool('progress', { steps: 20, intervalMs: 400 }, { timeoutMs: 2000, maxTotalTimeoutMs: 2500, onProgress: () => undefined }),
    ).rejects.toMatchObject({ code: ErrorCode.CALL_TIMEOUT, data: { maxTotalTimeoutMs: 2500 } });
    expect(Date.now() - started).toBeLessThan(8000);
    // The entry still serves calls afterwards.
    expect(textOf(await view.callTool('echo', { text: 'still here' }))).toBe('still here');
  }, LONG);
});

