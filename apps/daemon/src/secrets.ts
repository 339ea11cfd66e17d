/**
 * The daemon's last line of defence for "never log or return an env value, header or token". Each
 * secret belongs to an owner, and each owner's secrets are scrubbed only where they belong:
 *
 * - A server's own env and header values are scrubbed from what that server returns by its
 *   connection (the actor, per entry), not here: another tenant's answers are never rewritten
 *   because somebody configured or injected a value that happens to appear in them.
 * - The daemon's credentials (the operator token, the client tokens, OAuth tokens and client
 *   secrets) are scrubbed from every answer, event and log line: the daemon chose them or an
 *   authorization server the operator configured issued them, never a tenant.
 * - Log lines (the operator's) are scrubbed of every secret the daemon holds now: credentials,
 *   configured servers' secrets, and each session's injected secrets, which leave with the
 *   session (`drop`).
 *
 * Scrubbing always works on values, never on serialized text or keys (see
 * `@mcpool/protocol/secrets`): whatever a secret holds, JSON stays valid and every field stays.
 * The first lines are not putting secrets there at all (serializers, no config echo) and pino's
 * `redact` paths.
 */
import type { ServerConfig } from '@mcpool/protocol';
import { MIN_SECRET_LENGTH, SecretSet, classifySecret, secretsOfConfig, type Secret } from '@mcpool/protocol/secrets';

export { MIN_SECRET_LENGTH };

export class SecretRedactor {
  /** The daemon's credentials, by owner (`operator`, `clients`, `oauth:<server>`…): answers and logs. */
  readonly #credentials = new Map<string, Secret[]>();
  /** Server secrets, by owner (`config`, `session:<id>`): log lines only. */
  readonly #servers = new Map<string, Secret[]>();
  #answers: SecretSet = SecretSet.EMPTY;
  #lines: SecretSet = SecretSet.EMPTY;

  /**
   * Sets the credentials `owner` holds (replacing what it held): a token, a client secret. A
   * credential is a secret whatever its name; under the length rule, only a short one is left out.
   */
  setCredentials(owner: string, values: readonly (string | undefined)[]): void {
    const secrets: Secret[] = [];
    for (const value of values) {
      const secret = classifySecret('token', value);
      if (secret !== undefined && secret !== 'too-short') secrets.push(secret);
    }
    this.#credentials.set(owner, secrets);
    this.#rebuild();
  }

  /**
   * Sets the server configs `owner` holds (replacing what it held): their secrets are kept out of
   * log lines. Returns the names of secret-named values too short to scrub, for a warning.
   */
  setServers(owner: string, configs: Iterable<ServerConfig>): string[] {
    const secrets: Secret[] = [];
    const unprotected: string[] = [];
    for (const config of configs) {
      const found = secretsOfConfig(config);
      secrets.push(...found.secrets);
      unprotected.push(...found.unprotected);
    }
    if (secrets.length === 0) this.#servers.delete(owner);
    else this.#servers.set(owner, secrets);
    this.#rebuild();
    return unprotected;
  }

  /** Forgets every secret `owner` held (a session that ended, a grant revoked). */
  drop(owner: string): void {
    const had = this.#servers.delete(owner) || this.#credentials.delete(owner);
    if (had) this.#rebuild();
  }

  /** How many secrets log lines are scrubbed of now (a churn test watches it come back down). */
  get size(): number {
    return this.#lines.size;
  }

  /** An answer or event (a JSON value) scrubbed of the daemon's credentials: values only. */
  scrubAnswer<T>(value: T): T {
    return this.#answers.scrubValue(value);
  }

  /** `JSON.stringify` of an answer scrubbed of the daemon's credentials (serialized once when none is in it). */
  answerJson(value: unknown): string {
    return this.#answers.stringify(value);
  }

  /**
   * A serialized answer body (what a route sent): a JSON body is scrubbed as a value, so it stays
   * the same JSON; any other text (metrics, HTML) as text.
   */
  scrubBody(body: string): string {
    return scrubSerialized(this.#answers, body);
  }

  /** A plain text line (a server's stderr) scrubbed of the daemon's credentials. */
  scrubText(text: string): string {
    return this.#answers.scrubText(text);
  }

  /** A log line (pino's JSON, or pretty text) scrubbed of every secret the daemon holds now. */
  scrubLine(line: string): string {
    return scrubSerialized(this.#lines, line);
  }

  #rebuild(): void {
    const credentials = [...this.#credentials.values()].flat();
    this.#answers = new SecretSet(credentials);
    this.#lines = new SecretSet([...credentials, ...[...this.#servers.values()].flat()]);
  }
}

/** `text` scrubbed of `secrets`: as a JSON value when it is one (a trailing newline kept), else as text. */
function scrubSerialized(secrets: SecretSet, text: string): string {
  if (!secrets.mayOccurIn(text)) return text;
  const newline = text.endsWith('\n') ? '\n' : '';
  const body = newline ? text.slice(0, -1) : text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return secrets.scrubText(text);
  }
  return JSON.stringify(secrets.scrubValue(parsed)) + newline;
}
