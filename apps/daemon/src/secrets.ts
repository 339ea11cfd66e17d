/**
 * The last line of defence for "never log or return an env value, header or token": every secret
 * the daemon knows (config env values and headers, OAuth client secrets, tokens, injected session
 * secrets) is registered here, and every log line, response body and event is scrubbed of them.
 * The first lines are not putting secrets there at all (serializers, no config echo) and pino's
 * `redact` paths.
 */
import type { ServerConfig } from '@mcpool/protocol';

/** Shorter values are left alone: "1", "true" or "info" are not secrets, and scrubbing them would garble every line. */
export const MIN_SECRET_LENGTH = 8;
const CENSOR = '[redacted]';

export class SecretRedactor {
  #secrets: string[] = [];
  readonly #known = new Set<string>();

  /** Registers a secret (and its JSON-escaped spelling, which is what appears in a JSON body). */
  add(value: string | undefined): void {
    if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) return;
    for (const form of [value, JSON.stringify(value).slice(1, -1)]) {
      if (this.#known.has(form)) continue;
      this.#known.add(form);
      this.#secrets.push(form);
    }
    // Longest first, so a secret containing another is replaced whole.
    this.#secrets.sort((a, b) => b.length - a.length);
  }

  /** Registers the env values, header values and OAuth client secret of a server config. */
  addServerConfig(config: ServerConfig): void {
    for (const value of Object.values(config.env ?? {})) this.add(value);
    for (const value of Object.values(config.headers ?? {})) this.add(value);
    this.add(config.oauth?.clientSecret);
  }

  get size(): number {
    return this.#secrets.length;
  }

  /** `text` with every registered secret replaced by `[redacted]`. */
  scrub(text: string): string {
    let out = text;
    for (const secret of this.#secrets) if (out.includes(secret)) out = out.split(secret).join(CENSOR);
    return out;
  }

  /**
   * A JSON-like value (a JSON-RPC message) with every registered secret replaced in its strings,
   * keys included. Scrubbing the parsed value, not its serialized text, can never break the
   * JSON; what holds no secret is returned as is (the same object), so the common case copies
   * nothing.
   */
  scrubValue<T>(value: T): T {
    if (this.#secrets.length === 0) return value;
    return this.#scrubDeep(value, 0) as T;
  }

  #scrubDeep(value: unknown, depth: number): unknown {
    if (typeof value === 'string') return this.scrub(value);
    // Deeper than any MCP message: censor rather than recurse without bound.
    if (depth > 64) return CENSOR;
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      value.forEach((item, i) => {
        const scrubbed = this.#scrubDeep(item, depth + 1);
        if (scrubbed !== item) (out ??= [...(value as unknown[])])[i] = scrubbed;
      });
      return out ?? value;
    }
    if (typeof value !== 'object' || value === null) return value;
    let out: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(value)) {
      const cleanKey = this.scrub(key);
      const scrubbed = this.#scrubDeep(item, depth + 1);
      if (scrubbed === item && cleanKey === key) continue;
      out ??= { ...(value as Record<string, unknown>) };
      if (cleanKey !== key) delete out[key];
      out[cleanKey] = scrubbed;
    }
    return out ?? value;
  }
}
