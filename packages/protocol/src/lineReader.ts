/**
 * Newline-delimited input, the MCP stdio framing: one JSON-RPC message per line, no embedded
 * newline (JSON.stringify escapes them), an optional `\r` before the `\n` tolerated.
 *
 * Linear in what it reads: each byte is scanned once, as it arrives, and a line is joined once,
 * when its newline comes. A line longer than `maxLineBytes` is not held past the cap: it is
 * discarded as it streams, only its first and last bytes kept (where a JSON-RPC message's `id`
 * is found in practice), and reading picks up at the next newline. Chunks stay buffers until a
 * line is read, so a multi-byte character split across chunks decodes whole.
 *
 * Pull-based: {@link LineReader.next} hands out one line at a time, so a reader that must stop
 * between two lines of one chunk (a paused source) leaves the rest where it is.
 */

/** @default the cap on one message of a stdio server: 64 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

/** How many bytes of each end of an oversized line are kept. */
const EDGE_BYTES = 256;

/** A line longer than the cap, dropped unread but for its two ends. */
export interface OversizedLine {
  /** How long the line was (without its newline). */
  readonly bytes: number;
  /** Its first bytes, decoded (at most 256). */
  readonly head: string;
  /** Its last bytes, decoded (at most 256; `\r` kept). */
  readonly tail: string;
}

export interface LineReaderOptions {
  /** The longest line handed out, in bytes; a longer one comes out as an {@link OversizedLine}. @default DEFAULT_MAX_LINE_BYTES */
  maxLineBytes?: number | undefined;
}

export class LineReader {
  readonly #max: number;
  /** The parts of the line being read, and their size. */
  #parts: Buffer[] = [];
  #size = 0;
  /** Set while an oversized line streams past: its size so far and its two ends. */
  #skipping: { bytes: number; head: Buffer; tail: Buffer } | undefined;
  /** Lines read and not yet handed out, oldest from `#readAt`. */
  #ready: (Buffer | OversizedLine)[] = [];
  #readAt = 0;

  constructor(options: LineReaderOptions = {}) {
    const max = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxLineBytes must be a positive integer, got ${max}`);
    this.#max = max;
  }

  /** Bytes held: the partial line and the lines not handed out yet. */
  get buffered(): number {
    let bytes = this.#size;
    for (let i = this.#readAt; i < this.#ready.length; i++) {
      const item = this.#ready[i]!;
      if (Buffer.isBuffer(item)) bytes += item.length;
    }
    return bytes;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      if (end > start) this.#take(chunk.subarray(start, end));
      if (newline === -1) return;
      this.#complete();
      start = newline + 1;
    }
  }

  /** The input ended: a last line without its newline still counts. */
  end(): void {
    if (this.#size > 0 || this.#skipping !== undefined) this.#complete();
  }

  /**
   * The next line (decoded, without its terminator), an {@link OversizedLine} in its place, or
   * undefined until one is complete. Empty lines are skipped.
   */
  next(): string | OversizedLine | undefined {
    while (this.#readAt < this.#ready.length) {
      const item = this.#ready[this.#readAt]!;
      this.#ready[this.#readAt++] = undefined!;
      if (this.#readAt === this.#ready.length) {
        this.#ready = [];
        this.#readAt = 0;
      }
      if (!Buffer.isBuffer(item)) return item;
      const end = item[item.length - 1] === 0x0d ? item.length - 1 : item.length;
      if (end > 0) return item.toString('utf8', 0, end);
    }
    return undefined;
  }

  #take(part: Buffer): void {
    const skipping = this.#skipping;
    if (skipping !== undefined) {
      skipping.bytes += part.length;
      skipping.tail = lastBytes(skipping.tail, part);
      return;
    }
    this.#parts.push(part);
    this.#size += part.length;
    if (this.#size <= this.#max) return;
    // Too long: keep its ends, let go of the rest, and discard what follows up to the newline.
    let head: Buffer = Buffer.alloc(0);
    for (const held of this.#parts) {
      if (head.length >= EDGE_BYTES) break;
      head = Buffer.concat([head, held.subarray(0, EDGE_BYTES - head.length)]);
    }
    let tail: Buffer = Buffer.alloc(0);
    for (const held of this.#parts.slice(-EDGE_BYTES)) tail = lastBytes(tail, held);
    this.#skipping = { bytes: this.#size, head, tail };
    this.#parts = [];
    this.#size = 0;
  }

  #complete(): void {
    const skipping = this.#skipping;
    if (skipping !== undefined) {
      this.#skipping = undefined;
      this.#ready.push({ bytes: skipping.bytes, head: skipping.head.toString('utf8'), tail: skipping.tail.toString('utf8') });
      return;
    }
    if (this.#size === 0) return;
    // One copy per line, made once it is whole; a line inside one chunk is not copied at all.
    this.#ready.push(this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts, this.#size));
    this.#parts = [];
    this.#size = 0;
  }
}

/** The last {@link EDGE_BYTES} of `kept` followed by `part`, as a buffer of its own. */
function lastBytes(kept: Buffer, part: Buffer): Buffer {
  if (part.length >= EDGE_BYTES) return Buffer.from(part.subarray(part.length - EDGE_BYTES));
  return Buffer.concat([kept, part]).subarray(-EDGE_BYTES);
}
