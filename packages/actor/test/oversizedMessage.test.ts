/**
 * What the two kept ends of a message dropped for its size tell: an answer or the server's own
 * message, and its id — only a key of the top-level object, never one nested in the result.
 */
import { describe, expect, it } from 'vitest';
import type { OversizedLine } from '@mcpool/protocol/lineReader';
import { describeOversized } from '../src/transports/oversizedMessage.js';

const FILLER = 'x'.repeat(1000);

/** The ends a line reader keeps of `line` (256 characters each; the text here is ASCII). */
function ends(line: string): OversizedLine {
  return { bytes: line.length, head: line.slice(0, 256), tail: line.slice(-256) };
}

const described = (line: string) => describeOversized(ends(line), 100);

describe('describeOversized', () => {
  it('finds the id where the TypeScript SDK v1 writes it (last) and where pydantic writes it (first)', () => {
    expect(described(`{"result":{"content":[{"type":"text","text":"${FILLER}"}]},"jsonrpc":"2.0","id":7}`)).toEqual({ bytes: expect.any(Number), limit: 100, kind: 'answer', id: 7 });
    expect(described(`{"jsonrpc":"2.0","id":"req-7","result":{"text":"${FILLER}"}}`)).toMatchObject({ kind: 'answer', id: 'req-7' });
    expect(described(`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"${FILLER}"}}\r`)).toMatchObject({ kind: 'answer', id: 3 });
  });

  it('never takes an id nested in the result, at either end', () => {
    expect(described(`{"result":{"id":99,"text":"${FILLER}","item":{"id":98}},"jsonrpc":"2.0"}`)).toEqual({ bytes: expect.any(Number), limit: 100, kind: 'answer' });
    expect(described(`{"jsonrpc":"2.0","result":{"text":"${FILLER}","id":5}}`)).toEqual({ bytes: expect.any(Number), limit: 100, kind: 'answer' });
    // A string value that looks like JSON is not a key.
    expect(described(`{"result":{"text":"{\\"id\\":5,${FILLER}\\"id\\":6}"}}`)).toEqual({ bytes: expect.any(Number), limit: 100, kind: 'answer' });
  });

  it('tells a request or notification of the server’s own by its method or params', () => {
    expect(described(`{"method":"sampling/createMessage","params":{"text":"${FILLER}"},"jsonrpc":"2.0","id":4}`)).toMatchObject({ kind: 'server', id: 4 });
    expect(described(`{"jsonrpc":"2.0","id":"s1","method":"elicitation/create","params":{"m":"${FILLER}"}}`)).toMatchObject({ kind: 'server', id: 's1' });
    expect(described(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${FILLER}"}}`)).toEqual({ bytes: expect.any(Number), limit: 100, kind: 'server' });
  });

  it('finds no id at neither end, and knows nothing of a line that is not an object', () => {
    expect(described(`{"jsonrpc":"2.0","result":{"text":"${FILLER}"},"id":5,"note":"x"}`)).toEqual({ bytes: expect.any(Number), limit: 100, kind: 'answer' });
    expect(described(`[{"jsonrpc":"2.0","id":1,"result":"${FILLER}"}]`)).toEqual({ bytes: expect.any(Number), limit: 100, kind: 'unknown' });
    expect(described(`Server started, reading ${FILLER}`)).toEqual({ bytes: expect.any(Number), limit: 100, kind: 'unknown' });
  });
});
