/**
 * Which values of a server config are secrets, and how a value is scrubbed of them. One rule for
 * every place that scrubs (a connection's own answers and stderr, the daemon's answers and log
 * lines):
 *
 * - A value of {@link MIN_SECRET_LENGTH} characters or more is a secret wherever it appears in a
 *   string, unless its name is one of the well-known names that never hold one (`HOME`, `PATH`,
 *   `NODE_ENV`, `LANG`, …: {@link isPublicName}), or it is a filesystem path under a name that
 *   does not say secret (`WORKSPACE=/home/bob/project`).
 * - A shorter value is a secret only when its name says so ({@link isSecretName}: `TOKEN`, `KEY`,
 *   `PIN`, `PASSWORD`, `AUTH`, …), and then it is scrubbed as a whole word only (a 6-digit PIN
 *   never turns "1234567890" into garbage). Under {@link MIN_SHORT_SECRET_LENGTH} characters it
 *   cannot be told from ordinary text at all: it is reported (`unprotected`, by name) so the host
 *   can warn, and left alone.
 * - Any other short value ("1", "true", "info") is not a secret.
 *
 * Scrubbing works on values, never on serialized text or on keys: a JSON value stays the same
 * JSON with some strings changed, whatever the secrets hold (a "secret" spelled `"jsonrpc":"2.0"`
 * or `protocolVersion` can never break a message or remove a field).
 */

/** Values at least this long are secrets wherever they appear. */
export const MIN_SECRET_LENGTH = 8;
/** Secret-named values shorter than this are too short to scrub; they are reported instead. */
export const MIN_SHORT_SECRET_LENGTH = 4;
export const REDACTED = '[redacted]';

/** One secret and how it is matched. */
export interface Secret {
  value: string;
  /** Matched only as a whole word (not inside a longer run of letters, digits or `_`). */
  wholeWord: boolean;
}

/** Env and header names whose values are never secrets, however long. */
const PUBLIC_NAMES = new Set([
  'home', 'path', 'pwd', 'oldpwd', 'user', 'username', 'logname', 'shell', 'lang', 'language', 'term', 'tz', 'tmpdir', 'tmp', 'temp',
  'node_env', 'hostname', 'editor', 'pager', 'display', 'accept', 'accept-language', 'content-type', 'user-agent',
]);
/** Name prefixes of the same kind (locale and XDG directories). */
const PUBLIC_PREFIXES = ['lc_', 'xdg_'];
/** A name part ending in one of these says its value is a secret (`API_KEY`, `SHORTPIN`, `clientSecret`; not `MAX_TOKENS`). */
const SECRET_WORDS = ['TOKEN', 'SECRET', 'PASSWORD', 'PASSWD', 'PASS', 'PASSPHRASE', 'PIN', 'KEY', 'AUTH', 'AUTHORIZATION', 'CREDENTIAL', 'CREDENTIALS', 'COOKIE', 'PRIVATE', 'SIGNATURE'];

/** True for an env or header name whose value is never a secret (`HOME`, `PATH`, `NODE_ENV`, `Accept`…). */
export function isPublicName(name: string): boolean {
  const lower = name.toLowerCase();
  return PUBLIC_NAMES.has(lower) || PUBLIC_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/** True for a name that says its value is a secret (`API_KEY`, `GITHUB_TOKEN`, `PIN`, `Authorization`, `clientSecret`…). */
export function isSecretName(name: string): boolean {
  if (isPublicName(name)) return false;
  const parts = name.split(/[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])/).map((part) => part.toUpperCase());
  return parts.some((part) => SECRET_WORDS.some((word) => part.endsWith(word)));
}

