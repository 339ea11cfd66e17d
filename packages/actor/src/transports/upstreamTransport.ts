/**
 * The contract every upstream transport of the actor meets (stdio, Streamable HTTP, legacy
 * HTTP+SSE, websocket). A transport moves JSON-RPC messages and knows nothing of MCP methods,
 * except what its wire needs (HTTP headers that mirror the body, the legacy session id).
 *
 * Messages cross it already parsed, once: `send` serialises, `onmessage` hands over the object
 * the transport decoded. No schema validation happens here.
 */

/** A JSON-RPC 2.0 message as it travels: a request, a notification, a result or an error. */
export interface JsonRpcMessage {
  jsonrpc: '2.0';
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/** Which protocol era a connection speaks; decided by the actor's probe, told to the transport. */
export type ProtocolEra = 'legacy' | 'modern';

export interface SendOptions {
  /**
   * Aborting ends this request on the wire where the transport can (an HTTP request's stream is
   * closed). Transports that cannot (stdio, websocket) ignore it: the actor sends
   * `notifications/cancelled` there instead.
   */
  signal?: AbortSignal | undefined;
}

/**
 * An HTTP answer that carries no JSON-RPC message the actor can correlate: a non-2xx status, or
 * a body that is not JSON-RPC. The era probe reads `status` and `body`; 401/403 mean auth.
 */
export class UpstreamHttpError extends Error {
  override name = 'UpstreamHttpError';
  constructor(
    message: string,
    readonly status: number,
    /** The response body as text, at most a few KB. */
    readonly body: string,
    /** The `WWW-Authenticate` header of a 401/403, if any. */
    readonly wwwAuthenticate?: string | undefined,
  ) {
    super(message);
  }
}

/**
 * True when the server refused the token itself: HTTP 401, or 403 with a `WWW-Authenticate`
 * challenge (RFC 6750 §3.1 `insufficient_scope`: the token lacks a scope). The host's credentials
 * may have a better token; a 403 without a challenge is a plain refusal no token changes.
 */
export function refusesToken(error: unknown): error is UpstreamHttpError {
  return error instanceof UpstreamHttpError && (error.status === 401 || (error.status === 403 && error.wwwAuthenticate !== undefined));
}

/** A request that never got an HTTP answer (refused, reset, DNS, TLS); `cause` is the system error. */
export class UpstreamNetworkError extends Error {
  override name = 'UpstreamNetworkError';
}

/**
 * A response stream ended or broke before it carried the response to its request, and could not
 * be resumed (a modern server, events without ids, or reconnections that failed): the request is
 * lost, its result unknown. A transport reports it through `onerror`; the client fails that request.
 */
export class UpstreamStreamError extends Error {
  override name = 'UpstreamStreamError';
  constructor(
    message: string,
    /** The JSON-RPC id of the request whose answer is lost. */
    readonly requestId: string | number,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/**
 * A message the server sent that was longer than the transport accepts, dropped unread; what its
 * first and last bytes told of it.
 */
export interface OversizedMessage {
  /** Its length in bytes. */
  bytes: number;
  /** The transport's limit (`maxMessageBytes`). */
  limit: number;
  /** An answer to one of our requests, a message of the server's own (a request or a notification), or not known. */
  kind: 'answer' | 'server' | 'unknown';
  /** Its JSON-RPC id, when one was found among its top-level keys. */
  id?: string | number;
}

export interface UpstreamTransport {
  /** Open the connection (spawn the child, open the socket); resolves when messages can be sent. */
  start(): Promise<void>;
  /** Send one message. Rejects if it could not be handed to the wire (or, on HTTP, with an UpstreamHttpError). */
  send(message: JsonRpcMessage, options?: SendOptions): Promise<void>;
  /** Close for good; resolves when the connection (and any child tree) is gone. Idempotent. */
  close(): Promise<void>;
  /**
   * Tell the transport which era and protocol version the actor settled on, so it can shape
   * the wire (HTTP: `MCP-Protocol-Version` on every request; legacy: keep the session id).
   */
  setProtocol?(era: ProtocolEra, protocolVersion: string): void;
  /** HTTP transports: replace one header (a refreshed `Authorization`) for every later request. */
  setHeader?(name: string, value: string): void;
  /** Every message the server sends, parsed once. */
  onmessage?: (message: JsonRpcMessage) => void;
  /** The connection is gone (called once). */
  onclose?: () => void;
  /**
   * The server can no longer answer (its stdout ended, its stdin broke), reported as soon as
   * that is known and before `onclose`, which may wait for the process to be reaped. Requests
   * in flight are lost at this point. Called at most once; transports that learn of a loss only
   * by their close need not call it.
   */
  onlost?: () => void;
  /** A non-fatal error, or the reason just before `onclose`. */
  onerror?: (error: Error) => void;
  /** The server sent a message over the transport's size limit: dropped, and the connection goes on (stdio). */
  onoversized?: (message: OversizedMessage) => void;
}
