/**
 * Remote servers behind authorization: where an entry's token comes from, and the gates that
 * keep a key whose server answered HTTP 401 from being spawned again until the host has a token.
 * A 401 is a state, not a failure: the key is `auth_required` (acquires are refused with
 * `MCPOOL_AUTH_REQUIRED`, nothing reaches the server) until the host calls `authorized`. A 403
 * with a challenge (a scope the token lacks) closes no gate: that request fails, the token serves on.
 *
 * The gates map holds one record per authorization key (a server, or a server and principal)
 * that answered 401; `authorized(name)` removes that server's.
 */
import { ErrorCode, PoolError, parseBearerChallenge, type Logger, type PoolEvent, type ServerConfig } from '@mcpool/protocol';
import type { Placement, PoolEntry } from './entry.js';
import type { CredentialTarget, UpstreamCredentials } from './poolTypes.js';

/** A key whose server answered HTTP 401: refused without a spawn until the host has a token. */
export interface AuthGate {
  serverName: string;
  entryIndex: number;
  placement: Placement;
  challenge: string | undefined;
}

export class AuthGates {
  readonly #credentials: UpstreamCredentials | undefined;
  readonly #logger: Logger;
  readonly #emit: (event: PoolEvent) => void;
  readonly #gates = new Map<string, AuthGate>();

  constructor(credentials: UpstreamCredentials | undefined, logger: Logger, emit: (event: PoolEvent) => void) {
    this.#credentials = credentials;
    this.#logger = logger;
    this.#emit = emit;
  }

