/**
 * Per-session views over one shared entry: filters, trust, prompts,
 * list_changed fan-out, snapshot replay, and the generation guard.
 */
import { describe, expect, it, vi } from 'vitest';
import { MessageChannel } from 'node:worker_threads';
import { ErrorCode, McpTransportPool, PoolError, type ServerSnapshot } from '@mcpool/core';
import { RpcChannel, type ViewEvents } from '@mcpool/protocol';
// Not public (a view is made by the pool): this test drives one over a hand-held channel.
import { PooledConnection } from '../src/pooledConnection.js';
import { fixtureConfig, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000 });

function setup(label: string): { pool: McpTransportPool; mark: string } {
  return { pool: newPool(), mark: newMark(label) };
}

describe('session filters and trust', () => {
  it('A excludes `add` and B does not: A neither lists nor calls it, B does, from one process', async () => {
    const { pool, mark } = setup('exclude');
    const a = await pool.acquire('echo', fixtureConfig('echo.mjs', mark, { excludeTools: ['add'] }), 'A');
    const b = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 'B');

    expect(pidsWithMarker(mark)).toHaveLength(1);
    expect(a.tools.map((tool) => tool.name)).not.toContain('add');
    expect(b.tools.map((tool) => tool.name)).toContain('add');
    await expect(a.callTool('add', { a: 1, b: 2 })).rejects.toMatchObject({ code: ErrorCode.TOOL_NOT_ALLOWED, data: { tool: 'add' } });
    expect(textOf(await b.callTool('add', { a: 1, b: 2 }))).toBe('3');
  });

  it('exclude wins over include', async () => {
    const { pool, mark } = setup('include');
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark, { includeTools: ['echo', 'add', 'pid'], excludeTools: ['pid'] }), 'A');
    expect(view.tools.map((tool) => tool.name).sort()).toEqual(['add', 'echo']);
    await expect(view.callTool('pid')).rejects.toMatchObject({ code: ErrorCode.TOOL_NOT_ALLOWED, data: { tool: 'pid' } });
  });

  it('an include entry `name(args)` selects the tool by name only: the pool does NOT enforce the argument part', async () => {
    // Gemini CLI's `includeTools: ["run_shell_command(git)"]` is read by the tool that owns it; the
    // pool cannot know what an argument restriction means for an arbitrary server's tool, so it
    // includes the tool whole. This test pins that the restriction is dropped, so that nobody
    // reads `add(a)` as a limit the pool keeps.
    const { pool, mark } = setup('includeargs');
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark, { includeTools: ['add(a)'] }), 'A');
    expect(view.tools.map((tool) => tool.name)).toEqual(['add']);
    expect(textOf(await view.callTool('add', { a: 1, b: 41 }))).toBe('42');
    await expect(view.callTool('echo', { text: 'x' })).rejects.toMatchObject({ code: ErrorCode.TOOL_NOT_ALLOWED, data: { tool: 'echo' } });
  });

  it('A trusts and B does not; each view owns its tool objects', async () => {
    const { pool, mark } = setup('trust');
    const a = await pool.acquire('echo', fixtureConfig('echo.mjs', mark, { trust: true }), 'A');
    const b = await pool.acquire('echo', fixtureConfig('echo.mjs', mark, { trust: false }), 'B');
    expect(pidsWithMarker(mark)).toHaveLength(1);

    const toolA = a.tools.find((tool) => tool.name === 'echo')!;
    const toolB = b.tools.find((tool) => tool.name === 'echo')!;
    expect(toolA.trust).toBe(true);
    expect(toolB.trust).toBe(false);
    expect(toolA).not.toBe(toolB);
    // Mutating one session's copy touches nobody else.
    toolA.description = 'changed by A';
    (toolA.inputSchema).mutated = true;
    expect(toolB.description).not.toBe('changed by A');
    expect(toolB.inputSchema).not.toHaveProperty('mutated');
    const c = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 'C');
    expect(c.tools.find((tool) => tool.name === 'echo')!.description).not.toBe('changed by A');
  });

  it('prompts obey the same filter as tools', async () => {
    const { pool, mark } = setup('prompts');
    const a = await pool.acquire('echo', fixtureConfig('echo.mjs', mark, { excludeTools: ['greet'] }), 'A');
    const b = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 'B');
    expect(a.prompts).toEqual([]);
    expect(b.prompts.map((prompt) => prompt.name)).toEqual(['greet']);
    await expect(a.getPrompt('greet', { name: 'x' })).rejects.toMatchObject({ code: ErrorCode.TOOL_NOT_ALLOWED });
    expect(await b.getPrompt('greet', { name: 'Ada' })).toMatchObject({ messages: [{ role: 'user' }] });
  });

  it('a prompts-only server fills prompts and leaves tools empty', async () => {
    const { pool, mark } = setup('promptsonly');
    const view = await pool.acquire('prompts', fixtureConfig('promptsOnly.mjs', mark), 'A');
    expect(view.tools).toEqual([]);
    expect(view.resources).toEqual([]);
    expect(view.prompts.map((prompt) => prompt.name).sort()).toEqual(['review', 'summarize']);
    expect(view.capabilities).not.toHaveProperty('tools');
    expect(await view.getPrompt('summarize', { text: 'hello' })).toHaveProperty('messages');
  });

  it('resources are listed and read through the view', async () => {
    const { pool, mark } = setup('resources');
    const view = await pool.acquire('echo', fixtureConfig('echo.mjs', mark), 'A');
    expect(view.resources.map((resource) => resource.uri)).toEqual(['fixture://info']);
    expect(await view.readResource('fixture://info')).toMatchObject({ contents: [{ uri: 'fixture://info' }] });
  });
});

