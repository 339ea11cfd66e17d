/**
 * Back-pressure at the source: a transport asks its read gate of each message the server sent on
 * its own and drops the notifications it refuses, reading on: against a real flooding child
 * (stdio), the flood is read and dropped and an answer still arrives; the throttle refuses
 * notifications past its rate or while the views are backed up, never a request, and counts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ProcessGroupStdioTransport } from '../src/transports/processGroupStdioTransport.js';
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

const notification = { jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: 'x' } };
const request = { jsonrpc: '2.0' as const, id: 1, method: 'roots/list' };
const response = { jsonrpc: '2.0' as const, id: 1, result: {} };

describe('read gate', () => {
  it('stdio: what the gate refuses is dropped and reading goes on, so an answer behind the flood arrives; close ends the child at once', async () => {
    const mark = marker('gate');
    marks.push(mark);
    let asked = 0;
    // Lets 200 server messages through, then refuses every notification.
    const transport = new ProcessGroupStdioTransport({
      command: process.execPath,
      args: [FIXTURES + 'notifyFlood.mjs', mark],
      readGate: { admit: (message) => message.method === undefined || ++asked <= 200 },
    });
    const client = new Client({ name: 'test', version: '1' });
    clients.push(client);
    let heard = 0;
    client.setNotificationHandler(LoggingMessageNotificationSchema, () => {
      heard++;
    });
    await client.connect(transport);

    await client.callTool({ name: 'start', arguments: { perSecond: 20_000 } });
    // The flood goes on in the child, thousands a second, and is read on: the gate keeps being asked.
    await until(() => asked >= 5_000);
    expect(asked).toBeGreaterThanOrEqual(5_000);
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'behind the flood' } });
    expect(echoed.content).toEqual([{ type: 'text', text: 'behind the flood' }]);
    expect(heard).toBe(200);

    const started = Date.now();
    await client.close();
    // Bounded by what a hang would be.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(transport.exited).toBe(true);
  });

  it('the throttle refuses notifications past its rate, or while the views are backed up, never a request; one episode reports what it dropped', async () => {
    const episodes: string[] = [];
    let backedUp = false;
    const throttle = new SourceThrottle({
      perSecond: 100,
      burst: 10,
      backedUp: () => backedUp,
      onEpisodeStart: ({ reason }) => episodes.push(`start:${reason}`),
      onEpisodeEnd: ({ reason, dropped }) => episodes.push(`end:${reason}:${dropped}`),
    });
    try {
      const admitted: boolean[] = [];
      for (let i = 0; i < 10; i++) admitted.push(throttle.admit(notification));
      expect(admitted.every(Boolean)).toBe(true);
      // The bucket is empty: notifications are refused, a request from the server and responses pass.
      expect(throttle.admit(notification)).toBe(false);
      expect(throttle.admit(notification)).toBe(false);
      expect(throttle.admit(request)).toBe(true);
      expect(throttle.admit(response)).toBe(true);
      expect(throttle.throttled).toBe(true);
      await until(() => !throttle.throttled, 15_000);
      // Both refusals were counted, in one episode.
      expect(episodes).toEqual(['start:rate', 'end:rate:2']);

      backedUp = true;
      expect(throttle.admit(notification)).toBe(false);
      expect(throttle.admit(request)).toBe(true);
      expect(episodes.at(-1)).toBe('start:views_backed_up');
    } finally {
      throttle.dispose();
    }
  });
});
