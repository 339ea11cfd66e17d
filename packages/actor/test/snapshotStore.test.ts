/**
 * SnapshotStore: resets per transport incarnation, and the list_changed refresh guards: a stale
 * result never overwrites, a failed list keeps the old one, refreshes of one list coalesce.
 */
import { describe, expect, it, vi } from 'vitest';
import type { ServerSnapshot, ToolInfo } from '@mcpool/protocol';
import { SnapshotStore } from '../src/snapshotStore.js';
import type { ListKind, Lists } from '../src/serverConnection.js';

const tool = (name: string): ToolInfo => ({ name, inputSchema: { type: 'object' } });

function lists(...toolNames: string[]): Lists {
  return { tools: toolNames.map(tool), prompts: [], resources: [], resourceTemplates: [] };
}

const INFO = { serverInfo: { name: 'fixture', version: '1.0.0' }, capabilities: { tools: { listChanged: true } }, instructions: undefined };

const toolNames = (snapshot: ServerSnapshot): string[] => snapshot.tools.map((t) => t.name);

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A connection whose `discover` calls wait until the test settles them, in order. */
function manualConnection() {
  const calls: Array<{ kind: ListKind; result: Deferred<Partial<Lists>> }> = [];
  const discover = vi.fn((kind: ListKind) => {
    const result = deferred<Partial<Lists>>();
    calls.push({ kind, result });
    return result.promise;
  });
  return { discover, calls };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

function newStore() {
  const onChange = vi.fn<(snapshot: ServerSnapshot) => void>();
  return { store: new SnapshotStore(onChange), onChange };
}

describe('reset', () => {
  it('bumps the generation, replaces every list and takes the new client generation', () => {
    // Arrange
    const { store, onChange } = newStore();
    store.reset(lists('a', 'b'), 1, INFO);
    const first = store.snapshot;
    // Act
    store.reset({ ...lists('c'), prompts: [{ name: 'p' }] as Lists['prompts'] }, 2, { ...INFO, instructions: 'be nice' });
    // Assert
    expect(first.generation).toBe(1);
    expect(store.snapshot.generation).toBe(2);
    expect(store.snapshot.clientGeneration).toBe(2);
    expect(toolNames(store.snapshot)).toEqual(['c']);
    expect(store.snapshot.prompts).toEqual([{ name: 'p' }]);
    expect(store.snapshot.instructions).toBe('be nice');
    expect(toolNames(first)).toEqual(['a', 'b']); // snapshots are replaced, never mutated
    expect(onChange).toHaveBeenCalledTimes(2);
    expect(onChange).toHaveBeenLastCalledWith(store.snapshot);
  });
});

describe('apply', () => {
  it('drops a result from an older client generation', () => {
    // Arrange
    const { store, onChange } = newStore();
    store.reset(lists('old'), 1, INFO);
    const seq = store.nextSeq('tools');
    store.reset(lists('new'), 2, INFO);
    onChange.mockClear();
    // Act
    const applied = store.apply('tools', { tools: [tool('stale')] }, 1, seq);
    // Assert
    expect(applied).toBe(false);
    expect(toolNames(store.snapshot)).toEqual(['new']);
    expect(store.snapshot.generation).toBe(2);
    expect(onChange).not.toHaveBeenCalled();
  });

  it('drops a result older than the one already applied (a stale handler never overwrites)', () => {
    // Arrange
    const { store } = newStore();
    store.reset(lists('initial'), 1, INFO);
    const olderSeq = store.nextSeq('tools');
    const newerSeq = store.nextSeq('tools');
    // Act
    const newerApplied = store.apply('tools', { tools: [tool('newer')] }, 1, newerSeq);
    const olderApplied = store.apply('tools', { tools: [tool('older')] }, 1, olderSeq);
    const replayed = store.apply('tools', { tools: [tool('again')] }, 1, newerSeq);
    // Assert
    expect(newerApplied).toBe(true);
    expect(olderApplied).toBe(false);
    expect(replayed).toBe(false);
    expect(toolNames(store.snapshot)).toEqual(['newer']);
    expect(store.snapshot.generation).toBe(2);
  });

  it('keeps sequence numbers per list kind', () => {
    // Arrange
    const { store } = newStore();
    store.reset(lists('t'), 1, INFO);
    const toolsSeq = store.nextSeq('tools');
    store.nextSeq('prompts');
    const promptsSeq = store.nextSeq('prompts');
    // Act
    const promptsApplied = store.apply('prompts', { prompts: [{ name: 'p' }] as Lists['prompts'] }, 1, promptsSeq);
    const toolsApplied = store.apply('tools', { tools: [tool('u')] }, 1, toolsSeq);
    // Assert
    expect(promptsApplied).toBe(true);
    expect(toolsApplied).toBe(true);
    expect(toolNames(store.snapshot)).toEqual(['u']);
  });
});

describe('refresh', () => {
  it('applies the rediscovered list and bumps the generation', async () => {
    // Arrange
    const { store, onChange } = newStore();
    store.reset(lists('a'), 1, INFO);
    const connection = { discover: vi.fn(async () => ({ tools: [tool('a'), tool('b')] })) };
    // Act
    await store.refresh('tools', connection, 1);
    // Assert
    expect(connection.discover).toHaveBeenCalledExactlyOnceWith('tools');
    expect(toolNames(store.snapshot)).toEqual(['a', 'b']);
    expect(store.snapshot.generation).toBe(2);
    expect(onChange).toHaveBeenCalledTimes(2);
  });

  it('keeps the old list and the generation when discover rejects, and never rejects itself', async () => {
    // Arrange
    const { store, onChange } = newStore();
    store.reset(lists('kept'), 1, INFO);
    onChange.mockClear();
    const connection = { discover: vi.fn(async () => Promise.reject(new Error('tools/list failed'))) };
    // Act
    const result = store.refresh('tools', connection, 1);
    // Assert
    await expect(result).resolves.toBeUndefined();
    expect(toolNames(store.snapshot)).toEqual(['kept']);
    expect(store.snapshot.generation).toBe(1);
    expect(onChange).not.toHaveBeenCalled();
  });

  it('coalesces rapid refreshes of one kind: at most one in flight and one queued', async () => {
    // Arrange
    const { store } = newStore();
    store.reset(lists('v0'), 1, INFO);
    const connection = manualConnection();
    // Act
    const refreshes = Array.from({ length: 5 }, () => store.refresh('tools', connection, 1));
    const callsWhilePending = connection.discover.mock.calls.length;
    connection.calls[0]!.result.resolve({ tools: [tool('v1')] });
    await flush();
    connection.calls[1]?.result.resolve({ tools: [tool('v2')] });
    // Every caller's promise settles once the follow-up that covers it is applied.
    await Promise.all(refreshes);
    // Assert
    expect(callsWhilePending).toBe(1);
    expect(connection.discover.mock.calls.length).toBeLessThanOrEqual(2);
    expect(connection.discover).toHaveBeenCalledTimes(2); // the queued follow-up sees the last change
    expect(toolNames(store.snapshot)).toEqual(['v2']);
    expect(store.snapshot.generation).toBe(3);
  });

  it('does not coalesce refreshes of different kinds', async () => {
    // Arrange
    const { store } = newStore();
    store.reset(lists('t'), 1, INFO);
    const connection = manualConnection();
    // Act
    const tools = store.refresh('tools', connection, 1);
    const prompts = store.refresh('prompts', connection, 1);
    connection.calls[0]!.result.resolve({ tools: [tool('t2')] });
    connection.calls[1]!.result.resolve({ prompts: [{ name: 'p2' }] as Lists['prompts'] });
    await Promise.all([tools, prompts]);
    // Assert
    expect(connection.calls.map((c) => c.kind)).toEqual(['tools', 'prompts']);
    expect(toolNames(store.snapshot)).toEqual(['t2']);
    expect(store.snapshot.prompts).toEqual([{ name: 'p2' }]);
  });

  it('drops a refresh started before a reset (older client generation)', async () => {
    // Arrange
    const { store, onChange } = newStore();
    store.reset(lists('gen1'), 1, INFO);
    const oldConnection = manualConnection();
    const pending = store.refresh('tools', oldConnection, 1);
    store.reset(lists('gen2'), 2, INFO); // the transport reconnected meanwhile
    onChange.mockClear();
    // Act
    oldConnection.calls[0]!.result.resolve({ tools: [tool('stale')] });
    await pending;
    // Assert
    expect(toolNames(store.snapshot)).toEqual(['gen2']);
    expect(store.snapshot.clientGeneration).toBe(2);
    expect(store.snapshot.generation).toBe(2);
    expect(onChange).not.toHaveBeenCalled();
  });

  it(
    // Regression: the queued follow-up once re-ran with the first caller's (dead) connection and
    // generation, so a reconnected server's list_changed was lost.
    'a refresh of the new incarnation queued behind an old-incarnation refresh is applied',
    async () => {
      // Arrange
      const { store } = newStore();
      store.reset(lists('gen1'), 1, INFO);
      const oldConnection = manualConnection();
      const newConnection = manualConnection();
      void store.refresh('tools', oldConnection, 1);
      store.reset(lists('gen2'), 2, INFO);
      // Act: the new server announces a change while the old refresh is still pending.
      const fresh = store.refresh('tools', newConnection, 2);
      oldConnection.calls[0]!.result.resolve({ tools: [tool('stale')] });
      await flush();
      newConnection.calls[0]?.result.resolve({ tools: [tool('gen2-changed')] });
      oldConnection.calls[1]?.result.resolve({ tools: [tool('stale-again')] });
      await fresh;
      // Assert
      expect(newConnection.discover).toHaveBeenCalledOnce();
      expect(toolNames(store.snapshot)).toEqual(['gen2-changed']);
    },
  );
});
