/**
 * The pool key: which server configs may share one connection.
 *
 * Every {@link ServerConfig} field is either hashed (it defines the transport, so a change means
 * another connection) or per-session (each session applies its own over the shared connection).
 * A field not listed in {@link SESSION_FIELDS} is hashed, and the compiler forces it to get a
 * canonical form below: a forgotten field splits pools (safe) instead of wrongly sharing a
 * connection, which is the collision a real pool hit when OAuth fields were left out of its key.
 */
import { createHash } from 'node:crypto';
import type { OAuthConfig, ServerConfig, TransportKind } from './config.js';
import { ErrorCode, PoolError } from './errors.js';

/** Per-session fields: never hashed; see {@link sessionFieldsOf}. */
export const SESSION_FIELDS = Object.freeze(['includeTools', 'excludeTools', 'trust', 'description'] as const);

/**
 * Fields that split pool entries without being hashed: the pool appends them (resolved) to the
 * fingerprint when it builds its key. `sharing` decides who may attach to a process, not what
 * the process is, so the same server keeps one fingerprint (and one cached protocol era, which
 * the default policy itself depends on) whatever its policy.
 */
export const POOL_KEY_FIELDS = Object.freeze(['sharing'] as const);

/**
 * Fields the host reads and the pool does not: never hashed, never split an entry. `start` says
 * when a host starts the server (a lazy one is listed from its catalog until first used) and
 * `idleStopMs` when it stops an idle one, which changes nothing about the process itself.
 */
export const HOST_FIELDS = Object.freeze(['start', 'idleStopMs'] as const);

type SessionField = (typeof SESSION_FIELDS)[number];
type PoolKeyField = (typeof POOL_KEY_FIELDS)[number];
type HostField = (typeof HOST_FIELDS)[number];
type HashedField = Exclude<keyof ServerConfig, SessionField | PoolKeyField | HostField>;

/** The per-session part of a config. */
export type SessionConfig = Pick<ServerConfig, SessionField>;

// Plain code-unit comparison: `localeCompare` would make the key depend on the process locale.
function compareKeys([a]: [string, unknown], [b]: [string, unknown]): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A map as sorted `[key, value]` pairs; empty counts as absent. */
function sortedEntries(map: Record<string, string> | undefined): [string, string][] | undefined {
  const entries = Object.entries(map ?? {});
  return entries.length === 0 ? undefined : entries.sort(compareKeys);
}

/** Order matters (argv); empty counts as absent, since both spawn the same process. */
function nonEmpty<T>(list: readonly T[] | undefined): readonly T[] | undefined {
  return list === undefined || list.length === 0 ? undefined : list;
}

/**
 * `undefined`, `null`, `{}` and `{enabled: false}` (whatever else it holds) all mean "no OAuth".
 * Otherwise every field is hashed, including ones added to {@link OAuthConfig} later, with
 * `scopes`/`audiences` sorted and empty lists counted as absent.
 */
function canonicalOAuth(oauth: OAuthConfig | null | undefined): [string, unknown][] | undefined {
  if (oauth == null || oauth.enabled === false) return undefined;
  const entries = Object.entries(oauth)
    .map(([key, value]): [string, unknown] => [key, Array.isArray(value) ? nonEmpty([...(value as unknown[])].sort()) : value])
    .filter(([, value]) => value !== undefined);
  return entries.length === 0 ? undefined : entries.sort(compareKeys);
}

/**
 * The canonical form of each hashed field; `undefined` means "absent". Absent and empty
 * collections (`args: []`, `env: {}`, `headers: {}`) are the same; `cwd: ''` and a `timeout`
 * equal to some default are not, since we do not know the consumer's defaults.
 */
const canonicalizers: { [K in HashedField]-?: (cfg: ServerConfig) => unknown } = {
  transport: (cfg) => cfg.transport,
  command: (cfg) => cfg.command,
  args: (cfg) => nonEmpty(cfg.args),
  cwd: (cfg) => cfg.cwd,
  env: (cfg) => sortedEntries(cfg.env),
  url: (cfg) => cfg.url,
  httpUrl: (cfg) => cfg.httpUrl,
  // Header names are hashed as written: treating `Authorization` and `authorization` as one
  // would be correct for HTTP but costs a rule for maps holding both; over-splitting is safe.
  headers: (cfg) => sortedEntries(cfg.headers),
  timeout: (cfg) => cfg.timeout,
  // The connection's reader applies it to everything the server sends, whoever the call is for:
  // a session cannot have its own on a shared process, so another value is another connection.
  maxMessageBytes: (cfg) => cfg.maxMessageBytes,
  oauth: (cfg) => canonicalOAuth(cfg.oauth),
};

