/**
 * Every `MCPOOL_…` error code, in one table, with the HTTP status and the JSON-RPC error code each
 * one answers with. Plain data with no import at all, so any package may load it at run time —
 * `@mcpool/client` does, in a browser (`@mcpool/protocol/errorCodes`).
 *
 * The strings are stable: clients match on them. A code names one cause; when two causes need
 * different handling by a caller, they get two codes.
 */

/** Every error code mcpool raises, on any surface: library, daemon, bridge and REST client. */
export const ErrorCode = {
  // --- Input ---------------------------------------------------------------------------------
  /** A config file or server entry is malformed; `data` names the file and JSON path. */
  CONFIG_INVALID: 'MCPOOL_CONFIG_INVALID',
  /**
   * A server entry names an environment variable (`${env:NAME}`, `${NAME}`) that is not set where
   * the config is read: that server cannot run until a reload finds it set; `data.variables` names them.
   */
  CONFIG_VARIABLE_UNSET: 'MCPOOL_CONFIG_VARIABLE_UNSET',
  /**
   * A stdio server's command does not exist where it would be spawned: no executable file at its
   * path, or none of that name on the `PATH` it would be spawned with; `data.command` names it.
   */
  COMMAND_NOT_FOUND: 'MCPOOL_COMMAND_NOT_FOUND',
  /** Options passed to a constructor or method are invalid. */
  INVALID_ARGUMENT: 'MCPOOL_INVALID_ARGUMENT',
  /**
   * The session's filters hide this tool or prompt. Over MCP it answers exactly like a name the
   * server does not have, so a client cannot probe for what it may not use.
   */
  TOOL_NOT_ALLOWED: 'MCPOOL_TOOL_NOT_ALLOWED',

  // --- One call ------------------------------------------------------------------------------
  /**
   * The transport was lost while this call was in flight; its result is unknown (the server may
   * or may not have acted). Never replayed. Always an `MCPCallInterruptedError`.
   */
  CALL_INTERRUPTED: 'MCPOOL_CALL_INTERRUPTED',
  /** The call did not finish within its timeout (a cancellation was sent upstream). */
  CALL_TIMEOUT: 'MCPOOL_CALL_TIMEOUT',
  /** The caller aborted the call (a cancellation was sent upstream). */
  CALL_CANCELLED: 'MCPOOL_CALL_CANCELLED',
  /** The upstream MCP server answered with a JSON-RPC error; `data.mcpCode` holds its code. */
  UPSTREAM_ERROR: 'MCPOOL_UPSTREAM_ERROR',
  /**
   * The downstream side (the session's client) refused or failed a request the server sent to
   * it (sampling, elicitation, roots), or has no handler for it; `data.mcpCode` holds the
   * JSON-RPC code that goes back to the server.
   */
  DOWNSTREAM_ERROR: 'MCPOOL_DOWNSTREAM_ERROR',
  /**
   * The server's answer to this call was longer than its connection accepts (`maxMessageBytes`):
   * it was dropped unread, and the connection stays up. `data` has `bytes` and `maxMessageBytes`.
   */
  MESSAGE_TOO_LARGE: 'MCPOOL_MESSAGE_TOO_LARGE',
  /**
   * The server could not be reached, or answered with something that is not JSON-RPC (a network
   * failure, an HTTP error page): its fault or the network's, never mcpool's.
   */
  UPSTREAM_UNAVAILABLE: 'MCPOOL_UPSTREAM_UNAVAILABLE',
  /**
   * A request the server sent (sampling, elicitation, roots) that nobody can take: no call that
   * takes it is in flight, calls of several sessions are, or the caller did not declare the
   * capability it needs. The server gets -32601, as from a client without that capability.
   */
  SERVER_REQUEST_REFUSED: 'MCPOOL_SERVER_REQUEST_REFUSED',
  /** No server of the endpoint has this resource URI (MCP's "resource not found"; -32602 in 2026-07-28). */
  RESOURCE_NOT_FOUND: 'MCPOOL_RESOURCE_NOT_FOUND',
  /**
   * The replica of a cluster that holds the call this `requestState` continues cannot be reached
   * (it stopped or died): the call is lost and its outcome unknown. Send the request again
   * without `requestState` and `inputResponses` to start it anew.
   */
  CONTINUATION_LOST: 'MCPOOL_CONTINUATION_LOST',

  // --- A server entry ------------------------------------------------------------------------
  /** Starting the server (spawn, connect, initialize, discovery) failed. */
  SPAWN_FAILED: 'MCPOOL_SPAWN_FAILED',
  /** Starting the server took longer than the spawn timeout. */
  SPAWN_TIMEOUT: 'MCPOOL_SPAWN_TIMEOUT',
  /** The entry's connection to its server was lost (not tied to one call: see CALL_INTERRUPTED). */
  ENTRY_LOST: 'MCPOOL_ENTRY_LOST',
  /** The entry kept closing under the acquire: it started, then closed, again and again. */
  ENTRY_UNSTABLE: 'MCPOOL_ENTRY_UNSTABLE',
  /** The entry was closing when the request reached it. */
  ENTRY_CLOSING: 'MCPOOL_ENTRY_CLOSING',
  /** The server is reconnecting after a transport loss; retry after the `reconnected` event. */
  NOT_CONNECTED: 'MCPOOL_NOT_CONNECTED',
  /** The server entry is failed (restart intensity exceeded) until a manual restart. */
  SERVER_FAILED: 'MCPOOL_SERVER_FAILED',
  /**
   * The server is in the config but cannot run, so nothing was started: `data.reason` is why
   * (`MCPOOL_CONFIG_INVALID`, `MCPOOL_CONFIG_VARIABLE_UNSET`, `MCPOOL_COMMAND_NOT_FOUND`). It
   * becomes available when a reload (or a restart, for a command installed since) fixes that.
   */
  SERVER_UNAVAILABLE: 'MCPOOL_SERVER_UNAVAILABLE',
  /** The connection actor (worker thread) died or stopped answering. */
  ACTOR_DIED: 'MCPOOL_ACTOR_DIED',
  /**
   * The remote server answered HTTP 401: it needs an OAuth token the pool does not have (or one
   * it revoked). Nothing is retried until the operator authorizes (`mcpool auth <server>`, or
   * `POST /workspace/mcp/:server/auth`); `data` has `serverName` and `command`.
   */
  AUTH_REQUIRED: 'MCPOOL_AUTH_REQUIRED',
  /**
   * An OAuth authorization could not be started or completed: discovery found no usable
   * authorization server, its metadata failed validation (issuer mismatch, an endpoint that is
   * not https or loopback http), or the server refused the grant. The message says which.
   */
  AUTH_FAILED: 'MCPOOL_AUTH_FAILED',
  /** A message port closed before the answer came. */
  PORT_CLOSED: 'MCPOOL_PORT_CLOSED',

  // --- The pool ------------------------------------------------------------------------------
  /** The workspace budget refuses a new live connection (mode `enforce`). */
  BUDGET_EXHAUSTED: 'MCPOOL_BUDGET_EXHAUSTED',
  /**
   * The pool's hard cap on live actor threads (`maxActors`) refuses a new entry, in every budget
   * mode: each thread costs tens of MB, and the budget may only warn. `data` has `maxActors`.
   */
  ACTOR_CAP_REACHED: 'MCPOOL_ACTOR_CAP_REACHED',
  /** The pool is draining (drainAll) and accepts no new acquire. */
  POOL_DRAINING: 'MCPOOL_POOL_DRAINING',
  /** The PooledConnection was released; no call can go through it any more. */
  CONNECTION_RELEASED: 'MCPOOL_CONNECTION_RELEASED',
  /** An internal invariant broke, or something threw that mcpool did not expect: a bug in mcpool. */
  INTERNAL: 'MCPOOL_INTERNAL',

  // --- The daemon's HTTP surfaces --------------------------------------------------------------
  /** The request is malformed: bad JSON, a body or query that does not fit the route. */
  BAD_REQUEST: 'MCPOOL_BAD_REQUEST',
  /** No bearer token, or one the daemon does not know. */
  UNAUTHORIZED: 'MCPOOL_UNAUTHORIZED',
  /** The token lacks the right, or the Host / Origin is not allowed. */
  FORBIDDEN: 'MCPOOL_FORBIDDEN',
  /** No such route, server, entry or session. */
  NOT_FOUND: 'MCPOOL_NOT_FOUND',
  /** The request body is larger than the daemon accepts. */
  PAYLOAD_TOO_LARGE: 'MCPOOL_PAYLOAD_TOO_LARGE',
  /** Bodies are JSON only (this also stops cross-site "simple" POSTs). */
  UNSUPPORTED_MEDIA_TYPE: 'MCPOOL_UNSUPPORTED_MEDIA_TYPE',
  /** The config file on disk is invalid; nothing of it was applied. */
  CONFIG_REJECTED: 'MCPOOL_CONFIG_REJECTED',
  /** A request asks for more than one request may (e.g. more injected servers than `daemon.maxInjectedServersPerRequest`). */
  REQUEST_TOO_LARGE: 'MCPOOL_REQUEST_TOO_LARGE',
  /** This client holds its whole share of a daemon resource (sessions, injected servers); others are not affected. */
  CLIENT_LIMIT_REACHED: 'MCPOOL_CLIENT_LIMIT_REACHED',
  /** The daemon-wide cap on a resource (open `/mcp` sessions) is reached, for every client. */
  SESSION_CAP_REACHED: 'MCPOOL_SESSION_CAP_REACHED',
  /** The daemon is shutting down and takes no new work. */
  SHUTTING_DOWN: 'MCPOOL_SHUTTING_DOWN',
  /** The configured servers are still warming up (`/readyz`). */
  NOT_READY: 'MCPOOL_NOT_READY',
  /** The pool in use has no support for this operation. */
  NOT_IMPLEMENTED: 'MCPOOL_NOT_IMPLEMENTED',
  /**
   * A signed-in user's token could not be checked: the configured issuer's keys (its JWKS, or the
   * metadata naming them) did not answer. Not the token's fault: retry later.
   */
  ISSUER_UNAVAILABLE: 'MCPOOL_ISSUER_UNAVAILABLE',
  /** The shared store (Redis) did not answer: what it keeps (upstream OAuth grants) cannot be read or written now. */
  STORE_UNAVAILABLE: 'MCPOOL_STORE_UNAVAILABLE',

  // --- A 2026-07-28 request on `/mcp` (in `error.data.code` of the JSON-RPC error) -------------
  /**
   * The request's headers disagree with its body, or a required one is missing
   * (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`): send them as the body says.
   */
  HEADER_MISMATCH: 'MCPOOL_HEADER_MISMATCH',
  /** The request names a protocol version the gateway does not serve: pick one of `data.supported`. */
  UNSUPPORTED_PROTOCOL_VERSION: 'MCPOOL_UNSUPPORTED_PROTOCOL_VERSION',
  /** The method does not exist in the revision the request names (`ping`, `initialize`, `logging/setLevel` are gone in 2026-07-28). */
  METHOD_NOT_FOUND: 'MCPOOL_METHOD_NOT_FOUND',

  // --- The stdio bridge (in `error.data.code` of the JSON-RPC errors it writes itself) ---------
  /** The daemon did not answer (connection refused) within the bounded retries. */
  BRIDGE_UNREACHABLE: 'MCPOOL_BRIDGE_UNREACHABLE',
  /** The daemon session expired and re-initializing it failed. */
  BRIDGE_REINIT_FAILED: 'MCPOOL_BRIDGE_REINIT_FAILED',
  /** The daemon answered 404 for the session again right after re-initializing. */
  BRIDGE_SESSION_NOT_FOUND: 'MCPOOL_BRIDGE_SESSION_NOT_FOUND',
  /** The daemon session was lost while the request was in flight: its outcome is unknown. */
  BRIDGE_SESSION_LOST: 'MCPOOL_BRIDGE_SESSION_LOST',
  /** The response stream ended (or broke) before the answer came. */
  BRIDGE_STREAM_ENDED: 'MCPOOL_BRIDGE_STREAM_ENDED',
  /** The daemon answered with an HTTP error. */
  BRIDGE_HTTP_ERROR: 'MCPOOL_BRIDGE_HTTP_ERROR',
  /** The daemon answered something that is not JSON-RPC. */
  BRIDGE_BAD_RESPONSE: 'MCPOOL_BRIDGE_BAD_RESPONSE',
  /**
   * The stdio client's request names no protocol era the bridge serves: it came before any
   * `initialize` or `server/discover` without a 2026-07-28 `_meta` protocol version, or it names a
   * version the bridge does not speak. `data.supported` lists the versions a modern client may pick.
   */
  BRIDGE_UNSUPPORTED_PROTOCOL_VERSION: 'MCPOOL_BRIDGE_UNSUPPORTED_PROTOCOL_VERSION',

  // --- A client on this machine finding the daemon (`mcpool/local`, the VS Code extension) ----
  /** No daemon answered, and starting one did not bring one up (the message says why and names the log). */
  DAEMON_START_FAILED: 'MCPOOL_DAEMON_START_FAILED',
  /** No operator token on this machine: `MCPOOL_TOKEN` is unset and no daemon has written its token file yet. */
  NO_TOKEN: 'MCPOOL_NO_TOKEN',

  // --- The REST client (`@mcpool/client`): the request got no usable answer ------------------
  /** The daemon could not be reached (connection refused, DNS, reset). */
  UNREACHABLE: 'MCPOOL_UNREACHABLE',
  /** No answer within the client's timeout (or an event stream went silent). */
  REQUEST_TIMEOUT: 'MCPOOL_REQUEST_TIMEOUT',
  /** The caller aborted the request. */
  REQUEST_ABORTED: 'MCPOOL_REQUEST_ABORTED',
  /** The answer is not what the daemon sends (not JSON, no body). */
  BAD_RESPONSE: 'MCPOOL_BAD_RESPONSE',
  /** An error status whose body is not the daemon's (a proxy, a crash). */
  HTTP_ERROR: 'MCPOOL_HTTP_ERROR',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The codes `@mcpool/client` raises itself when a request got no usable answer. */
export type ClientErrorCode =
  | typeof ErrorCode.UNREACHABLE
  | typeof ErrorCode.REQUEST_TIMEOUT
  | typeof ErrorCode.REQUEST_ABORTED
  | typeof ErrorCode.BAD_RESPONSE
  | typeof ErrorCode.HTTP_ERROR;

const KNOWN: ReadonlySet<string> = new Set(Object.values(ErrorCode));

/** True when `value` is one of the codes in {@link ErrorCode}. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && KNOWN.has(value);
}

/**
 * JSON-RPC error codes mcpool answers with. -32768..-32000 are JSON-RPC's; -32000..-32099 are the
 * "server error" range, whose meanings here are the MCP SDKs' (and LSP's for cancellation).
 */
export const JsonRpcCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  /** A bug on the answering side (JSON-RPC's "internal error"). */
  INTERNAL_ERROR: -32603,
  /** The request could not be served and will not be: the answering side is unavailable, the connection it needed was lost. */
  SERVER_ERROR: -32000,
  /** The SDKs' `RequestTimeout`. The SDK's Streamable HTTP server also answers an unknown session with it (HTTP 404). */
  REQUEST_TIMEOUT: -32001,
  /** MCP's "resource not found". */
  RESOURCE_NOT_FOUND: -32002,
  /** The request was cancelled by its sender (LSP's `RequestCancelled`). */
  REQUEST_CANCELLED: -32800,
  /** MCP 2026-07-28's `UnsupportedProtocolVersion`: `data.supported` lists what the answering side speaks. */
  UNSUPPORTED_PROTOCOL_VERSION: -32022,
  /** MCP 2026-07-28's `HeaderMismatch`: a request header disagrees with the body, or a required one is missing. */
  HEADER_MISMATCH: -32020,
  /** MCP 2026-07-28's `MissingRequiredClientCapability`: `data.requiredCapabilities` names what the client must declare. */
  MISSING_REQUIRED_CLIENT_CAPABILITY: -32021,
} as const;

