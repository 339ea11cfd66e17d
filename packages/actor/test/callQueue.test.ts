/**
 * The queue calls of tools that ask the client wait in: oldest first, and a waiting call that
 * times out or is cancelled leaves with its typed error and keeps no entry and no timer.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode, PoolError } from '@mcpool/protocol/rpc';
import { CallQueue } from '../src/callQueue.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('call queue', () => {
  it('starts waiting calls oldest first, each settling as its start does', async () => {
    const queue = new CallQueue();
    const started: string[] = [];
    const first = queue.enqueue('view', 1_000, undefined, async () => (started.push('first'), 1));
    const second = queue.enqueue('view', 1_000, undefined, async () => (started.push('second'), 2));
    expect(queue.size).toBe(2);
    expect(queue.startNext()).toBe(true);
    expect(started).toEqual(['first']);
    expect(queue.startNext()).toBe(true);
    expect(await Promise.all([first, second])).toEqual([1, 2]);
    expect(started).toEqual(['first', 'second']);
    expect(queue.startNext()).toBe(false);
    // Started calls keep no timer here: their own deadline is the upstream request's.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a waiting call cancelled leaves at once with the cancel reason, no entry and no timer left', async () => {
    const queue = new CallQueue();
    const controller = new AbortController();
    const start = vi.fn(async () => 'never');
    const waiting = queue.enqueue('view', 60_000, controller.signal, start);
    expect(vi.getTimerCount()).toBe(1);
    const settled = waiting.catch((error: unknown) => error);
    controller.abort(new PoolError(ErrorCode.CALL_CANCELLED, 'cancelled by the caller'));
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(await settled).toMatchObject({ code: ErrorCode.CALL_CANCELLED, message: 'cancelled by the caller' });
    expect(queue.startNext()).toBe(false);
    expect(start).not.toHaveBeenCalled();
  });

  it('a waiting call whose timeout passes leaves with the timeout error, no entry and no listener left', async () => {
    const queue = new CallQueue();
    const controller = new AbortController();
    const start = vi.fn(async () => 'never');
    const waiting = queue.enqueue('view', 500, controller.signal, start);
    const settled = waiting.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(500);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(await settled).toMatchObject({ code: ErrorCode.CALL_TIMEOUT, data: { timeoutMs: 500 } });
    // Its cancel listener went with it: aborting now changes nothing and starts nothing.
    controller.abort();
    expect(queue.startNext()).toBe(false);
    expect(start).not.toHaveBeenCalled();
  });

  it('a call already cancelled never waits; a start that throws fails its call only', async () => {
    const queue = new CallQueue();
    const controller = new AbortController();
    controller.abort();
    await expect(queue.enqueue('view', 1_000, controller.signal, async () => 'never')).rejects.toMatchObject({ code: ErrorCode.CALL_CANCELLED });
    expect(queue.size).toBe(0);
    const failing = queue.enqueue('view', 1_000, undefined, () => {
      throw new PoolError(ErrorCode.NOT_CONNECTED, 'the server is reconnecting');
    });
    const next = queue.enqueue('view', 1_000, undefined, async () => 'next');
    expect(queue.startNext()).toBe(true);
    await expect(failing).rejects.toMatchObject({ code: ErrorCode.NOT_CONNECTED });
    expect(queue.startNext()).toBe(true);
    expect(await next).toBe('next');
    expect(vi.getTimerCount()).toBe(0);
  });
});