/** What the rule makes of one named value: a secret, too short to protect, or nothing. */
export function classifySecret(name: string, value: unknown): Secret | 'too-short' | undefined {
  if (typeof value !== 'string' || value.length === 0) return undefined;
  // A filesystem path names where something is, not what it is: scrubbing a workspace path would
  // garble every result of a filesystem server. A secret-named one (`KEY_FILE`) is still a secret.
  if (value.length >= MIN_SECRET_LENGTH) return isPublicName(name) || (isPath(value) && !isSecretName(name)) ? undefined : { value, wholeWord: false };
  if (!isSecretName(name)) return undefined;
  return value.length >= MIN_SHORT_SECRET_LENGTH ? { value, wholeWord: true } : 'too-short';
}

/** An absolute POSIX, home-relative or Windows path, with nothing in it but path characters. */
function isPath(value: string): boolean {
  return /^(?:\/|~\/|[A-Za-z]:[\\/])[\w.\-/\\ ]*$/.test(value);
}

/** The secrets of a server config: env values, header values, the OAuth client secret. */
export interface ConfigSecrets {
  secrets: Secret[];
  /** Names (`env.PIN`, `headers.X-Key`) of secret-named values too short to scrub. */
  unprotected: string[];
}

export function secretsOfConfig(config: { env?: Record<string, string> | undefined; headers?: Record<string, string> | undefined; oauth?: { clientSecret?: string | undefined } | undefined }): ConfigSecrets {
  const out: ConfigSecrets = { secrets: [], unprotected: [] };
  const take = (where: string, name: string, value: unknown): void => {
    const found = classifySecret(name, value);
    if (found === 'too-short') out.unprotected.push(`${where}${name}`);
    else if (found !== undefined) out.secrets.push(found);
  };
  for (const [name, value] of Object.entries(config.env ?? {})) take('env.', name, value);
  for (const [name, value] of Object.entries(config.headers ?? {})) {
    take('headers.', name, value);
    // `Authorization: Bearer <token>`: the credential alone is a secret too (a server may echo just it).
    const credential = /^\s*[A-Za-z][\w-]*\s+(\S.*)$/.exec(value)?.[1];
    if (credential !== undefined && name.toLowerCase() === 'authorization') take('headers.', name, credential);
  }
  take('oauth.', 'clientSecret', config.oauth?.clientSecret);
  return out;
}

const WORD = '[A-Za-z0-9_]';

/**
 * A fixed set of secrets. Scrubbing replaces each occurrence by `[redacted]`, longest secret first
 * (a secret holding another is replaced whole).
 */
export class SecretSet {
  static readonly EMPTY = new SecretSet([]);
  readonly #substrings: string[];
  readonly #words: RegExp | undefined;
  readonly #wordList: string[];
  /** Every spelling a secret may take in serialized JSON text (raw and JSON-escaped), for the quick test. */
  readonly #spellings: string[];
  readonly #all: Secret[];

