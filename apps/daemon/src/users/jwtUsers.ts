/**
 * Signed-in users: the daemon as an OAuth 2.1 resource server. An access token is a JWT from the
 * configured issuer, checked with `jose`: its signature against the issuer's keys (JWKS, fetched
 * and cached; an unknown `kid` fetches them again, at most once per cooldown), `iss`, `aud` (the
 * gateway), `exp` and `nbf` (with a small leeway), and an asymmetric algorithm only.
 *
 * - The principal is the token's subject, as `user:<sub>`: a static client's id never holds a
 *   colon, so no token can speak as the operator or as a configured client, and `per-principal`
 *   servers, upstream grants and session ownership are per user.
 * - Rights: the configured `users.rights` for every user, plus those `users.scopeRights` gives to
 *   a scope the token carries (`scope` string, or `scp` list).
 * - A token refused for itself (expired, another audience or issuer, a bad signature, malformed)
 *   is a {@link UserTokenRefused} (401, with the reason for the challenge); an issuer that does not
 *   answer is `MCPOOL_ISSUER_UNAVAILABLE` (503): the token may be fine.
 * - The issuer's metadata is fetched once (its `jwks_uri`), unless `users.jwksUri` names the keys;
 *   a failed fetch is not remembered, so the next request tries again.
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { ErrorCode, PoolError } from '@mcpool/protocol';
import type { Right } from '@mcpool/client';
import { impliedRights } from '../rights.js';
import type { Principal } from '../auth.js';
import type { UsersSettings } from '../config/teamSettings.js';

/** The prefix of every signed-in user's principal id. */
export const USER_PREFIX = 'user:';

/** True when `principalId` is a signed-in user's. */
export function isUserPrincipal(principalId: string): boolean {
  return principalId.startsWith(USER_PREFIX);
}

/** Why a token was refused, as the `error_description` of the challenge says it. */
export type RefusalReason = 'expired' | 'audience' | 'issuer' | 'signature' | 'malformed' | 'not_yet_valid' | 'no_subject';

const DESCRIPTIONS: Readonly<Record<RefusalReason, string>> = {
  expired: 'the access token has expired',
  audience: 'the access token is not for this resource',
  issuer: 'the access token is not from the configured issuer',
  signature: 'the access token signature does not verify',
  malformed: 'the access token is malformed',
  not_yet_valid: 'the access token is not valid yet',
  no_subject: 'the access token names no subject',
};

/** A token refused for itself: 401, and `reason` for the challenge's `error_description`. */
export class UserTokenRefused extends PoolError {
  override name = 'UserTokenRefused';
  readonly reason: RefusalReason;

  constructor(reason: RefusalReason) {
    super(ErrorCode.UNAUTHORIZED, DESCRIPTIONS[reason], { data: { reason } });
    this.reason = reason;
  }
}

/** A compact JWS: three base64url parts (what is worth checking as a JWT at all). */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]+$/;

export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

/** Longest `sub` taken as a principal id (ids are logged and keyed on). */
const MAX_SUBJECT_LENGTH = 256;

export interface JwtUsersOptions {
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** How long one fetch of the issuer's metadata or keys may take. @default 5000 */
  timeoutMs?: number;
}

export class JwtUsers {
  readonly #settings: UsersSettings;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  #keys: Promise<JWTVerifyGetKey> | undefined;

  constructor(settings: UsersSettings, options: JwtUsersOptions = {}) {
    this.#settings = settings;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? 5000;
  }

  get settings(): Readonly<UsersSettings> {
    return this.#settings;
  }

  /**
   * The user `token` signs in, with their rights. `audiences` are the resource identifiers the
   * token may be for (the gateway's, and its per-server endpoints).
   *
   * @throws UserTokenRefused for a token refused for itself; PoolError ISSUER_UNAVAILABLE when the issuer's keys cannot be had.
   */
  async identify(token: string, audiences: readonly string[]): Promise<Principal> {
    if (!looksLikeJwt(token)) throw new UserTokenRefused('malformed');
    const keys = await this.#keySet();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.#settings.issuer,
        audience: [...audiences],
        algorithms: this.#settings.algorithms,
        clockTolerance: this.#settings.clockToleranceSec,
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw refusalOf(error);
    }
    const subject = payload.sub;
    if (typeof subject !== 'string' || subject.length === 0 || subject.length > MAX_SUBJECT_LENGTH) throw new UserTokenRefused('no_subject');
    return { id: `${USER_PREFIX}${subject}`, rights: this.#rightsOf(payload) };
  }

