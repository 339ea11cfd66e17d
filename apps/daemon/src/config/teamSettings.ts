/**
 * The settings a team gateway adds to the `daemon` section, each off unless written:
 * - `users`: signed-in users — the daemon as an OAuth 2.1 resource server for JWT access tokens
 *   from one issuer, beside the static tokens;
 * - `store`: where upstream OAuth grants are kept — the state directory (one machine) or Redis
 *   (every replica reaches the same grants);
 * - `cluster`: this daemon is one replica of several behind a balancer — its id, how to reach the
 *   others, and the variable holding the keys that seal legacy session ids and continuations.
 * Checked as strictly as the rest of the section (a misspelt key is an error), and the URLs a
 * token's trust hangs on must be https, or http on a loopback host (a test issuer on this machine).
 */
import { z } from 'zod';
import { ConfigError } from '@mcpool/protocol';
import type { Right } from '@mcpool/client';
import { RIGHT_NAMES } from '../rights.js';

/** How a signed-in user's access token is checked, and what the user may do. */
export interface UsersSettings {
  /** The issuer (`iss`) every token must name; its metadata says where its keys are. */
  issuer: string;
  /**
   * The gateway's `/mcp` URL as clients reach it (through the balancer): the `resource` of the
   * Protected Resource Metadata (RFC 9728), and where the challenge points clients.
   */
  resource: string;
  /**
   * The audience (`aud`) a token must be for. A token for one server's endpoint
   * (`<resource>/<server>`, what a client of `/mcp/<server>` asks for) is accepted too.
   * @default [resource]
   */
  audience: string[];
  /** Where the issuer's keys are. @default the `jwks_uri` of the issuer's metadata (RFC 8414, else OpenID discovery) */
  jwksUri: string | undefined;
  /** Signature algorithms accepted (asymmetric only: a shared secret would let any holder mint tokens). @default RS/PS/ES 256–512 and EdDSA */
  algorithms: string[];
  /** Leeway on `exp` and `nbf`, for clocks that differ a little. @default 5 */
  clockToleranceSec: number;
  /** The rights every signed-in user has. @default ['read'] (the `/mcp` gateway; `write` runs commands) */
  rights: Right[];
  /** More rights for a token that carries a scope (`scope` or `scp` claim): `{ "mcpool:write": ["write"] }`. @default {} */
  scopeRights: Record<string, Right[]>;
  /** The configured servers users may use through `/mcp`. @default every configured server */
  servers: string[] | undefined;
  /** Through `/mcp`: only these tools and prompts, named `<server>__<name>`. @default all */
  includeTools: string[] | undefined;
  /** Through `/mcp`: never these tools and prompts (wins over includeTools). @default none */
  excludeTools: string[] | undefined;
}

/** Where upstream OAuth grants are kept. */
export type StoreSettings =
  | { kind: 'file' }
  | {
      kind: 'redis';
      /** The variable holding the Redis URL (`redis://[:password@]host:port/db`; a URL can hold a password, so never the file). @default 'MCPOOL_REDIS_URL' */
      urlEnv: string;
      /** Every key the daemon writes starts with this (several deployments can share one Redis). @default 'mcpool:' */
      keyPrefix: string;
    };

/** This daemon as one replica of several. */
export interface ClusterSettings {
  /** This replica's id (`MCPOOL_REPLICA_ID` wins: a pod's name). */
  replicaId: string;
  /** The other replicas, by id: the base URL this one forwards their sessions to. @default {} */
  peers: Record<string, string>;
  /**
   * This replica's own base URL as the others reach it (`MCPOOL_ADVERTISE_URL` wins: a pod's IP);
   * sealed into the session ids it mints, so a replica not in a peer list (a Deployment's pod) is
   * still found. @default undefined (the others find it in their `peers`)
   */
  advertiseUrl: string | undefined;
  /**
   * The variable holding the session keys: comma-separated base64 of 32 bytes each; the first
   * seals, every one opens (rotation: put the new key first, drop the old one later).
   * @default 'MCPOOL_SESSION_KEYS'
   */
  sessionKeysEnv: string;
  /** A sealed legacy session id is refused (404: the client opens a new session) this long after it was minted. @default 86400000 (24 h) */
  sessionMaxAgeMs: number;
}

export const ASYMMETRIC_ALGORITHMS: readonly string[] = Object.freeze(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** True for an https URL, or an http one on a loopback host. */
export function isTrustworthyUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname));
  } catch {
    return false;
  }
}

const trustworthyUrl = z.string().refine(isTrustworthyUrl, 'an https:// URL (http:// only on a loopback host)');
const rights = z.array(z.enum(RIGHT_NAMES)).min(1);