export type JsonRpcCode = (typeof JsonRpcCode)[keyof typeof JsonRpcCode];

/**
 * Code → HTTP status, for every code: what the REST API answers with, and the status the bridge
 * and the client record. Client faults are 4xx; failures of mcpool or of a server are 5xx
 * (502 when a server or the daemon behind a relay failed, 503 when it may work later, 504 on a
 * deadline; 429 when one client used up its own share). 499 ("client closed request") is for a call its caller gave up on.
 */
export const HTTP_STATUS = Object.freeze({
  [ErrorCode.CONFIG_INVALID]: 400,
  [ErrorCode.CONFIG_VARIABLE_UNSET]: 400,
  [ErrorCode.COMMAND_NOT_FOUND]: 400,
  [ErrorCode.INVALID_ARGUMENT]: 400,
  [ErrorCode.TOOL_NOT_ALLOWED]: 403,
  [ErrorCode.CALL_INTERRUPTED]: 502,
  [ErrorCode.CALL_TIMEOUT]: 504,
  [ErrorCode.CALL_CANCELLED]: 499,
  [ErrorCode.UPSTREAM_ERROR]: 502,
  [ErrorCode.DOWNSTREAM_ERROR]: 502,
  [ErrorCode.MESSAGE_TOO_LARGE]: 502,
  [ErrorCode.UPSTREAM_UNAVAILABLE]: 502,
  [ErrorCode.SERVER_REQUEST_REFUSED]: 502,
  [ErrorCode.CONTINUATION_LOST]: 502,
  [ErrorCode.RESOURCE_NOT_FOUND]: 404,
  [ErrorCode.SPAWN_FAILED]: 502,
  [ErrorCode.SPAWN_TIMEOUT]: 504,
  [ErrorCode.ENTRY_LOST]: 502,
  [ErrorCode.ENTRY_UNSTABLE]: 502,
  [ErrorCode.ENTRY_CLOSING]: 503,
  [ErrorCode.NOT_CONNECTED]: 503,
  [ErrorCode.SERVER_FAILED]: 502,
  [ErrorCode.SERVER_UNAVAILABLE]: 503,
  [ErrorCode.AUTH_REQUIRED]: 503,
  [ErrorCode.AUTH_FAILED]: 502,
  [ErrorCode.ACTOR_DIED]: 502,
  [ErrorCode.PORT_CLOSED]: 502,
  [ErrorCode.BUDGET_EXHAUSTED]: 503,
  [ErrorCode.ACTOR_CAP_REACHED]: 503,
  [ErrorCode.POOL_DRAINING]: 503,
  [ErrorCode.CONNECTION_RELEASED]: 409,
  [ErrorCode.INTERNAL]: 500,
  [ErrorCode.BAD_REQUEST]: 400,
  [ErrorCode.UNAUTHORIZED]: 401,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: 415,
  [ErrorCode.CONFIG_REJECTED]: 409,
  [ErrorCode.REQUEST_TOO_LARGE]: 400,
  [ErrorCode.CLIENT_LIMIT_REACHED]: 429,
  [ErrorCode.SESSION_CAP_REACHED]: 503,
  [ErrorCode.SHUTTING_DOWN]: 503,
  [ErrorCode.NOT_READY]: 503,
  [ErrorCode.NOT_IMPLEMENTED]: 501,
  [ErrorCode.ISSUER_UNAVAILABLE]: 503,
  [ErrorCode.STORE_UNAVAILABLE]: 503,
  [ErrorCode.HEADER_MISMATCH]: 400,
  [ErrorCode.UNSUPPORTED_PROTOCOL_VERSION]: 400,
  [ErrorCode.METHOD_NOT_FOUND]: 404,
  [ErrorCode.BRIDGE_UNREACHABLE]: 502,
  [ErrorCode.BRIDGE_REINIT_FAILED]: 502,
  [ErrorCode.BRIDGE_SESSION_NOT_FOUND]: 502,
  [ErrorCode.BRIDGE_SESSION_LOST]: 502,
  [ErrorCode.BRIDGE_STREAM_ENDED]: 502,
  [ErrorCode.BRIDGE_HTTP_ERROR]: 502,
  [ErrorCode.BRIDGE_BAD_RESPONSE]: 502,
  [ErrorCode.BRIDGE_UNSUPPORTED_PROTOCOL_VERSION]: 400,
  [ErrorCode.DAEMON_START_FAILED]: 502,
  [ErrorCode.NO_TOKEN]: 401,
  [ErrorCode.UNREACHABLE]: 502,
  [ErrorCode.REQUEST_TIMEOUT]: 504,
  [ErrorCode.REQUEST_ABORTED]: 499,
  [ErrorCode.BAD_RESPONSE]: 502,
  [ErrorCode.HTTP_ERROR]: 502,
} as const satisfies Record<ErrorCode, number>);

