/**
 * One live MCP connection: the actor's own JSON-RPC client over a transport, the protocol era it
 * settled on, the lists it discovered, and what the server sends on its own. The machine owns
 * when connections open and close; this class owns what a connection is.
 *
 * Eras. A legacy server (protocol ≤ 2025-11-25) is opened with `initialize`; a modern one
 * (2026-07-28) has no handshake: `server/discover` describes it and every request carries the
 * caller's protocol version, capabilities, client info and log level in `params._meta`.
 * Detection follows the spec's versioning rules for a dual-era client:
 * - stdio: `server/discover` first. A discover result naming 2026-07-28, or a recognised modern
 *   error (unsupported version, naming 2026-07-28 as supported) → modern, no fallback. Any other
 *   error, or no answer within the probe timeout → legacy `initialize` on the same process. A
 *   process that exits on the probe (some servers exit on any request before `initialize`) is
 *   spawned again and opened as legacy, once.
 * - HTTP: the probe's answer is read the same way; a 4xx body that carries a recognised modern
 *   JSON-RPC error counts as modern, anything else as legacy; 401/403 are auth failures, never
 *   era evidence.
 * A probe that timed out only because the server was slow to start is corrected by the server
 * itself: a modern-only server refuses the `initialize` that follows with its supported versions,
 * and is then asked `server/discover` again. A verdict the caller already holds (`eraHint`) skips
 * the probe for legacy; when it turns out wrong the probe runs after all and the new verdict is
 * reported (`eraProbed`).
 */
import type { PromptInfo, ResourceInfo, ResourceTemplateInfo, Root, ServerConfig, ToolInfo, UpstreamNotification, ViewClientInfo } from '@mcpool/protocol';
import { ErrorCode, PoolError } from '@mcpool/protocol/rpc';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import { serverRequestRefused } from '@mcpool/protocol/refusals';
import { SecretSet, secretSetOf } from '@mcpool/protocol/secrets';
import { snapshotTree, sweepTracked, type SweepResult, type TreeSnapshot } from '@mcpool/protocol/processTree';
import { ProcessGroupStdioTransport } from './transports/processGroupStdioTransport.js';
import type { ChildSpawner } from './transports/stdioChild.js';
import type { ReadGate } from './sourceThrottle.js';
import { refusesToken, UpstreamHttpError, type ProtocolEra, type UpstreamTransport } from './transports/upstreamTransport.js';
import { UpstreamClient, UpstreamClosedError, UpstreamRpcError, type UpstreamClientOptions, type UpstreamRequestOptions } from './upstreamClient.js';

/** The logging surface the connection needs (pino's shape, a subset). */
export interface ConnectionLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  isLevelEnabled(level: string): boolean;
}

/** The kinds of list a server can announce changes of. */
export type ListKind = 'tools' | 'prompts' | 'resources';

export interface ServerMessageHooks {
  request(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>>;
  notification(notification: UpstreamNotification): void;
  resourceUpdated(uri: string): void;
}

export interface Lists {
  tools: ToolInfo[];
  prompts: PromptInfo[];
  resources: ResourceInfo[];
  resourceTemplates: ResourceTemplateInfo[];
}

export interface OpenConnectionOptions {
  config: ServerConfig;
  shutdownStepMs: number;
  logger: ConnectionLogger;
  signal: AbortSignal;
  /** Called as soon as a stdio child exists, before any MCP message. */
  onSpawned?: (pid: number) => void;
  /** Called with every stderr line of a stdio child, already scrubbed of the config's env and header values. */
  onStderrLine?: (line: string) => void;
  /** A verdict held from an earlier probe; absent → probe. */
  eraHint?: ProtocolEra | undefined;
  /** The pool's client declaration: modern `_meta` where a view declares none. */
  defaults?: ViewClientInfo | undefined;
  /** How long the era probe waits for an answer before it counts as legacy. @default 3000 */
  probeTimeoutMs?: number | undefined;
  /** Holds back reading what the server sends on its own when it sends too much (stdio and HTTP transports). */
  readGate?: ReadGate | undefined;
  /** Timeout of the handshake and discovery requests. @default 60000 (the spawn timeout ends it sooner) */
  requestTimeoutMs?: number | undefined;
  /** The longest message a stdio server may send; a longer one fails the call it answers. @default 64 MiB */
  maxMessageBytes?: number | undefined;
  /** Who starts a stdio server's process. @default spawned from this thread */
  spawner?: ChildSpawner | undefined;
  /** A `per-workspace` entry's roots, which the connection answers `roots/list` with itself. */
  roots?: readonly Root[] | undefined;
  /** Told the method of every request the server sends its client but `ping`, from the handshake on, whoever answers it. */
  onServerRequest?: ((method: string) => void) | undefined;
  /**
   * The server's own secrets now (its env and header values, a refreshed token included): what
   * the server returns and writes to stderr is scrubbed of them, and of nobody else's.
   * @default the secrets of `config`
   */
  secrets?: (() => SecretSet) | undefined;
}

/** The modern protocol revision this client speaks. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';
/** Legacy revisions this client accepts from `initialize`, newest first. */
export const LEGACY_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];

