/**
 * One live MCP connection: an SDK `Client` over a transport, the lists it discovered, and the
 * refresh of those lists on `list_changed`. The machine owns when connections open and close;
 * this class owns what a connection is.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode as McpErrorCode,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  ErrorCode,
  PoolError,
  type PromptInfo,
  type ResourceInfo,
  type ResourceTemplateInfo,
  type ServerConfig,
  type ToolInfo,
  type UpstreamNotification,
} from '@mcpool/protocol';
import { z } from 'zod';
import { snapshotTree, sweepTracked, type SweepResult, type TreeSnapshot } from '@mcpool/protocol/processTree';
import { ProcessGroupStdioTransport } from './transports/processGroupStdioTransport.js';
import { WebSocketTransport } from './transports/websocketTransport.js';
import type { Logger } from 'pino';

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
  logger: Logger;
  signal: AbortSignal;
  /** Called as soon as a stdio child exists, before initialize. */
  onSpawned?: (pid: number) => void;
}

// Loose result schemas: results are passed on as received, with fields the SDK's own schemas
// would drop (reference/mcp-spec-facts.md §7.1).
const looseResult = z.looseObject({});
const pageOf = <K extends string>(key: K) =>
  z.looseObject({ [key]: z.array(z.looseObject({})), nextCursor: z.string().optional() } as Record<K, z.ZodArray<z.ZodObject>>);
const toolsPage = pageOf('tools');
const promptsPage = pageOf('prompts');
const resourcesPage = pageOf('resources');
const templatesPage = pageOf('resourceTemplates');

/** Upper bound on pages per list, so a server that keeps returning cursors cannot loop us. */
const MAX_PAGES = 100;

const CLIENT_INFO = { name: 'mcpool', version: '0.1.0' };

export class ServerConnection {
  readonly client: Client;
  readonly transport: Transport;
  readonly pid: number | undefined;
  lists: Lists;
  #closed = false;
  #closing: Promise<SweepResult | undefined> | undefined;
  #closeListeners = new Set<(error: Error | undefined) => void>();
  #lastTransportError: Error | undefined;

  private constructor(client: Client, transport: Transport, pid: number | undefined, lists: Lists) {
    this.client = client;
    this.transport = transport;
    this.pid = pid;
    this.lists = lists;
  }

  /**
   * Spawns or connects, initializes and discovers. On abort or failure, whatever was started is
   * torn down before the promise rejects, so no child survives a failed spawn.
   */
  static async open(options: OpenConnectionOptions): Promise<ServerConnection> {
    const { config, signal, logger } = options;
    const scrub = secretScrubber(config);
    // Server→client requests are routed to the session whose call is in flight (viewHub.ts), so
    // the pool can offer what its sessions may answer.
    const client = new Client(CLIENT_INFO, { capabilities: { sampling: {}, elicitation: {}, roots: {} } });
    let transport: Transport | undefined;
    let lastError: Error | undefined;
    const onAbort = (): void => {
      void transport?.close().catch(() => undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      signal.throwIfAborted();
      if (config.transport === 'stdio') {
        const stdio = new ProcessGroupStdioTransport({
          command: config.command!,
          args: config.args,
          cwd: config.cwd,
          env: config.env,
          shutdownStepMs: options.shutdownStepMs,
          onStderrLine: (line) => {
            if (logger.isLevelEnabled('debug')) logger.debug({ stderr: scrub(line) }, 'server stderr');
          },
          onSpawn: options.onSpawned,
        });
        transport = stdio;
        stdio.onerror = (error) => {
          lastError = error;
        };
        // The SDK's connect() starts the transport (spawn), then initializes.
        // The stderr tail of a failed start may hold the server's credentials, like any stderr line.
        await connectClient(client, stdio, signal, () => scrub(describeStdioFailure(stdio)));
      } else if (config.transport === 'http' || config.transport === 'sse') {
        transport = await connectRemote(client, config, signal, logger);
      } else if (config.transport === 'websocket') {
        // Config validation guarantees a ws:// or wss:// `url` for this transport.
        const ws = new WebSocketTransport({ url: config.url!, headers: config.headers });
        transport = ws;
        ws.onerror = (error) => {
          lastError = error;
        };
        await connectClient(client, ws, signal);
      } else {
        throw new PoolError(ErrorCode.SPAWN_FAILED, `transport '${String(config.transport)}' is not supported`);
      }
      signal.throwIfAborted();
      const connection = new ServerConnection(client, transport, (transport as { pid?: number }).pid, emptyLists());
      connection.lists = await connection.discoverAll(signal);
      connection.#watch();
      return connection;
    } catch (error) {
      // A failed spawn sweeps its tree like any other close path.
      if (transport !== undefined) await closeTransport(transport);
      await client.close().catch(() => undefined);
      throw toSpawnError(error, lastError);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Registered listeners run once when the transport is lost or closed. */
  onClose(listener: (error: Error | undefined) => void): () => void {
    if (this.#closed) {
      queueMicrotask(() => listener(this.#lastTransportError));
      return () => undefined;
    }
    this.#closeListeners.add(listener);
    return () => this.#closeListeners.delete(listener);
  }

  /** Installs list_changed handlers that call `onChanged(kind)`. */
  onListChanged(onChanged: (kind: ListKind) => void): void {
    // Registered even without the capability: some servers send the notification anyway.
    this.client.setNotificationHandler(ToolListChangedNotificationSchema, () => onChanged('tools'));
    this.client.setNotificationHandler(PromptListChangedNotificationSchema, () => onChanged('prompts'));
    this.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => onChanged('resources'));
  }

  /**
   * Routes what the server sends on its own: sampling/elicitation/roots requests, logging and
   * other notifications, and `resources/updated`.
   */
  onServerMessages(hooks: ServerMessageHooks): void {
    for (const schema of [CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema]) {
      this.client.setRequestHandler(schema as typeof ListRootsRequestSchema, (request, extra) =>
        hooks.request(request.method, (request.params ?? {}) as Record<string, unknown>, extra.signal) as never,
      );
    }
    this.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => hooks.resourceUpdated(notification.params.uri));
    this.client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) =>
      hooks.notification({ method: notification.method, params: notification.params }),
    );
    this.client.fallbackNotificationHandler = async (notification) =>
      hooks.notification({ method: notification.method, ...(notification.params ? { params: notification.params } : {}) });
  }

  #watch(): void {
    const previousClose = this.client.onclose;
    this.client.onclose = () => {
      previousClose?.();
      this.#markClosed();
    };
    const previousError = this.client.onerror;
    this.client.onerror = (error) => {
      previousError?.(error);
      this.#lastTransportError = error;
    };
  }

