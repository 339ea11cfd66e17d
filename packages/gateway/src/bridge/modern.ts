/**
 * The 2026-07-28 ("modern") face of `mcpool bridge`, over the daemon's 2025-11-25 ("legacy") session.
 *
 * A stdio client picks its era by how it opens (the MCP versioning rules for a dual-era server):
 * `initialize` → legacy, relayed as before; `server/discover`, or any request whose
 * `params._meta["io.modelcontextprotocol/protocolVersion"]` names 2026-07-28 → modern. The modern
 * era has no handshake, so the bridge opens the legacy session itself, lazily, on the first
 * modern request: an `initialize` with its own id whose client declaration comes from that
 * request's `_meta` (client info; of the client capabilities only `experimental` and
 * `extensions`, because a modern stdio client takes no server→client requests, so sampling,
 * elicitation and roots are not offered to the daemon), then `notifications/initialized`. The
 * bridge's session recovery (404 → re-initialize) then works for both eras alike.
 *
 * What a modern client gets, by rule of the 2026-07-28 revision:
 * - `server/discover` → `supportedVersions` (modern only: 2025 versions are negotiated by
 *   `initialize`), the daemon's capabilities and instructions, its serverInfo in
 *   `_meta["io.modelcontextprotocol/serverInfo"]`, and the cache hints every cacheable result needs.
 * - Every other request is forwarded on the legacy session as the same method, without the
 *   modern-only `_meta` keys (protocol version, client capabilities, client info, log level;
 *   `progressToken`, trace context and the rest stay). Its result gets `resultType: "complete"`
 *   (required on every modern result; legacy servers know no other), and a list or read result
 *   the cache fields it must carry (`ttlMs: 0`, `cacheScope: "private"`: the daemon's lists may
 *   change at any time and may be filtered per session). A legacy "resource not found" (-32002)
 *   becomes the modern -32602.
 * - `subscriptions/listen` is acknowledged (`notifications/subscriptions/acknowledged`) with the
 *   subset of its filter the daemon can honour: the list_changed kinds the daemon declared, and
 *   `resourceSubscriptions` through legacy `resources/subscribe` when it declared `subscribe`.
 *   Matching `list_changed` / `resources/updated` notifications of the legacy session go to each
 *   listen whose filter asked for them, tagged with `io.modelcontextprotocol/subscriptionId` (the
 *   listen's request id); nothing is sent that no listen asked for. A listen stays open until the
 *   client cancels it (`notifications/cancelled`, the stdio way) or closes stdin; it gets no result.
 * - Logging, best effort: legacy logging is per session, modern per request. The most recent
 *   `_meta["io.modelcontextprotocol/logLevel"]` a modern request carried is set on the legacy
 *   session (`logging/setLevel`, before that request is forwarded), and `notifications/message`
 *   reaches the client only once some request asked for a level (a server must not log for a
 *   request that did not ask; the bridge cannot tell which request a session log belongs to).
 * - Server→client requests of the legacy session (sampling, elicitation, roots) have no place on a
 *   modern stdio connection: the bridge answers them itself with -32601 (`ping` with `{}`).
 *
 * A request before either handshake that names no modern protocol version (or names one the
 * bridge does not speak) gets -32022 (the modern `UnsupportedProtocolVersion`, `data.supported`),
 * at once: a dual-era client reads that as "modern, pick from supported"; a legacy client should
 * have sent `initialize` first. A `ping` before any handshake is answered `{}`.
 */
import { ErrorCode, JsonRpcCode } from '@mcpool/protocol/errorCodes';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import { BridgeErrorCode, errorResponse, idKey, isMessage, isNotification, isRequest, isResponse, type JsonRpcMessage, type RequestId } from './jsonRpc.js';
import type { BridgeLogger, Era } from './options.js';
import { forwardedParams, type Params } from '../json.js';

/** The modern protocol revisions the bridge serves. */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28'];
/** The revision the bridge asks the daemon's legacy endpoint for. */
export const LEGACY_PROTOCOL_VERSION = '2025-11-25';

/** The `_meta` keys of the modern revision (the one table every layer reads). */
export const META = MODERN_META;