describe('list changes', () => {
  it('tools/list_changed reaches every view with the new snapshot and a newer generation', async () => {
    const { pool, mark } = setup('listchanged');
    const a = await pool.acquire('lc', fixtureConfig('listChanged.mjs', mark), 'A');
    const b = await pool.acquire('lc', fixtureConfig('listChanged.mjs', mark, { excludeTools: ['shiny'] }), 'B');
    const before = a.generation;
    const seenA = vi.fn();
    const seenB = vi.fn();
    a.on('toolsChanged', seenA);
    b.on('toolsChanged', seenB);

    await a.callTool('add_tool', { name: 'shiny' });
    await vi.waitFor(() => expect(seenA).toHaveBeenCalled(), { timeout: 15_000, interval: 10 });
    await vi.waitFor(() => expect(seenB).toHaveBeenCalled(), { timeout: 15_000, interval: 10 });

    expect(a.tools.map((tool) => tool.name)).toContain('shiny');
    expect(seenA.mock.calls.at(-1)![0]).toMatchObject({ type: 'toolsChanged', serverName: 'lc', entryIndex: 0 });
    expect(seenA.mock.calls.at(-1)![0].generation).toBeGreaterThan(before);
    // B's filter hides the new tool, but B still heard the change.
    expect(b.tools.map((tool) => tool.name)).not.toContain('shiny');
    expect(textOf(await a.callTool('shiny', { text: 'new' }))).toContain('new');
  });

  it('prompts and resources changes fan out as their own events', async () => {
    const { pool, mark } = setup('lcprompts');
    const a = await pool.acquire('lc', fixtureConfig('listChanged.mjs', mark), 'A');
    const prompts = vi.fn();
    const resources = vi.fn();
    const tools = vi.fn();
    a.on('promptsChanged', prompts);
    a.on('resourcesChanged', resources);
    a.on('toolsChanged', tools);

    await a.callTool('add_prompt', { name: 'fresh' });
    await vi.waitFor(() => expect(a.prompts.map((p) => p.name)).toContain('fresh'), { timeout: 15_000, interval: 10 });
    await a.callTool('add_resource', { uri: 'test://fresh' });
    await vi.waitFor(() => expect(a.resources.map((r) => r.uri)).toContain('test://fresh'), { timeout: 15_000, interval: 10 });
    expect(prompts).toHaveBeenCalledTimes(1);
    expect(resources).toHaveBeenCalledTimes(1);
    expect(tools).not.toHaveBeenCalled();
  });

  it('a view attached after a change is replayed the current snapshot', async () => {
    const { pool, mark } = setup('replay');
    const a = await pool.acquire('lc', fixtureConfig('listChanged.mjs', mark), 'A');
    await a.callTool('add_tool', { name: 'late' });
    await vi.waitFor(() => expect(a.tools.map((t) => t.name)).toContain('late'), { timeout: 15_000, interval: 10 });
    const b = await pool.acquire('lc', fixtureConfig('listChanged.mjs', mark), 'B');
    expect(b.tools.map((t) => t.name)).toContain('late');
    expect(b.generation).toBe(a.generation);
  });

  it('a view seeded from a live view of its entry is usable at once and still gets a change made during its attach', async () => {
    const { pool, mark } = setup('seeded');
    const config = fixtureConfig('listChanged.mjs', mark);
    const first = await pool.acquire('lc', config, 'first');
    // The entry went idle: the next acquire waits for its attach; the one after starts from that view.
    await first.release();
    const changer = await pool.acquire('lc', config, 'changer');
    await changer.callTool('add_tool', { name: 'during' });
    // The server announced the change before answering: the actor re-lists it while this view is being attached.
    const b = await pool.acquire('lc', config, 'B');
    expect(b.tools.map((t) => t.name)).toContain('base');
    expect(textOf(await b.callTool('base', {}))).toBe('base');
    await vi.waitFor(() => expect(b.tools.map((t) => t.name)).toContain('during'), { timeout: 15_000, interval: 10 });
    await vi.waitFor(() => expect(changer.tools.map((t) => t.name)).toContain('during'), { timeout: 15_000, interval: 10 });
    expect(b.generation).toBe(changer.generation);
    expect(textOf(await b.callTool('during', { text: 'seen' }))).toBe('seen');
  });

  it('a seeded view released before its attach went out leaves the entry to drain', async () => {
    const pool = newPool({ drainDelayMs: 300 });
    const mark = newMark('seededrelease');
    const config = fixtureConfig('listChanged.mjs', mark);
    const first = await pool.acquire('lc', config, 'first');
    // Seeded from `first`: its attach waits for the next turn; the release comes first.
    const b = await pool.acquire('lc', config, 'B');
    expect(b.tools.map((t) => t.name)).toContain('base');
    await b.release();
    await first.release();
    // The process ends, then the entry leaves the pool once its thread has exited: both in time, in either order.
    await vi.waitFor(() => {
      expect(pidsWithMarker(mark)).toEqual([]);
      expect(pool.getSnapshot().servers).toEqual({});
    }, { timeout: 15_000, interval: 20 });
  });
});

