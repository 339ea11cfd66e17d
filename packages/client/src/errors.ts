/**
 * Errors of `@mcpool/client`. A daemon answer that is not 2xx becomes a {@link McpoolHttpError}
 * carrying the daemon's `{statusCode, code, error, message}` body; a request that never got an
 * answer (connection refused, timeout, abort) becomes a {@link McpoolRequestError}.
 */
import { ErrorCode, type ClientErrorCode } from '@mcpool/protocol/errorCodes';
import type { ErrorBody } from './types.js';

export { ErrorCode };
export type { ClientErrorCode };

/**
 * The daemon answered with an error status. `code` is the daemon's stable `MCPOOL_…` code (one of
 * {@link ErrorCode}; a newer daemon may send one this version does not list).
 */
export class McpoolHttpError extends Error {
  override name = 'McpoolHttpError';
  readonly statusCode: number;
  readonly code: ErrorCode | (string & {});
  /** The HTTP reason phrase. */
  readonly error: string;

  constructor(body: ErrorBody) {
    super(body.message);
    this.statusCode = body.statusCode;
    this.code = body.code;
    this.error = body.error;
  }
}

/** No answer: the daemon is not reachable, the request timed out, or it was aborted. */
export class McpoolRequestError extends Error {
  override name = 'McpoolRequestError';
  /** `MCPOOL_UNREACHABLE`, `MCPOOL_REQUEST_TIMEOUT`, `MCPOOL_REQUEST_ABORTED` or `MCPOOL_BAD_RESPONSE`. */
  readonly code: Exclude<ClientErrorCode, typeof ErrorCode.HTTP_ERROR>;

  constructor(code: Exclude<ClientErrorCode, typeof ErrorCode.HTTP_ERROR>, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Builds the error of a non-2xx answer, tolerating a body that is not ours (a proxy, a crash). */
export function errorFromResponse(status: number, statusText: string, body: unknown): McpoolHttpError {
  if (typeof body === 'object' && body !== null) {
    const b = body as Partial<ErrorBody>;
    if (typeof b.code === 'string' && typeof b.message === 'string') {
      return new McpoolHttpError({ statusCode: status, code: b.code, error: typeof b.error === 'string' ? b.error : statusText, message: b.message });
    }
  }
  return new McpoolHttpError({ statusCode: status, code: ErrorCode.HTTP_ERROR, error: statusText, message: `HTTP ${status} ${statusText}` });
}