/** `_meta` keys only the modern era knows: the legacy endpoint gets the request without them. */
const MODERN_ONLY_META: readonly string[] = [META.protocolVersion, META.clientCapabilities, META.clientInfo, META.logLevel];

/** Results that carry cache hints on the 2026-07-28 revision (its `CacheableResult` extenders). */
const CACHEABLE = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read', 'server/discover']);

const LEGACY_RESOURCE_NOT_FOUND = -32002;

/** What the front needs of the bridge. */
export interface FrontHost {
  /** Relays a message as if the client had written it (the legacy path: session, recovery, streams). */
  submit(message: Record<string, unknown>): void;
  /** Writes a message to the client as is. */
  emit(message: unknown): void;
  logger: BridgeLogger;
  clientVersion: string;
}

interface Subscription {
  id: RequestId;
  toolsListChanged: boolean;
  promptsListChanged: boolean;
  resourcesListChanged: boolean;
  uris: Set<string>;
}

type Opened = { ok: true; result: Record<string, unknown> } | { ok: false; error: unknown };

const metaOf = (message: JsonRpcMessage): Record<string, unknown> | undefined => {
  const meta = isMessage(message.params) ? (message.params as { _meta?: unknown })._meta : undefined;
  return isMessage(meta) ? (meta as Record<string, unknown>) : undefined;
};

/** The modern protocol version a message names in its `_meta`, if any. */
export const claimedVersion = (message: JsonRpcMessage): string | undefined => {
  const version = metaOf(message)?.[META.protocolVersion];
  return typeof version === 'string' ? version : undefined;
};

const asRecord = (value: unknown): Record<string, unknown> | undefined => (isMessage(value) ? (value as Record<string, unknown>) : undefined);

export class ModernFront {
  readonly #host: FrontHost;
  readonly #log: BridgeLogger;
  #era: Era = 'unknown';
  #seq = 0;
  /** The legacy session the bridge opened for the modern client: its initialize result, once answered. */
  #opening: Promise<Opened> | undefined;
  #opened: Record<string, unknown> | undefined;
  /** Answers to the front's own requests, by `idKey`. */
  readonly #own = new Map<string, (message: JsonRpcMessage) => void>();
  /** Client requests forwarded on the legacy session: their method, to shape the result. */
  readonly #forwarded = new Map<string, string>();
  /** Client requests still waiting for the session (a cancel drops them). */
  readonly #waiting = new Set<string>();
  readonly #subscriptions = new Map<string, Subscription>();
  /** The log level last set on the legacy session for a modern request; logs reach the client once set. */
  #logLevel: string | undefined;
  #settingLevel: Promise<void> = Promise.resolve();

  constructor(host: FrontHost) {
    this.#host = host;
    this.#log = host.logger;
  }

  get era(): Era {
    return this.#era;
  }

  // ---- from the client ----

