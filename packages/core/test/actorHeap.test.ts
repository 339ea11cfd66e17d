/**
 * A message within `maxMessageBytes` must never end its actor thread: threads get the heap limit
 * such a message needs, and a connection that needs more than its host's threads have gets a
 * thread of its own with it. Real worker threads; their limits read back from `Worker`.
 */
import { describe, expect, it } from 'vitest';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { actorHeapMb } from '../src/actorHeap.js';

const HOST = pathToFileURL(fileURLToPath(new URL('../dist/actorHost.js', import.meta.url))).href;
const MIB = 1024 * 1024;

describe('the heap an actor thread gets', () => {
  it('holds four times the largest message and what an actor keeps at rest, never under 128 MB', () => {
    expect(actorHeapMb(64 * MIB)).toBe(320);
    expect(actorHeapMb(128 * MIB)).toBe(576);
    expect(actorHeapMb(1024)).toBe(128);
  });

  it('a connection that needs more than the host’s threads have gets a new thread with that limit', async () => {
    const { ActorHost } = (await import(HOST)) as typeof import('../src/actorHost.js');
    const host = new ActorHost({ resourceLimits: { maxOldGenerationSizeMb: 320 }, warmSpare: false });
    try {
      const ordinary = host.create(undefined, { heapMb: 320 });
      const large = host.create(undefined, { heapMb: 576 });
      expect(ordinary.worker.resourceLimits?.maxOldGenerationSizeMb).toBe(320);
      expect(large.worker).not.toBe(ordinary.worker);
      expect(large.worker.resourceLimits?.maxOldGenerationSizeMb).toBe(576);
    } finally {
      await host.close();
    }
  });
});
