/**
 * `pool.stderrTail(name)`: the last lines each live entry's server wrote to stderr, asked of its
 * actor thread. Real fixture servers: one that prints its configured secret to stderr (the tail
 * holds the line with the secret replaced), one that floods stderr (the tail stays bounded in
 * lines and in line length), and a name with no entry (nothing).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { McpTransportPool } from '@mcpool/core';
import { fixtureConfig, killMarked, marker } from '../../../test/helpers/processes.js';

const mark = marker('stderrtail');
let pool: McpTransportPool | undefined;

afterEach(async () => {
  await pool?.drainAll({ force: true });
  pool = undefined;
  killMarked(mark);
});

describe('pool.stderrTail', () => {
  it('holds the server’s stderr lines, oldest first, with its env values replaced', { timeout: 60_000 }, async () => {
    const secret = `tail-secret-${randomUUID()}`;
    pool = new McpTransportPool({ stateDir: false });
    const view = await pool.acquire('leaky', fixtureConfig('leaky.mjs', mark, { env: { FIXTURE_SECRET: secret } }), 's1');
    await view.callTool('leak', {});
    await view.callTool('leak', {});
    // The line of each call may still be in the pipe when its result arrives.
    const tail = await vi.waitFor(
      async () => {
        const [entry] = await pool!.stderrTail('leaky');
        expect(entry?.lines.length).toBe(3);
        return entry!;
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(tail).toEqual({ entryIndex: view.entryIndex, lines: ['leaky: secret is [redacted]', 'leaky: secret is [redacted]', 'leaky: secret is [redacted]'] });
    expect(JSON.stringify(tail)).not.toContain(secret);
    // `lines` keeps the newest.
    expect((await pool.stderrTail('leaky', { lines: 1 }))[0]!.lines).toEqual(['leaky: secret is [redacted]']);
    expect(await pool.stderrTail('no-such-server')).toEqual([]);
  });

  it('stays bounded: the last 100 lines, each cut to 1000 characters', { timeout: 60_000 }, async () => {
    pool = new McpTransportPool({ stateDir: false });
    const view = await pool.acquire('flooding', fixtureConfig('flooding.mjs', mark), 's1');
    await view.callTool('flood', { lines: 300 });
    const tail = await vi.waitFor(
      async () => {
        const [entry] = await pool!.stderrTail('flooding', { lines: 1000 });
        expect(entry?.lines.length).toBe(100);
        return entry!;
      },
      { timeout: 20_000, interval: 50 },
    );
    for (const line of tail.lines) expect(line).toBe(`${'x'.repeat(1000)}…`);
  });
});