  /** Takes a client line (its messages); false when the legacy relay should handle it as written. */
  intercept(messages: readonly JsonRpcMessage[]): boolean {
    if (messages.some((message) => isRequest(message) && message.method === 'initialize')) {
      // A client that initializes is a legacy client, even after a discover (some clients do both).
      if (this.#era === 'modern') this.#log.info('the client sent initialize after speaking 2026-07-28: serving it as a legacy client');
      this.#era = 'legacy';
      this.#subscriptions.clear();
      return false;
    }
    if (this.#era === 'legacy') return false;
    if (messages.length !== 1) {
      // Batches are a 2025-03-26 feature; no era speaks them without initialize.
      for (const message of messages) if (isRequest(message)) this.#host.emit(this.#unsupported(message.id, undefined));
      return true;
    }
    const message = messages[0]!;
    if (isRequest(message)) {
      const version = claimedVersion(message);
      const modern = message.method === 'server/discover' || version !== undefined || this.#era === 'modern';
      if (!modern) {
        if (message.method === 'ping') this.#host.emit({ jsonrpc: '2.0', id: message.id, result: {} });
        else this.#host.emit(this.#unsupported(message.id, undefined));
        return true;
      }
      if (version !== undefined && !MODERN_PROTOCOL_VERSIONS.includes(version)) {
        this.#host.emit(this.#unsupported(message.id, version));
        return true;
      }
      if (this.#era === 'unknown') this.#log.info({ method: message.method }, 'the client speaks 2026-07-28: serving it over a legacy daemon session');
      this.#era = 'modern';
      void this.#request(message).catch((error: unknown) => {
        this.#log.error({ err: error }, 'bridge error (a bug): a modern request was not served');
        this.#host.emit({ jsonrpc: '2.0', id: message.id, error: { code: JsonRpcCode.INTERNAL_ERROR, message: 'mcpool bridge: internal error (see its log)', data: { code: ErrorCode.INTERNAL } } });
      });
      return true;
    }
    if (this.#era === 'unknown') {
      this.#log.debug({ method: message.method }, 'a client message before any handshake was dropped');
      return true;
    }
    // Modern era from here.
    if (isNotification(message)) {
      if (message.method === 'notifications/cancelled') {
        const requestId = asRecord(message.params)?.requestId;
        if (typeof requestId === 'string' || typeof requestId === 'number') {
          const key = idKey(requestId);
          const subscription = this.#subscriptions.get(key);
          if (subscription) {
            this.#endSubscription(subscription);
            return true;
          }
          if (this.#waiting.delete(key)) return true;
        }
      }
      this.#host.submit(this.#stripped(message));
      return true;
    }
    // A response: the modern client was never sent a request.
    this.#log.debug('a client response on a modern connection was dropped');
    return true;
  }

  #unsupported(id: RequestId, requested: string | undefined): Record<string, unknown> {
    const message =
      requested === undefined
        ? `mcpool bridge: no protocol era yet: open with initialize (${LEGACY_PROTOCOL_VERSION}) or send requests whose params._meta["${META.protocolVersion}"] is ${MODERN_PROTOCOL_VERSIONS.join(' or ')}`
        : `mcpool bridge: unsupported protocol version ${requested} (supported: ${MODERN_PROTOCOL_VERSIONS.join(', ')}, or initialize for ${LEGACY_PROTOCOL_VERSION})`;
    return errorResponse(id, {
      code: BridgeErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
      message,
      data: { supported: [...MODERN_PROTOCOL_VERSIONS], ...(requested === undefined ? {} : { requested }) },
    });
  }

  async #request(message: JsonRpcMessage & { id: RequestId; method: string }): Promise<void> {
    const key = idKey(message.id);
    this.#waiting.add(key);
    const opened = await this.#open(metaOf(message));
    if (!this.#waiting.delete(key)) return; // cancelled meanwhile
    if (!opened.ok) {
      this.#host.emit({ jsonrpc: '2.0', id: message.id, error: opened.error });
      return;
    }
    if (message.method === 'server/discover') {
      this.#host.emit({ jsonrpc: '2.0', id: message.id, result: this.#discoverResult(opened.result) });
      return;
    }
    if (message.method === 'subscriptions/listen') return this.#listen(message, opened.result);
    const level = metaOf(message)?.[META.logLevel];
    if (typeof level === 'string') await this.#setLevel(level);
    this.#forwarded.set(key, message.method);
    this.#host.submit(this.#stripped(message));
  }

  /** The message without the modern-only `_meta` keys (and without `_meta` when nothing else was in it). */
  #stripped(message: JsonRpcMessage): Record<string, unknown> {
    const meta = metaOf(message);
    if (meta === undefined) return { ...message };
    const kept = Object.fromEntries(Object.entries(meta).filter(([name]) => !MODERN_ONLY_META.includes(name)));
    const params = forwardedParams(message.params as Params);
    return { ...message, params: Object.keys(kept).length > 0 ? { ...params, _meta: kept } : params };
  }