export const usersSchema = z
  .object({
    issuer: trustworthyUrl,
    resource: z.string().regex(/^https?:\/\/[^\s?#]+$/, 'an http(s):// URL without query or fragment'),
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    jwksUri: trustworthyUrl.optional(),
    algorithms: z.array(z.enum(ASYMMETRIC_ALGORITHMS as [string, ...string[]])).min(1).optional(),
    clockToleranceSec: z.number().int().min(0).max(300).optional(),
    rights: rights.optional(),
    scopeRights: z.record(z.string().min(1), rights).optional(),
    servers: z.array(z.string().min(1)).optional(),
    includeTools: z.array(z.string().min(1)).optional(),
    excludeTools: z.array(z.string().min(1)).optional(),
  })
  .strict();

const REPLICA_ID = /^[\w.-]{1,63}$/;
const baseUrl = z.string().regex(/^https?:\/\/[^\s/?#]+\/?$/, 'a base URL such as http://mcpool-r2.internal:7070');

/** Every field optional: `MCPOOL_REPLICA_ID` and `MCPOOL_ADVERTISE_URL` may give them; {@link resolveCluster} checks the whole. */
export const clusterSchema = z
  .object({
    replicaId: z.string().regex(REPLICA_ID, 'letters, digits, _ . - (at most 63)'),
    peers: z.record(z.string().regex(REPLICA_ID), baseUrl),
    advertiseUrl: baseUrl,
    sessionKeysEnv: z.string().regex(ENV_NAME),
    sessionMaxAgeMs: z.number().int().min(60_000).max(30 * 24 * 3600 * 1000),
  })
  .partial()
  .strict();

export const storeSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('file') }).strict(),
  z.object({ kind: z.literal('redis'), urlEnv: z.string().regex(ENV_NAME).optional(), keyPrefix: z.string().max(128).optional() }).strict(),
]);

/** The `users` section with its defaults filled in. */
export function resolveUsers(section: z.infer<typeof usersSchema>): UsersSettings {
  const audience = section.audience === undefined ? [section.resource] : Array.isArray(section.audience) ? section.audience : [section.audience];
  return {
    issuer: section.issuer,
    resource: section.resource,
    audience,
    jwksUri: section.jwksUri,
    algorithms: section.algorithms ?? [...ASYMMETRIC_ALGORITHMS],
    clockToleranceSec: section.clockToleranceSec ?? 5,
    rights: section.rights ?? ['read'],
    scopeRights: section.scopeRights ?? {},
    servers: section.servers,
    includeTools: section.includeTools,
    excludeTools: section.excludeTools,
  };
}

/** Bytes of one session key (AES-256-GCM). */
export const SESSION_KEY_BYTES = 32;

/**
 * The session keys in `raw` (comma-separated base64, each 32 bytes), first the one that seals.
 * @throws ConfigError naming the variable, never its value
 */
export function parseSessionKeys(raw: string | undefined, variable: string): Buffer[] {
  const fail = (received: string): never => {
    throw new ConfigError([{ path: `env.${variable}`, expected: `comma-separated base64 keys of ${SESSION_KEY_BYTES} bytes each (daemon.cluster)`, received }]);
  };
  if (raw === undefined || raw.trim() === '') return fail('got nothing');
  return raw.split(',').map((part, index) => {
    const text = part.trim();
    const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : Buffer.alloc(0);
    return key.length === SESSION_KEY_BYTES ? key : fail(`key ${index + 1} is not ${SESSION_KEY_BYTES} bytes of base64`);
  });
}

/** The `cluster` section (file and variables merged) with its defaults, its keys checked. @throws ConfigError */
export function resolveCluster(section: z.infer<typeof clusterSchema>, env: Record<string, string | undefined>): ClusterSettings {
  if (section.replicaId === undefined) {
    throw new ConfigError([{ path: 'daemon.cluster.replicaId', expected: 'this replica’s id (or MCPOOL_REPLICA_ID)', received: 'got nothing' }]);
  }
  const peers = section.peers ?? {};
  if (Object.hasOwn(peers, section.replicaId)) {
    throw new ConfigError([{ path: `daemon.cluster.peers.${section.replicaId}`, expected: 'the other replicas only', received: 'got this replica’s own id' }]);
  }
  const sessionKeysEnv = section.sessionKeysEnv ?? 'MCPOOL_SESSION_KEYS';
  parseSessionKeys(env[sessionKeysEnv], sessionKeysEnv);
  return { replicaId: section.replicaId, peers, advertiseUrl: section.advertiseUrl?.replace(/\/$/, ''), sessionKeysEnv, sessionMaxAgeMs: section.sessionMaxAgeMs ?? 24 * 3600 * 1000 };
}

/** The `store` section with its defaults filled in. */
export function resolveStore(section: z.infer<typeof storeSchema> | undefined): StoreSettings {
  if (section === undefined || section.kind === 'file') return { kind: 'file' };
  return { kind: 'redis', urlEnv: section.urlEnv ?? 'MCPOOL_REDIS_URL', keyPrefix: section.keyPrefix ?? 'mcpool:' };
}
