/**
 * What a server sends on its own, routed per session: logging during a call goes to that call,
 * sampling/elicitation go to the session whose call is in flight (refused when that is
 * ambiguous), resource updates go to subscribers, other requests pass through. Upstream is the
 * conformance fixture server, a real child.
 */
import { describe, expect, it, vi } from 'vitest';
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
