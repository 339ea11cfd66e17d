/**
 * A server killed with calls in flight: every call rejects once, typed, as soon as the server's
 * stdout ends, not when its process is reaped. Real children, real actor threads.
 */
import { describe, expect, it, vi } from 'vitest';
import { ErrorCode, MCPCallInterruptedError } from '@mcpool/core';
import { FIXTURES, pidFromResult, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, shutdownStepMs: 300, stateDir: false });

/** Generous: a loss is reported within a few tens of ms; a loaded two-core machine may take longer. */
const PROMPT_MS = 2_000;

describe('a server killed with calls in flight', () => {
  it('rejects every call in flight once, with CALL_INTERRUPTED, promptly', async () => {
    const pool = newPool();
    const mark = newMark('killInFlight');
    const view = await pool.acquire('echo', { command: process.execPath, args: [FIXTURES + 'echo.mjs', mark] }, 's1');
    const pid = pidFromResult(await view.callTool('pid'));
    const reconnected = new Promise<void>((resolve) => view.on('reconnected', () => resolve()));

    const settled: { outcome: 'answered' | 'rejected'; error?: unknown; ms: number }[] = [];
    let killedAt = 0;
    const calls = Array.from({ length: 8 }, () =>
      view.callTool('slow', { ms: 30_000 }).then(
        () => settled.push({ outcome: 'answered', ms: performance.now() - killedAt }),
        (error: unknown) => settled.push({ outcome: 'rejected', error, ms: performance.now() - killedAt }),
      ),
    );
    // Each call has reached the server before the kill (a short call behind them answers).
    expect(textOf(await view.callTool('echo', { text: 'sent' }))).toBe('sent');
    killedAt = performance.now();
    process.kill(pid, 'SIGKILL');
    await Promise.all(calls);

    expect(settled).toHaveLength(8);
    for (const { outcome, error, ms } of settled) {
      expect(outcome).toBe('rejected');
      expect(error).toBeInstanceOf(MCPCallInterruptedError);
      expect(error).toMatchObject({ code: ErrorCode.CALL_INTERRUPTED, serverName: 'echo' });
      expect(ms).toBeLessThan(PROMPT_MS);
    }
    await reconnected;
    expect(textOf(await view.callTool('echo', { text: 'back' }))).toBe('back');
    // Nothing answered twice, nothing left: the old process is gone, one new one serves.
    expect(settled).toHaveLength(8);
    expect(pidsWithMarker(mark).filter((p) => p !== pid)).toHaveLength(1);
  });

  it('rejects at once when the server dies under a wrapper that outlives it, and the wrapper is ended', async () => {
    const pool = newPool();
    const mark = newMark('killUnderWrapper');
    // The shell keeps running after the server dies, its stdout closed: only the end of stdout
    // says the server is gone.
    const script = '"$0" "$1" "$2"; exec >&-; sleep 20';
    const view = await pool.acquire('wrapped', { command: '/bin/sh', args: ['-c', script, process.execPath, FIXTURES + 'echo.mjs', mark] }, 's1');
    const pid = pidFromResult(await view.callTool('pid'));
    const reconnected = new Promise<void>((resolve) => view.on('reconnected', () => resolve()));
    const inFlight = view.callTool('slow', { ms: 30_000 }).catch((error: unknown) => error);
    expect(textOf(await view.callTool('echo', { text: 'sent' }))).toBe('sent');
    const killedAt = performance.now();
    process.kill(pid, 'SIGKILL');
    const error = await inFlight;
    expect(performance.now() - killedAt).toBeLessThan(PROMPT_MS);
    expect(error).toBeInstanceOf(MCPCallInterruptedError);
    // The wrapper was ended rather than left to sleep, so the entry reconnects.
    await reconnected;
    expect(textOf(await view.callTool('echo', { text: 'back' }))).toBe('back');
    await vi.waitFor(() => expect(pidsWithMarker(mark).filter((p) => p !== pid)).toHaveLength(2), { timeout: 10_000, interval: 50 });
  });
});
