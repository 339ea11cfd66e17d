/**
 * The SSE parser follows the WHATWG rules: any line ending, lines split across chunks, comments,
 * multi-line data, ids that persist, `retry:`.
 */
import { describe, expect, it } from 'vitest';
// Not public: the client's own stream parser, tested as a unit.
import { SseParser, type SseMessage } from '../src/sse.js';

function parse(chunks: string[], lastEventId?: string): { messages: SseMessage[]; retries: number[]; comments: string[] } {
  const messages: SseMessage[] = [];
  const retries: number[] = [];
  const comments: string[] = [];
  const parser = new SseParser({ onMessage: (m) => messages.push(m), onRetry: (ms) => retries.push(ms), onComment: (c) => comments.push(c) }, lastEventId);
  for (const chunk of chunks) parser.push(chunk);
  return { messages, retries, comments };
}

describe('SseParser', () => {
  it('dispatches a message on a blank line, with event, data and id', () => {
    const { messages } = parse(['id: a-1\nevent: entry_status\ndata: {"x":1}\n\n']);
    expect(messages).toEqual([{ event: 'entry_status', data: '{"x":1}', lastEventId: 'a-1', hasId: true }]);
  });

  it('joins multi-line data, defaults the event name to message, and keeps the last id across messages', () => {
    const { messages } = parse(['id: 7\ndata: one\ndata: two\n\ndata: three\n\n']);
    expect(messages).toEqual([
      { event: 'message', data: 'one\ntwo', lastEventId: '7', hasId: true },
      { event: 'message', data: 'three', lastEventId: '7', hasId: false },
    ]);
  });

  it('handles CRLF, CR and LF, also when a line or a CRLF is split across chunks', () => {
    const { messages } = parse(['id: 1\r', '\ndata: a', 'b\r\n\r', '\nda', 'ta: c\r\rdata: d\n', '\n']);
    expect(messages.map((m) => m.data)).toEqual(['ab', 'c', 'd']);
    expect(messages.map((m) => m.lastEventId)).toEqual(['1', '1', '1']);
  });

  it('reports comments (heartbeats) and retry values, ignores unknown fields and bad retry', () => {
    const { messages, retries, comments } = parse([': heartbeat\nretry: 2500\nretry: soon\nfoo: bar\n\n: x\n']);
    expect(messages).toEqual([]);
    expect(retries).toEqual([2500]);
    expect(comments).toEqual(['heartbeat', 'x']);
  });

  it('starts from the given last event id and ignores ids containing NUL', () => {
    const { messages } = parse(['id: bad\0id\ndata: x\n\n'], 'e-3');
    expect(messages).toEqual([{ event: 'message', data: 'x', lastEventId: 'e-3', hasId: false }]);
  });

  it('strips one leading space of a value only, and takes a line without colon as a field name', () => {
    const { messages } = parse(['data:  two spaces\ndata\n\n']);
    expect(messages[0]!.data).toBe(' two spaces\n');
  });
});
