/**
 * Errors on the `/mcp` wire. A JSON-RPC error from an upstream server goes to the downstream
 * client with its own code, message and data (the SDK's "MCP error N: " prefix taken off, so the
 * message is the server's). Pool failures become JSON-RPC errors whose code comes from the one
 * code → JSON-RPC table of `@mcpool/protocol` (`JSON_RPC_CODE`) and whose `data.code` is the
 * pool's stable `MCPOOL_*` code; nothing else of an internal error is passed on.
 */
import { ErrorCode, JsonRpcCode, PoolError, jsonRpcCodeOf, refusalOf, unknownName } from '@mcpool/protocol';

/**
 * JSON-RPC / MCP error codes the gateway answers with (the protocol's `JsonRpcCode`).
 * `SESSION_NOT_FOUND` is -32001 as the SDK's Streamable HTTP transport answers a 404, the same
 * number as its `RequestTimeout`: clients that re-initialize on it match on the pair (404, -32001).
 */
export const RpcCode = {
  INVALID_REQUEST: JsonRpcCode.INVALID_REQUEST,
  METHOD_NOT_FOUND: JsonRpcCode.METHOD_NOT_FOUND,
  INVALID_PARAMS: JsonRpcCode.INVALID_PARAMS,
  INTERNAL_ERROR: JsonRpcCode.INTERNAL_ERROR,
  REQUEST_TIMEOUT: JsonRpcCode.REQUEST_TIMEOUT,
  SESSION_NOT_FOUND: JsonRpcCode.REQUEST_TIMEOUT,
  SERVER_ERROR: JsonRpcCode.SERVER_ERROR,
} as const;

/**
 * Thrown from a request handler: the SDK's protocol layer sends `code`, `message` and `data`
 * as they are (unlike `McpError`, whose message carries a prefix).
 */
export class RpcError extends Error {
  override name = 'RpcError';
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

const SDK_PREFIX = /^(?:MCP error -?\d+: )+/;

/** The upstream's own message, without the SDK's `MCP error N: ` prefix (however often it was added). */
export function upstreamMessage(message: string): string {
  return message.replace(SDK_PREFIX, '');
}

/** What a request asked for by name: a tool or a prompt, as the client wrote it. */
export interface RequestedName {
  kind: 'tool' | 'prompt';
  name: string;
}

/**
 * Any failure of a request → the JSON-RPC error the downstream client gets.
 * - A refusal (`@mcpool/protocol/refusals`) keeps its message, its code from the code table and
 *   `data.code`; the unknown-name one carries no `data` (it says nothing of why).
 * - A JSON-RPC error of the other side (a server's, or a client's answer to a server request)
 *   keeps its own code, message and data.
 * - A session filter hiding a name answers as the unknown-name refusal does.
 * - Any other pool failure: its code from the table, the message prefixed with `what`; one for
 *   lack of authorization also names its server and the scope a step-up asks for (`data`).
 * - Anything else is a bug here: -32603, and nothing of it passed on.
 *
 * @param what the request, for the message (`tool github__search`).
 * @param requested the name the request asked for, when it asked for one.
 */
export function toRpcError(error: unknown, what: string, requested?: RequestedName): RpcError {
  if (error instanceof RpcError) return error;
  if (!(error instanceof PoolError)) return new RpcError(RpcCode.INTERNAL_ERROR, `${what} failed inside mcpool (see the daemon log)`, { code: ErrorCode.INTERNAL });
  const data = error.data as { mcpCode?: unknown; mcpData?: unknown; tool?: unknown; prompt?: unknown; refusal?: unknown; serverName?: unknown; scope?: unknown } | undefined;
  const refusal = refusalOf(error);
  if (refusal !== undefined) {
    if (refusal === 'unknownName') return new RpcError(jsonRpcCodeOf(error.code), error.message);
    const { refusal: _kind, ...rest } = data ?? {};
    return new RpcError(jsonRpcCodeOf(error.code), error.message, { code: error.code, ...rest });
  }
  // A JSON-RPC error of the other side (a server's, or a client's answer to a server request) keeps its own code.
  if ((error.code === ErrorCode.UPSTREAM_ERROR || error.code === ErrorCode.DOWNSTREAM_ERROR) && typeof data?.mcpCode === 'number') {
    return new RpcError(data.mcpCode, upstreamMessage(error.message), data.mcpData);
  }
  if (error.code === ErrorCode.TOOL_NOT_ALLOWED) {
    // Never the pool's own message: it says the name is hidden, and by what.
    const named = requested ?? (typeof data?.prompt === 'string' ? { kind: 'prompt' as const, name: data.prompt } : { kind: 'tool' as const, name: typeof data?.tool === 'string' ? data.tool : '' });
    return toRpcError(unknownName(named.kind, named.name), what);
  }
  const tagged = error.code === ErrorCode.AUTH_REQUIRED ? { code: error.code, ...authorizationOf(data) } : { code: error.code };
  const code = jsonRpcCodeOf(error.code);
  if (error.code === ErrorCode.CALL_INTERRUPTED) {
    return new RpcError(code, `${what}: ${error.message} (it was not replayed; the pool reconnects, so the next call can succeed)`, tagged);
  }
  return new RpcError(code, `${what}: ${error.message}`, tagged);
}

/**
 * What a caller needs to have a server authorized (`MCPOOL_AUTH_REQUIRED`): which server, and on
 * a step-up the scope it named. Never the challenge itself (the upstream's header stays inside).
 */
function authorizationOf(data: Record<string, unknown> | undefined): { serverName?: string; scope?: string } {
  return {
    ...(typeof data?.serverName === 'string' ? { serverName: data.serverName } : {}),
    ...(typeof data?.scope === 'string' ? { scope: data.scope } : {}),
  };
}

/** `params[key]`, which must be a string (else -32602). */
export function stringParam(params: Record<string, unknown>, key: string): string {
  const value = params[key];
  if (typeof value !== 'string') throw new RpcError(RpcCode.INVALID_PARAMS, `params.${key} must be a string`);
  return value;
}

/** A refusal as the JSON-RPC error body of an HTTP-level answer (no request id known); its status is `httpStatusOf(refusal.code)`. */
export function refusalBody(refusal: PoolError): { jsonrpc: '2.0'; id: null; error: { code: number; message: string; data: Record<string, unknown> } } {
  const rpc = toRpcError(refusal, '');
  return { jsonrpc: '2.0', id: null, error: { code: rpc.code, message: rpc.message, data: (rpc.data as Record<string, unknown> | undefined) ?? { code: refusal.code } } };
}

/** A JSON-RPC error body for an HTTP-level answer (no request id known). */
export function rpcErrorBody(code: number, message: string): { jsonrpc: '2.0'; error: { code: number; message: string }; id: null } {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}
