/**
 * Forwarding one modern request to its server's view, as the same method: the answer is JSON
 * unless a notification of the request (progress, a log it asked for) comes before the result.
 * What goes upstream:
 * - the params without the prefix (the caller resolved the name) and without `_meta`; the
 *   caller's own `_meta` goes as the call's (its protocol version, client capabilities and info,
 *   log level, trace context — the HTTP request's `traceparent`/`tracestate` when `_meta` has
 *   none), so a modern upstream shared by many callers sees each one's;
 * - `inputResponses` of a modern server's `input_required` byte for byte, and its `requestState`
 *   byte for byte once the envelope it left in opened under the retry's own caller
 *   (`upstreamStates.ts`; its retry reaches the same upstream because the caller's views are held
 *   between requests).
 * A retry carrying a `requestState` the gateway minted continues its call instead
 * (`continuations.ts`); one the gateway did not mint, or `inputResponses` without one, on a
 * legacy server (which mints none and would take it as a new call) is refused.
 */
import type { CallOptions, PooledConnection, UpstreamNotification } from '@mcpool/core';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import { requestStateRefused } from '@mcpool/protocol/refusals';
import { headerValue, type RequestHeaders } from '../era.js';
import { failureAnswer, shapeResult, Sink, type ModernAnswer, type RequestId } from './answers.js';
import { Continuations, type Binding } from './continuations.js';
import type { UpstreamStates } from './upstreamStates.js';
import type { Hold, Holds } from './holds.js';
import { asRecord, forwardedParams, type Params } from '../json.js';


/** One routed request, as its handler sees it. */
export interface ForwardContext {
  id: RequestId;
  params: Params;
  meta: Params;
  headers: RequestHeaders;
  hold: Hold;
  signal: AbortSignal | undefined;
}

export interface ForwardOptions {
  /** What a `requestState` minted for this call is bound to; only the methods that may ask for input (`tools/call`, `prompts/get`, `resources/read`) have one. */
  binding?: Binding | undefined;
  /** The tool or prompt as asked, for the refusal of a name the view hides. */
  requested?: { kind: 'tool' | 'prompt'; name: string } | undefined;
  /** What the request names (a tool or prompt as asked, a URI), for the message of a failure. */
  name: string;
}

/** Who continues what: the gateway's own calls, and the envelopes of modern servers' states. */
export interface ForwardStates {
  continuations: Continuations;
  upstream: UpstreamStates;
}

export function forward(states: ForwardStates, holds: Holds, ctx: ForwardContext, view: PooledConnection, method: string, params: Params, options: ForwardOptions): Promise<ModernAnswer> {
  const { continuations, upstream } = states;
  const sink = new Sink(ctx.id);
  const { binding } = options;
  const state = params.requestState;
  if (binding !== undefined && Continuations.minted(state)) {
    if (!continuations.resume(state, binding, asRecord(params.inputResponses) ?? {}, sink)) refuse(sink, ctx.id);
    return sink.settled;
  }
  if (binding !== undefined && (state !== undefined || params.inputResponses !== undefined) && view.era !== 'modern') {
    refuse(sink, ctx.id);
    return sink.settled;
  }
  // A modern server's state goes back only inside the envelope it left in, opened by its own caller.
  let serverState: string | undefined;
  if (binding !== undefined && state !== undefined) {
    serverState = upstream.open(state, binding);
    if (serverState === undefined) {
      refuse(sink, ctx.id);
      return sink.settled;
    }
  }
  const body = forwardedParams(params);
  if (serverState !== undefined) body.requestState = serverState;
  const { progressToken, ...meta } = ctx.meta;
  // Trace context of the HTTP request, when the caller put none in `_meta`.
  for (const name of ['traceparent', 'tracestate'] as const) {
    const value = headerValue(ctx.headers, name);
    if (value !== undefined && meta[name] === undefined) meta[name] = value;
  }
  const call = continuations.begin(binding ?? NO_BINDING, asRecord(meta[MODERN_META.clientCapabilities]) ?? {}, sink);
  const callOptions: CallOptions = {};
  if (ctx.signal !== undefined) callOptions.signal = ctx.signal;
  if (Object.keys(meta).length > 0) callOptions._meta = meta;
  if (progressToken !== undefined) callOptions.onProgress = (progress) => call.sink?.emit({ jsonrpc: '2.0', method: 'notifications/progress', params: { ...progress, progressToken } });
  // A server must not log for a request that did not ask for a level.
  if (typeof meta[MODERN_META.logLevel] === 'string') {
    callOptions.onNotification = (note: UpstreamNotification) => (note.method === 'notifications/message' ? call.sink?.emit({ jsonrpc: '2.0', ...note }) : undefined);
  }
  // A legacy server's request the pool attributes to this call is offered to its caller as
  // input_required (a modern server asks in its result instead). Every such call takes server
  // requests, whatever its caller declared: callers of one hold declare per request, and a call
  // that took none would let the pool hand its request to an older call of another declaration.
  // The call refuses what its own caller did not declare (`Continuations.offer`).
  if (binding !== undefined && view.era !== 'modern') callOptions.onServerRequest = (request, signal) => continuations.offer(call, request, signal);
  // The call keeps its views held until its answer, however long after the first notification.
  holds.retain(ctx.hold);
  const finish = (message: Record<string, unknown>, status: number): void => {
    holds.leave(ctx.hold);
    continuations.settle(call, message, status);
  };
  view.request(method, body, callOptions).then(
    (result) => finish({ jsonrpc: '2.0', id: ctx.id, result: shapeResult(method, binding === undefined ? result : enveloped(upstream, result, binding)) }, 200),
    (error: unknown) => {
      const failed = failureAnswer(ctx.id, error, `${method} ${options.name}`, options.requested);
      finish(failed.message, failed.status);
    },
  );
  return sink.settled;
}

/** A modern server's `input_required` with its own `requestState` in an envelope bound to the caller. */
function enveloped(upstream: UpstreamStates, result: Params, binding: Binding): Params {
  if (result.resultType !== 'input_required' || typeof result.requestState !== 'string') return result;
  return { ...result, requestState: upstream.wrap(result.requestState, binding) };
}

/** A call of a method that never asks for input: nothing can continue it. */
const NO_BINDING: Binding = { principal: '', scope: undefined, method: '', name: '' };

function refuse(sink: Sink, id: RequestId): void {
  const refused = failureAnswer(id, requestStateRefused(), 'requestState');
  sink.finish(refused.message, refused.status);
}

