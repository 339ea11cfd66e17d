/**
 * What the editor may know of a pooled server before it connects: its tools (as `tools/list`
 * gives them), instructions, capabilities and server info. Read from the daemon's own MCP
 * endpoint for that server, `/mcp/<server>`, with stateless 2026-07-28 requests: no session is
 * opened for them, and the daemon keeps one set of views for all of one token's stateless
 * callers, so ten windows asking cost the daemon what one does.
 *
 * The daemon answers a server started on first use (`start: "lazy"`) from its catalog, without
 * starting it, and any other from the live server; this reader is the same for both. Another
 * source (a catalog route) would be another {@link MetadataSource}.
 */
import { McpoolHttpError, McpoolRequestError, type McpoolClient } from '@mcpool/client';
import { ErrorCode, isErrorCode } from '@mcpool/protocol/errorCodes';
import { PoolError } from '@mcpool/protocol/errors';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import { createParser } from 'eventsource-parser';

/** A tool as the MCP protocol lists it (`name`, `inputSchema`, and whatever else the server sent). */
export type ToolDefinition = Record<string, unknown> & { name: string };

export interface ServerMetadata {
  tools: ToolDefinition[];
  instructions?: string;
  capabilities?: unknown;
  serverInfo?: unknown;
}

/** Where a server's metadata comes from. */
export interface MetadataSource {
  /** @throws PoolError (the daemon's code when it gave one) or the client's request errors. */
  read(server: string, signal?: AbortSignal): Promise<ServerMetadata>;
  /** The config of these servers changed: let go of anything that still reads the old one. */
  forget?(servers: readonly string[]): Promise<void>;
}

export interface LiveMetadataOptions {
  baseUrl: string;
  token: string;
  /** For {@link LiveMetadata.forget}: the daemon's REST client with the same token. */
  rest: Pick<McpoolClient, 'listWorkspaceSessions' | 'closeWorkspaceSession'>;
  /** Sent as the client info of each request. */
  client: { name: string; version: string };
  /** @default 15000 */
  timeoutMs?: number;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

const PROTOCOL_VERSION = '2026-07-28';
/** A bound on `tools/list` pages: a server that keeps answering with a cursor is cut there. */
const MAX_PAGES = 50;

/** The metadata of each server, read over the daemon's `/mcp/<server>` endpoint. */
export class LiveMetadata implements MetadataSource {
  readonly #options: LiveMetadataOptions;
  #nextId = 1;

  constructor(options: LiveMetadataOptions) {
    this.#options = options;
  }

  async read(server: string, signal?: AbortSignal): Promise<ServerMetadata> {
    // Both at once: the first page does not wait for the description.
    const [discovered, first] = await Promise.all([this.#request(server, 'server/discover', {}, signal), this.#request(server, 'tools/list', {}, signal)]);
    const tools: ToolDefinition[] = [];
    let listed = first;
    for (let page = 1; ; page++) {
      for (const tool of Array.isArray(listed.tools) ? (listed.tools as unknown[]) : []) {
        if (typeof tool === 'object' && tool !== null && typeof (tool as { name?: unknown }).name === 'string') tools.push(tool as ToolDefinition);
      }
      const cursor = typeof listed.nextCursor === 'string' && listed.nextCursor !== '' ? listed.nextCursor : undefined;
      if (cursor === undefined || page >= MAX_PAGES) break;
      listed = await this.#request(server, 'tools/list', { cursor }, signal);
    }
    const meta = discovered._meta as Record<string, unknown> | undefined;
    return {
      tools,
      ...(typeof discovered.instructions === 'string' ? { instructions: discovered.instructions } : {}),
      ...(discovered.capabilities === undefined ? {} : { capabilities: discovered.capabilities }),
      ...(meta?.[MODERN_META.serverInfo] === undefined ? {} : { serverInfo: meta[MODERN_META.serverInfo] }),
    };
  }

  /**
   * The daemon keeps the views of a token's stateless requests on an endpoint between requests,
   * and a view stays on the process it was opened on: after a server's config changed, reads
   * through it would still see the old process's tools until the views idle out. Ending those
   * holds (the ones no `subscriptions/listen` stream uses) makes the next read open views on the
   * new config.
   */
  async forget(servers: readonly string[]): Promise<void> {
    const names = new Set(servers);
    const sessions = await this.#options.rest.listWorkspaceSessions();
    const stale = sessions.filter((session) => session.kind === 'mcp' && session.era === 'modern' && session.scope !== undefined && names.has(session.scope) && (session.listens ?? 0) === 0);
    await Promise.all(stale.map((session) => this.#options.rest.closeWorkspaceSession(session.id).catch(() => undefined)));
  }

  async #request(server: string, method: string, params: Record<string, unknown>, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    const { baseUrl, token } = this.#options;
    const id = this.#nextId++;
    const url = `${baseUrl}/mcp/${encodeURIComponent(server)}`;
    const body = {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: { [MODERN_META.protocolVersion]: PROTOCOL_VERSION, [MODERN_META.clientCapabilities]: {}, [MODERN_META.clientInfo]: this.#options.client },
      },
    };
    const timeout = AbortSignal.timeout(this.#options.timeoutMs ?? 15_000);
    let response: Response;
    try {
      response = await (this.#options.fetch ?? fetch)(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': PROTOCOL_VERSION,
          'mcp-method': method,
        },
        body: JSON.stringify(body),
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      });
    } catch (error) {
      if (signal?.aborted) throw new McpoolRequestError(ErrorCode.REQUEST_ABORTED, `${method} on ${server} was aborted`, { cause: error });
      if (timeout.aborted) throw new McpoolRequestError(ErrorCode.REQUEST_TIMEOUT, `${method} on ${server} got no answer in time`, { cause: error });
      throw new McpoolRequestError(ErrorCode.UNREACHABLE, `cannot reach the mcpool daemon at ${baseUrl}: ${(error as Error).message}`, { cause: error });
    }
    const text = await response.text();
    const message = (response.headers.get('content-type') ?? '').includes('text/event-stream') ? answerInStream(text, id) : parseJson(text);
    const error = message?.error as { code?: unknown; message?: unknown; data?: { code?: unknown } } | undefined;
    if (error !== undefined) {
      const code = isErrorCode(error.data?.code) ? error.data.code : ErrorCode.UPSTREAM_ERROR;
      throw new PoolError(code, `${method} on ${server}: ${typeof error.message === 'string' ? error.message : 'failed'}`, { data: { httpStatus: response.status } });
    }
    if (!response.ok) throw new McpoolHttpError({ statusCode: response.status, code: ErrorCode.HTTP_ERROR, error: response.statusText, message: `${method} on ${server}: HTTP ${response.status}` });
    const result = message?.result;
    if (typeof result !== 'object' || result === null) throw new McpoolRequestError(ErrorCode.BAD_RESPONSE, `${method} on ${server}: the answer holds no result`);
    return result as Record<string, unknown>;
  }
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The response with `id` among the messages of a finished event stream (notifications before it are skipped). */
function answerInStream(text: string, id: number): Record<string, unknown> | undefined {
  let answer: Record<string, unknown> | undefined;
  const parser = createParser({
    onEvent: (event) => {
      const message = parseJson(event.data);
      if (message !== undefined && message.id === id) answer = message;
    },
  });
  parser.feed(text);
  return answer;
}