describe('generation guard on the view', () => {
  function snapshot(generation: number, tools: string[]): ServerSnapshot {
    return {
      generation,
      clientGeneration: 1,
      tools: tools.map((name) => ({ name, inputSchema: { type: 'object' } })),
      prompts: [],
      resources: [],
      resourceTemplates: [],
      serverInfo: { name: 'fake', version: '1' },
      capabilities: { tools: {} },
      instructions: undefined,
    };
  }

  /** A view over a hand-held channel whose other end is the actor's (the protocol's RpcChannel, as the actor uses it), and the tool lists its changes showed. */
  function handHeldView(): { actor: RpcChannel; view: PooledConnection; seen: string[][] } {
    const { port1, port2 } = new MessageChannel();
    const actor = new RpcChannel(port2);
    const view = new PooledConnection({
      id: 'fake::0' as never,
      serverName: 'fake',
      entryIndex: 0,
      sessionId: 'A',
      port: port1,
      fields: {},
      callTimeoutMs: 1000,
      onRelease: async () => undefined,
    });
    const seen: string[][] = [];
    view.on('toolsChanged', () => seen.push(view.tools.map((tool) => tool.name)));
    return { actor, view, seen };
  }

  it('a snapshot older than the one applied never overwrites it', async () => {
    const { actor, view, seen } = handHeldView();
    const send = (snap: ViewEvents['snapshot']): boolean => actor.emit('snapshot', snap);

    send(snapshot(1, ['one']));
    await view.ready;
    send(snapshot(3, ['three']));
    send(snapshot(2, ['two'])); // a stale handler's late result
    // A port delivers in order: once 4 is applied, 2 has been handled before it.
    send(snapshot(4, ['four']));
    await vi.waitFor(() => expect(view.generation).toBe(4), { timeout: 15_000, interval: 5 });
    expect(seen).toEqual([['three'], ['four']]);
    view.dispose(new PoolError(ErrorCode.CONNECTION_RELEASED, 'done'));
    actor.fail(new PoolError(ErrorCode.CONNECTION_RELEASED, 'done'));
  });

  it('a view seeded from the entry\'s snapshot is ready at once; the replay of the same generation is a no-op, a newer one is a change', async () => {
    const { actor, view, seen } = handHeldView();
    view.seed(snapshot(1, ['one']));
    // Ready with no message from the actor.
    await view.ready;
    expect(view.tools.map((tool) => tool.name)).toEqual(['one']);
    // The actor's replay on attach: the same generation (nothing changed), then a change made during the attach.
    actor.emit('snapshot', snapshot(1, ['one']));
    actor.emit('snapshot', snapshot(2, ['two']));
    await vi.waitFor(() => expect(view.generation).toBe(2), { timeout: 15_000, interval: 5 });
    expect(seen).toEqual([['two']]);
    // A second seed never overwrites what the view has.
    view.seed(snapshot(5, ['five']));
    expect(view.generation).toBe(2);
    view.dispose(new PoolError(ErrorCode.CONNECTION_RELEASED, 'done'));
    actor.fail(new PoolError(ErrorCode.CONNECTION_RELEASED, 'done'));
  });
});
