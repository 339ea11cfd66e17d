/**
 * Errors on the `/mcp` wire. A JSON-RPC error from an upstream server goes to the downstream
 * client with its own code, message and data (the pool passes the server's message as sent; an
 * SDK error raised in this process has its "MCP error N: " prefix taken off). Pool failures become JSON-RPC errors whose `data.code` is the pool's
 * stable `MCPOOL_*` code; nothing else of an internal error is passed on.
 */
import { ErrorCode, PoolError } from '@mcpool/core';

/** JSON-RPC / MCP error codes the gateway answers with. */
export const RpcCode = {
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** The SDK's `RequestTimeout` (also its "session not found" on HTTP). */
  REQUEST_TIMEOUT: -32001,
  /** `Session not found` on a 404, as the SDK transport answers. */
  SESSION_NOT_FOUND: -32001,
  /** Generic server error for HTTP-level refusals (as the SDK transport uses). */
  SERVER_ERROR: -32000,
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

const SDK_PREFIX = /^MCP error -?\d+: /;

/** The upstream's own message, without the SDK's `MCP error N: ` prefix. */
export function upstreamMessage(message: string): string {
  return message.replace(SDK_PREFIX, '');
}

/** Any failure of a pooled call → the error the downstream client gets. */
export function toRpcError(error: unknown, what: string): RpcError {
  if (error instanceof RpcError) return error;
  if (!(error instanceof PoolError)) return new RpcError(RpcCode.INTERNAL_ERROR, `${what} failed inside mcpool (see the daemon log)`);
  const data = error.data as { mcpCode?: unknown; mcpData?: unknown } | undefined;
  if (error.code === ErrorCode.UPSTREAM_ERROR && typeof data?.mcpCode === 'number') {
    // The actor passes the server's message on as the server sent it: nothing to take off.
    return new RpcError(data.mcpCode, error.message, data.mcpData);
  }
  const tagged = { code: error.code };
  switch (error.code) {
    case ErrorCode.CALL_TIMEOUT:
      return new RpcError(RpcCode.REQUEST_TIMEOUT, `${what}: ${error.message}`, tagged);
    case ErrorCode.CALL_INTERRUPTED:
      return new RpcError(RpcCode.INTERNAL_ERROR, `${what}: ${error.message} (it was not replayed; the pool reconnects, so the next call can succeed)`, tagged);
    case ErrorCode.INVALID_ARGUMENT:
      return new RpcError(RpcCode.INVALID_PARAMS, `${what}: ${error.message}`, tagged);
    default:
      return new RpcError(RpcCode.INTERNAL_ERROR, `${what}: ${error.message}`, tagged);
  }
}

/** A JSON-RPC error body for an HTTP-level answer (no request id known). */
export function rpcErrorBody(code: number, message: string): { jsonrpc: '2.0'; error: { code: number; message: string }; id: null } {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}
