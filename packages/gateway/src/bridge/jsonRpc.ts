/**
 * The little of JSON-RPC the bridge needs to know: which lines are requests, notifications or
 * responses, their ids, and the error responses the bridge writes itself. Messages are never
 * validated beyond that (the bridge relays them as they are, so nothing is dropped or rewritten).
 */

import { ErrorCode, JSON_RPC_CODE, JsonRpcCode } from '@mcpool/protocol/errorCodes';

export type RequestId = string | number;

/** A JSON-RPC message as parsed, with no promise about its fields. */
export interface JsonRpcMessage {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: unknown;
}

const isId = (value: unknown): value is RequestId => typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));

export const isMessage = (value: unknown): value is JsonRpcMessage => typeof value === 'object' && value !== null && !Array.isArray(value);

export const isRequest = (message: JsonRpcMessage): message is JsonRpcMessage & { id: RequestId; method: string } => typeof message.method === 'string' && isId(message.id);

export const isNotification = (message: JsonRpcMessage): message is JsonRpcMessage & { method: string } => typeof message.method === 'string' && message.id === undefined;

export const isResponse = (message: JsonRpcMessage): message is JsonRpcMessage & { id: RequestId } =>
  message.method === undefined && isId(message.id) && ('result' in message || 'error' in message);

/** A map key for an id: `1` and `"1"` are different ids. */
export const idKey = (id: RequestId): string => JSON.stringify(id);

/**
 * Stable codes in `error.data.code` of the errors the bridge writes itself: a view of the one
 * `ErrorCode` table of `@mcpool/protocol` (the same strings).
 */
export const BridgeErrorCode = {
  UNREACHABLE: ErrorCode.BRIDGE_UNREACHABLE,
  REINIT_FAILED: ErrorCode.BRIDGE_REINIT_FAILED,
  SESSION_NOT_FOUND: ErrorCode.BRIDGE_SESSION_NOT_FOUND,
  SESSION_LOST: ErrorCode.BRIDGE_SESSION_LOST,
  STREAM_ENDED: ErrorCode.BRIDGE_STREAM_ENDED,
  HTTP_ERROR: ErrorCode.BRIDGE_HTTP_ERROR,
  BAD_RESPONSE: ErrorCode.BRIDGE_BAD_RESPONSE,
  UNSUPPORTED_PROTOCOL_VERSION: ErrorCode.BRIDGE_UNSUPPORTED_PROTOCOL_VERSION,
} as const;
export type BridgeErrorCode = (typeof BridgeErrorCode)[keyof typeof BridgeErrorCode];

/** A failure the bridge reports to its client, for each request it concerns. */
export interface BridgeFailure {
  code: BridgeErrorCode;
  message: string;
  /** JSON-RPC error code. @default the code's entry in `JSON_RPC_CODE` (-32000 for every bridge code: the request is lost) */
  rpcCode?: number;
  httpStatus?: number;
  /** More fields for `error.data` (e.g. `supported` of an unsupported-protocol-version error). */
  data?: Record<string, unknown>;
}

/** The JSON-RPC error response for `id`. */
export function errorResponse(id: RequestId, failure: BridgeFailure): Record<string, unknown> {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: failure.rpcCode ?? JSON_RPC_CODE[failure.code],
      message: failure.message,
      data: { ...failure.data, code: failure.code, ...(failure.httpStatus === undefined ? {} : { httpStatus: failure.httpStatus }) },
    },
  };
}

/**
 * The failure for an HTTP error answer: the daemon's own message when its body says one (a
 * JSON-RPC error, or the REST API's `{statusCode, code, message}`), else the status line.
 */
export function httpFailure(status: number, statusText: string, body: string): BridgeFailure {
  let message = `${status} ${statusText}`.trim();
  let rpcCode: number | undefined;
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown; code?: unknown };
    if (isMessage(parsed.error) && typeof (parsed.error as { message?: unknown }).message === 'string') {
      message = `${message}: ${(parsed.error as { message: string }).message}`;
      const code = (parsed.error as { code?: unknown }).code;
      // -32001 is the SDK's "Session not found" and also its RequestTimeout: never pass it on.
      if (typeof code === 'number' && code !== JsonRpcCode.REQUEST_TIMEOUT) rpcCode = code;
    } else if (typeof parsed.message === 'string') {
      message = `${message}: ${typeof parsed.code === 'string' ? `${parsed.code}: ` : ''}${parsed.message}`;
    }
  } catch {
    // not JSON: the status line says it
  }
  const hint = status === 401 ? ' (check the token: --token-file, MCPOOL_TOKEN, or the daemon’s token file)' : '';
  return { code: BridgeErrorCode.HTTP_ERROR, message: `mcpool bridge: the daemon answered ${message}${hint}`, httpStatus: status, ...(rpcCode === undefined ? {} : { rpcCode }) };
}