  /** Opens the legacy session for the modern client once (again after a failed attempt). */
  #open(meta: Record<string, unknown> | undefined): Promise<Opened> {
    if (this.#opening) return this.#opening;
    const opening = (async (): Promise<Opened> => {
      const declared = asRecord(meta?.[META.clientCapabilities]) ?? {};
      const capabilities = Object.fromEntries(Object.entries(declared).filter(([name]) => name === 'experimental' || name === 'extensions'));
      const info = asRecord(meta?.[META.clientInfo]);
      const clientInfo = typeof info?.name === 'string' && typeof info.version === 'string' ? info : { name: 'mcpool-bridge', version: this.#host.clientVersion };
      const answer = await this.#ask('initialize', { protocolVersion: LEGACY_PROTOCOL_VERSION, capabilities, clientInfo }, 'init');
      const result = asRecord(answer.result);
      if (result === undefined) return { ok: false, error: answer.error ?? { code: JsonRpcCode.INTERNAL_ERROR, message: 'mcpool bridge: the daemon answered initialize without a result' } };
      this.#host.submit({ jsonrpc: '2.0', method: 'notifications/initialized' });
      this.#opened = result;
      return { ok: true, result };
    })();
    this.#opening = opening;
    void opening.then((opened) => {
      if (!opened.ok && this.#opening === opening) this.#opening = undefined;
    });
    return opening;
  }

  /** Sends a request of the front's own on the legacy path and waits for its answer (the bridge always answers: a result or an error). */
  #ask(method: string, params: unknown, tag: string): Promise<JsonRpcMessage> {
    const id = `mcpool-bridge-modern-${tag}-${++this.#seq}`;
    return new Promise<JsonRpcMessage>((resolve) => {
      this.#own.set(idKey(id), resolve);
      this.#host.submit({ jsonrpc: '2.0', id, method, params });
    });
  }

  #discoverResult(init: Record<string, unknown>): Record<string, unknown> {
    const serverInfo = asRecord(init.serverInfo);
    return {
      supportedVersions: [...MODERN_PROTOCOL_VERSIONS],
      capabilities: asRecord(init.capabilities) ?? {},
      ...(typeof init.instructions === 'string' ? { instructions: init.instructions } : {}),
      ttlMs: 0,
      cacheScope: 'private',
      resultType: 'complete',
      ...(serverInfo === undefined ? {} : { _meta: { [META.serverInfo]: serverInfo } }),
    };
  }