  constructor(secrets: Iterable<Secret>) {
    const substrings = new Set<string>();
    const words = new Set<string>();
    for (const secret of secrets) (secret.wholeWord ? words : substrings).add(secret.value);
    this.#substrings = [...substrings].sort((a, b) => b.length - a.length);
    const wordList = [...words].filter((word) => !substrings.has(word)).sort((a, b) => b.length - a.length);
    this.#wordList = wordList;
    this.#words = wordList.length === 0 ? undefined : new RegExp(`(?<!${WORD})(?:${wordList.map(escapeRegExp).join('|')})(?!${WORD})`, 'g');
    const spellings = new Set<string>();
    for (const value of [...this.#substrings, ...wordList]) {
      spellings.add(value);
      spellings.add(JSON.stringify(value).slice(1, -1));
    }
    this.#spellings = [...spellings];
    this.#all = [...this.#substrings.map((value) => ({ value, wholeWord: false })), ...wordList.map((value) => ({ value, wholeWord: true }))];
  }

  /** The union of several sets. */
  static union(sets: Iterable<SecretSet>): SecretSet {
    const all: Secret[] = [];
    for (const set of sets) all.push(...set.secrets());
    return new SecretSet(all);
  }

  get size(): number {
    return this.#all.length;
  }

  secrets(): Secret[] {
    return [...this.#all];
  }

  /** Whether `text` (plain, or serialized JSON) may hold a secret: a quick test before any scrubbing. */
  mayOccurIn(text: string): boolean {
    for (const spelling of this.#spellings) if (text.includes(spelling)) return true;
    return false;
  }

  /** One string (a value: a line of stderr, an error message, a string inside a message) with every secret replaced. */
  scrubText(text: string): string {
    let out = text;
    for (let i = 0; i < this.#substrings.length; i++) {
      const secret = this.#substrings[i]!;
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    // The regular expression only where a word may be: a miss costs a substring test, nothing more.
    if (this.#words !== undefined && includesAny(out, this.#wordList)) out = out.replace(this.#words, REDACTED);
    return out;
  }

  /**
   * A JSON-like value with every secret replaced in its strings; keys are never touched. What
   * holds no secret is returned as is (the same object), so the common case copies nothing.
   */
  scrubValue<T>(value: T): T {
    if (this.#spellings.length === 0) return value;
    return this.#scrubDeep(value, 0) as T;
  }

  /**
   * A JSON-RPC message with its content (`result`, `error`, `params`) scrubbed; `jsonrpc`, `id`
   * and `method` are the protocol's, never rewritten.
   */
  scrubMessage<T extends { result?: unknown; error?: unknown; params?: unknown }>(message: T): T {
    if (this.#spellings.length === 0) return message;
    let out: T | undefined;
    for (const key of ['result', 'error', 'params'] as const) {
      if (message[key] === undefined) continue;
      const scrubbed = this.#scrubDeep(message[key], 0);
      if (scrubbed !== message[key]) (out ??= { ...message })[key] = scrubbed;
    }
    return out ?? message;
  }

  /** `JSON.stringify(value)` of the scrubbed value; serialized once when no secret can be in it. */
  stringify(value: unknown): string {
    const text = JSON.stringify(value);
    if (text === undefined || !this.mayOccurIn(text)) return text;
    return JSON.stringify(this.scrubValue(value));
  }

  /**
   * Walks without allocating anything until a string changes (indexed loops and `for…in`, not
   * `Object.entries`): every answer of the daemon goes through here, and almost none holds a
   * secret, so the walk must cost no more garbage than the answer's serialization.
   */
  #scrubDeep(value: unknown, depth: number): unknown {
    if (typeof value === 'string') return this.scrubText(value);
    if (typeof value !== 'object' || value === null) return value;
    // Deeper than any MCP message: censor rather than recurse without bound.
    if (depth > 64) return REDACTED;
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const scrubbed = this.#scrubDeep(item, depth + 1);
        if (scrubbed !== item) (out ??= [...(value as unknown[])])[i] = scrubbed;
      }
      return out ?? value;
    }
    const record = value as Record<string, unknown>;
    let out: Record<string, unknown> | undefined;
    for (const key in record) {
      if (!Object.hasOwn(record, key)) continue;
      const item = record[key];
      const scrubbed = this.#scrubDeep(item, depth + 1);
      if (scrubbed === item) continue;
      // defineProperty, not assignment: a key named "__proto__" stays an own data property.
      out ??= { ...record };
      Object.defineProperty(out, key, { value: scrubbed, enumerable: true, writable: true, configurable: true });
    }
    return out ?? value;
  }
}

/** The secrets of a server config, as a set (see {@link secretsOfConfig}). */
export function secretSetOf(config: Parameters<typeof secretsOfConfig>[0]): SecretSet {
  return new SecretSet(secretsOfConfig(config).secrets);
}

function includesAny(text: string, values: readonly string[]): boolean {
  for (let i = 0; i < values.length; i++) if (text.includes(values[i]!)) return true;
  return false;
}

function escapeRegExp(text: string): string {
  return text.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