  /** Remote servers without a configured `Authorization` header take their token from the host's credentials. */
  usesCredentials(config: ServerConfig): boolean {
    if (this.#credentials === undefined || (config.transport !== 'http' && config.transport !== 'sse') || config.oauth?.enabled === false) return false;
    return !Object.keys(config.headers ?? {}).some((header) => header.toLowerCase() === 'authorization');
  }

  /** Whether `authKey` waits for authorization. */
  isClosed(authKey: string): boolean {
    return this.#gates.has(authKey);
  }

  /** Every key waiting for authorization (for the snapshot). */
  gates(): IterableIterator<AuthGate> {
    return this.#gates.values();
  }

  /** The token for `entry` now, or undefined when its config does not take one from the host. `signal` is the spawn's deadline. */
  async authorization(entry: PoolEntry, signal: AbortSignal): Promise<string | undefined> {
    if (!this.usesCredentials(entry.config)) return undefined;
    return this.#credentials!.authorization(targetOf(entry), { signal });
  }

  /** The key answers 401 and no token helps: refused without a spawn until `authorized`. */
  close(entry: PoolEntry, challenge: string | undefined): void {
    if (this.#gates.has(entry.key.authKey)) return;
    this.#gates.set(entry.key.authKey, { serverName: entry.serverName, entryIndex: entry.entryIndex, placement: entry.placement, challenge });
    this.#logger.warn({ server: entry.serverName, entryIndex: entry.entryIndex }, `${entry.serverName} requires authorization: nothing is retried until it is authorized`);
    this.#emit({ type: 'authRequired', serverName: entry.serverName, challenge });
  }

  /** The host has a token for `serverName` now: its keys leave `auth_required`. */
  open(serverName: string): void {
    for (const [key, gate] of this.#gates) if (gate.serverName === serverName) this.#gates.delete(key);
  }

  /**
   * A connect met a refused token: a newer token gets one more try (by the acquire); a refusal the
   * host says no authorization can cure fails the connect with that error; else the key waits
   * for authorization.
   */
  async spawnRefused(entry: PoolEntry, failure: PoolError): Promise<PoolError> {
    const challenge = (failure.data as { challenge?: string } | undefined)?.challenge;
    if (this.usesCredentials(entry.config)) {
      const next = await this.#credentials!.refused(targetOf(entry), entry.authorization, challenge).catch((error: unknown) => (incurable(error) ? error : undefined));
      if (next instanceof PoolError) return next;
      if (next !== undefined && next !== entry.authorization) return new PoolError(ErrorCode.AUTH_REQUIRED, `${entry.serverName} refused its token; a refreshed one is ready`, { data: { serverName: entry.serverName } });
    }
    this.close(entry, challenge);
    return authRequiredError(entry.serverName);
  }

  /**
   * A call met HTTP 403 with a challenge: its token lacks a scope. The token still serves every
   * other request, so nothing is gated: a newer token (authorized since) is tried once, else the
   * refused calls fail with what to run (a step-up authorization asks for the missing scope), or
   * with the host's reason no authorization would help.
   */
  async #scopeRefused(entry: PoolEntry, challenge: string | undefined): Promise<void> {
    const sent = entry.authorization;
    let answer: string | PoolError | undefined;
    if (this.usesCredentials(entry.config)) answer = await this.#credentials!.refused(targetOf(entry), sent, challenge).catch((error: unknown) => (incurable(error) ? error : undefined));
    if (typeof answer === 'string' && answer !== sent) {
      entry.authorization = answer;
      await entry.thread.request('setAuthorization', { authorization: answer }).catch(() => undefined);
      return;
    }
    const error = answer instanceof PoolError ? answer : this.usesCredentials(entry.config) ? stepUpError(entry.serverName, challenge) : undefined;
    await entry.thread.request('declineAuthorization', { error: error?.toWire() }).catch(() => undefined);
  }

  /**
   * A call met a refused token. A 403 is a missing scope (above). A 401 (expired or revoked
   * token): refresh once and hand the new token to the actor, else close the gate and fail every
   * live entry on that authorization (`holders`; each holds the same dead token), so every view
   * gets `failed` and what to do.
   */
  callRefused(entry: PoolEntry, challenge: string | undefined, status: 401 | 403 | undefined, holders: () => PoolEntry[], closeEntry: (holder: PoolEntry) => Promise<void>): Promise<void> {
    if (status === 403) {
      entry.authRefusal ??= this.#scopeRefused(entry, challenge).finally(() => (entry.authRefusal = undefined));
      return entry.authRefusal;
    }
    entry.authRefusal ??= (async () => {
      const sent = entry.authorization;
      const next = this.usesCredentials(entry.config) ? await this.#credentials!.refused(targetOf(entry), sent, challenge).catch(() => undefined) : undefined;
      if (next !== undefined && next !== sent) {
        entry.authorization = next;
        await entry.thread.request('setAuthorization', { authorization: next }).catch(() => undefined);
        return;
      }
      if (entry.terminal) return;
      this.close(entry, challenge);
      const error = authRequiredError(entry.serverName).toWire();
      await Promise.all(holders().map((holder) => holder.thread.request('fail', { error }).catch(() => closeEntry(holder))));
    })().finally(() => (entry.authRefusal = undefined));
    return entry.authRefusal;
  }

  /** Hands the current token to each of `live` whose token changed (after the host refreshed it). */
  async refresh(live: PoolEntry[]): Promise<void> {
    await Promise.all(
      live
        .filter((entry) => this.usesCredentials(entry.config))
        .map(async (entry) => {
          const next = await this.#credentials!.authorization(targetOf(entry)).catch(() => undefined);
          if (next === undefined || next === entry.authorization) return;
          entry.authorization = next;
          await entry.thread.request('setAuthorization', { authorization: next }).catch(() => undefined);
        }),
    );
  }
}

function targetOf(entry: PoolEntry): CredentialTarget {
  return { serverName: entry.serverName, config: entry.config, principal: entry.key.principal };
}

/**
 * The error of an acquire that waits for authorization. It names no command: how a host
 * authorizes a server (a CLI, a dashboard, an IDE prompt) is the host's to say.
 */
export function authRequiredError(serverName: string): PoolError {
  return new PoolError(ErrorCode.AUTH_REQUIRED, `${serverName} requires authorization: nothing is sent to it until its host authorizes it`, { data: { serverName } });
}

/**
 * A request refused for a scope its token lacks (HTTP 403): authorizing again (a step-up, which
 * asks for the missing scope) lets it through. Like `authRequiredError` it names no command: how
 * a host authorizes is the host's to say.
 */
function stepUpError(serverName: string, challenge: string | undefined): PoolError {
  // The scope the server named (RFC 6750 §3): what the host's next authorization adds.
  const scope = parseBearerChallenge(challenge)?.scope;
  return new PoolError(ErrorCode.AUTH_REQUIRED, `${serverName} needs more authorization for this request (HTTP 403, a scope its token lacks)`, {
    data: { serverName, status: 403, ...(scope === undefined ? {} : { scope }), ...(challenge === undefined ? {} : { challenge }) },
  });
}

/** The host's word that no authorization would help (see `UpstreamCredentials.refused`). */
function incurable(error: unknown): error is PoolError {
  return error instanceof PoolError && error.code === ErrorCode.AUTH_FAILED;
}
