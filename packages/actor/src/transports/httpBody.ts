/**
 * Reading HTTP bodies for the MCP transports: a bounded text (error bodies), a whole JSON body,
 * and an SSE stream (parsed by `eventsource-parser`). Each JSON-RPC message is `JSON.parse`d once
 * and checked only for being an object; no schema validation happens here.
 */
import type { EventSourceMessage } from 'eventsource-parser';
import type { JsonRpcMessage } from './upstreamTransport.js';

/** How much of an error body is kept: enough for a JSON-RPC error or an HTML error page's start. */
export const ERROR_BODY_LIMIT = 8192;

/** Reads at most `limit` bytes of `body` as UTF-8, then stops reading (the rest is discarded). */
export async function readBoundedText(body: AsyncIterable<Uint8Array>, limit = ERROR_BODY_LIMIT): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.byteLength;
      if (size >= limit) break;
    }
  } catch {
    // A body cut short still tells what arrived.
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text.length > limit ? text.slice(0, limit) : text;
}

/** Reads the whole body as UTF-8. */
export async function readText(body: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Parses one JSON body or SSE `data` into messages: an object, or (2025-03-26 batches) an array
 * of objects. Throws a SyntaxError for text that is not JSON, a TypeError for JSON that is not.
 */
export function parseMessages(text: string): JsonRpcMessage[] {
  const value: unknown = JSON.parse(text);
  const list = Array.isArray(value) ? value : [value];
  for (const item of list) {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw new TypeError('not a JSON-RPC message');
  }
  return list as JsonRpcMessage[];
}

export interface SseHandlers {
  onEvent(event: EventSourceMessage): void;
  /** The server's `retry:` field, in ms. */
  onRetry?(ms: number): void;
}

/** Feeds `body` through an SSE parser until it ends; throws what the body's iterator throws. */
export async function readSse(body: AsyncIterable<Uint8Array>, handlers: SseHandlers): Promise<void> {
  // Loaded on the first stream: only remote transports import this module, and a
  // thread hosting only stdio servers, on the path of a fresh pool's first acquire, never parses SSE.
  const { createParser } = await import('eventsource-parser');
  const parser = createParser({
    onEvent: (event) => handlers.onEvent(event),
    onRetry: (ms) => handlers.onRetry?.(ms),
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
  }
  const rest = decoder.decode();
  if (rest.length > 0) parser.feed(rest);
}

/** The media type of a Content-Type header, lowercased, without parameters. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
}