  #markClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const listener of this.#closeListeners) {
      try {
        listener(this.#lastTransportError);
      } catch {
        // one listener's failure must not stop the others
      }
    }
    this.#closeListeners.clear();
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
    const caps = this.client.getServerCapabilities() ?? {};
    if (kind === 'tools') {
      return { tools: caps.tools ? ((await this.#paged('tools/list', toolsPage, 'tools', signal)) as ToolInfo[]) : [] };
    }
    if (kind === 'prompts') {
      return { prompts: caps.prompts ? ((await this.#paged('prompts/list', promptsPage, 'prompts', signal)) as PromptInfo[]) : [] };
    }
    if (!caps.resources) return { resources: [], resourceTemplates: [] };
    const [resources, resourceTemplates] = await Promise.all([
      this.#paged('resources/list', resourcesPage, 'resources', signal) as Promise<ResourceInfo[]>,
      // Templates are optional even for resource servers: a -32601 means none.
      (this.#paged('resources/templates/list', templatesPage, 'resourceTemplates', signal) as Promise<ResourceTemplateInfo[]>).catch(
        (error: unknown) => {
          if (error instanceof McpError && error.code === McpErrorCode.MethodNotFound) return [];
          throw error;
        },
      ),
    ]);
    return { resources, resourceTemplates };
  }

  async #paged(method: string, schema: z.ZodType, key: string, signal?: AbortSignal): Promise<unknown[]> {
    const items: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const params = cursor === undefined ? {} : { cursor };
      const result = (await this.client.request({ method, params }, schema as never, signal ? { signal } : undefined)) as Record<string, unknown>;
      items.push(...((result[key] as unknown[]) ?? []));
      cursor = typeof result.nextCursor === 'string' && result.nextCursor.length > 0 ? result.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    return items;
  }

  /** Sends any request with a loose result schema (results passed on as received). */
  request(
    method: string,
    params: Record<string, unknown>,
    options: { signal?: AbortSignal; timeout?: number; onprogress?: (progress: { progress: number; total?: number; message?: string }) => void },
  ): Promise<Record<string, unknown>> {
    return this.client.request({ method, params }, looseResult as never, {
      ...options,
      // Progress proves the server is alive: keep the call going, up to the caller's budget × 10.
      ...(options.onprogress && options.timeout !== undefined
        ? { resetTimeoutOnProgress: true, maxTotalTimeout: options.timeout * 10 }
        : {}),
    });
  }

  /** Closes the client and the transport (the stdio child's whole group). */
  /** Closes the client and the transport, sweeping a stdio server's tree. Idempotent; never rejects. */
  close(): Promise<SweepResult | undefined> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<SweepResult | undefined> {
    try {
      // DELETE the remote session so single-session servers accept the next initialize (qwen #9962).
      if (this.transport instanceof StreamableHTTPClientTransport && this.transport.sessionId !== undefined) {
        await this.transport.terminateSession().catch(() => undefined);
      }
      return await closeTransport(this.transport);
    } finally {
      await this.client.close().catch(() => undefined);
      this.#markClosed();
    }
  }

  /** The stdio transport, when this connection has one. */
  get stdio(): ProcessGroupStdioTransport | undefined {
    return this.transport instanceof ProcessGroupStdioTransport ? this.transport : undefined;
  }
}

/**
 * Closes a transport; for stdio, the descendants are found first (one `ps` snapshot: once the
 * root exits they are re-parented and only their group still finds them), then the group goes
 * through stdin end → SIGTERM → SIGKILL, then whatever left the group (a `setsid` daemon) is
 * swept, its start time checked. Never rejects.
 */
async function closeTransport(transport: Transport): Promise<SweepResult | undefined> {
  const pid = transport instanceof ProcessGroupStdioTransport ? transport.pid : undefined;
  const tree: TreeSnapshot | undefined = pid === undefined ? undefined : await snapshotTree(pid, pid).catch(() => undefined);
  await transport.close().catch(() => undefined);
  return tree === undefined ? undefined : sweepTracked(tree, { graceMs: 500, skipRoot: true });
}

/** Values shorter than this are too common to scrub without mangling ordinary text. */
const MIN_SECRET_LENGTH = 8;

/**
 * A server may print its own credentials to stderr: the env values and header values it was
 * configured with are replaced before a stderr line is logged (logs never hold them).
 */
export function secretScrubber(config: ServerConfig): (line: string) => string {
  const secrets = [...Object.values(config.env ?? {}), ...Object.values(config.headers ?? {})]
    .filter((value) => value.length >= MIN_SECRET_LENGTH)
    .sort((a, b) => b.length - a.length);
  if (secrets.length === 0) return (line) => line;
  return (line) => secrets.reduce((text, secret) => text.split(secret).join('[redacted]'), line);
}

function emptyLists(): Lists {
  return { tools: [], prompts: [], resources: [], resourceTemplates: [] };
}

async function connectClient(client: Client, transport: Transport, signal: AbortSignal, describe?: () => string): Promise<void> {
  try {
    // The SDK's connect has its own request timeout (60 s); the machine's spawn timeout is shorter
    // and aborts `signal`, which closes the transport and makes this reject.
    await client.connect(transport, { signal });
  } catch (error) {
    const detail = describe?.();
    if (detail) throw new PoolError(ErrorCode.SPAWN_FAILED, `${(error as Error).message}; ${detail}`, { cause: error });
    throw error;
  }
}

/** Streamable HTTP first; on 400/404/405 fall back to legacy SSE (spec 2025-11-25, C-1). */
async function connectRemote(client: Client, config: ServerConfig, signal: AbortSignal, logger: Logger): Promise<Transport> {
  const url = new URL((config.transport === 'http' ? config.httpUrl ?? config.url : config.url ?? config.httpUrl)!);
  const requestInit: RequestInit = config.headers ? { headers: config.headers } : {};
  if (config.transport === 'http') {
    const http = new StreamableHTTPClientTransport(url, { requestInit });
    try {
      await connectClient(client, http, signal);
      return http;
    } catch (error) {
      await http.close().catch(() => undefined);
      const status = error instanceof StreamableHTTPError ? error.code : undefined;
      if (status !== 400 && status !== 404 && status !== 405) throw error;
      logger.info({ status }, 'Streamable HTTP refused; falling back to legacy SSE');
    }
  }
  const sse = new SSEClientTransport(url, { requestInit, eventSourceInit: config.headers ? { fetch: withHeaders(config.headers) } : {} });
  await connectClient(client, sse, signal);
  return sse;
}

function withHeaders(headers: Record<string, string>): typeof fetch {
  return (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [key, value] of Object.entries(headers)) merged.set(key, value);
    return fetch(input, { ...init, headers: merged });
  };
}

function describeStdioFailure(stdio: ProcessGroupStdioTransport): string {
  const parts: string[] = [];
  const exit = stdio.exitInfo;
  if (exit !== undefined) parts.push(exit.signal ? `the process was killed by ${exit.signal}` : `the process exited with code ${exit.code}`);
  const tail = stdio.stderrTail.trim();
  if (tail.length > 0) parts.push(`stderr: ${tail.slice(-1000)}`);
  return parts.join('; ');
}

function toSpawnError(error: unknown, transportError: Error | undefined): PoolError {
  if (error instanceof PoolError) return error;
  const err = error as Error & { code?: unknown };
  if (err?.name === 'AbortError' || err?.name === 'TimeoutError') {
    return new PoolError(ErrorCode.SPAWN_FAILED, 'spawn aborted', { cause: error });
  }
  // fetch says only "fetch failed"; the reason (ECONNREFUSED, a TLS error…) is in its cause.
  const cause = (err as { cause?: { message?: unknown } } | undefined)?.cause?.message;
  const detail = [typeof cause === 'string' ? cause : undefined, transportError && transportError !== error ? transportError.message : undefined]
    .filter(Boolean)
    .map((part) => ` (${part})`)
    .join('');
  const data = typeof err?.code === 'string' || typeof err?.code === 'number' ? { originalCode: err.code } : undefined;
  return new PoolError(ErrorCode.SPAWN_FAILED, `${err?.message ?? String(error)}${detail}`, data ? { cause: error, data } : { cause: error });
}
