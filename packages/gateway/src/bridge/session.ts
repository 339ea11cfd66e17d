/**
 * The daemon session the bridge holds for its client: its id and protocol version, a generation
 * bumped by every new session (the client's own `initialize`, each re-init), and what the client
 * initialized with — kept so a lost session can be opened again as the client had it: the
 * `initialize` params, whether `notifications/initialized` was sent, the capabilities the client
 * was told about, and the session state beyond initialize (the last `logging/setLevel`, the
 * resources subscribed to).
 */
import { idKey, isMessage, isRequest, type JsonRpcMessage, type RequestId } from './jsonRpc.js';

/** What the client initialized with, replayed when the session must be re-initialized. */
export interface InitState {
  params: unknown;
  /** `idKey` of the client's initialize request. */
  requestKey: string;
  initializedSent: boolean;
  /** The server capabilities the client was told about. */
  capabilities: Record<string, unknown> | undefined;
  /** Session state a re-init restores: the last `logging/setLevel` params, the subscribed resource URIs. */
  logLevel: unknown;
  subscriptions: Set<string>;
}

export class DaemonSession {
  id: string | undefined;
  protocolVersion: string | undefined;
  /** Bumped by every new session (the client's initialize, each re-init). */
  generation = 0;
  init: InitState | undefined;
  /** The client is initialized but the bridge holds no live session (a re-init failed): the next message tries again. */
  lost = false;
  /** The current session came from a recovery the GET stream started (guards against a 404 loop on GET). */
  streamBorn = false;

  /** The headers of a request on the current session. */
  get headers(): { sessionId: string | undefined; protocolVersion: string | undefined } {
    return { sessionId: this.id, protocolVersion: this.protocolVersion };
  }

  /** The client's own initialize starts a new session (a second one replaces the first); returns the id of the one it replaces. */
  begin(message: JsonRpcMessage & { id: RequestId }): string | undefined {
    const previous = this.id;
    this.generation++;
    this.id = undefined;
    this.protocolVersion = undefined;
    this.lost = false;
    this.streamBorn = false;
    this.init = { params: message.params, requestKey: idKey(message.id), initializedSent: false, capabilities: undefined, logLevel: undefined, subscriptions: new Set() };
    return previous;
  }

  /** Notes what the client sets on the session beyond `initialize`: a re-init must restore it too. */
  remember(messages: readonly JsonRpcMessage[]): void {
    const init = this.init;
    if (init === undefined) return;
    for (const message of messages) {
      if (!isRequest(message)) continue;
      const uri = (message.params as { uri?: unknown } | undefined)?.uri;
      if (message.method === 'logging/setLevel') init.logLevel = message.params;
      else if (message.method === 'resources/subscribe' && typeof uri === 'string') init.subscriptions.add(uri);
      else if (message.method === 'resources/unsubscribe' && typeof uri === 'string') init.subscriptions.delete(uri);
    }
  }

  /** The answer to the client's own initialize: its protocol version and capabilities go on the session. */
  initialized(result: unknown): void {
    if (this.init === undefined || !isMessage(result)) return;
    const { protocolVersion, capabilities } = result as { protocolVersion?: unknown; capabilities?: unknown };
    if (typeof protocolVersion === 'string') this.protocolVersion = protocolVersion;
    this.init.capabilities = isMessage(capabilities) ? (capabilities as Record<string, unknown>) : {};
  }
}
