/**
 * The pool as an MCP client, in OpenTelemetry terms: one CLIENT span per request a view sends to
 * its server, and the `mcp.client.operation.duration` histogram, named as the OpenTelemetry MCP
 * semantic conventions name them (span `{mcp.method.name} {target}`, e.g. `tools/call echo`).
 *
 * Only `@opentelemetry/api` is used, through its global providers: with no SDK registered by the
 * host, the tracer is the API's no-op, the span it starts is invalid, nothing is injected and
 * the histogram records nothing. A host that registered a tracer provider, a meter provider and
 * a propagator gets the spans, the metric and the trace context in each request's `_meta`
 * without any pool option.
 *
 * Trace context goes upstream in `params._meta` as `traceparent` / `tracestate` (unprefixed:
 * MCP reserves those `_meta` keys for W3C Trace Context), written into the `_meta` the call
 * builds anyway, so nothing is parsed or copied twice. The span is made on this side of the
 * actor's MessagePort: the actor forwards `_meta` as it is, so the server's parent is this span.
 */
import {
  SpanKind,
  SpanStatusCode,
  context,
  isSpanContextValid,
  metrics,
  propagation,
  trace,
  type Attributes,
  type Histogram,
  type MeterProvider,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { ErrorCode, PoolError, type TransportKind } from '@mcpool/protocol';

/** The instrumentation scope of the pool's spans and metrics. */
export const INSTRUMENTATION_SCOPE = '@mcpool/core';

/** The bucket boundaries the MCP conventions give for both operation-duration histograms, in seconds. */
export const MCP_DURATION_BUCKETS: readonly number[] = Object.freeze([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]);

/** The tracer of the global provider it came from; `trace.disable()` and a new registration replace the provider. */
let tracer: { provider: TracerProvider; instrument: Tracer } | undefined;
/** The histogram of the meter provider it was made from: a provider registered later gets its own. */
let histogram: { provider: MeterProvider; instrument: Histogram } | undefined;

function clientTracer(): Tracer {
  // One identity check per call: a tracer kept past `trace.disable()` would still feed the
  // provider that was shut down (and inject its trace context while telemetry is off).
  const provider = trace.getTracerProvider();
  if (tracer?.provider !== provider) tracer = { provider, instrument: provider.getTracer(INSTRUMENTATION_SCOPE) };
  return tracer.instrument;
}

function clientHistogram(): Histogram {
  // Meters are not proxies: re-read the global provider (an identity check per call).
  const provider = metrics.getMeterProvider();
  if (histogram?.provider !== provider) {
    const instrument = provider.getMeter(INSTRUMENTATION_SCOPE).createHistogram('mcp.client.operation.duration', {
      unit: 's',
      description: 'The duration of the MCP request as observed on the sender from the time it was sent until the response is received.',
      advice: { explicitBucketBoundaries: [...MCP_DURATION_BUCKETS] },
    });
    histogram = { provider, instrument };
  }
  return histogram.instrument;
}

/** What every span and point of one view carries: its server and how it is reached. */
export function peerAttributes(serverName: string, transport: TransportKind | undefined, url: string | undefined): Attributes {
  const attributes: Attributes = { 'mcpool.server.name': serverName };
  if (transport === undefined) return attributes;
  attributes['network.transport'] = transport === 'stdio' ? 'pipe' : 'tcp';
  if (transport === 'http' || transport === 'sse') attributes['network.protocol.name'] = 'http';
  else if (transport === 'websocket') attributes['network.protocol.name'] = 'websocket';
  if (url !== undefined && transport !== 'stdio') {
    try {
      // Host and port only: a URL's userinfo, path and query can hold credentials.
      const parsed = new URL(url);
      attributes['server.address'] = parsed.hostname.replace(/^\[|\]$/g, '');
      const port = parsed.port === '' ? (parsed.protocol === 'https:' || parsed.protocol === 'wss:' ? 443 : 80) : Number(parsed.port);
      attributes['server.port'] = port;
    } catch {
      // not a URL: the config check refuses these before a view exists
    }
  }
  return attributes;
}

/** One request in flight, as seen by telemetry. */
export interface ClientCall {
  /** `traceparent` (and `tracestate`) to send upstream in `_meta`; undefined when there is no trace. */
  readonly traceMeta: Record<string, string> | undefined;
  /** Ends the span and records the duration: a result (a tool result with `isError` is a failure) or an error. */
  end(result: Record<string, unknown> | undefined, error: unknown): void;
}

/**
 * Starts the CLIENT span of `method` (child of the active context) and the duration clock.
 * Costs, with no SDK registered, a no-op span and two clock reads.
 */
export function startClientCall(method: string, params: Record<string, unknown>, peer: Attributes): ClientCall {
  const started = performance.now();
  // Object.assign, not a spread: a spread of these dotted keys cost ~5 µs per call on Node 20.
  const metricAttributes: Attributes = Object.assign({}, peer);
  metricAttributes['mcp.method.name'] = method;
  let target: string | undefined;
  if (method === 'tools/call' && typeof params.name === 'string') {
    target = params.name;
    metricAttributes['gen_ai.tool.name'] = target;
    metricAttributes['gen_ai.operation.name'] = 'execute_tool';
  } else if (method === 'prompts/get' && typeof params.name === 'string') {
    target = params.name;
    metricAttributes['gen_ai.prompt.name'] = target;
  }
  // The SDK copies attributes at start, so the metric's own object can seed the span's.
  let spanAttributes = metricAttributes;
  if (typeof params.uri === 'string') {
    spanAttributes = Object.assign({}, metricAttributes);
    spanAttributes['mcp.resource.uri'] = params.uri;
  }
  const parent = context.active();
  const span = clientTracer().startSpan(target === undefined ? method : `${method} ${target}`, { kind: SpanKind.CLIENT, attributes: spanAttributes }, parent);
  let traceMeta: Record<string, string> | undefined;
  if (isSpanContextValid(span.spanContext())) {
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(parent, span), carrier);
    if (carrier.traceparent !== undefined) traceMeta = carrier;
  }
  return {
    traceMeta,
    end(result, error) {
      const failure = classify(method, result, error);
      if (failure !== undefined) recordFailure(span, metricAttributes, failure);
      span.end();
      clientHistogram().record((performance.now() - started) / 1000, metricAttributes);
    },
  };
}

