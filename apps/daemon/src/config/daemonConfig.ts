/**
 * The daemon's config: one JSONC document holding the servers (any format `parseServerEntries`
 * accepts: `mcpServers`, `servers`, `mcp.servers`) plus a `daemon` section for the daemon itself.
 * Precedence: defaults < the file's `daemon` section < `MCPOOL_*` environment variables < command
 * line flags. A problem of the file itself (unreadable, not JSON, no servers map, a bad `daemon`
 * setting) throws one `ConfigError` naming the file, the JSON path (or the variable) and what was
 * expected, never echoing a value; a problem of one server entry (a bad field, an unset variable,
 * a command that does not exist) makes that server unavailable and loads the rest.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError, START_MODES, parseConfigText, parseServerEntries, type ConfigWarning, type ServerConfig, type StartMode, type TransportKind } from '@mcpool/protocol';
import type { BudgetMode, Right } from '@mcpool/client';
import { builtinConfigDocument } from './defaultConfig.js';
import { RIGHT_NAMES } from '../rights.js';
import { DEFAULT_HOST, DEFAULT_PORT } from '../local/address.js';
import { vetServers, type UnavailableServer } from './serverAvailability.js';
import { clusterSchema, resolveCluster, resolveStore, resolveUsers, storeSchema, usersSchema, type ClusterSettings, type StoreSettings, type UsersSettings } from './teamSettings.js';
import { issuesFrom, type Issue } from './zodIssues.js';

/** Where the config came from. */
export type ConfigSource =
  | { kind: 'file'; path: string; origin: 'flag' | 'env' | 'cwd' | 'user' }
  | { kind: 'builtin'; searched: string[] };