/** Fields that define the transport: any change gives another fingerprint. */
export const HASHED_FIELDS = Object.freeze(Object.keys(canonicalizers) as HashedField[]);

/**
 * The pool key of a config: SHA-256 of the canonical JSON of its {@link HASHED_FIELDS}, first
 * 16 hex chars (64 bits; collision odds are negligible for pools of thousands of entries).
 * Key order never matters; see `canonicalizers` for which absent and empty values are equal.
 * Never throws for a well-typed config. Fingerprints never leave the process.
 */
export function fingerprint(cfg: ServerConfig): string {
  // Fixed field order, absent fields left out: JSON.stringify then is canonical.
  const canonical: Record<string, unknown> = {};
  for (const field of HASHED_FIELDS) {
    const value = canonicalizers[field](cfg);
    if (value !== undefined) canonical[field] = value;
  }
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex').slice(0, 16);
}

/** `${name}::${fingerprint}`: the key of one pool entry (`PooledConnection.id`). */
export type ConnectionId = string & { readonly __brand: 'ConnectionId' };

const SEPARATOR = '::';
const FINGERPRINT = /^[0-9a-f]{16}$/;

/**
 * Builds the id of a pool entry.
 *
 * @throws PoolError `MCPOOL_INVALID_ARGUMENT` when `name` is empty or `fp` is not 16 lowercase
 *   hex chars (either would make the id unparsable).
 */
export function connectionIdOf(name: string, fp: string): ConnectionId {
  if (name === '' || !FINGERPRINT.test(fp)) {
    throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'connectionIdOf needs a non-empty name and a 16-hex-char fingerprint', {
      data: { name, fingerprint: fp },
    });
  }
  return `${name}${SEPARATOR}${fp}` as ConnectionId;
}

/**
 * Splits a connection id on its last `::`: server names may contain `::` (`ext::github`),
 * fingerprints never do. Matching on a `name::` prefix once confused `ext` with `ext::github`.
 *
 * @throws PoolError `MCPOOL_INVALID_ARGUMENT` when there is no `::`, the name is empty or the
 *   fingerprint is not 16 lowercase hex chars.
 */
export function parseConnectionId(id: string): { name: string; fingerprint: string } {
  const at = id.lastIndexOf(SEPARATOR);
  const name = at <= 0 ? '' : id.slice(0, at);
  const fp = at < 0 ? '' : id.slice(at + SEPARATOR.length);
  if (name === '' || !FINGERPRINT.test(fp)) {
    throw new PoolError(ErrorCode.INVALID_ARGUMENT, `Malformed connection id ${JSON.stringify(id)}: expected "<name>::<16 hex chars>"`, {
      data: { id },
    });
  }
  return { name, fingerprint: fp };
}

/** Transports pooled unless the operator opts in to more: some HTTP servers keep per-connection state. */
export const DEFAULT_POOLED_TRANSPORTS: readonly TransportKind[] = Object.freeze(['stdio', 'websocket']);

/**
 * Whether sessions may share a connection for this config. An unpooled config still goes
 * through the pool, one connection per session.
 *
 * @param pooledTransports @default DEFAULT_POOLED_TRANSPORTS (stdio and websocket)
 */
export function isPoolable(cfg: ServerConfig, pooledTransports: readonly TransportKind[] = DEFAULT_POOLED_TRANSPORTS): boolean {
  return pooledTransports.includes(cfg.transport);
}

/** The per-session part of `cfg` ({@link SESSION_FIELDS}); absent fields stay absent. */
export function sessionFieldsOf(cfg: ServerConfig): SessionConfig {
  return Object.fromEntries(SESSION_FIELDS.filter((field) => cfg[field] !== undefined).map((field) => [field, cfg[field]]));
}
