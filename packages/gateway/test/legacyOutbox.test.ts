/**
 * The per-session outbox against a real HTTP response whose client stops reading: while the
 * response is full, notifications wait, bounded by count and by the bytes of their JSON (the
 * oldest dropped), and once the client reads again the drops are reported in one burst.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SESSION_QUEUE_BOUND, SESSION_QUEUE_BYTES, SessionOutbox } from '../src/legacy/outbox.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A response on 127.0.0.1 and the client's side of it, paused: nothing is read until it resumes. */
async function stalledResponse(): Promise<{ res: ServerResponse; client: IncomingMessage }> {
  let res!: ServerResponse;
  const opened = new Promise<void>((resolve) => {
    server = createServer((_req, response) => {
      res = response;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.flushHeaders();
      resolve();
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server!.address() as AddressInfo;
  const client = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/' }, (incoming) => {
      incoming.pause();
      resolve(incoming);
    });
    req.once('error', reject);
    req.end();
  });
  await opened;
  return { res, client };
}

describe('SessionOutbox', () => {
  it('holds at most its byte bound of notifications for a client that stops reading, drops the oldest, and reports them once it reads', async () => {
    const { res, client } = await stalledResponse();
    const reports: { dropped: number; coalesced: number }[] = [];
    const outbox = new SessionOutbox({ onStall: () => undefined, onBurstEnd: (report) => reports.push(report) });
    outbox.track(res);
    const big = 'x'.repeat(20_000);
    const push = (n: number): void => {
      const message = { n, big };
      outbox.push(undefined, () => void res.write(`data: ${JSON.stringify(message)}\n\n`), message);
    };
    // Fill the socket until the response needs a drain (bounded: a loopback socket takes a few MB).
    let n = 0;
    while (n < 2000 && !res.writableNeedDrain) push(n++);
    expect(res.writableNeedDrain).toBe(true);
    const HELD = 200;
    for (let i = 0; i < HELD; i++) push(n++);
    // Far below the count bound: only the bytes make it drop.
    expect(HELD).toBeLessThan(SESSION_QUEUE_BOUND);
    const kept = outbox.backlog;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(Math.ceil(SESSION_QUEUE_BYTES / big.length));

    client.resume();
    for (let i = 0; i < 200 && reports.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(reports).toEqual([{ dropped: HELD - kept, coalesced: 0 }]);
    expect(outbox.backlog).toBe(0);
    outbox.close();
  });
});
