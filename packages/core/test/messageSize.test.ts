/**
 * No message can take a connection down by its size. Real actor threads, real fixture servers,
 * the pool's shipped defaults (no isolation option, the default 64 MiB `maxMessageBytes`):
 * - a 12 MiB result reaches its caller while a neighbour entry keeps answering;
 * - an 80 MiB answer fails its own call with `MCPOOL_MESSAGE_TOO_LARGE`, found by the id at
 *   either end of its line, or as the only call in flight; the server and its neighbour live on;
 * - a config's own `maxMessageBytes` applies to its connection; with several calls in flight and
 *   no id to be found, no call is guessed at;
 * - a request of the server's own over the limit is refused, so the server is not left waiting.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode, type PoolEvent, type PooledConnection } from '@mcpool/core';
import { fixtureConfig, pidFromResult, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const MIB = 1024 * 1024;

const { newPool, newMark } = usePools({ stateDir: false });

/** A pool with its defaults, a `big` entry and an `echo` neighbour, and the pid of each. */
async function twoEntries(label: string, bigExtra: Record<string, unknown> = {}) {
  const events: PoolEvent[] = [];
  const pool = newPool({ onEvent: (event) => events.push(event) });
  const mark = newMark(label);
  const big = await pool.acquire('big', fixtureConfig('bigResult.mjs', mark, bigExtra), 's1');
  const echo = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 's1');
  return { pool, events, mark, big, echo, bigPid: pidFromResult(await big.callTool('pid')), echoPid: pidFromResult(await echo.callTool('pid')) };
}

/** Calls `echo` on `view` one after another until `done` settles; every answer must be right. */
async function keepCalling(view: PooledConnection, done: Promise<unknown>): Promise<number> {
  let settled = false;
  void done.then(
    () => (settled = true),
    () => (settled = true),
  );
  let answered = 0;
  for (let i = 0; i < 1_000_000 && !settled; i++) {
    expect(textOf(await view.callTool('echo', { text: `n${i}` }))).toBe(`n${i}`);
    answered += 1;
  }
  return answered;
}

function lossesIn(events: PoolEvent[]): PoolEvent[] {
  return events.filter((event) => event.type === 'disconnected' || event.type === 'failed');
}

describe('message size', () => {
  it('delivers a 12 MiB result while a neighbour entry keeps answering, both on their first process', async () => {
    const { events, mark, big, echo, bigPid, echoPid } = await twoEntries('big12');

    const result = big.callTool('big', { mb: 12 });
    const answered = await keepCalling(echo, result);
    const text = textOf(await result);

    expect(text.length).toBe(12 * MIB);
    expect(text).toMatch(/^x+$/);
    expect(answered).toBeGreaterThanOrEqual(1);
    expect(pidFromResult(await echo.callTool('pid'))).toBe(echoPid);
    expect(pidFromResult(await big.callTool('pid'))).toBe(bigPid);
    expect(lossesIn(events)).toEqual([]);
    expect(pidsWithMarker(mark).sort()).toEqual([bigPid, echoPid].sort());
  });

  for (const idAt of ['end', 'start', 'middle'] as const) {
    it(`fails an 80 MiB answer (id ${idAt === 'middle' ? 'at neither end: the only call in flight' : `at the ${idAt}`}) with MCPOOL_MESSAGE_TOO_LARGE; the server and its neighbour live on`, async () => {
      const { pool, events, big, echo, bigPid, echoPid } = await twoEntries(`big80-${idAt}`);

      const call = big.callTool('big', { mb: 80, idAt });
      const answered = await keepCalling(echo, call);
      const error = await call.catch((e: unknown) => e);

      expect(error).toMatchObject({ code: ErrorCode.MESSAGE_TOO_LARGE, data: { maxMessageBytes: 64 * MIB } });
      expect((error as { data: { bytes: number } }).data.bytes).toBeGreaterThan(80 * MIB);
      expect(answered).toBeGreaterThanOrEqual(1);
      // The connection read past the line: the same process answers the next call, whole.
      expect(textOf(await big.callTool('big', { mb: 1, idAt }))).toBe('x'.repeat(MIB));
      expect(pidFromResult(await big.callTool('pid'))).toBe(bigPid);
      expect(pidFromResult(await echo.callTool('pid'))).toBe(echoPid);
      expect(lossesIn(events)).toEqual([]);
      expect(pool.getSnapshot().servers.big).toMatchObject({ status: 'active', entrySummary: [{ status: 'active' }] });
    });
  }

  it("applies a config's own maxMessageBytes, and guesses at no call when several are in flight and the id cannot be found", async () => {
    const { big, bigPid } = await twoEntries('bigcap', { maxMessageBytes: MIB });

    // 1. Over the config's limit, though far under the pool's.
    const error = await big.callTool('big', { mb: 2 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: ErrorCode.MESSAGE_TOO_LARGE, data: { maxMessageBytes: MIB } });
    expect(textOf(await big.callTool('big', { mb: 0.5 })).length).toBe(MIB / 2);

    // 2. Two calls in flight, an oversized answer whose id is at neither end: the other call is
    // answered, and the big one ends at its own deadline rather than by a guess.
    const unknown = big.callTool('big', { mb: 2, idAt: 'middle' }, { timeoutMs: 1500 });
    const other = big.callTool('echo', { text: 'other' });
    expect(textOf(await other)).toBe('other');
    expect(await unknown.catch((e: unknown) => e)).toMatchObject({ code: ErrorCode.CALL_TIMEOUT });
    expect(pidFromResult(await big.callTool('pid'))).toBe(bigPid);
  });

  it('refuses a request of the server’s own that is over the limit, so the server goes on', async () => {
    const { big, bigPid } = await twoEntries('bigask', { maxMessageBytes: MIB });
    const answer = JSON.parse(textOf(await big.callTool('askBig', { mb: 2 }, { timeoutMs: 30_000 }))) as { error?: { code: number; message: string } };
    expect(answer.error).toMatchObject({ code: -32600 });
    expect(answer.error?.message).toContain(String(MIB));
    expect(pidFromResult(await big.callTool('pid'))).toBe(bigPid);
  });
});
