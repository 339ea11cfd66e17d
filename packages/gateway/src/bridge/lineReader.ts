/**
 * Newline-delimited input (the MCP stdio framing): one JSON-RPC message per line, a trailing `\r` stripped. Unlike
 * the SDK's `ReadBuffer` it hands over the raw text (the bridge relays it as written, without a
 * zod pass), scans each byte once, and a line over the cap is dropped alone instead of closing
 * the stream.
 */

/** @default 32 MiB: far above any body the daemon accepts. */
export const MAX_LINE_BYTES = 32 * 1024 * 1024;

export class LineReader {
  readonly #onLine: (line: string) => void;
  readonly #onOversize: (bytes: number) => void;
  readonly #maxBytes: number;
  #parts: Buffer[] = [];
  #size = 0;
  /** Inside an oversized line: skip to its end. */
  #skipping = false;

  constructor(onLine: (line: string) => void, onOversize: (bytes: number) => void, maxBytes = MAX_LINE_BYTES) {
    this.#onLine = onLine;
    this.#onOversize = onOversize;
    this.#maxBytes = maxBytes;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!this.#skipping) {
        this.#parts.push(chunk.subarray(start, end));
        this.#size += end - start;
        if (this.#size > this.#maxBytes) {
          this.#onOversize(this.#size);
          this.#parts = [];
          this.#size = 0;
          this.#skipping = true;
        }
      }
      if (newline === -1) break;
      if (this.#skipping) this.#skipping = false;
      else this.#flush();
      start = newline + 1;
    }
  }

  /** The input ended: a last line without its newline still counts. */
  end(): void {
    if (!this.#skipping && this.#size > 0) this.#flush();
    this.#parts = [];
    this.#size = 0;
  }

  #flush(): void {
    const line = (this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts, this.#size)).toString('utf8').replace(/\r$/, '');
    this.#parts = [];
    this.#size = 0;
    this.#onLine(line);
  }
}
