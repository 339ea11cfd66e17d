/**
 * Back-pressure at the source: a transport asks its read gate after each message the server sent
 * on its own, and a wait it is told stops reading there. Against a real flooding child (stdio)
 * and a real chunked body (SSE): nothing past the wait is read until it ends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ProcessGroupStdioTransport } from '../src/transports/processGroupStdioTransport.js';
import { readSse } from '../src/transports/httpBody.js';
import { SourceThrottle } from '../src/sourceThrottle.js';
import { expectNoSurvivors, FIXTURES, marker } from '../../../test/helpers/processes.js';

const marks: string[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
});

/** Polls `check` every 20 ms for at most `ms`. */
async function until(check: () => boolean, ms = 30_000): Promise<void> {
  for (const deadline = Date.now() + ms; !check() && Date.now() < deadline; ) await delay(20);
}

describe('read gate', () => {
  it('stdio: a wait stops reading the child right after the message that asked for it; close still ends the child at once', async () => {
    const mark = marker('gate');
    marks.push(mark);
    let taken = 0;
    // Lets 200 server messages through, then holds reading for an hour.
    const transport = new ProcessGroupStdioTransport({ command: process.execPath, args: [FIXTURES + 'notifyFlood.mjs', mark], readGate: { take: () => (++taken >= 200 ? 3_600_000 : 0) } });
    const client = new Client({ name: 'test', version: '1' });
    clients.push(client);
    let heard = 0;
    client.setNotificationHandler(LoggingMessageNotificationSchema, () => {
      heard++;
    });
    await client.connect(transport);

    await client.callTool({ name: 'start', arguments: { perSecond: 20_000 } });
    await until(() => taken >= 200);
    // The flood goes on in the child (thousands a second); none of it is read meanwhile.
    await delay(500);

    expect(taken).toBe(200);
    expect(heard).toBe(200);
    const started = Date.now();
    await client.close();
    // Reading resumes for the close (stdin end is seen), well before the hour; bounded by what a hang would be.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(transport.exited).toBe(true);
  });

  it('SSE: the body is not read on while a pause runs, and an abort ends the pause', async () => {
    let pulled = 0;
    async function* events(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 1000; i++) {
        pulled++;
        yield Buffer.from(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"n":${i}}}\n\n`);
      }
    }
    const controller = new AbortController();
    let seen = 0;
    const reading = readSse(Readable.from(events(), { objectMode: false, highWaterMark: 1 }), {
      onEvent: () => seen++,
      pauseMs: () => (seen >= 3 ? 3_600_000 : 0),
      signal: controller.signal,
    });
    await until(() => seen >= 3);
    await delay(300);

    expect(seen).toBe(3);
    // What the stream reads ahead is bounded by its buffer, not by the body.
    expect(pulled).toBeLessThan(10);
    controller.abort();
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('the throttle asks for a wait past its rate, or while the views are backed up, and reports one episode', async () => {
    const episodes: string[] = [];
    let backedUp = false;
    const throttle = new SourceThrottle({
      perSecond: 100,
      burst: 10,
      backedUp: () => backedUp,
      onEpisodeStart: ({ reason }) => episodes.push(`start:${reason}`),
      onEpisodeEnd: ({ pauses }) => episodes.push(`end:${pauses > 0}`),
    });
    try {
      const waits: number[] = [];
      for (let i = 0; i < 10; i++) waits.push(throttle.take());
      expect(waits.every((w) => w === 0)).toBe(true);
      expect(throttle.take()).toBeGreaterThan(0);
      expect(throttle.throttled).toBe(true);
      await until(() => !throttle.throttled, 15_000);
      expect(episodes).toEqual(['start:rate', 'end:true']);

      backedUp = true;
      expect(throttle.take()).toBeGreaterThan(0);
      expect(episodes.at(-1)).toBe('start:views_backed_up');
    } finally {
      throttle.dispose();
    }
  });
});
