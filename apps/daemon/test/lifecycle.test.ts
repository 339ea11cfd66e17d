/**
 * The daemon's lifecycle through its REST API (`app.inject()` over a real daemon and real fixture
 * servers): `/readyz` follows reloads, a failed spawn is one log line with the tail of its
 * stderr, and `POST /workspace/shutdown` stops the daemon.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ReadyResponse } from '@mcpool/client';
import { shutdownResponseSchema, splitStderr } from 'mcpool';
import { fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ready = async (): Promise<{ status: number; body: ReadyResponse }> => {
  const response = await h!.request({ method: 'GET', url: '/readyz' });
  return { status: response.statusCode, body: response.json<ReadyResponse>() };
};

/** A server that writes 40 lines to stderr and exits before answering anything. */
const noisyFailure = (mark: string) => ({
  command: process.execPath,
  args: ['-e', "for (let i = 0; i < 40; i++) console.error('noise line ' + i); process.exit(1)", '--', mark],
});

describe('/readyz', () => {
  it('follows reloads: not ready while added servers start, then counts them (failed ones too)', async () => {
    const mark = marker('readyz');
    const echo = fixtureConfig('echo.mjs', mark);
    h = await harness({ mcpServers: { echo } }, { marks: [mark] });
    expect(await ready()).toEqual({ status: 200, body: { ready: true, servers: { total: 1, ready: 1, failed: 0, unavailable: 0 } } });

    // 1. A reload adds a server that takes a while to start: not ready until it has.
    h.writeConfig({ mcpServers: { echo, slow: fixtureConfig('slowInit.mjs', mark, { env: { FIXTURE_INIT_DELAY_MS: '1500' } }) } });
    const reloading = h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    await vi.waitFor(async () => expect(await ready()).toMatchObject({ status: 503, body: { ready: false, servers: { total: 2, ready: 1, failed: 0 } } }), { timeout: 30_000, interval: 20 });
    expect((await reloading).statusCode).toBe(200);
    expect(await ready()).toEqual({ status: 200, body: { ready: true, servers: { total: 2, ready: 2, failed: 0, unavailable: 0 } } });

    // 2. Another removes it and adds one that cannot start: ready (it has been started once), 1 failed.
    h.writeConfig({ mcpServers: { echo, bad: noisyFailure(mark) } });
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).statusCode).toBe(200);
    expect(await ready()).toEqual({ status: 200, body: { ready: true, servers: { total: 2, ready: 1, failed: 1, unavailable: 0 } } });
  }, 120_000);
});

describe('a failed spawn', () => {
  it('is one log line, with the last lines of the server’s stderr', async () => {
    const mark = marker('onefail');
    h = await harness({ mcpServers: { bad: noisyFailure(mark) } }, { marks: [mark], logLevel: 'info' });
    const about = h.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.server === 'bad' && (Number(line.level) >= 40 || String(line.msg).includes('fail')));
    expect(about).toHaveLength(1);
    const [line] = about as [Record<string, unknown>];
    expect(line).toMatchObject({ level: 50, entryIndex: 0, code: 'MCPOOL_SPAWN_FAILED', stderr: 'noise line 37\nnoise line 38\nnoise line 39' });
    expect(String(line.msg)).toMatch(/^bad#0 failed: .*exited with code 1$/);
    expect(JSON.stringify(line)).not.toContain('noise line 36');
    // The status still has the whole error.
    const status = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<{ servers: { name: string; lastError?: { message: string } }[] }>();
    expect(status.servers.find((s) => s.name === 'bad')?.lastError?.message).toContain('noise line 10');
  }, 120_000);

  it('keeps the end of a long stderr, bounded', () => {
    expect(splitStderr('boom; the process exited with code 1; stderr: a\n\nb\nc\nd\n')).toEqual({ headline: 'boom; the process exited with code 1', stderr: 'b\nc\nd' });
    expect(splitStderr('no stderr here')).toEqual({ headline: 'no stderr here', stderr: undefined });
    expect(splitStderr(`x; stderr: ${'y'.repeat(5000)}`).stderr).toHaveLength(400);
  });
});

describe('POST /workspace/shutdown', () => {
  it('answers 202 with the deadline, then shuts down; a second one is 503', async () => {
    const mark = marker('apistop');
    h = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) } }, { marks: [mark] });
    expect(pidsWithMarker(mark)).toHaveLength(1);
    const response = await h.request({ method: 'POST', url: '/workspace/shutdown' });
    expect(response.statusCode).toBe(202);
    expect(shutdownResponseSchema.parse(response.json())).toEqual({ stopping: true, timeoutMs: 10_000 });
    await vi.waitFor(() => expect(h!.daemon.accepting).toBe(false), { timeout: 5000, interval: 10 });
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 30_000, interval: 50 });
    expect((await h.request({ method: 'POST', url: '/workspace/shutdown' })).json()).toMatchObject({ statusCode: 503, code: 'MCPOOL_SHUTTING_DOWN' });
  }, 120_000);
});
