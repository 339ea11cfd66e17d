/**
 * `GET /workspace/mcp/events`: the event hub as `text/event-stream`. Each event has an `id`
 * (`<epoch>-<seq>`), an `event` name (its `type`) and JSON `data` (the payload plus `at`). A
 * client reconnecting with `Last-Event-ID` first gets what it missed from the hub's buffer, or an
 * `events_lost` event when that cannot be told exactly. A comment line is the heartbeat.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DaemonEventPayload } from '@mcpool/client';
import type { Daemon } from '../daemon.js';
import type { SecretRedactor } from '../secrets.js';

/** The reconnect delay suggested to clients (`retry:`). */
export const SSE_RETRY_MS = 1000;
/** A client this far behind is dropped; it reconnects with Last-Event-ID and catches up. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

export function eventStreamHandler(daemon: Daemon, redactor: SecretRedactor) {
  return function streamEvents(request: FastifyRequest<{ Querystring: { lastEventId?: string } }>, reply: FastifyReply): void {
    const header = request.headers['last-event-id'];
    const lastEventId = (Array.isArray(header) ? header[0] : header) ?? request.query?.lastEventId;
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // A stream owns its connection: when it ends (shutdown, slow reader), the socket goes too.
      connection: 'close',
      'x-accel-buffering': 'no',
    });
    res.write(`retry: ${SSE_RETRY_MS}\n: connected\n\n`);
    let open = true;
    const end = (): void => {
      if (!open) return;
      open = false;
      clearInterval(heartbeat);
      unsubscribe();
      untrack();
      res.end();
    };
    const send = (payload: DaemonEventPayload, id: string | undefined, at: string): void => {
      if (!open) return;
      const data = redactor.answerJson({ ...payload, at });
      const frame = `${id === undefined ? '' : `id: ${id}\n`}event: ${payload.type}\ndata: ${data}\n\n`;
      if (!res.write(frame) && res.writableLength > MAX_BUFFERED_BYTES) end();
    };
    // Replay and subscribe in one synchronous step: no event can fall between them.
    const { events, lost } = daemon.events.since(lastEventId);
    if (lost !== undefined) send({ type: 'events_lost', reason: lost }, undefined, new Date().toISOString());
    for (const event of events) send(event.payload, event.id, event.at);
    const unsubscribe = daemon.events.subscribe((event) => send(event.payload, event.id, event.at));
    const untrack = daemon.trackStream(end);
    const heartbeat = setInterval(() => {
      if (open) res.write(': heartbeat\n\n');
    }, daemon.settings.heartbeatMs);
    heartbeat.unref();
    request.raw.on('close', end);
    res.on('close', end);
  };
}