/** `_meta` keys of a modern request. */
export const META = MODERN_META;

/** `_meta` keys of the 2026-07-28 per-request envelope. */
const ENVELOPE_KEYS: readonly string[] = [META.protocolVersion, META.clientCapabilities, META.clientInfo, META.logLevel];

/** `params` without the modern envelope keys in its `_meta` (as given when it has none: no copy). */
function withoutEnvelope(params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const meta = params?._meta as Record<string, unknown> | undefined;
  if (meta === undefined || !ENVELOPE_KEYS.some((key) => key in meta)) return params;
  const kept = Object.fromEntries(Object.entries(meta).filter(([key]) => !ENVELOPE_KEYS.includes(key)));
  const { _meta: _dropped, ...rest } = params!;
  return Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
}

/** JSON-RPC error codes of the modern revision that only a modern server sends. */
const UNSUPPORTED_PROTOCOL_VERSION = -32022;
const METHOD_NOT_FOUND = -32601;

/** Upper bound on pages per list, so a server that keeps returning cursors cannot loop us. */
const MAX_PAGES = 100;

export const CLIENT_INFO = { name: 'mcpool', version: '0.1.0' };
/** What a legacy `initialize` declares, and a modern request when neither the view nor the pool says. */
const DEFAULT_CAPABILITIES = { sampling: {}, elicitation: {}, roots: {} };

type OpenedInfo = {
  era: ProtocolEra;
  protocolVersion: string;
  serverInfo: { name: string; version: string } | undefined;
  capabilities: Record<string, unknown>;
  instructions: string | undefined;
};

export class ServerConnection {
  readonly client: UpstreamClient;
  readonly pid: number | undefined;
  readonly era: ProtocolEra;
  readonly protocolVersion: string;
  readonly serverInfo: { name: string; version: string } | undefined;
  readonly capabilities: Record<string, unknown>;
  readonly instructions: string | undefined;
  /** True when this open ran the era probe (the verdict is fresh, worth caching). */
  readonly eraProbed: boolean;
  readonly #defaults: ViewClientInfo;
  readonly #requestTimeoutMs: number;
  lists: Lists;
  #closing: Promise<SweepResult | undefined> | undefined;
  #hooks: ServerMessageHooks | undefined;
  #onListChanged: ((kind: ListKind) => void) | undefined;
  #listen: ListenStream | undefined;
  /** A listen stream that broke while the connection stayed is opened again after this timer. */
  #listenRetry: NodeJS.Timeout | undefined;
  /** Breaks in a row without an acknowledged stream between them: the pause before the next try doubles. */
  #listenBreaks = 0;
  readonly #logger: ConnectionLogger;
  /** Modern over Streamable HTTP: tools whose `x-mcp-header` declarations are invalid are left out. */
  readonly #dropsInvalidHeaderTools: boolean;
  /** The tools already warned about, so a re-list does not warn again. */
  readonly #droppedTools = new Set<string>();

