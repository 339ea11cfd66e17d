/**
 * What the modern router answers with, and how: a JSON body, or a stream of messages ending with
 * the response. An answer is JSON when nothing streams before the result, a stream from the
 * first notification on (progress, a log the request asked for).
 */
import { ErrorCode, httpStatusOf, JsonRpcCode, jsonRpcCodeOf, type PoolError } from '@mcpool/protocol';
import { toRpcError } from '../rpcErrors.js';
import { MessageStream } from './messageStream.js';

type Params = Record<string, unknown>;
export type RequestId = string | number;

/** An answer: a JSON body (none for 202), or a stream of messages ending with the response. */
export type ModernAnswer = { kind: 'json'; status: number; body?: Record<string, unknown> } | { kind: 'stream'; status: 200; stream: MessageStream };

export function errorBody(id: RequestId | null, code: number, message: string, data?: unknown): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** A refusal of the request as a whole, before it is routed: its HTTP status and JSON-RPC code from the one code table. */
export function refusalAnswer(id: RequestId | null, refusal: PoolError | { code: ErrorCode; message: string; data?: Params | undefined }): ModernAnswer {
  const { code, message } = refusal;
  const data = refusal.data === undefined ? { code } : { code, ...withoutRefusal(refusal.data) };
  return { kind: 'json', status: httpStatusOf(code), body: errorBody(id, jsonRpcCodeOf(code), message, data) };
}

/**
 * A failure of a routed request, in-band (HTTP 200) as JSON-RPC errors are, except a missing
 * client capability, which is the caller's to fix (400). The legacy "resource not found"
 * (-32002) is -32602 in this revision.
 */
export function failureAnswer(id: RequestId, error: unknown, what: string, requested?: { kind: 'tool' | 'prompt'; name: string }): { message: Record<string, unknown>; status: number } {
  const rpc = toRpcError(error, what, requested);
  const code = rpc.code === JsonRpcCode.RESOURCE_NOT_FOUND ? JsonRpcCode.INVALID_PARAMS : rpc.code;
  return { message: errorBody(id, code, rpc.message, rpc.data), status: code === JsonRpcCode.MISSING_REQUIRED_CLIENT_CAPABILITY ? 400 : 200 };
}

export function result(id: RequestId, body: Params): ModernAnswer {
  return { kind: 'json', status: 200, body: { jsonrpc: '2.0', id, result: body } };
}

/** A list the router built: it varies by who asks and may change at any time. */
export function listResult(id: RequestId, body: Params): ModernAnswer {
  return result(id, { ...body, ttlMs: 0, cacheScope: 'private', resultType: 'complete' });
}

/**
 * A forwarded result as a modern caller must get it: `resultType` (a legacy server's result is
 * complete), and on `resources/read` the cache hints it must carry (the server's own, else none
 * to reuse). An `input_required` result is the server's to shape: it passes untouched.
 */
export function shapeResult(method: string, body: Params): Params {
  if (body.resultType === 'input_required') return body;
  const shaped: Params = { ...body, resultType: typeof body.resultType === 'string' ? body.resultType : 'complete' };
  if (method === 'resources/read') {
    shaped.ttlMs = typeof body.ttlMs === 'number' ? body.ttlMs : 0;
    shaped.cacheScope = body.cacheScope === 'public' || body.cacheScope === 'private' ? body.cacheScope : 'private';
  }
  return shaped;
}

/** One HTTP request's answer: JSON when it finishes before anything streams, else a stream from the first notification on. */
export class Sink {
  readonly settled: Promise<ModernAnswer>;
  #answer!: (value: ModernAnswer) => void;
  #stream: MessageStream | undefined;

  constructor(readonly id: RequestId) {
    this.settled = new Promise<ModernAnswer>((resolve) => (this.#answer = resolve));
  }

  emit(message: Record<string, unknown>): void {
    if (this.#stream === undefined) {
      this.#stream = new MessageStream();
      this.#answer({ kind: 'stream', status: 200, stream: this.#stream });
    }
    this.#stream.push(message);
  }

  /** The response: `message` with this request's id. */
  finish(message: Record<string, unknown>, status: number): void {
    const response = message.id === this.id ? message : { ...message, id: this.id };
    if (this.#stream === undefined) {
      this.#answer({ kind: 'json', status, body: response });
      return;
    }
    this.#stream.push(response);
    this.#stream.end();
  }
}

function withoutRefusal(data: Params): Params {
  const { refusal: _kind, ...rest } = data;
  return rest;
}