  #rightsOf(payload: JWTPayload): ReadonlySet<Right> {
    const rights: Right[] = [...this.#settings.rights];
    const scp = (payload as { scp?: unknown }).scp;
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : Array.isArray(scp) ? scp.filter((s): s is string => typeof s === 'string') : [];
    for (const scope of scopes) for (const right of Object.hasOwn(this.#settings.scopeRights, scope) ? this.#settings.scopeRights[scope]! : []) rights.push(right);
    // Each right includes the lower ones, as for the static tokens.
    return impliedRights(rights);
  }

  /** The issuer's key set: from `users.jwksUri`, else from the issuer's metadata (fetched once; a failure is retried by the next request). */
  #keySet(): Promise<JWTVerifyGetKey> {
    this.#keys ??= this.#loadKeySet().catch((error: unknown) => {
      this.#keys = undefined;
      throw error;
    });
    return this.#keys;
  }

  async #loadKeySet(): Promise<JWTVerifyGetKey> {
    const jwksUri = this.#settings.jwksUri ?? (await this.#discoverJwksUri());
    const remote = createRemoteJWKSet(new URL(jwksUri), { timeoutDuration: this.#timeoutMs });
    // A key set that cannot be fetched is the issuer's fault, not the token's.
    return async (header, token) => {
      try {
        return await remote(header, token);
      } catch (error) {
        // About this token's header (no key for its kid or its algorithm): the token's fault.
        if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys || error instanceof errors.JOSENotSupported || error instanceof errors.JOSEAlgNotAllowed) throw error;
        // Anything else is fetching or reading the key set: a timeout, a refused connection, not 200, not a JWKS.
        throw unavailable(`the issuer's keys (${jwksUri}) could not be fetched`, error);
      }
    };
  }

  /** The `jwks_uri` of the issuer's metadata: RFC 8414 first, then OpenID Connect discovery. */
  async #discoverJwksUri(): Promise<string> {
    const issuer = new URL(this.#settings.issuer);
    const path = issuer.pathname === '/' ? '' : issuer.pathname.replace(/\/$/, '');
    const candidates = [new URL(`/.well-known/oauth-authorization-server${path}`, issuer), new URL(`${path}/.well-known/openid-configuration`, issuer)];
    let last: unknown;
    for (const url of candidates) {
      try {
        const response = await this.#fetch(url, { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(this.#timeoutMs) });
        if (response.status !== 200) {
          await response.body?.cancel();
          last = new Error(`${url.href} answered ${response.status}`);
          continue;
        }
        const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
        // RFC 8414 §3.3: the metadata must name the issuer it was asked for.
        if (metadata.issuer !== this.#settings.issuer) throw unavailable(`the metadata at ${url.href} names another issuer`);
        if (typeof metadata.jwks_uri !== 'string') throw unavailable(`the metadata at ${url.href} has no jwks_uri`);
        return metadata.jwks_uri;
      } catch (error) {
        if (error instanceof PoolError) throw error;
        last = error;
      }
    }
    throw unavailable(`the issuer ${this.#settings.issuer} publishes no metadata naming its keys`, last);
  }
}

function unavailable(message: string, cause?: unknown): PoolError {
  return new PoolError(ErrorCode.ISSUER_UNAVAILABLE, message, cause === undefined ? {} : { cause });
}

/** A `jose` verification error as the refusal it means (an unavailable issuer passes through). */
function refusalOf(error: unknown): PoolError {
  if (error instanceof PoolError) return error;
  if (error instanceof errors.JWTExpired) return new UserTokenRefused('expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return new UserTokenRefused('audience');
    if (error.claim === 'iss') return new UserTokenRefused('issuer');
    if (error.claim === 'nbf' || error.claim === 'iat') return new UserTokenRefused('not_yet_valid');
    return new UserTokenRefused('malformed');
  }
  if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys || error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return new UserTokenRefused('signature');
  }
  return new UserTokenRefused('malformed');
}
