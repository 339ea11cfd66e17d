/**
 * The HTTP boundary: every failed request answers `{statusCode, code, error, message}`, its
 * status from the one code → status table of `@mcpool/protocol` (`HTTP_STATUS`). Malformed input
 * is 400, a missing or bad token 401, a missing right or a refused Host/Origin 403, an unknown id
 * 404; failures of the daemon or of an upstream server never get a client-fault status.
 */
import { STATUS_CODES } from 'node:http';
import { ErrorCode, HTTP_STATUS, PoolError, httpStatusOf } from '@mcpool/protocol';
import type { ErrorBody } from '@mcpool/client';
import { authorizeHintOf } from './authHint.js';

/**
 * The codes the daemon's HTTP surfaces add to the pool's: a view of the one `ErrorCode` table
 * (the same strings), kept for the modules that name them this way.
 */
export const DaemonErrorCode = {
  BAD_REQUEST: ErrorCode.BAD_REQUEST,
  UNAUTHORIZED: ErrorCode.UNAUTHORIZED,
  FORBIDDEN: ErrorCode.FORBIDDEN,
  NOT_FOUND: ErrorCode.NOT_FOUND,
  PAYLOAD_TOO_LARGE: ErrorCode.PAYLOAD_TOO_LARGE,
  UNSUPPORTED_MEDIA_TYPE: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  CONFIG_REJECTED: ErrorCode.CONFIG_REJECTED,
  SHUTTING_DOWN: ErrorCode.SHUTTING_DOWN,
  NOT_READY: ErrorCode.NOT_READY,
  NOT_IMPLEMENTED: ErrorCode.NOT_IMPLEMENTED,
} as const;

/** code → HTTP status: the protocol's table (every code has one). */
export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = HTTP_STATUS;

/** The status of `code`; a string that is not one of ours is a 500. */
export function statusOf(code: string): number {
  return httpStatusOf(code);
}

/** Reason phrases Node does not know. */
const EXTRA_REASONS: Readonly<Record<number, string>> = { 499: 'Client Closed Request' };

/** An error raised by a route; its status comes from {@link STATUS_BY_CODE}. */
export class HttpError extends PoolError {
  override name = 'HttpError';
}

export function errorBody(code: ErrorCode, message: string): ErrorBody {
  const statusCode = statusOf(code);
  return { statusCode, code, error: STATUS_CODES[statusCode] ?? EXTRA_REASONS[statusCode] ?? 'Error', message };
}

/** Fastify's own errors (body parsing, routing) mapped onto our codes. */
const FASTIFY_CODES: Readonly<Record<string, [ErrorCode, string | undefined]>> = {
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
export function classifyError(error: unknown): { code: ErrorCode; message: string; internal: boolean } {
  if (error instanceof PoolError) return { code: error.code, message: withDaemonHint(error), internal: statusOf(error.code) >= 500 };
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

/** What the daemon's user does about a pool error, added where the library cannot know it (`./authHint.ts`). */
function withDaemonHint(error: PoolError): string {
  const hint = authorizeHintOf(error.code, error.data);
  return hint === undefined ? error.message : `${error.message}: ${hint}`;
}
