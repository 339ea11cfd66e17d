/**
 * The one line reader of every stdio path (the actor's server transport, the bridge's stdin):
 * lines across chunks, `\r\n`, characters split between chunks, one line at a time, and a line
 * over the cap dropped as it streams — never held past the cap — with reading resumed at the next
 * line and the dropped line's two ends kept.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_LINE_BYTES, LineReader, type OversizedLine } from '@mcpool/protocol/lineReader';

/** Everything the reader has ready, in order. */
function drain(reader: LineReader): (string | OversizedLine)[] {
  const out: (string | OversizedLine)[] = [];
  for (let item = reader.next(); item !== undefined; item = reader.next()) out.push(item);
  return out;
}

describe('LineReader', () => {
  it('splits lines across chunks, strips one \\r before \\n, and skips empty lines', () => {
    const reader = new LineReader();
    reader.push(Buffer.from('{"a":1}\n{"b"'));
    expect(drain(reader)).toEqual(['{"a":1}']);
    reader.push(Buffer.from(':2}\r\n\n\r\n{"c":3}'));
    expect(drain(reader)).toEqual(['{"b":2}']);
    reader.push(Buffer.from('\n'));
    expect(drain(reader)).toEqual(['{"c":3}']);
  });

  it('hands out one line at a time: what is not taken waits', () => {
    const reader = new LineReader();
    reader.push(Buffer.from('one\ntwo\nthree\npart'));
    expect(reader.next()).toBe('one');
    expect(reader.buffered).toBe('two'.length + 'three'.length + 'part'.length);
    expect(reader.next()).toBe('two');
    expect(reader.next()).toBe('three');
    expect(reader.next()).toBeUndefined();
    expect(reader.buffered).toBe(4);
  });

  it('decodes a character split between chunks whole', () => {
    const reader = new LineReader();
    const bytes = Buffer.from('"€ and 😀"\n');
    for (const byte of bytes) reader.push(Buffer.from([byte]));
    expect(drain(reader)).toEqual(['"€ and 😀"']);
  });

  it('counts a last line without its newline once the input ends', () => {
    const reader = new LineReader();
    reader.push(Buffer.from('done\nlast'));
    expect(drain(reader)).toEqual(['done']);
    reader.end();
    expect(drain(reader)).toEqual(['last']);
  });

  it('takes a line of exactly the cap, and drops one byte more', () => {
    const reader = new LineReader({ maxLineBytes: 8 });
    reader.push(Buffer.from('12345678\n123456789\nok\n'));
    expect(drain(reader)).toEqual(['12345678', { bytes: 9, head: '123456789', tail: '123456789' }, 'ok']);
  });

  it('drops a line over the cap as it streams: holds no more than the cap and a chunk, keeps its two ends, reads the next line whole', () => {
    const cap = 1024 * 1024;
    const reader = new LineReader({ maxLineBytes: cap });
    const chunk = Buffer.alloc(64 * 1024, 0x78);
    reader.push(Buffer.from('{"result":{"text":"'));
    let most = 0;
    // 80 MiB of one line, in 64 KiB chunks.
    for (let i = 0; i < 1280; i++) {
      reader.push(chunk);
      most = Math.max(most, reader.buffered);
    }
    reader.push(Buffer.from('"},"jsonrpc":"2.0","id":42}\r\n{"jsonrpc":"2.0","id":43,"result":{}}\n'));
    expect(most).toBeLessThanOrEqual(cap + chunk.length);
    const [dropped, next] = drain(reader) as [OversizedLine, string];
    expect(dropped.bytes).toBe(1280 * chunk.length + '{"result":{"text":"'.length + '"},"jsonrpc":"2.0","id":42}\r'.length);
    expect(dropped.head).toMatch(/^\{"result":\{"text":"x+$/);
    expect(dropped.head.length).toBe(256);
    expect(dropped.tail).toMatch(/x+"\},"jsonrpc":"2\.0","id":42\}\r$/);
    expect(dropped.tail.length).toBe(256);
    expect(next).toBe('{"jsonrpc":"2.0","id":43,"result":{}}');
    expect(reader.buffered).toBe(0);
  });

  it('keeps the ends of an oversized line that came in many small chunks', () => {
    const reader = new LineReader({ maxLineBytes: 1000 });
    const text = `{"id":"start",${'"k":1,'.repeat(400)}"end":"here"}`;
    for (let i = 0; i < text.length; i += 7) reader.push(Buffer.from(text.slice(i, i + 7)));
    reader.push(Buffer.from('\n'));
    const [dropped] = drain(reader) as [OversizedLine];
    expect(dropped).toEqual({ bytes: text.length, head: text.slice(0, 256), tail: text.slice(-256) });
  });

  it('refuses a cap that is not a positive integer, and defaults to 64 MiB', () => {
    expect(() => new LineReader({ maxLineBytes: 0 })).toThrow(RangeError);
    expect(() => new LineReader({ maxLineBytes: 1.5 })).toThrow(RangeError);
    expect(DEFAULT_MAX_LINE_BYTES).toBe(64 * 1024 * 1024);
  });
});
