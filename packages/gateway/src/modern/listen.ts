/**
 * `subscriptions/listen` streams of one (principal, endpoint): a listen is acknowledged with the
 * subset of its filter the endpoint can honour (list changes of a list the endpoint has,
 * resource updates of URIs a server that supports subscriptions owns), then gets the matching
 * list changes and updates, each tagged with `io.modelcontextprotocol/subscriptionId` (the
 * listen's request id). A filter with nothing honoured is acknowledged and completed at once, so
 * no stream is held for it. A listen ends with its completion result when the router ends it,
 * silently when its caller went away; a URI no other listen of the endpoint holds is then
 * unsubscribed upstream.
 */
import type { Logger } from '@mcpool/core';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import type { GatewayAccess } from '../aggregate/access.js';
import type { Aggregate, ListKind } from '../aggregate/aggregate.js';
import { capabilitiesOf, ownsUri } from '../aggregate/directory.js';
import type { ErrorCode } from '@mcpool/protocol';
import { tooManySubscriptions } from '@mcpool/protocol/refusals';
import { refusalAnswer, type ModernAnswer, type RequestId } from './answers.js';
import { MessageStream } from './messageStream.js';
import { asRecord, type Params } from '../json.js';


interface Listen {
  id: RequestId;
  kinds: Set<ListKind>;
  uris: Set<string>;
  stream: MessageStream;
}

export interface ListenRequest {
  id: RequestId;
  params: Params;
  access: GatewayAccess;
  signal: AbortSignal | undefined;
  /** Asked before a stream is held open: a refusal is answered with its code. */
  admit?(): { code: ErrorCode; message: string } | undefined;
  /** The most distinct resource URIs this listen may subscribe to. @default {@link MAX_LISTEN_SUBSCRIPTIONS} */
  maxSubscriptions?: number;
}

/** Distinct resource URIs one listen may subscribe to, unless the host says otherwise. */
const MAX_LISTEN_SUBSCRIPTIONS = 256;

export class Listens {
  readonly #open = new Set<Listen>();
  readonly #aggregate: Aggregate;
  readonly #onEnd: () => void;
  readonly #logger: Logger | undefined;

  /** @param onEnd a listen ended (its endpoint may have become idle). */
  constructor(aggregate: Aggregate, onEnd: () => void, logger?: Logger) {
    this.#aggregate = aggregate;
    this.#onEnd = onEnd;
    this.#logger = logger;
  }

  get size(): number {
    return this.#open.size;
  }

  async open(request: ListenRequest): Promise<ModernAnswer> {
    const { id, access } = request;
    const filter = asRecord(request.params.notifications) ?? {};
    const caps = capabilitiesOf(this.#aggregate, access);
    const kinds = new Set<ListKind>();
    if (filter.toolsListChanged === true && caps.tools !== undefined) kinds.add('tools');
    if (filter.promptsListChanged === true && caps.prompts !== undefined) kinds.add('prompts');
    if (filter.resourcesListChanged === true && caps.resources !== undefined) kinds.add('resources');
    const wanted = Array.isArray(filter.resourceSubscriptions) ? [...new Set(filter.resourceSubscriptions.filter((uri): uri is string => typeof uri === 'string'))] : [];
    // Each URI is an upstream subscribe and state held while the listen lives: a longer list is refused whole, first.
    const max = request.maxSubscriptions ?? MAX_LISTEN_SUBSCRIPTIONS;
    if (wanted.length > max) return refusalAnswer(id, tooManySubscriptions(wanted.length, max));
    // Only a listen that will be held open counts against the host's caps.
    if (kinds.size > 0 || wanted.length > 0) {
      const refused = request.admit?.();
      if (refused !== undefined) return refusalAnswer(id, refused);
    }
    const listen: Listen = { id, kinds, uris: new Set(), stream: new MessageStream() };
    // A cold server that owns a URI is started: the subscription needs it.
    const listed = this.#aggregate.listed(access);
    for (const uri of wanted) {
      const owner = listed.find(({ view }) => (view.capabilities.resources as { subscribe?: unknown } | undefined)?.subscribe === true && ownsUri(view, uri));
      if (owner === undefined) continue;
      try {
        await (await this.#aggregate.viewOf(owner.name)).subscribeResource(uri);
        listen.uris.add(uri);
      } catch (error) {
        this.#logger?.debug({ uri, err: error }, 'modern gateway: a listen subscription was not honoured');
      }
    }
    const honoured: Params = {
      ...(kinds.has('tools') ? { toolsListChanged: true } : {}),
      ...(kinds.has('prompts') ? { promptsListChanged: true } : {}),
      ...(kinds.has('resources') ? { resourcesListChanged: true } : {}),
      ...(wanted.length > 0 ? { resourceSubscriptions: [...listen.uris] } : {}),
    };
    listen.stream.push(notification('notifications/subscriptions/acknowledged', { notifications: honoured }, id));
    if (kinds.size === 0 && listen.uris.size === 0) {
      listen.stream.push(completion(id));
      listen.stream.end();
      return { kind: 'stream', status: 200, stream: listen.stream };
    }
    this.#open.add(listen);
    const gone = (): void => this.#end(listen, false);
    if (request.signal?.aborted) gone();
    else request.signal?.addEventListener('abort', gone, { once: true });
    return { kind: 'stream', status: 200, stream: listen.stream };
  }

  /** A list changed: to each listen that asked for it. */
  listChanged(kind: ListKind): void {
    if (!this.#aggregate.announces(kind)) return;
    for (const listen of this.#open) if (listen.kinds.has(kind)) listen.stream.push(notification(`notifications/${kind}/list_changed`, {}, listen.id));
  }

  /** A resource changed: to each listen subscribed to it. */
  updated(uri: string): void {
    for (const listen of this.#open) if (listen.uris.has(uri)) listen.stream.push(notification('notifications/resources/updated', { uri }, listen.id));
  }

  /** Ends every listen with its completion result. */
  endAll(): void {
    for (const listen of [...this.#open]) this.#end(listen, true);
  }

  #end(listen: Listen, graceful: boolean): void {
    if (!this.#open.delete(listen)) return;
    if (graceful) listen.stream.push(completion(listen.id));
    listen.stream.end();
    const held = new Set<string>();
    for (const other of this.#open) for (const uri of other.uris) held.add(uri);
    for (const uri of listen.uris) {
      if (held.has(uri)) continue;
      for (const { view } of this.#aggregate.held()) {
        if (ownsUri(view, uri)) void view.unsubscribeResource(uri).catch((error: unknown) => this.#logger?.debug({ uri, err: error }, 'modern gateway: unsubscribing a listen’s resource failed'));
      }
    }
    this.#onEnd();
  }
}

function notification(method: string, params: Params, subscriptionId: RequestId): Record<string, unknown> {
  return { jsonrpc: '2.0', method, params: { ...params, _meta: { [MODERN_META.subscriptionId]: subscriptionId } } };
}

function completion(id: RequestId): Record<string, unknown> {
  return { jsonrpc: '2.0', id, result: { resultType: 'complete' } };
}