/**
 * Code → JSON-RPC error code, for every code: what `/mcp` and the bridge answer with. Where the
 * error carries a code of its own (`data.mcpCode` of UPSTREAM_ERROR / DOWNSTREAM_ERROR, the
 * daemon's answer relayed by the bridge), that one is sent instead and this is the fallback.
 */
export const JSON_RPC_CODE = Object.freeze({
  [ErrorCode.CONFIG_INVALID]: JsonRpcCode.INVALID_PARAMS,
  [ErrorCode.CONFIG_VARIABLE_UNSET]: JsonRpcCode.INVALID_PARAMS,
  [ErrorCode.COMMAND_NOT_FOUND]: JsonRpcCode.INVALID_PARAMS,
  [ErrorCode.INVALID_ARGUMENT]: JsonRpcCode.INVALID_PARAMS,
  [ErrorCode.TOOL_NOT_ALLOWED]: JsonRpcCode.INVALID_PARAMS,
  [ErrorCode.CALL_INTERRUPTED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.CALL_TIMEOUT]: JsonRpcCode.REQUEST_TIMEOUT,
  [ErrorCode.CALL_CANCELLED]: JsonRpcCode.REQUEST_CANCELLED,
  [ErrorCode.UPSTREAM_ERROR]: JsonRpcCode.INTERNAL_ERROR,
  [ErrorCode.DOWNSTREAM_ERROR]: JsonRpcCode.INTERNAL_ERROR,
  [ErrorCode.MESSAGE_TOO_LARGE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.UPSTREAM_UNAVAILABLE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.SERVER_REQUEST_REFUSED]: JsonRpcCode.METHOD_NOT_FOUND,
  [ErrorCode.CONTINUATION_LOST]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.RESOURCE_NOT_FOUND]: JsonRpcCode.RESOURCE_NOT_FOUND,
  [ErrorCode.SPAWN_FAILED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.SPAWN_TIMEOUT]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.ENTRY_LOST]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.ENTRY_UNSTABLE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.ENTRY_CLOSING]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.NOT_CONNECTED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.SERVER_FAILED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.SERVER_UNAVAILABLE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.AUTH_REQUIRED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.AUTH_FAILED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.ACTOR_DIED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.PORT_CLOSED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.BUDGET_EXHAUSTED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.ACTOR_CAP_REACHED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.POOL_DRAINING]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.CONNECTION_RELEASED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.INTERNAL]: JsonRpcCode.INTERNAL_ERROR,
  [ErrorCode.BAD_REQUEST]: JsonRpcCode.INVALID_REQUEST,
  [ErrorCode.UNAUTHORIZED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.FORBIDDEN]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.NOT_FOUND]: JsonRpcCode.INVALID_PARAMS,
  [ErrorCode.PAYLOAD_TOO_LARGE]: JsonRpcCode.INVALID_REQUEST,
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: JsonRpcCode.INVALID_REQUEST,
  [ErrorCode.CONFIG_REJECTED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.REQUEST_TOO_LARGE]: JsonRpcCode.INVALID_PARAMS,
  [ErrorCode.CLIENT_LIMIT_REACHED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.SESSION_CAP_REACHED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.SHUTTING_DOWN]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.NOT_READY]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.NOT_IMPLEMENTED]: JsonRpcCode.METHOD_NOT_FOUND,
  [ErrorCode.ISSUER_UNAVAILABLE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.STORE_UNAVAILABLE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.HEADER_MISMATCH]: JsonRpcCode.HEADER_MISMATCH,
  [ErrorCode.UNSUPPORTED_PROTOCOL_VERSION]: JsonRpcCode.UNSUPPORTED_PROTOCOL_VERSION,
  [ErrorCode.METHOD_NOT_FOUND]: JsonRpcCode.METHOD_NOT_FOUND,
  [ErrorCode.BRIDGE_UNREACHABLE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.BRIDGE_REINIT_FAILED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.BRIDGE_SESSION_NOT_FOUND]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.BRIDGE_SESSION_LOST]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.BRIDGE_STREAM_ENDED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.BRIDGE_HTTP_ERROR]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.BRIDGE_BAD_RESPONSE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.BRIDGE_UNSUPPORTED_PROTOCOL_VERSION]: JsonRpcCode.UNSUPPORTED_PROTOCOL_VERSION,
  [ErrorCode.DAEMON_START_FAILED]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.NO_TOKEN]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.UNREACHABLE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.REQUEST_TIMEOUT]: JsonRpcCode.REQUEST_TIMEOUT,
  [ErrorCode.REQUEST_ABORTED]: JsonRpcCode.REQUEST_CANCELLED,
  [ErrorCode.BAD_RESPONSE]: JsonRpcCode.SERVER_ERROR,
  [ErrorCode.HTTP_ERROR]: JsonRpcCode.SERVER_ERROR,
} as const satisfies Record<ErrorCode, JsonRpcCode>);

/** The HTTP status of `code`; a string that is not one of ours is a 500. */
export function httpStatusOf(code: string): number {
  return isErrorCode(code) ? HTTP_STATUS[code] : 500;
}

/** The JSON-RPC error code of `code`; a string that is not one of ours is an internal error. */
export function jsonRpcCodeOf(code: string): JsonRpcCode {
  return isErrorCode(code) ? JSON_RPC_CODE[code] : JsonRpcCode.INTERNAL_ERROR;
}
