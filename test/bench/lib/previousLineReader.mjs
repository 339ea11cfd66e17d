// The actor's stdio line reader before the shared one (`@mcpool/protocol/lineReader`), kept here
// only as the baseline the isolation section measures it against: on every `next()` it joins
// every pending chunk and scans the whole buffer from its start, so a line of N bytes read in
// chunks of c bytes costs about N²/2c bytes of copying and scanning. Not used anywhere else.
export class PreviousLineReader {
  #chunks = [];
  #pending = 0;

  append(chunk) {
    this.#chunks.push(chunk);
    this.#pending += chunk.length;
  }

  next() {
    if (this.#pending === 0) return undefined;
    let buffer = this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks, this.#pending);
    const end = buffer.indexOf(0x0a);
    if (end === -1) {
      this.#chunks = [buffer];
      return undefined;
    }
    const line = buffer.toString('utf8', 0, end > 0 && buffer[end - 1] === 0x0d ? end - 1 : end);
    buffer = buffer.subarray(end + 1);
    this.#chunks = buffer.length > 0 ? [buffer] : [];
    this.#pending = buffer.length;
    return line;
  }
}
