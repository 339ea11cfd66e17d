/**
 * What a server sends on its own, routed per session: logging during a call goes to that call,
 * sampling/elicitation go to the session whose call is in flight (refused when that is
 * ambiguous, until the tool that asked is known and its calls run one at a time), resource updates go to subscribers, other requests pass through. Upstream is the
 * conformance fixture server, a real child.
 */
import { describe, expect, it, vi } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { ErrorCode, McpTransportPool, type UpstreamNotification } from '@mcpool/core';
import { fixtureConfig, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 60_000, stateDir: false });

function setup(label: string): { pool: McpTransportPool; cfg: Record<string, unknown> } {
  return { pool: newPool(), cfg: fixtureConfig('conformance.mjs', newMark(label)) };
}

describe('server messages', () => {
  it('logging sent during a call reaches that call, and no other session', async () => {
    const { pool, cfg } = setup('logging');
    const a = await pool.acquire('conf', cfg, 'A');
    const b = await pool.acquire('conf', cfg, 'B');
    const heardByB: UpstreamNotification[] = [];
    b.on('notification', (n) => heardByB.push(n));
    const logs: UpstreamNotification[] = [];

    const result = await a.callTool('test_tool_with_logging', {}, { onNotification: (n) => logs.push(n) });

    expect(textOf(result)).toMatch(/sent 3 log messages/);
    expect(logs.map((n) => [n.method, n.params?.data])).toEqual([
      ['notifications/message', 'Tool execution started'],
      ['notifications/message', 'Tool processing data'],
      ['notifications/message', 'Tool execution completed'],
    ]);
    expect(heardByB).toEqual([]);
  });

  it('sampling goes to the session whose call is in flight, and its answer goes back upstream as is', async () => {
    const { pool, cfg } = setup('sampling');
    const a = await pool.acquire('conf', cfg, 'A');
    const b = await pool.acquire('conf', cfg, 'B');
    const bHandler = vi.fn();
    b.setServerRequestHandler(bHandler);
    a.setServerRequestHandler(async (request) => {
      expect(request.method).toBe('sampling/createMessage');
      const messages = request.params.messages as { content: { text: string } }[];
      return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `echo of ${messages[0]!.content.text}` } };
    });

    const result = await a.callTool('test_sampling', { prompt: 'hello' });

    expect(textOf(result)).toBe('LLM response: echo of hello');
    expect(bHandler).not.toHaveBeenCalled();
  });

  it('elicitation from the server is answered by the calling session', async () => {
    const { pool, cfg } = setup('elicit');
    const a = await pool.acquire('conf', cfg, 'A');
    a.setServerRequestHandler(async (request) => {
      expect(request.method).toBe('elicitation/create');
      return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
    });
    expect(textOf(await a.callTool('test_elicitation', { message: 'who are you?' }))).toMatch(/ada/);
  });

  it('a session without a handler refuses the server request with a JSON-RPC error; the call still settles', async () => {
    const { pool, cfg } = setup('nohandler');
    const a = await pool.acquire('conf', cfg, 'A');
    // The refusal goes upstream as JSON-RPC -32601; the fixture's tool fails with it, quoting the
    // pool's reason, and that error comes back to the caller.
    await expect(a.callTool('test_sampling', { prompt: 'x' })).rejects.toMatchObject({
      code: ErrorCode.UPSTREAM_ERROR,
      data: { mcpCode: -32601 },
      message: expect.stringMatching(/cannot route sampling\/createMessage: this session takes no server requests/),
    });
  });

  it('when two sessions have calls in flight, a server request is refused rather than guessed', async () => {
    const { pool, cfg } = setup('ambiguous');
    const a = await pool.acquire('conf', cfg, 'A');
    const b = await pool.acquire('conf', cfg, 'B');
    const handler = vi.fn(async () => ({ role: 'assistant', model: 'm', content: { type: 'text', text: 'never' } }));
    a.setServerRequestHandler(handler);
    b.setServerRequestHandler(handler);
    // B holds a call open (progress keeps it in flight ~100 ms) while A's tool asks for sampling.
    // A calls once B's call has reached the server (its first progress): the two views' ports are
    // separate queues, so A's call sent right after B's may reach the actor first.
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    const held = b.callTool('test_tool_with_progress', {}, { onProgress: () => started() });
    await inFlight;
    const sampled = await a.callTool('test_sampling', { prompt: 'x' }).then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    await held;
    expect(handler).not.toHaveBeenCalled();
    const text = 'error' in sampled ? (sampled.error as Error).message : JSON.stringify(sampled.result);
    expect(text).toMatch(/cannot route sampling\/createMessage/);
  });

  it('two sessions sampling at once both get answers from their own clients, once the tool has asked', async () => {
    const { pool, cfg } = setup('serialised');
    const a = await pool.acquire('conf', cfg, 'A');
    const b = await pool.acquire('conf', cfg, 'B');
    a.setServerRequestHandler(answeredBy('A'));
    b.setServerRequestHandler(answeredBy('B'));
    // The first sampling call teaches the connection that test_sampling asks its client.
    expect(textOf(await a.callTool('test_sampling', { prompt: 'first' }))).toBe('LLM response: A answers first');

    // Each client takes a moment to answer, as a person or a model does: unserialised, the
    // calls would overlap on the server and their requests could not be told apart.
    const prompts = ['a1', 'b1', 'a2', 'b2', 'a3', 'b3'];
    const results = await Promise.all(prompts.map((prompt) => (prompt.startsWith('a') ? a : b).callTool('test_sampling', { prompt })));
    expect(results.map(textOf)).toEqual(prompts.map((prompt) => `LLM response: ${prompt.startsWith('a') ? 'A' : 'B'} answers ${prompt}`));
  });

  it("while a sampling call waits for its client, a third session's other calls run, and the request is still the sampling call's", async () => {
    const { pool, cfg } = setup('beside');
    const a = await pool.acquire('conf', cfg, 'A');
    const b = await pool.acquire('conf', cfg, 'B');
    const c = await pool.acquire('conf', cfg, 'C');
    a.setServerRequestHandler(answeredBy('A'));
    b.setServerRequestHandler(answeredBy('B'));
    const cHandler = vi.fn();
    c.setServerRequestHandler(cHandler);
    expect(textOf(await a.callTool('test_sampling', { prompt: 'first' }))).toBe('LLM response: A answers first');
    const heldA = heldClient('A');
    a.setServerRequestHandler(heldA.handler);

    // C has a call in flight (its first progress says it reached the server) when A's sampling
    // request comes: it is still A's, the one call in flight of a tool that asks.
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    const progressing = c.callTool('test_tool_with_progress', {}, { onProgress: () => started() });
    await inFlight;
    const sampledA = a.callTool('test_sampling', { prompt: 'held' });
    // (A call that fails instead of asking fails the test at once.)
    await Promise.race([heldA.asked, sampledA]);
    const sampledB = b.callTool('test_sampling', { prompt: 'queued' });
    // A's client has not answered and B's call waits its turn; C's calls are not held behind them.
    // (Its own short timeout would fail C's call if it were queued.)
    expect(textOf(await c.callTool('test_simple_text', {}, { timeoutMs: 15_000 }))).toMatch(/simple text/i);
    await progressing;
    heldA.release();
    expect(textOf(await sampledA)).toBe('LLM response: A answers held');
    expect(textOf(await sampledB)).toBe('LLM response: B answers queued');
    expect(cHandler).not.toHaveBeenCalled();
  });

  it('a queued sampling call that times out or is cancelled leaves the queue with its typed error and never reaches the server', async () => {
    const { pool, cfg } = setup('queueExit');
    const a = await pool.acquire('conf', cfg, 'A');
    const b = await pool.acquire('conf', cfg, 'B');
    a.setServerRequestHandler(answeredBy('A'));
    const asked: string[] = [];
    const answerB = answeredBy('B');
    b.setServerRequestHandler((request) => {
      asked.push((request.params.messages as { content: { text: string } }[])[0]!.content.text);
      return answerB(request);
    });
    expect(textOf(await a.callTool('test_sampling', { prompt: 'first' }))).toBe('LLM response: A answers first');
    const again = heldClient('A');
    a.setServerRequestHandler(again.handler);
    // Learned; A's next call holds the turn for as long as its client takes.
    const sampledA = a.callTool('test_sampling', { prompt: 'holding' });
    await Promise.race([again.asked, sampledA]);

    const controller = new AbortController();
    const cancelled = b.callTool('test_sampling', { prompt: 'cancelled' }, { signal: controller.signal }).catch((error: unknown) => error);
    // Only the queue can time this call out: A's client never answers before it does.
    await expect(b.callTool('test_sampling', { prompt: 'late' }, { timeoutMs: 500 })).rejects.toMatchObject({
      code: ErrorCode.CALL_TIMEOUT,
      data: { timeoutMs: 500 },
    });
    // The cancelled call went to the actor before the late one, so it is queued by now.
    controller.abort();
    expect(await cancelled).toMatchObject({ code: ErrorCode.CALL_CANCELLED });

    again.release();
    expect(textOf(await sampledA)).toBe('LLM response: A answers holding');
    // The queue is empty and open: B's next call runs, and B's client was asked for it alone.
    expect(textOf(await b.callTool('test_sampling', { prompt: 'after' }))).toBe('LLM response: B answers after');
    expect(asked).toEqual(['after']);
  });

  it('resource updates reach only the sessions subscribed to that URI; subscriptions are refcounted', async () => {
    const { pool, cfg } = setup('subscribe');
    const a = await pool.acquire('conf', cfg, 'A');
    const b = await pool.acquire('conf', cfg, 'B');
    const updatesA: string[] = [];
    const updatesB: string[] = [];
    a.on('resourceUpdated', ({ uri }) => updatesA.push(uri));
    b.on('resourceUpdated', ({ uri }) => updatesB.push(uri));

    await a.subscribeResource('test://watched-resource');
    await a.callTool('touch_watched_resource', {});
    await vi.waitFor(() => expect(updatesA).toEqual(['test://watched-resource']), { timeout: 15_000, interval: 10 });
    expect(updatesB).toEqual([]);

    await a.unsubscribeResource('test://watched-resource');
    await b.subscribeResource('test://watched-resource');
    await b.callTool('touch_watched_resource', {});
    await vi.waitFor(() => expect(updatesB).toEqual(['test://watched-resource']), { timeout: 15_000, interval: 10 });
    expect(updatesA).toEqual(['test://watched-resource']);
  });

  it('completion, setLevel and ping pass through; a completion for a hidden prompt is refused', async () => {
    const { pool, cfg } = setup('passthrough');
    const a = await pool.acquire('conf', { ...cfg, excludeTools: ['test_prompt_with_arguments'] }, 'A');
    const b = await pool.acquire('conf', cfg, 'B');
    expect(await b.request('ping')).toEqual({});
    expect(await b.request('logging/setLevel', { level: 'debug' })).toEqual({});
    const completion = await b.request('completion/complete', { ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'a' } });
    expect(completion).toHaveProperty('completion');
    await expect(a.request('completion/complete', { ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'a' } })).rejects.toMatchObject({
      code: ErrorCode.TOOL_NOT_ALLOWED,
    });
    // Any MCP method passes through as itself, under the session's filter; the pool's own
    // lifecycle methods are refused before they reach the server.
    await expect(a.request('prompts/get', { name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } })).rejects.toMatchObject({ code: ErrorCode.TOOL_NOT_ALLOWED });
    expect(await b.request('prompts/get', { name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } })).toHaveProperty('messages');
    await expect(b.request('tools/call', { name: 'x' })).rejects.toMatchObject({ code: ErrorCode.UPSTREAM_ERROR });
    await expect(b.request('initialize', {})).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
  });
});

/** A client's sampling answer naming it, given after `gate` and a moment's thought. */
function answeredBy(who: string, gate?: Promise<void>) {
  return async (request: { params: Record<string, unknown> }): Promise<Record<string, unknown>> => {
    await gate;
    await delay(50);
    const messages = request.params.messages as { content: { text: string } }[];
    return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `${who} answers ${messages[0]!.content.text}` } };
  };
}

/** A client that answers as `who` once released; `asked` settles when a request has reached it. */
function heldClient(who: string): { handler: ReturnType<typeof answeredBy>; release: () => void; asked: Promise<void> } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let reached!: () => void;
  const asked = new Promise<void>((resolve) => (reached = resolve));
  const answer = answeredBy(who, released);
  return {
    handler: (request) => {
      reached();
      return answer(request);
    },
    release,
    asked,
  };
}
