/**
 * What can be told of a JSON-RPC message that was dropped for its size, from the first and last
 * bytes its line reader kept: whether it answers one of our requests or is the server's own
 * (a request or a notification), and its `id`.
 *
 * Serializers put `id` at either end in practice: `{"jsonrpc","id","result"…}` (Python's pydantic,
 * the SDK v2, hand-written servers) or `{"result"…,"jsonrpc","id"}` (the TypeScript SDK v1, which
 * builds its answers as `{ result, jsonrpc, id }`). Only a key of the top-level object counts:
 * the head is scanned with its nesting depth, and the tail only where the object's closing brace
 * ends the line right after the id.
 */
import type { OversizedLine } from '@mcpool/protocol/lineReader';
import type { OversizedMessage } from './upstreamTransport.js';

/** A JSON number or string, as an id is written. */
const ID_VALUE = String.raw`(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")`;
/** `"id": <value>` right after the key's closing quote. */
const ID_AFTER_KEY = new RegExp(String.raw`^\s*:\s*${ID_VALUE}`);
/** `, "id": <value> }` closing the top-level object at the very end of the line. */
const ID_AT_END = new RegExp(String.raw`[{,]\s*"id"\s*:\s*${ID_VALUE}\s*}\s*$`);

export function describeOversized(line: OversizedLine, limit: number): OversizedMessage {
  const head = scanHead(line.head);
  const id = head.id ?? idAtEnd(line.tail);
  return { bytes: line.bytes, limit, kind: head.kind, ...(id === undefined ? {} : { id }) };
}

/** The kind and id that the top-level keys within `head` tell. */
function scanHead(head: string): { kind: OversizedMessage['kind']; id?: string | number } {
  let kind: OversizedMessage['kind'] = 'unknown';
  let id: string | number | undefined;
  let depth = 0;
  let expectKey = false;
  const start = head.search(/\S/);
  if (start === -1 || head[start] !== '{') return { kind };
  for (let i = start; i < head.length; i++) {
    const char = head[i]!;
    if (char === '"') {
      const end = stringEnd(head, i);
      if (end === -1) break;
      if (depth === 1 && expectKey) {
        const key = head.slice(i + 1, end);
        expectKey = false;
        if (kind === 'unknown' && (key === 'result' || key === 'error')) kind = 'answer';
        else if (kind === 'unknown' && (key === 'method' || key === 'params')) kind = 'server';
        else if (key === 'id') id = parseId(ID_AFTER_KEY.exec(head.slice(end + 1))?.[1]);
      }
      i = end;
    } else if (char === '{' || char === '[') {
      depth++;
      expectKey = depth === 1 && char === '{';
    } else if (char === '}' || char === ']') {
      depth--;
    } else if (char === ',' && depth === 1) {
      expectKey = true;
    }
    // The top-level object closed: nothing after it is part of the message.
    if (depth === 0) break;
  }
  return id === undefined ? { kind } : { kind, id };
}

/** The index of the quote that closes the string opened at `start`, or -1 when the text ends first. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  return -1;
}

function idAtEnd(tail: string): string | number | undefined {
  return parseId(ID_AT_END.exec(tail)?.[1]);
}

function parseId(token: string | undefined): string | number | undefined {
  if (token === undefined) return undefined;
  try {
    const value = JSON.parse(token) as unknown;
    return typeof value === 'string' || typeof value === 'number' ? value : undefined;
  } catch {
    return undefined;
  }
}