  /** Sets the legacy session's log level when a modern request asks for another; one at a time. */
  #setLevel(level: string): Promise<void> {
    this.#settingLevel = this.#settingLevel.then(async () => {
      if (this.#logLevel === level) return;
      const answer = await this.#ask('logging/setLevel', { level }, 'log');
      if (answer.error !== undefined) this.#log.warn({ level }, 'logging/setLevel for a modern request failed');
      else this.#logLevel = level;
    });
    return this.#settingLevel;
  }

  async #listen(message: JsonRpcMessage & { id: RequestId }, init: Record<string, unknown>): Promise<void> {
    const filter = asRecord(asRecord(message.params)?.notifications) ?? {};
    const capabilities = asRecord(init.capabilities) ?? {};
    const resources = asRecord(capabilities.resources);
    const subscription: Subscription = {
      id: message.id,
      toolsListChanged: filter.toolsListChanged === true && capabilities.tools !== undefined,
      promptsListChanged: filter.promptsListChanged === true && capabilities.prompts !== undefined,
      resourcesListChanged: filter.resourcesListChanged === true && resources !== undefined,
      uris: new Set(),
    };
    const wanted = Array.isArray(filter.resourceSubscriptions) ? filter.resourceSubscriptions.filter((uri): uri is string => typeof uri === 'string') : [];
    if (wanted.length > 0 && resources?.subscribe === true) {
      const held = this.#heldUris();
      for (const uri of wanted) {
        if (held.has(uri)) {
          subscription.uris.add(uri);
          continue;
        }
        const answer = await this.#ask('resources/subscribe', { uri }, 'subscribe');
        if (answer.error === undefined) subscription.uris.add(uri);
        else this.#log.info({ uri }, 'resources/subscribe for a listen failed: not honoured');
      }
    }
    this.#subscriptions.set(idKey(message.id), subscription);
    const honoured: Record<string, unknown> = {
      ...(subscription.toolsListChanged ? { toolsListChanged: true } : {}),
      ...(subscription.promptsListChanged ? { promptsListChanged: true } : {}),
      ...(subscription.resourcesListChanged ? { resourcesListChanged: true } : {}),
      ...(wanted.length > 0 ? { resourceSubscriptions: [...subscription.uris] } : {}),
    };
    this.#host.emit({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: honoured, _meta: { [META.subscriptionId]: message.id } } });
  }

  #heldUris(): Set<string> {
    const held = new Set<string>();
    for (const subscription of this.#subscriptions.values()) for (const uri of subscription.uris) held.add(uri);
    return held;
  }

  #endSubscription(subscription: Subscription): void {
    this.#subscriptions.delete(idKey(subscription.id));
    const held = this.#heldUris();
    for (const uri of subscription.uris) {
      if (!held.has(uri)) void this.#ask('resources/unsubscribe', { uri }, 'unsubscribe');
    }
  }

  // ---- to the client ----

  /** A message on its way to the client: what to write instead (undefined: nothing). Legacy-era messages pass as they are. */
  toClient(message: JsonRpcMessage): JsonRpcMessage | undefined {
    if (isResponse(message)) {
      const key = idKey(message.id);
      const own = this.#own.get(key);
      if (own) {
        this.#own.delete(key);
        own(message);
        return undefined;
      }
    }
    if (this.#era !== 'modern') return message;
    if (isResponse(message)) {
      const key = idKey(message.id);
      const method = this.#forwarded.get(key);
      if (method === undefined) return message;
      this.#forwarded.delete(key);
      return this.#shapeAnswer(method, message);
    }
    if (isRequest(message)) {
      // A modern stdio connection carries no server→client requests: the bridge answers for the client.
      if (message.method === 'ping') this.#host.submit({ jsonrpc: '2.0', id: message.id, result: {} });
      else {
        this.#log.info({ method: message.method }, 'the daemon sent a request the modern client cannot take: refused');
        this.#host.submit({
          jsonrpc: '2.0',
          id: message.id,
          error: { code: JsonRpcCode.METHOD_NOT_FOUND, message: `mcpool bridge: the stdio client speaks ${MODERN_PROTOCOL_VERSIONS[0]}, which has no server-to-client ${message.method}`, data: { code: ErrorCode.DOWNSTREAM_ERROR, mcpCode: JsonRpcCode.METHOD_NOT_FOUND } },
        });
      }
      return undefined;
    }
    switch (message.method) {
      case 'notifications/tools/list_changed':
        return this.#fanOut(message, (s) => s.toolsListChanged);
      case 'notifications/prompts/list_changed':
        return this.#fanOut(message, (s) => s.promptsListChanged);
      case 'notifications/resources/list_changed':
        return this.#fanOut(message, (s) => s.resourcesListChanged);
      case 'notifications/resources/updated': {
        const uri = asRecord(message.params)?.uri;
        return this.#fanOut(message, (s) => typeof uri === 'string' && s.uris.has(uri));
      }
      case 'notifications/message':
        return this.#logLevel === undefined ? undefined : message;
      default:
        return message;
    }
  }

  /** Writes a copy tagged with the subscription id to each listen that asked for it; nothing else. */
  #fanOut(message: JsonRpcMessage, wants: (subscription: Subscription) => boolean): undefined {
    const params = asRecord(message.params) ?? {};
    const meta = asRecord(params._meta) ?? {};
    for (const subscription of this.#subscriptions.values()) {
      if (!wants(subscription)) continue;
      this.#host.emit({ jsonrpc: '2.0', method: message.method, params: { ...params, _meta: { ...meta, [META.subscriptionId]: subscription.id } } });
    }
    return undefined;
  }

  #shapeAnswer(method: string, message: JsonRpcMessage & { id: RequestId }): JsonRpcMessage {
    const result = asRecord(message.result);
    if (result !== undefined) {
      const serverInfo = asRecord(this.#opened?.serverInfo);
      const meta = asRecord(result._meta);
      const shaped: Record<string, unknown> = {
        ...result,
        resultType: typeof result.resultType === 'string' ? result.resultType : 'complete',
        ...(CACHEABLE.has(method)
          ? { ttlMs: typeof result.ttlMs === 'number' ? result.ttlMs : 0, cacheScope: result.cacheScope === 'public' || result.cacheScope === 'private' ? result.cacheScope : 'private' }
          : {}),
        ...(serverInfo !== undefined && meta?.[META.serverInfo] === undefined ? { _meta: { ...meta, [META.serverInfo]: serverInfo } } : {}),
      };
      return { ...message, result: shaped };
    }
    const error = asRecord(message.error);
    if (error?.code === LEGACY_RESOURCE_NOT_FOUND) return { ...message, error: { ...error, code: JsonRpcCode.INVALID_PARAMS } };
    return message;
  }
}
