/**
 * Writes a {@link ModernAnswer} on a `node:http` response: a JSON body at once (with its length:
 * no chunked framing for a body written whole), or SSE (`text/event-stream`, unbuffered by
 * proxies) with keep-alive comments on a quiet stream, until the stream ends or the client goes.
 * A client that reads slowly holds the stream (which drops its oldest past its bound), never the
 * host's memory: the writer waits for `drain`.
 */
import type { ServerResponse } from 'node:http';
import { endJson } from '../jsonBody.js';
import type { ModernAnswer } from './answers.js';

export interface WriteModernAnswerOptions {
  /** Applied to a JSON body's text before it is written (a secret scrub). @default none */
  encodeText?(json: string): string;
  /** Applied to each streamed message before it is written. @default none */
  encode?(message: Record<string, unknown>): Record<string, unknown>;
  /** A comment on a quiet stream this often. @default 15000 */
  keepAliveMs?: number;
  /** Aborted when the client went away: a stream stops. */
  signal?: AbortSignal;
}

/** Resolves once the answer is written (a stream: once it ended, or its client went). */
export async function writeModernAnswer(res: ServerResponse, answer: ModernAnswer, options: WriteModernAnswerOptions = {}): Promise<void> {
  if (answer.kind === 'json') {
    if (answer.body === undefined) {
      res.writeHead(answer.status).end();
      return;
    }
    const json = JSON.stringify(answer.body);
    endJson(res, answer.status, options.encodeText === undefined ? json : options.encodeText(json));
    return;
  }
  res.writeHead(answer.status, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), options.keepAliveMs ?? 15_000);
  keepAlive.unref();
  const stop = (): void => answer.stream.end();
  options.signal?.addEventListener('abort', stop, { once: true });
  res.once('close', stop);
  try {
    for await (const message of answer.stream) {
      if (res.destroyed) break;
      const out = options.encode === undefined ? message : options.encode(message);
      if (!res.write(`event: message\ndata: ${JSON.stringify(out)}\n\n`)) {
        await new Promise<void>((resolve) => {
          const done = (): void => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.once('drain', done);
          res.once('close', done);
        });
      }
    }
  } finally {
    clearInterval(keepAlive);
    options.signal?.removeEventListener('abort', stop);
    res.off('close', stop);
    if (!res.writableEnded) res.end();
  }
}
