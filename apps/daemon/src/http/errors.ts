/**
 * The HTTP boundary's one table: error `code` → status (STYLE §4). Every failed request answers
 * `{statusCode, code, error, message}`. Malformed input is 400, a missing or bad token 401, a
 * missing right or a refused Host/Origin 403, an unknown id 404; failures of the daemon or of an
 * upstream server never get a client-fault status.
 */
import { STATUS_CODES } from 'node:http';
import { ErrorCode, PoolError } from '@mcpool/protocol';
import type { ErrorBody } from '@mcpool/client';

/** Codes the daemon adds to the pool's. */
export const DaemonErrorCode = {
  /** The request is malformed: bad JSON, a body or query that does not fit the route. */
  BAD_REQUEST: 'MCPOOL_BAD_REQUEST',
  /** No bearer token, or one the daemon does not know. */
  UNAUTHORIZED: 'MCPOOL_UNAUTHORIZED',
  /** The token lacks the right, or the Host / Origin is not allowed. */
  FORBIDDEN: 'MCPOOL_FORBIDDEN',
  /** No such route, server, entry or session. */
  NOT_FOUND: 'MCPOOL_NOT_FOUND',
  PAYLOAD_TOO_LARGE: 'MCPOOL_PAYLOAD_TOO_LARGE',
  /** Bodies are JSON only (this also stops cross-site "simple" POSTs). */
  UNSUPPORTED_MEDIA_TYPE: 'MCPOOL_UNSUPPORTED_MEDIA_TYPE',
  /** The config file on disk is invalid; nothing of it was applied. */
  CONFIG_REJECTED: 'MCPOOL_CONFIG_REJECTED',
  /** The daemon is shutting down and takes no new work. */
  SHUTTING_DOWN: 'MCPOOL_SHUTTING_DOWN',
  /** The configured servers are still warming up (`/readyz`). */
  NOT_READY: 'MCPOOL_NOT_READY',
  /** The pool in use has no support for this operation. */
  NOT_IMPLEMENTED: 'MCPOOL_NOT_IMPLEMENTED',
} as const;

/** code → HTTP status. Anything not listed is a 500. */
export const STATUS_BY_CODE: Readonly<Record<string, number>> = Object.freeze({
  [DaemonErrorCode.BAD_REQUEST]: 400,
  [ErrorCode.CONFIG_INVALID]: 400,
  [ErrorCode.INVALID_ARGUMENT]: 400,
  [DaemonErrorCode.UNAUTHORIZED]: 401,
  [DaemonErrorCode.FORBIDDEN]: 403,
  [ErrorCode.TOOL_NOT_ALLOWED]: 403,
  [DaemonErrorCode.NOT_FOUND]: 404,
  [DaemonErrorCode.CONFIG_REJECTED]: 409,
  [ErrorCode.CONNECTION_RELEASED]: 409,
  [DaemonErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [DaemonErrorCode.UNSUPPORTED_MEDIA_TYPE]: 415,
  [ErrorCode.INTERNAL]: 500,
  [DaemonErrorCode.NOT_IMPLEMENTED]: 501,
  [ErrorCode.SPAWN_FAILED]: 502,
  [ErrorCode.UPSTREAM_ERROR]: 502,
  [ErrorCode.CALL_INTERRUPTED]: 502,
  [ErrorCode.SERVER_FAILED]: 502,
  [ErrorCode.ACTOR_DIED]: 502,
  [ErrorCode.PORT_CLOSED]: 502,
  [DaemonErrorCode.SHUTTING_DOWN]: 503,
  [DaemonErrorCode.NOT_READY]: 503,
  [ErrorCode.POOL_DRAINING]: 503,
  [ErrorCode.BUDGET_EXHAUSTED]: 503,
  [ErrorCode.NOT_CONNECTED]: 503,
  [ErrorCode.ENTRY_CLOSING]: 503,
  [ErrorCode.CALL_CANCELLED]: 503,
  [ErrorCode.SPAWN_TIMEOUT]: 504,
  [ErrorCode.CALL_TIMEOUT]: 504,
});

export function statusOf(code: string): number {
  return STATUS_BY_CODE[code] ?? 500;
}

/** An error raised by a route; its status comes from {@link STATUS_BY_CODE}. */
export class HttpError extends PoolError {
  override name = 'HttpError';
}

export function errorBody(code: string, message: string): ErrorBody {
  const statusCode = statusOf(code);
  return { statusCode, code, error: STATUS_CODES[statusCode] ?? 'Error', message };
}

/** Fastify's own errors (body parsing, routing) mapped onto our codes. */
const FASTIFY_CODES: Readonly<Record<string, [string, string | undefined]>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [DaemonErrorCode.PAYLOAD_TOO_LARGE, 'the request body is too large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [DaemonErrorCode.UNSUPPORTED_MEDIA_TYPE, 'request bodies must be application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [DaemonErrorCode.BAD_REQUEST, 'the Content-Length does not match the body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [DaemonErrorCode.BAD_REQUEST, 'the body is empty but Content-Type is application/json'],
  FST_ERR_CTP_INVALID_JSON_BODY: [DaemonErrorCode.BAD_REQUEST, 'the body is not valid JSON'],
  FST_ERR_BAD_URL: [DaemonErrorCode.BAD_REQUEST, 'the URL is malformed'],
  FST_ERR_ASYNC_CONSTRAINT: [DaemonErrorCode.BAD_REQUEST, undefined],
};

/**
 * Any thrown value → our `{code, message}`. Messages of unknown errors are not passed on (they
 * may hold anything); JSON syntax errors get a fixed message because Node's quotes the body.
 */
export function classifyError(error: unknown): { code: string; message: string; internal: boolean } {
  if (error instanceof PoolError) return { code: error.code, message: error.message, internal: statusOf(error.code) >= 500 };
  const e = error as { code?: unknown; statusCode?: unknown; message?: unknown; name?: unknown };
  if (typeof e?.code === 'string' && e.code in FASTIFY_CODES) {
    const [code, message] = FASTIFY_CODES[e.code]!;
    return { code, message: message ?? String(e.message), internal: false };
  }
  if (e?.name === 'SyntaxError' && e.statusCode === 400) return { code: DaemonErrorCode.BAD_REQUEST, message: 'the body is not valid JSON', internal: false };
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { code: DaemonErrorCode.BAD_REQUEST, message: 'the request is malformed', internal: false };
  }
  return { code: ErrorCode.INTERNAL, message: 'internal error (see the daemon log)', internal: true };
}