/** A client allowed in with its own token, read from the environment variable `tokenEnv`. */
export interface ClientSpec {
  id: string;
  tokenEnv: string;
  rights: Right[];
  /**
   * The configured servers this client may use through `/mcp` (listed and called).
   * @default every configured server for a client with the `write` right; none for a read-only one
   */
  servers?: string[] | undefined;
  /** Through `/mcp`: only these tools and prompts, named `<server>__<name>`. @default all */
  includeTools?: string[] | undefined;
  /** Through `/mcp`: never these tools and prompts, named `<server>__<name>` (wins over includeTools). @default none */
  excludeTools?: string[] | undefined;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * OpenTelemetry export (traces and metrics over OTLP/HTTP). Off unless an endpoint is given here
 * or in `OTEL_EXPORTER_OTLP_ENDPOINT` (which wins, as the `MCPOOL_*` variables win over the file).
 */
export interface TelemetrySettings {
  /** The OTLP/HTTP base URL (`/v1/traces` and `/v1/metrics` are appended). @default undefined (off) */
  otlpEndpoint: string | undefined;
  /** `service.name` of the spans and metrics (`OTEL_SERVICE_NAME` wins). @default 'mcpool' */
  serviceName: string;
  /** How often metrics are exported. @default 60000 */
  metricExportIntervalMs: number;
}

/** The daemon section, resolved: every field has its value. */
export interface DaemonSettings {
  /** @default 7070 */
  port: number;
  /** @default '127.0.0.1' (loopback only; anything else is the operator's explicit choice) */
  host: string;
  /** @default { clientBudget: 50, mode: 'warn' } */
  budget: { clientBudget: number; mode: BudgetMode };
  /** @default ['stdio', 'websocket'] */
  pooledTransports: TransportKind[];
  /** How long an entry with no session stays warm. @default 30000 */
  drainDelayMs: number;
  /** Hard idle cap. @default 300000 */
  maxIdleMs: number;
  /** @default the pool's per-transport defaults */
  spawnTimeoutMs: number | undefined;
  /** @default 60000 */
  callTimeoutMs: number;
  /** Deadline of `drainAll` at shutdown; children still alive then are killed. @default 10000 */
  shutdownTimeoutMs: number;
  /**
   * On SIGTERM (or `mcpool stop`), how long calls in flight may take to finish before the shutdown
   * cancels them. `/readyz` answers 503 from the signal on and new legacy `/mcp` sessions are
   * refused, while everything else is still served, so a balancer moves traffic away first.
   * @default 0 (calls in flight are cancelled at once)
   */
  drainTimeoutMs: number;
  /** Extra clients and their rights. The daemon's own token has both rights. @default [] */
  clients: ClientSpec[];
  /** Host names accepted in the `Host` header besides localhost, 127.0.0.1 and [::1]. @default [] */
  allowedHosts: string[];
  /** Origins a browser may call from (exact `scheme://host:port`). @default [] (no browser origin) */
  allowedOrigins: string[];
  /** Largest request body. @default 262144 */
  bodyLimitBytes: number;
  /** Hold one reference on each eager server (`start: 'eager'`) so it stays up with no session. @default true */
  keepWarm: boolean;
  /**
   * When configured servers start: `lazy`, on first use (a server with a catalog is listed to
   * sessions from it and started by the first request that needs it; one without is started once
   * to learn it); `eager`, at daemon start. A server's own `start` wins. @default 'lazy'
   */
  start: StartMode;
  /**
   * After how long without a call a modern-era server is stopped while its sessions keep listing
   * it from its catalog (the next call starts it again); a legacy-era server only with its own
   * `idleStopMs`. A server's own `idleStopMs` wins; 0: never. @default 300000
   */
  idleStopMs: number;
  /** SSE heartbeat interval. @default 15000 */
  heartbeatMs: number;
  /** @default 'info' */
  logLevel: LogLevel;
  /**
   * Bound of `<state dir>/daemon.log` when the daemon's stdout appends to it (autostart, the
   * service unit): past it the file moves to `daemon.log.1` and starts again. @default 10485760
   */
  logMaxBytes: number;
  /** Reload when the config file changes. @default true */
  watchConfig: boolean;
  /** A `/mcp` session with no request for this long (and none under way) is closed. @default 1800000 */
  mcpSessionTtlMs: number;
  /**
   * How long a new `/mcp` session's `initialize` waits for a server that is not ready yet (one
   * window per server, shared by the sessions that open meanwhile: a server still starting, or
   * hanging, delays sessions by this much once, not each of them). A server that comes up later
   * joins the open sessions with `list_changed`. `/mcp/<server>` always waits for its one server.
   * @default 2000
   */
  mcpJoinWaitMs: number;
  /** Largest request body on `/mcp` (tool arguments can be big). @default 4194304 */
  mcpBodyLimitBytes: number;
  /** Open `/mcp` sessions at most, all clients together; an initialize beyond it gets 503 (`MCPOOL_SESSION_CAP_REACHED`). @default 1000 */
  mcpMaxSessions: number;
  /**
   * Open `/mcp` sessions at most per client (token principal): an initialize beyond it gets 429
   * (`MCPOOL_CLIENT_LIMIT_REACHED`), and other clients' initializes are untouched. @default 250
   */
  mcpMaxSessionsPerClient: number;
  /** Open REST sessions (`POST /sessions`) at most per client; beyond it 429 `MCPOOL_CLIENT_LIMIT_REACHED`. @default 256 */
  maxSessionsPerClient: number;
  /** Servers one `POST /sessions` may inject (`mcpServers`); more is 400 `MCPOOL_REQUEST_TOO_LARGE`, nothing started. @default 32 */
  maxInjectedServersPerRequest: number;
  /** Injected servers one client may hold over all its open REST sessions; beyond it 429 `MCPOOL_CLIENT_LIMIT_REACHED`. @default 48 */
  maxInjectedServersPerClient: number;
  /**
   * Live actor threads at most (one per pool entry, ~30 MB each), in every budget mode: a server
   * start past it is refused with `MCPOOL_ACTOR_CAP_REACHED` (503). @default 64
   */
  maxActors: number;
  /**
   * Live servers (actor threads) the sessions of one client may have started at once; a start past
   * it is refused with `MCPOOL_CLIENT_LIMIT_REACHED` (429). Clients together also leave an eighth
   * of `maxActors` (at least 1) to the operator and `admin` clients, who hold no share. @default 16
   */
  maxActorsPerClient: number;
  /**
   * Servers one session (a `POST /sessions`, a `/mcp` session, the warm set) starts at once; the
   * rest wait their turn, so a request naming dozens of servers does not start them all together. @default 4
   */
  maxParallelSpawns: number;
  /**
   * The supervisor's liveness check of actor threads (the pool's `heartbeat*` options): each
   * thread is sampled every `intervalMs`; one whose event loop has not turned for `timeoutMs`
   * (its own CPU time while it runs, wall time while it sleeps: a saturated machine is not taken
   * for a blocked thread), over `misses` samples at least, is ended and replaced.
   * @default { intervalMs: 500, timeoutMs: 5000, misses: 3 }
   */
  actorHeartbeat: ActorHeartbeatSettings;
  /** A request (headers and body) not fully received within this is cut with 408, before auth too. @default 30000 */
  requestTimeoutMs: number;
  /** The headers of a request not received within this are cut with 408 (at most requestTimeoutMs). @default 10000 */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. @default 5000 */
  keepAliveTimeoutMs: number;
  /** Open connections from one remote address other than loopback at most; a connection beyond it is closed at once. @default 256 */
  maxConnectionsPerAddress: number;
  /**
   * Connections no request has authenticated yet, all addresses together; when full, the oldest is
   * closed to admit a new one (an idle socket only ages; a client with a token leaves at its first
   * request). @default 64
   */
  maxUnauthenticatedConnections: number;
  /**
   * Connections a request has authenticated, per client; a request on one more gets 429
   * (`MCPOOL_CLIENT_LIMIT_REACHED`) and its connection is closed. Not for the operator or `admin`
   * clients. @default 128
   */
  maxConnectionsPerClient: number;
  /**
   * TEST ONLY (the conformance suite cannot send a token): `/mcp` takes requests without a bearer
   * token. Refused unless `host` is 127.0.0.1 or ::1; logged loudly. The REST API still needs
   * its token. @default false
   */
  insecureNoAuthLoopback: boolean;
  /**
   * The https URL of a client ID metadata document naming mcpool (its `client_id` is this URL,
   * its `redirect_uris` `http://127.0.0.1/callback`): mcpool's client id at authorization servers
   * that advertise `client_id_metadata_document_supported`, instead of registering. @default unset
   */
  oauthClientMetadataUrl: string | undefined;
  /** @default off: `{ otlpEndpoint: undefined, serviceName: 'mcpool', metricExportIntervalMs: 60000 }` */
  telemetry: TelemetrySettings;
  /** Signed-in users: JWT access tokens from one issuer, beside the static tokens. @default undefined (static tokens only) */
  users: UsersSettings | undefined;
  /** Where upstream OAuth grants are kept. @default { kind: 'file' } (the state directory) */
  store: StoreSettings;
  /** This daemon as one replica of several behind a balancer. @default undefined (alone: nothing changes) */
  cluster: ClusterSettings | undefined;
}

export interface ActorHeartbeatSettings {
  intervalMs: number;
  timeoutMs: number;
  misses: number;
}

/** A loaded config: servers, settings, and where they came from. */
export interface LoadedConfig {
  source: ConfigSource;
  /** The servers that can run. */
  servers: Record<string, ServerConfig>;
  /** The servers of the file that cannot run, with why (each is one server's problem: the rest run). */
  unavailable: Record<string, UnavailableServer>;
  /**
   * After a reload: servers whose entry in the file cannot run while their last good config
   * (in `servers`) keeps running, with why the new entry was not applied.
   */
  kept?: Record<string, UnavailableServer>;
  settings: DaemonSettings;
  warnings: ConfigWarning[];
  /** SHA-256 of the file's text (of the built-in document for `builtin`), to skip no-op reloads. */
  digest: string;
}

/** Flags given on the command line; they win over everything. */
export interface SettingsOverrides {
  port?: number;
  host?: string;
  logLevel?: LogLevel;
}

export const DEFAULT_SETTINGS: Readonly<DaemonSettings> = Object.freeze<DaemonSettings>({
  port: DEFAULT_PORT,
  host: DEFAULT_HOST,
  budget: { clientBudget: 50, mode: 'warn' },
  pooledTransports: ['stdio', 'websocket'],
  drainDelayMs: 30_000,
  maxIdleMs: 300_000,
  spawnTimeoutMs: undefined,
  callTimeoutMs: 60_000,
  shutdownTimeoutMs: 10_000,
  drainTimeoutMs: 0,
  clients: [],
  allowedHosts: [],
  allowedOrigins: [],
  bodyLimitBytes: 256 * 1024,
  keepWarm: true,
  start: 'lazy',
  idleStopMs: 300_000,
  heartbeatMs: 15_000,
  logLevel: 'info',
  logMaxBytes: 10 * 1024 * 1024,
  watchConfig: true,
  mcpSessionTtlMs: 30 * 60 * 1000,
  mcpJoinWaitMs: 2000,
  mcpBodyLimitBytes: 4 * 1024 * 1024,
  mcpMaxSessions: 1000,
  mcpMaxSessionsPerClient: 250,
  maxSessionsPerClient: 256,
  maxInjectedServersPerRequest: 32,
  maxInjectedServersPerClient: 48,
  maxActors: 64,
  maxActorsPerClient: 16,
  maxParallelSpawns: 4,
  actorHeartbeat: Object.freeze({ intervalMs: 500, timeoutMs: 5000, misses: 3 }),
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  maxConnectionsPerAddress: 256,
  maxUnauthenticatedConnections: 64,
  maxConnectionsPerClient: 128,
  insecureNoAuthLoopback: false,
  oauthClientMetadataUrl: undefined,
  telemetry: Object.freeze({ otlpEndpoint: undefined, serviceName: 'mcpool', metricExportIntervalMs: 60_000 }),
  users: undefined,
  store: Object.freeze({ kind: 'file' as const }),
  cluster: undefined,
});

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ms = z.number().int().min(0).max(24 * 3600 * 1000);

const clientSchema = z
  .object({
    id: z.string().regex(/^[\w.-]{1,64}$/),
    tokenEnv: z.string().regex(ENV_NAME),
    rights: z.array(z.enum(RIGHT_NAMES)).min(1),
    servers: z.array(z.string().min(1)).optional(),
    includeTools: z.array(z.string().min(1)).optional(),
    excludeTools: z.array(z.string().min(1)).optional(),
  })
  .strict();

/** The `daemon` section. Strict: a misspelt security setting must not be ignored silently. */
export const daemonSectionSchema = z
  .object({
    port: z.number().int().min(0).max(65535),
    host: z.string().min(1),
    budget: z.object({ clientBudget: z.number().int().min(1), mode: z.enum(['enforce', 'warn', 'off']) }).partial().strict(),
    pooledTransports: z.array(z.enum(['stdio', 'http', 'sse', 'websocket'])),
    drainDelayMs: ms,
    maxIdleMs: ms,
    spawnTimeoutMs: ms,
    callTimeoutMs: ms,
    shutdownTimeoutMs: ms,
    drainTimeoutMs: ms,
    clients: z.array(clientSchema),
    allowedHosts: z.array(z.string().min(1)),
    allowedOrigins: z.array(z.string().min(1)),
    bodyLimitBytes: z.number().int().min(1024).max(16 * 1024 * 1024),
    keepWarm: z.boolean(),
    start: z.enum(START_MODES as [StartMode, ...StartMode[]]),
    idleStopMs: z.number().int().min(0).max(7 * 24 * 3_600_000),
    heartbeatMs: z.number().int().min(10).max(600_000),
    // Accepted so a config written for an older daemon still loads; it has no effect (lifecycle
    // events come from the pool itself) and a warning says so.
    statusPollMs: z.number().int().min(10).max(60_000),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    logMaxBytes: z.number().int().min(64 * 1024).max(1024 * 1024 * 1024),
    watchConfig: z.boolean(),
    mcpSessionTtlMs: z.number().int().min(100).max(7 * 24 * 3600 * 1000),
    mcpJoinWaitMs: z.number().int().min(0).max(300_000),
    mcpBodyLimitBytes: z.number().int().min(1024).max(64 * 1024 * 1024),
    mcpMaxSessions: z.number().int().min(1).max(100_000),
    mcpMaxSessionsPerClient: z.number().int().min(1).max(100_000),
    maxSessionsPerClient: z.number().int().min(1).max(100_000),
    maxInjectedServersPerRequest: z.number().int().min(0).max(10_000),
    maxInjectedServersPerClient: z.number().int().min(0).max(10_000),
    maxActors: z.number().int().min(1).max(10_000),
    maxActorsPerClient: z.number().int().min(1).max(10_000),
    maxParallelSpawns: z.number().int().min(1).max(1000),
    actorHeartbeat: z
      .object({
        intervalMs: z.number().int().min(10).max(60_000),
        timeoutMs: z.number().int().min(10).max(600_000),
        misses: z.number().int().min(1).max(100),
      })
      .partial()
      .strict(),
    requestTimeoutMs: z.number().int().min(100).max(3600 * 1000),
    headersTimeoutMs: z.number().int().min(100).max(3600 * 1000),
    keepAliveTimeoutMs: z.number().int().min(100).max(3600 * 1000),
    maxConnectionsPerAddress: z.number().int().min(1).max(100_000),
    maxUnauthenticatedConnections: z.number().int().min(1).max(100_000),
    maxConnectionsPerClient: z.number().int().min(1).max(100_000),
    insecureNoAuthLoopback: z.boolean(),
    // The MCP spec: an https URL with a path component.
    oauthClientMetadataUrl: z.string().regex(/^https:\/\/[^\s/?#]+\/[^\s#]+$/, 'an https:// URL with a path (where the client ID metadata document is)'),
    telemetry: z
      .object({
        otlpEndpoint: z.string().regex(/^https?:\/\/[^\s]+$/, 'an http(s):// URL'),
        serviceName: z.string().min(1).max(256),
        metricExportIntervalMs: z.number().int().min(100).max(3600 * 1000),
      })
      .partial()
      .strict(),
    users: usersSchema,
    store: storeSchema,
    cluster: clusterSchema,
  })
  .partial()
  .strict();

type DaemonSection = z.infer<typeof daemonSectionSchema>;

/** `MCPOOL_*` variables → the daemon field they set, and how to read them. */
const ENV_OVERRIDES: Record<string, { path: string[]; parse: (raw: string) => unknown }> = {
  MCPOOL_PORT: { path: ['port'], parse: Number },
  MCPOOL_HOST: { path: ['host'], parse: String },
  MCPOOL_BUDGET: { path: ['budget', 'clientBudget'], parse: Number },
  MCPOOL_BUDGET_MODE: { path: ['budget', 'mode'], parse: String },
  MCPOOL_POOLED_TRANSPORTS: { path: ['pooledTransports'], parse: list },
  MCPOOL_DRAIN_DELAY_MS: { path: ['drainDelayMs'], parse: Number },
  MCPOOL_MAX_IDLE_MS: { path: ['maxIdleMs'], parse: Number },
  MCPOOL_SPAWN_TIMEOUT_MS: { path: ['spawnTimeoutMs'], parse: Number },
  MCPOOL_CALL_TIMEOUT_MS: { path: ['callTimeoutMs'], parse: Number },
  MCPOOL_DRAIN_TIMEOUT_MS: { path: ['drainTimeoutMs'], parse: Number },
  MCPOOL_REPLICA_ID: { path: ['cluster', 'replicaId'], parse: String },
  MCPOOL_ADVERTISE_URL: { path: ['cluster', 'advertiseUrl'], parse: String },
  MCPOOL_ALLOWED_ORIGINS: { path: ['allowedOrigins'], parse: list },
  MCPOOL_LOG_LEVEL: { path: ['logLevel'], parse: String },
  MCPOOL_MCP_SESSION_TTL_MS: { path: ['mcpSessionTtlMs'], parse: Number },
  MCPOOL_MCP_JOIN_WAIT_MS: { path: ['mcpJoinWaitMs'], parse: Number },
  MCPOOL_MCP_MAX_SESSIONS: { path: ['mcpMaxSessions'], parse: Number },
  MCPOOL_MCP_MAX_SESSIONS_PER_CLIENT: { path: ['mcpMaxSessionsPerClient'], parse: Number },
  MCPOOL_MAX_SESSIONS_PER_CLIENT: { path: ['maxSessionsPerClient'], parse: Number },
  MCPOOL_MAX_INJECTED_SERVERS_PER_REQUEST: { path: ['maxInjectedServersPerRequest'], parse: Number },
  MCPOOL_MAX_INJECTED_SERVERS_PER_CLIENT: { path: ['maxInjectedServersPerClient'], parse: Number },
  MCPOOL_MAX_ACTORS: { path: ['maxActors'], parse: Number },
  MCPOOL_MAX_ACTORS_PER_CLIENT: { path: ['maxActorsPerClient'], parse: Number },
  MCPOOL_MAX_PARALLEL_SPAWNS: { path: ['maxParallelSpawns'], parse: Number },
};

/** The environment variables `loadConfig` reads for overrides (besides `${VAR}` interpolation). */
export const ENV_OVERRIDE_NAMES: readonly string[] = Object.freeze(Object.keys(ENV_OVERRIDES));

function list(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * Reads `text` as JSONC (comments and trailing commas, as VS Code's own files have them); a
 * syntax error names the file, line and column, never the text around it.
 */
export function parseJsonDocument(text: string, file: string | undefined): unknown {
  return parseConfigText(text, file);
}

/**
 * The folder `${workspaceFolder}` means for a config file: the workspace a `.vscode/mcp.json`
 * (or `.vscode/settings.json`) belongs to — the folder holding `.vscode`, as in VS Code — and for
 * any other file the folder it is in (`./.mcp.json` sits at the root of its project).
 */
export function workspaceFolderOf(file: string): string {
  const folder = dirname(resolve(file));
  return basename(folder) === '.vscode' ? dirname(folder) : folder;
}

/** The daemon section of `doc` with env overrides and flags applied, over the defaults. */
export function resolveSettings(doc: unknown, env: Record<string, string | undefined>, overrides: SettingsOverrides = {}, file?: string): DaemonSettings {
  const raw = typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? (doc as Record<string, unknown>).daemon : undefined;
  const issues: Issue[] = [];
  let section: DaemonSection = {};
  if (raw !== undefined) {
    const parsed = daemonSectionSchema.safeParse(raw, { reportInput: true });
    if (parsed.success) section = parsed.data;
    else issues.push(...issuesFrom(parsed.error, 'daemon'));
  }
  // Env overrides: built into one overlay, checked by the same schema, errors named by variable.
  const overlay: Record<string, unknown> = {};
  const varOf = new Map<string, string>();
  for (const [name, { path, parse }] of Object.entries(ENV_OVERRIDES)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    let target = overlay;
    for (const key of path.slice(0, -1)) target = (target[key] ??= {}) as Record<string, unknown>;
    target[path.at(-1)!] = parse(value);
    varOf.set(path.join('.'), name);
  }
  let fromEnv: DaemonSection = {};
  if (Object.keys(overlay).length > 0) {
    const parsed = daemonSectionSchema.safeParse(overlay, { reportInput: true });
    if (parsed.success) fromEnv = parsed.data;
    else {
      issues.push(
        ...issuesFrom(parsed.error, (path) => {
          const key = path.filter((k) => typeof k === 'string').join('.');
          return `env.${varOf.get(key) ?? varOf.get(key.split('.')[0]!) ?? key}`;
        }),
      );
    }
  }
  if (issues.length > 0) throw new ConfigError(issues, file);
  const { statusPollMs: _noEffect, users, store, cluster: _cluster, ...known } = section;
  // The cluster section of the file, with MCPOOL_REPLICA_ID / MCPOOL_ADVERTISE_URL over it (a pod's name and address).
  const clusterSection = section.cluster === undefined ? undefined : { ...section.cluster, ...stripUndefined(fromEnv.cluster ?? {}) };
  let cluster: ClusterSettings | undefined;
  if (clusterSection !== undefined) {
    try {
      cluster = resolveCluster(clusterSection, env);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      issues.push(...error.data.issues);
    }
  }
  const merged: DaemonSettings = {
    ...DEFAULT_SETTINGS,
    ...stripUndefined(known),
    ...stripUndefined(fromEnv),
    budget: { ...DEFAULT_SETTINGS.budget, ...stripUndefined(section.budget ?? {}), ...stripUndefined(fromEnv.budget ?? {}) },
    telemetry: { ...DEFAULT_SETTINGS.telemetry, ...stripUndefined(section.telemetry ?? {}) },
    actorHeartbeat: { ...DEFAULT_SETTINGS.actorHeartbeat, ...stripUndefined(section.actorHeartbeat ?? {}) },
    users: users === undefined ? undefined : resolveUsers(users),
    store: resolveStore(store),
    cluster,
  };
  if (overrides.port !== undefined) merged.port = overrides.port;
  if (overrides.host !== undefined) merged.host = overrides.host;
  if (overrides.logLevel !== undefined) merged.logLevel = overrides.logLevel;
  const ids = new Set<string>();
  merged.clients.forEach((client, i) => {
    if (client.id === 'operator' || ids.has(client.id)) {
      issues.push({ path: `daemon.clients[${i}].id`, expected: 'a unique id other than "operator"', received: `got ${JSON.stringify(client.id)} again` });
    }
    ids.add(client.id);
  });
  // The no-token test mode exists for the conformance suite on this machine only.
  if (merged.insecureNoAuthLoopback && !['127.0.0.1', '::1'].includes(merged.host)) {
    issues.push({ path: 'daemon.insecureNoAuthLoopback', expected: 'host 127.0.0.1 or ::1 (the no-token test mode is loopback only)', received: 'got another host' });
  }
  merged.allowedOrigins.forEach((origin, i) => {
    if (normalizeOrigin(origin) === undefined) issues.push({ path: `daemon.allowedOrigins[${i}]`, expected: 'an origin such as http://localhost:3000', received: 'got something else' });
  });
  if (issues.length > 0) throw new ConfigError(issues, file);
  return merged;
}

/** `scheme://host[:port]` in canonical form, or undefined when `value` is not an origin. */
export function normalizeOrigin(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.origin === 'null') return undefined;
    if (url.pathname !== '/' || url.search !== '' || url.hash !== '') return undefined;
    return url.origin.toLowerCase();
  } catch {
    return undefined;
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Loads the config from `source`: reads and parses the file (or the built-in document), checks
 * the servers and the daemon section, applies env overrides and flags. Each server entry is
 * checked on its own, its command looked up as spawning it would: one that cannot run is in
 * `unavailable` with its reason.
 *
 * @throws ConfigError for an unreadable file, invalid JSON, no servers map or a bad daemon setting.
 */
export async function loadConfig(source: ConfigSource, env: Record<string, string | undefined>, overrides: SettingsOverrides = {}): Promise<LoadedConfig> {
  let text: string;
  let file: string | undefined;
  if (source.kind === 'file') {
    file = source.path;
    try {
      text = await readFile(source.path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'an error';
      throw new ConfigError([{ path: '', expected: 'a readable config file', received: `got ${code}` }], source.path);
    }
  } else {
    text = JSON.stringify(builtinConfigDocument());
  }
  const doc = parseJsonDocument(text, file);
  // Both halves are checked, so one run reports every problem in the file.
  const problems: ConfigError['data']['issues'][number][] = [];
  const collect = <T>(run: () => T): T | undefined => {
    try {
      return run();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.data.issues);
      return undefined;
    }
  };
  const settings = collect(() => resolveSettings(doc, env, overrides, file));
  const parsed = collect(() => parseServerEntries(doc, { env, ...(file === undefined ? {} : { file, variables: { workspaceFolder: workspaceFolderOf(file) } }) }));
  if (settings === undefined || parsed === undefined) {
    // Refused as a whole: its servers' own problems are told in the same run.
    for (const rejected of Object.values(parsed?.rejected ?? {})) problems.push(...rejected.data.issues);
    throw new ConfigError(problems, file);
  }
  const { servers, unavailable } = vetServers(parsed);
  const warnings = [...parsed.warnings];
  const daemonRaw = typeof doc === 'object' && doc !== null ? (doc as { daemon?: unknown }).daemon : undefined;
  if (typeof daemonRaw === 'object' && daemonRaw !== null && Object.hasOwn(daemonRaw, 'statusPollMs')) {
    warnings.push({ path: 'daemon.statusPollMs', message: 'has no effect any more (lifecycle events come from the pool); remove it' });
  }
  return { source, servers, unavailable, settings, warnings, digest: createHash('sha256').update(text).digest('hex') };
}
