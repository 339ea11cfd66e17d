/**
 * The daemon as an MCP server toward its downstream clients, in OpenTelemetry terms: one SERVER
 * span per request on `/mcp` (and per REST session tool call), and the
 * `mcp.server.operation.duration` histogram, named as the OpenTelemetry MCP semantic conventions
 * name them. Only `@opentelemetry/api`: it exists only while telemetry is on (the SDK registered
 * the global providers), and the call paths skip it entirely otherwise.
 *
 * The parent is the caller's trace context: `traceparent`/`tracestate` in the request's
 * `params._meta` first (the MCP conventions: the MCP client span is the parent whatever the
 * transport), else the HTTP request's own `traceparent` header; when both are there and differ,
 * the HTTP one is added as a link. The handler runs inside the span's context, so the pool's
 * CLIENT span for the upstream request is its child.
 */
import type { IncomingHttpHeaders } from 'node:http';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  metrics,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Histogram,
  type Link,
  type Tracer,
} from '@opentelemetry/api';
import { PoolError } from '@mcpool/core';

/** The bucket boundaries the MCP conventions give for the operation-duration histograms, in seconds. */
const MCP_DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** One request the daemon serves. */
export interface ServerOperation {
  /** The MCP method (`tools/call`); the REST tool call counts as `tools/call`. */
  method: string;
  /** The tool or prompt asked for, as the client named it. */
  tool?: string | undefined;
  prompt?: string | undefined;
  /** The JSON-RPC id of the request, when it has one. */
  requestId?: string | number | undefined;
  /** The downstream MCP session (`Mcp-Session-Id`). */
  mcpSessionId?: string | undefined;
  /** A REST session (not an MCP session: its own attribute). */
  restSessionId?: string | undefined;
  protocolVersion?: string | undefined;
  /** The request's `params._meta`. */
  meta?: Record<string, unknown> | undefined;
  /** The HTTP request's headers. */
  headers?: IncomingHttpHeaders | undefined;
}

/** `error.type` and friends of a failed operation. */
export interface ServerFailure {
  type: string;
  rpcCode?: string | undefined;
  message?: string | undefined;
}

export class ServerTelemetry {
  readonly #tracer: Tracer;
  readonly #duration: Histogram;

  constructor(version: string) {
    this.#tracer = trace.getTracer('mcpool', version);
    this.#duration = metrics.getMeter('mcpool', version).createHistogram('mcp.server.operation.duration', {
      unit: 's',
      description: 'MCP request duration as observed on the receiver from the time it was received until the result is sent.',
      advice: { explicitBucketBoundaries: MCP_DURATION_BUCKETS },
    });
  }

  /**
   * Runs `work` inside a SERVER span for `operation`. A thrown error is classified by
   * `failureOf` and rethrown as it is; a tool result (`toolResultOf` of what `work` returned)
   * with `isError: true` is `tool_error`.
   */
  async run<T>(operation: ServerOperation, work: () => Promise<T>, failureOf: (error: unknown) => ServerFailure, toolResultOf: (result: T) => unknown = (result) => result): Promise<T> {
    const started = performance.now();
    const metricAttributes: Attributes = { 'mcp.method.name': operation.method, 'network.transport': 'tcp', 'network.protocol.name': 'http' };
    let target: string | undefined;
    if (operation.tool !== undefined) {
      target = operation.tool;
      metricAttributes['gen_ai.tool.name'] = target;
      metricAttributes['gen_ai.operation.name'] = 'execute_tool';
    } else if (operation.prompt !== undefined) {
      target = operation.prompt;
      metricAttributes['gen_ai.prompt.name'] = target;
    }
    if (operation.protocolVersion !== undefined) metricAttributes['mcp.protocol.version'] = operation.protocolVersion;
    // Object.assign, not a spread: a spread of dotted keys cost ~5 µs per call on Node 20.
    const spanAttributes: Attributes = Object.assign({}, metricAttributes);
    if (operation.requestId !== undefined) spanAttributes['jsonrpc.request.id'] = String(operation.requestId);
    if (operation.mcpSessionId !== undefined) spanAttributes['mcp.session.id'] = operation.mcpSessionId;
    if (operation.restSessionId !== undefined) spanAttributes['mcpool.session.id'] = operation.restSessionId;

    const { parent, links } = parentOf(operation);
    const span = this.#tracer.startSpan(target === undefined ? operation.method : `${operation.method} ${target}`, { kind: SpanKind.SERVER, attributes: spanAttributes, links }, parent);
    let failure: ServerFailure | undefined;
    try {
      const result = await context.with(trace.setSpan(parent, span), work);
      if (operation.method === 'tools/call' && (toolResultOf(result) as { isError?: unknown } | undefined)?.isError === true) failure = { type: 'tool_error' };
      return result;
    } catch (error) {
      failure = failureOf(error);
      throw error;
    } finally {
      if (failure !== undefined) {
        metricAttributes['error.type'] = failure.type;
        span.setAttribute('error.type', failure.type);
        if (failure.rpcCode !== undefined) {
          metricAttributes['rpc.response.status_code'] = failure.rpcCode;
          span.setAttribute('rpc.response.status_code', failure.rpcCode);
        }
        span.setStatus(failure.message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message: failure.message });
      }
      span.end();
      this.#duration.record((performance.now() - started) / 1000, metricAttributes);
    }
  }
}

/** A REST failure: the pool's or the daemon's `MCPOOL_*` code, or a server's JSON-RPC code when one came back. */
export function restFailure(error: unknown): ServerFailure {
  if (error instanceof PoolError) {
    const mcpCode = (error.data as { mcpCode?: unknown } | undefined)?.mcpCode;
    if (typeof mcpCode === 'number') return { type: String(mcpCode), rpcCode: String(mcpCode), message: error.message };
    return { type: error.code, message: error.message };
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && code.startsWith('MCPOOL_')) return { type: code, message: (error as Error).message };
  return error instanceof Error ? { type: '_OTHER', message: error.message } : { type: '_OTHER' };
}

/** The caller's context from `_meta`, else from the HTTP headers; the HTTP one as a link when both differ. */
function parentOf(operation: ServerOperation): { parent: Context; links: Link[] } {
  const fromMeta = operation.meta === undefined ? undefined : remote(operation.meta);
  const fromHttp = operation.headers === undefined ? undefined : remote(operation.headers);
  if (fromMeta === undefined) return { parent: fromHttp ?? ROOT_CONTEXT, links: [] };
  const metaSpan = trace.getSpanContext(fromMeta)!;
  const httpSpan = fromHttp === undefined ? undefined : trace.getSpanContext(fromHttp);
  const links = httpSpan !== undefined && httpSpan.spanId !== metaSpan.spanId ? [{ context: httpSpan }] : [];
  return { parent: fromMeta, links };
}

/** A context holding the remote span `carrier` names (`traceparent`, `tracestate`), or undefined. */
function remote(carrier: Record<string, unknown>): Context | undefined {
  if (carrier.traceparent === undefined) return undefined;
  const extracted = propagation.extract(ROOT_CONTEXT, carrier);
  return trace.getSpanContext(extracted) === undefined ? undefined : extracted;
}