  private constructor(client: UpstreamClient, info: OpenedInfo, eraProbed: boolean, options: OpenConnectionOptions) {
    this.client = client;
    this.pid = (client.transport as { pid?: number }).pid;
    this.era = info.era;
    this.protocolVersion = info.protocolVersion;
    this.serverInfo = info.serverInfo;
    this.capabilities = info.capabilities;
    this.instructions = info.instructions;
    this.eraProbed = eraProbed;
    this.#defaults = options.defaults ?? {};
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    this.#logger = options.logger;
    this.#dropsInvalidHeaderTools = info.era === 'modern' && options.config.transport === 'http';
    this.lists = emptyLists();
    client.setHooks({
      request: (method, params, signal) => {
        if (this.#hooks === undefined) return Promise.reject(serverRequestRefused(method, 'the connection is still opening'));
        return this.#hooks.request(method, params, signal);
      },
      notification: (method, params) => this.#onNotification(method, params),
      oversized: (message, failed) => {
        const outcome = failed !== undefined ? 'the call it answers failed' : message.kind === 'server' ? 'it was the server’s own message' : 'no call could be told for certain: they wait for their deadline';
        this.#logger.warn({ bytes: message.bytes, maxMessageBytes: message.limit, id: message.id }, `dropped a message over maxMessageBytes; ${outcome}`);
      },
    });
  }

  /**
   * Spawns or connects, settles the era, opens the session (legacy) and discovers. On abort or
   * failure, whatever was started is torn down before the promise rejects, so no child survives
   * a failed spawn.
   */
  static async open(options: OpenConnectionOptions): Promise<ServerConnection> {
    const { config, signal } = options;
    let client: UpstreamClient | undefined;
    const onAbort = (): void => {
      void client?.close();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      signal.throwIfAborted();
      let opened: { client: UpstreamClient; info: OpenedInfo; probed: boolean };
      if (config.transport === 'stdio') {
        opened = await openStdio(options, (c) => (client = c));
      } else if (config.transport === 'http' || config.transport === 'sse') {
        opened = await openRemote(options, (c) => (client = c));
      } else if (config.transport === 'websocket') {
        // Config validation guarantees a ws:// or wss:// `url` for this transport. Loaded only
        // here, so an actor of a stdio server never loads the websocket library.
        const { WebSocketTransport } = await import('./transports/websocketTransport.js');
        const ws = new WebSocketTransport({ url: config.url!, headers: config.headers });
        client = new UpstreamClient(ws, clientOptions(options));
        await client.start();
        opened = await settleEra(client, options, ws);
      } else {
        throw new PoolError(ErrorCode.SPAWN_FAILED, `transport '${String(config.transport)}' is not supported`);
      }
      signal.throwIfAborted();
      client = opened.client;
      const connection = new ServerConnection(opened.client, opened.info, opened.probed, options);
      connection.lists = await connection.discoverAll(signal);
      return connection;
    } catch (error) {
      // A failed spawn sweeps its tree like any other close path.
      const lastError = client?.lastError;
      // The stderr tail of a failed start may hold the server's credentials, like any stderr line.
      const stdio = client?.transport instanceof ProcessGroupStdioTransport ? client.transport : undefined;
      if (client !== undefined) await closeTransport(client);
      // Described once the tree is closed: the end of stdout is seen before the exit, and how the
      // process ended (its own exit code, or our signal if it outlived the failure) is part of the report.
      const detail = stdio === undefined ? '' : secretsOf(options).scrubText(describeStdioFailure(stdio));
      throw scrubbedError(toSpawnError(error, lastError, detail), secretsOf(options));
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  get closed(): boolean {
    return this.client.closed;
  }

  get transport(): UpstreamTransport {
    return this.client.transport;
  }

  /**
   * `listener` runs once when the transport is lost or closed, on the turn after: the calls the
   * loss failed are answered first, and what the listener sets off (a state change, logging,
   * the teardown of the process tree) does not hold their rejections up. Removing it before then
   * cancels it.
   */
  onClose(listener: (error: Error | undefined) => void): () => void {
    let removed = false;
    const off = this.client.onClose((error) => {
      setImmediate(() => {
        if (!removed) listener(error);
      });
    });
    return () => {
      removed = true;
      off();
    };
  }

  /** `listener` runs once, at the moment the transport is lost or closed, before its calls are answered. */
  onLoss(listener: (error: Error | undefined) => void): () => void {
    return this.client.onClose(listener);
  }

  /** `onChanged(kind)` runs on every list_changed notification (also without the capability). */
  onListChanged(onChanged: (kind: ListKind) => void): void {
    this.#onListChanged = onChanged;
  }

  /** Routes what the server sends on its own: requests, logging and other notifications, `resources/updated`. */
  onServerMessages(hooks: ServerMessageHooks): void {
    this.#hooks = hooks;
  }

  #onNotification(method: string, params: Record<string, unknown> | undefined): void {
    switch (method) {
      case 'notifications/tools/list_changed':
        this.#onListChanged?.('tools');
        return;
      case 'notifications/prompts/list_changed':
        this.#onListChanged?.('prompts');
        return;
      case 'notifications/resources/list_changed':
        this.#onListChanged?.('resources');
        return;
      case 'notifications/resources/updated':
        if (typeof params?.uri === 'string') this.#hooks?.resourceUpdated(params.uri);
        return;
      case 'notifications/subscriptions/acknowledged':
        this.#listen?.ack();
        return;
      default:
        this.#hooks?.notification({ method, ...(params ? { params } : {}) });
    }
  }

  /**
   * The `_meta` a modern request carries: the caller's declaration over the pool's defaults, and
   * the caller's own `_meta` keys over both. Legacy requests get the caller's `_meta` only, less
   * the keys only the modern revision defines (a 2026-07-28 caller's envelope means nothing to a
   * 2025-11-25 server, which negotiated all of it at `initialize`).
   */
  withMeta(params: Record<string, unknown> | undefined, view?: ViewClientInfo): Record<string, unknown> | undefined {
    if (this.era !== 'modern') return withoutEnvelope(params);
    const d = this.#defaults;
    const logLevel = view?.logLevel ?? d.logLevel;
    // A legacy caller (a 2025 `initialize` behind the view) declared a version a modern server
    // rejects (-32022): its requests carry the pool's modern one, with the caller's own declaration.
    const declared = view?.protocolVersion;
    const version = declared === undefined || LEGACY_PROTOCOL_VERSIONS.includes(declared) ? (d.protocolVersion ?? MODERN_PROTOCOL_VERSION) : declared;
    const meta: Record<string, unknown> = {
      [META.protocolVersion]: version,
      [META.clientCapabilities]: view?.capabilities ?? d.capabilities ?? DEFAULT_CAPABILITIES,
      [META.clientInfo]: view?.clientInfo ?? d.clientInfo ?? CLIENT_INFO,
      ...(logLevel === undefined ? {} : { [META.logLevel]: logLevel }),
      ...(params?._meta as Record<string, unknown> | undefined),
    };
    return { ...params, _meta: meta };
  }

  /** Lists everything the server's capabilities announce. */
  async discoverAll(signal?: AbortSignal): Promise<Lists> {
    const [tools, prompts, resources] = await Promise.all([
      this.discover('tools', signal),
      this.discover('prompts', signal),
      this.discover('resources', signal),
    ]);
    return { tools: tools.tools ?? [], prompts: prompts.prompts ?? [], resources: resources.resources ?? [], resourceTemplates: resources.resourceTemplates ?? [] };
  }

  /** Lists one kind (resources include templates). An absent capability yields empty lists. */
  async discover(kind: ListKind, signal?: AbortSignal): Promise<Partial<Lists>> {
    const caps = this.capabilities;
    if (kind === 'tools') return { tools: caps.tools ? this.#usableTools((await this.#paged('tools/list', 'tools', signal)) as ToolInfo[]) : [] };
    if (kind === 'prompts') return { prompts: caps.prompts ? ((await this.#paged('prompts/list', 'prompts', signal)) as PromptInfo[]) : [] };
    if (!caps.resources) return { resources: [], resourceTemplates: [] };
    const [resources, resourceTemplates] = await Promise.all([
      this.#paged('resources/list', 'resources', signal) as Promise<ResourceInfo[]>,
      // Templates are optional even for resource servers: a -32601 means none.
      (this.#paged('resources/templates/list', 'resourceTemplates', signal) as Promise<ResourceTemplateInfo[]>).catch((error: unknown) => {
        if (error instanceof UpstreamRpcError && error.code === METHOD_NOT_FOUND) return [];
        throw error;
      }),
    ]);
    return { resources, resourceTemplates };
  }

  /**
   * A 2026-07-28 client over Streamable HTTP must leave out every tool whose `x-mcp-header`
   * declarations are invalid (it could not mirror them, and a server would refuse its calls),
   * keep the others, and should say so: one warning per tool and connection.
   */
  #usableTools(tools: ToolInfo[]): ToolInfo[] {
    const scanTool = scanParamHeaders;
    if (!this.#dropsInvalidHeaderTools || scanTool === undefined) return tools;
    return tools.filter((tool) => {
      const scan = scanTool(tool.inputSchema);
      if (scan.valid) return true;
      if (!this.#droppedTools.has(tool.name)) {
        this.#droppedTools.add(tool.name);
        this.#logger.warn({ tool: tool.name, reason: scan.reason }, 'left a tool out of the list: its x-mcp-header declaration is invalid');
      }
      return false;
    });
  }

  async #paged(method: string, key: string, signal?: AbortSignal): Promise<unknown[]> {
    const items: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const params = cursor === undefined ? {} : { cursor };
      const result = await this.client.request(method, this.withMeta(params), { timeoutMs: this.#requestTimeoutMs, signal });
      const list = result[key];
      if (Array.isArray(list)) items.push(...(list as unknown[]));
      cursor = typeof result.nextCursor === 'string' && result.nextCursor.length > 0 ? result.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    return items;
  }

  /** Sends any request; the result comes back as the server sent it. */
  request(method: string, params: Record<string, unknown> | undefined, options: UpstreamRequestOptions & { view?: ViewClientInfo | undefined }): Promise<Record<string, unknown>> {
    return this.client.request(method, this.withMeta(params, options.view), options);
  }

  /**
   * Modern only: opens (or re-opens with a new filter) the one `subscriptions/listen` stream of
   * this connection and resolves when the server acknowledged it (bounded). The stream's
   * notifications arrive through the same routing as a legacy server's.
   */
  async listen(filter: ListenFilter, ackTimeoutMs = 10_000): Promise<void> {
    if (this.era !== 'modern' || this.closed) return;
    const previous = this.#listen;
    if (previous !== undefined && sameFilter(previous.filter, filter)) return previous.acked;
    clearTimeout(this.#listenRetry);
    this.#listenRetry = undefined;
    let acked!: () => void;
    const entry: ListenStream = { filter, controller: new AbortController(), acked: new Promise<void>((resolve) => (acked = resolve)), ack: () => acked() };
    this.#listen = entry;
    // The stream lasts as long as the connection (its only bound): no timer ends it.
    const forever = 2_147_483_647;
    void this.client.request('subscriptions/listen', this.withMeta({ notifications: filter }), { timeoutMs: forever, maxTotalTimeoutMs: forever, signal: entry.controller.signal }).then(
      // A result is the server ending the subscription gracefully: open it again while we still want it.
      () => {
        if (this.#listen !== entry || this.closed) return;
        this.#listen = undefined;
        void this.listen(filter).catch(() => undefined);
      },
      (error: unknown) => this.#listenBroke(entry, error),
    );
    // The old stream ends once the new one is asked for (cancelling it upstream).
    previous?.controller.abort();
    let timer: NodeJS.Timeout | undefined;
    const acknowledged = await Promise.race([entry.acked.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ackTimeoutMs)))]);
    clearTimeout(timer);
    if (!acknowledged) this.#logger.warn({ filter }, 'subscriptions/listen was not acknowledged in time');
  }

  /**
   * The listen stream failed while the connection lives on (an HTTP stream cut, a proxy's idle
   * timeout): the 2026-07-28 revision has no resumption, so the list changes sent meanwhile are
   * lost. It is opened again after a pause (500 ms, doubling per break in a row up to 30 s), and
   * once acknowledged every list it covers is read again, so the views catch up on what was missed.
   */
  #listenBroke(entry: ListenStream, error: unknown): void {
    if (this.#listen !== entry || this.closed || entry.controller.signal.aborted) return;
    this.#listen = undefined;
    const pauseMs = Math.min(30_000, 500 * 2 ** this.#listenBreaks);
    this.#listenBreaks += 1;
    this.#logger.warn({ err: error, retryInMs: pauseMs }, 'the subscriptions/listen stream broke; opening it again');
    this.#listenRetry = setTimeout(() => {
      this.#listenRetry = undefined;
      if (this.closed || this.#listen !== undefined) return;
      void this.listen(entry.filter).catch(() => undefined);
      const reopened = this.#listen as ListenStream | undefined;
      void reopened?.acked.then(() => {
        if (this.#listen !== reopened || this.closed) return;
        this.#listenBreaks = 0;
        for (const kind of listKindsOf(entry.filter)) this.#onListChanged?.(kind);
      });
    }, pauseMs);
    // A pending retry never keeps the host alive; closing the connection clears it.
    this.#listenRetry.unref();
  }

  /** The filter the open listen stream asked for, if any. */
  get listenFilter(): ListenFilter | undefined {
    return this.#listen?.filter;
  }

  /** Closes the transport, sweeping a stdio server's tree. Idempotent; never rejects. */
  close(): Promise<SweepResult | undefined> {
    clearTimeout(this.#listenRetry);
    this.#listenRetry = undefined;
    this.#closing ??= closeTransport(this.client);
    return this.#closing;
  }

  /** The stdio transport, when this connection has one. */
  get stdio(): ProcessGroupStdioTransport | undefined {
    return this.client.transport instanceof ProcessGroupStdioTransport ? this.client.transport : undefined;
  }

}

interface ListenStream {
  filter: ListenFilter;
  controller: AbortController;
  acked: Promise<void>;
  ack(): void;
}

/** What a `subscriptions/listen` asks the server to send. */
export interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
}

/** The lists a listen filter keeps current. */
function listKindsOf(filter: ListenFilter): ListKind[] {
  const kinds: ListKind[] = [];
  if (filter.toolsListChanged === true) kinds.push('tools');
  if (filter.promptsListChanged === true) kinds.push('prompts');
  if (filter.resourcesListChanged === true) kinds.push('resources');
  return kinds;
}

function sameFilter(a: ListenFilter, b: ListenFilter): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

async function openStdio(options: OpenConnectionOptions, track: (client: UpstreamClient) => void): Promise<{ client: UpstreamClient; info: OpenedInfo; probed: boolean }> {
  const { config, logger } = options;
  const spawnOne = async (): Promise<UpstreamClient> => {
    const stdio = new ProcessGroupStdioTransport({
      command: config.command!,
      args: config.args,
      cwd: config.cwd,
      env: config.env,
      shutdownStepMs: options.shutdownStepMs,
      onStderrLine: (line) => {
        const clean = secretsOf(options).scrubText(line);
        options.onStderrLine?.(clean);
        if (logger.isLevelEnabled('debug')) logger.debug({ stderr: clean }, 'server stderr');
      },
      onSpawn: options.onSpawned,
      readGate: options.readGate,
      maxMessageBytes: options.maxMessageBytes,
      spawner: options.spawner,
    });
    const client = new UpstreamClient(stdio, clientOptions(options));
    track(client);
    await client.start();
    options.signal.throwIfAborted();
    return client;
  };
  const client = await spawnOne();
  try {
    return await settleEra(client, options, client.transport);
  } catch (error) {
    if (!(error instanceof ProbeExited)) throw error;
    // The server exited on a request before `initialize`: it is legacy. Once more, as legacy.
    logger.info({}, 'the server exited on the era probe; spawning it again as legacy');
    await closeTransport(client);
    const again = await spawnOne();
    return { client: again, info: await initialize(again, options), probed: true };
  }
}

/** The probe's process exited before it answered. */
class ProbeExited extends Error {
  override name = 'ProbeExited';
}

/**
 * Decides the era on an open client and opens the session: probe (unless a held verdict says
 * legacy), then `initialize` for legacy. A held legacy verdict that `initialize` refuses with a
 * modern error is probed again.
 */
async function settleEra(client: UpstreamClient, options: OpenConnectionOptions, transport: UpstreamTransport): Promise<{ client: UpstreamClient; info: OpenedInfo; probed: boolean }> {
  const modern = (info: OpenedInfo): { client: UpstreamClient; info: OpenedInfo; probed: boolean } => {
    transport.setProtocol?.('modern', MODERN_PROTOCOL_VERSION);
    return { client, info, probed: true };
  };
  const held = options.eraHint === 'legacy';
  if (!held) {
    const probed = await probe(client, options, options.probeTimeoutMs ?? 3000);
    if (probed !== undefined) return modern(probed);
  }
  try {
    return { client, info: await initialize(client, options), probed: !held };
  } catch (error) {
    // A modern-only server refuses `initialize` naming the modern revision: a held legacy verdict
    // was stale, or the probe timed out only because the server was slow to start.
    if (!isModernRefusal(error)) throw error;
    options.logger.info({}, 'the server refused initialize with a modern error; asking server/discover again');
    const probed = await probe(client, options, options.requestTimeoutMs ?? 60_000);
    if (probed === undefined) throw error;
    return modern(probed);
  }
}

/** `server/discover`: the server's description when it is modern, undefined when it is legacy. */
async function probe(client: UpstreamClient, options: OpenConnectionOptions, timeoutMs: number): Promise<OpenedInfo | undefined> {
  const meta = {
    [META.protocolVersion]: options.defaults?.protocolVersion ?? MODERN_PROTOCOL_VERSION,
    [META.clientCapabilities]: options.defaults?.capabilities ?? DEFAULT_CAPABILITIES,
    [META.clientInfo]: options.defaults?.clientInfo ?? CLIENT_INFO,
  };
  let result: Record<string, unknown>;
  try {
    // Not cancelled on timeout: a modern server that was slow to start still settles on it.
    result = await client.request('server/discover', { _meta: meta }, { timeoutMs, signal: options.signal, cancelOnTimeout: false });
  } catch (error) {
    options.signal.throwIfAborted();
    if (error instanceof UpstreamClosedError || (client.transport instanceof ProcessGroupStdioTransport && client.transport.exited)) {
      throw new ProbeExited('the server exited on server/discover');
    }
    if (refusesToken(error)) throw authRequired(error);
    if (error instanceof UpstreamHttpError && error.status === 403) {
      throw new PoolError(ErrorCode.SPAWN_FAILED, `the server refused the request: HTTP ${error.status} (authentication)`, { data: { status: error.status } });
    }
    if (isModernRefusal(error)) {
      // A modern server that did not like our version's spelling in the probe but supports it.
      result = await client.request('server/discover', { _meta: { ...meta, [META.protocolVersion]: MODERN_PROTOCOL_VERSION } }, { timeoutMs, signal: options.signal });
    } else {
      options.logger.debug({ err: (error as Error).message }, 'era probe: not modern');
      return undefined;
    }
  }
  const versions = result.supportedVersions;
  if (!Array.isArray(versions) || !versions.includes(MODERN_PROTOCOL_VERSION)) return undefined;
  const serverInfo = (result._meta as Record<string, unknown> | undefined)?.[META.serverInfo] as OpenedInfo['serverInfo'];
  return {
    era: 'modern',
    protocolVersion: MODERN_PROTOCOL_VERSION,
    serverInfo,
    capabilities: (result.capabilities as Record<string, unknown> | undefined) ?? {},
    instructions: typeof result.instructions === 'string' ? result.instructions : undefined,
  };
}

/** A JSON-RPC (or HTTP-carried) error that only a modern server sends, naming 2026-07-28 as supported. */
function isModernRefusal(error: unknown): boolean {
  let rpc: { code?: unknown; data?: unknown } | undefined;
  if (error instanceof UpstreamRpcError) rpc = error;
  else if (error instanceof UpstreamHttpError && error.status !== 401 && error.status !== 403) {
    try {
      rpc = (JSON.parse(error.body) as { error?: { code?: unknown; data?: unknown } }).error;
    } catch {
      return false;
    }
  }
  if (rpc?.code !== UNSUPPORTED_PROTOCOL_VERSION) return false;
  const data = rpc.data as { supported?: unknown; supportedVersions?: unknown } | undefined;
  const supported = data?.supported ?? data?.supportedVersions;
  return Array.isArray(supported) && supported.includes(MODERN_PROTOCOL_VERSION);
}

async function initialize(client: UpstreamClient, options: OpenConnectionOptions): Promise<OpenedInfo> {
  const result = await client.request(
    'initialize',
    { protocolVersion: LEGACY_PROTOCOL_VERSIONS[0], capabilities: DEFAULT_CAPABILITIES, clientInfo: CLIENT_INFO },
    { timeoutMs: options.requestTimeoutMs ?? 60_000, signal: options.signal },
  );
  const version = result.protocolVersion;
  if (typeof version !== 'string' || !LEGACY_PROTOCOL_VERSIONS.includes(version)) {
    throw new PoolError(ErrorCode.SPAWN_FAILED, `the server's protocol version is not supported: ${String(version)}`);
  }
  client.transport.setProtocol?.('legacy', version);
  await client.notify('notifications/initialized');
  return {
    era: 'legacy',
    protocolVersion: version,
    serverInfo: result.serverInfo as OpenedInfo['serverInfo'],
    capabilities: (result.capabilities as Record<string, unknown> | undefined) ?? {},
    instructions: typeof result.instructions === 'string' ? result.instructions : undefined,
  };
}

/**
 * Remote servers, over mcpool's own HTTP transports (no SDK in the actor thread). Streamable
 * HTTP settles its era like stdio (the probe reads a 400's body; 401/403 are auth, never era
 * evidence); a modern connection cancels a call by closing its request's stream. A server that
 * refuses Streamable HTTP outright (400/404/405 on `initialize`) gets the 2024-11-05 HTTP+SSE
 * transport, as the 2025-11-25 spec's backwards-compatibility rule says.
 */
/** The `x-mcp-header` check of tool schemas, loaded with the Streamable HTTP transport (a stdio connection's thread never loads it). */
let scanParamHeaders: typeof import('./transports/httpMcpHeaders.js').scanParamHeaders | undefined;

async function openRemote(options: OpenConnectionOptions, track: (client: UpstreamClient) => void): Promise<{ client: UpstreamClient; info: OpenedInfo; probed: boolean }> {
  const { config, logger } = options;
  const url = new URL((config.transport === 'http' ? config.httpUrl ?? config.url : config.url ?? config.httpUrl)!);
  if (config.transport === 'http') {
    const { StreamableHttpTransport } = await import('./transports/streamableHttpTransport.js');
    ({ scanParamHeaders } = await import('./transports/httpMcpHeaders.js'));
    const transport = new StreamableHttpTransport({ url, headers: config.headers, readGate: options.readGate });
    const client = new UpstreamClient(transport, clientOptions(options));
    track(client);
    try {
      await client.start();
      const opened = await settleEra(client, options, transport);
      if (opened.info.era === 'modern') client.setCancelBy('signal');
      return opened;
    } catch (error) {
      await client.close();
      if (refusesToken(error)) throw authRequired(error);
      const status = error instanceof UpstreamHttpError ? error.status : undefined;
      if (status !== 400 && status !== 404 && status !== 405) throw error;
      logger.info({ status }, 'Streamable HTTP refused; falling back to legacy SSE');
    }
  }
  const { LegacySseTransport } = await import('./transports/legacySseTransport.js');
  const client = new UpstreamClient(new LegacySseTransport({ url, headers: config.headers, readGate: options.readGate }), clientOptions(options));
  track(client);
  try {
    await client.start();
    return { client, info: await initialize(client, options), probed: false };
  } catch (error) {
    if (refusesToken(error)) throw authRequired(error);
    throw error;
  }
}

/**
 * A refused token (see `refusesToken`): the server wants a token the pool does not have, or
 * refused the one it sent. Not a spawn failure: the connection machine does not retry it, the
 * supervisor waits for a token. `challenge` is the `WWW-Authenticate` header (it names no
 * secret: resource metadata, scopes).
 */
export function authRequired(error: UpstreamHttpError): PoolError {
  return new PoolError(ErrorCode.AUTH_REQUIRED, `the server requires authorization (HTTP ${error.status})`, {
    data: { status: error.status, ...(error.wwwAuthenticate === undefined ? {} : { challenge: error.wwwAuthenticate }) },
  });
}

/**
 * Closes a transport; for stdio, the descendants are found first (one `ps` snapshot: once the
 * root exits they are re-parented and only their group still finds them), then the group goes
 * through stdin end → SIGTERM → SIGKILL, then whatever left the group (a `setsid` daemon) is
 * swept, its start time checked. Never rejects.
 */
async function closeTransport(client: UpstreamClient): Promise<SweepResult | undefined> {
  // A loss is announced while its calls' rejections are still on their way to the views: the
  // `ps` below (a spawn, milliseconds on a busy machine) waits until this turn's answers left.
  await new Promise<void>((resolve) => setImmediate(resolve));
  const transport = client.transport;
  const pid = transport instanceof ProcessGroupStdioTransport ? transport.pid : undefined;
  const tree: TreeSnapshot | undefined = pid === undefined ? undefined : await snapshotTree(pid, pid).catch(() => undefined);
  await client.close();
  return tree === undefined ? undefined : sweepTracked(tree, { graceMs: 500, skipRoot: true });
}

/** The secrets of a config opened without a `secrets` source, computed once per open. */
const configSecrets = new WeakMap<OpenConnectionOptions, SecretSet>();

/** The server's own secrets now (see {@link OpenConnectionOptions.secrets}). */
function secretsOf(options: OpenConnectionOptions): SecretSet {
  if (options.secrets !== undefined) return options.secrets();
  let secrets = configSecrets.get(options);
  if (secrets === undefined) configSecrets.set(options, (secrets = secretSetOf(options.config)));
  return secrets;
}

/**
 * `error` with its message and data scrubbed of the server's own secrets: an error may carry what
 * the server said outside any JSON-RPC message (an HTTP error body, a failed start's output).
 */
export function scrubbedError(error: PoolError, secrets: SecretSet): PoolError {
  const message = secrets.scrubText(error.message);
  const data = secrets.scrubValue(error.data);
  if (message === error.message && data === error.data) return error;
  return new PoolError(error.code, message, { cause: error.cause, ...(data === undefined ? {} : { data }) });
}

/** The upstream client of a connection: every message its server sends is scrubbed of that server's own secrets first. */
function clientOptions(options: OpenConnectionOptions): UpstreamClientOptions {
  return { cancelBy: 'notification', logger: options.logger, roots: options.roots, onRequest: options.onServerRequest, scrub: (message) => secretsOf(options).scrubMessage(message) };
}

function emptyLists(): Lists {
  return { tools: [], prompts: [], resources: [], resourceTemplates: [] };
}

function describeStdioFailure(stdio: ProcessGroupStdioTransport): string {
  const parts: string[] = [];
  const exit = stdio.exitInfo;
  if (exit !== undefined) parts.push(exit.signal ? `the process was killed by ${exit.signal}` : `the process exited with code ${exit.code}`);
  const tail = stdio.stderrTail.trim();
  if (tail.length > 0) parts.push(`stderr: ${tail.slice(-1000)}`);
  return parts.join('; ');
}

function toSpawnError(error: unknown, transportError: Error | undefined, stdioDetail: string): PoolError {
  // Refused while listing what it serves (a server that takes `initialize` without a token).
  if (refusesToken(error)) return authRequired(error);
  if (error instanceof PoolError && error.code !== ErrorCode.CALL_TIMEOUT && error.code !== ErrorCode.CALL_CANCELLED) {
    return stdioDetail ? new PoolError(error.code, `${error.message}; ${stdioDetail}`, { cause: error, ...(error.data ? { data: error.data } : {}) }) : error;
  }
  const err = error as Error & { code?: unknown };
  if (err?.name === 'AbortError' || err?.name === 'TimeoutError' || (error instanceof PoolError && error.code === ErrorCode.CALL_CANCELLED)) {
    return new PoolError(ErrorCode.SPAWN_FAILED, 'spawn aborted', { cause: error });
  }
  // fetch says only "fetch failed"; the reason (ECONNREFUSED, a TLS error…) is in its cause.
  const cause = (err as { cause?: { message?: unknown } } | undefined)?.cause?.message;
  const detail = [typeof cause === 'string' ? cause : undefined, transportError && transportError !== error ? transportError.message : undefined, stdioDetail || undefined]
    .filter(Boolean)
    .map((part) => ` (${part})`)
    .join('');
  const data = typeof err?.code === 'string' || typeof err?.code === 'number' ? { originalCode: err.code } : undefined;
  return new PoolError(ErrorCode.SPAWN_FAILED, `${err?.message ?? String(error)}${detail}`, data ? { cause: error, data } : { cause: error });
}