/** `error.type` (and the JSON-RPC code, when the server sent one) of a failed operation. */
export interface Failure {
  type: string;
  rpcCode?: string;
  message?: string;
}

/**
 * How the MCP conventions classify an outcome: a JSON-RPC error from the server → its code as a
 * string; a tool result with `isError: true` → `tool_error`; a failure of the pool's own (timeout,
 * cancel, lost connection) → its stable `MCPOOL_*` code; anything else `_OTHER`.
 */
export function classify(method: string, result: Record<string, unknown> | undefined, error: unknown): Failure | undefined {
  if (error === undefined) {
    return method === 'tools/call' && result?.isError === true ? { type: 'tool_error' } : undefined;
  }
  if (error instanceof PoolError) {
    const mcpCode = (error.data as { mcpCode?: unknown } | undefined)?.mcpCode;
    if (error.code === ErrorCode.UPSTREAM_ERROR && typeof mcpCode === 'number') return { type: String(mcpCode), rpcCode: String(mcpCode), message: error.message };
    return { type: error.code, message: error.message };
  }
  return error instanceof Error ? { type: '_OTHER', message: error.message } : { type: '_OTHER' };
}

/** Marks `span` failed (`error.type`, status ERROR with the message) and adds `error.type` to the metric's attributes. */
export function recordFailure(span: Span, metricAttributes: Attributes, failure: Failure): void {
  metricAttributes['error.type'] = failure.type;
  span.setAttribute('error.type', failure.type);
  if (failure.rpcCode !== undefined) {
    metricAttributes['rpc.response.status_code'] = failure.rpcCode;
    span.setAttribute('rpc.response.status_code', failure.rpcCode);
  }
  span.setStatus(failure.message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message: failure.message });
}
