/**
 * The library's OpenTelemetry contract, in process: a host that registered an SDK (tracer
 * provider with the AsyncLocalStorage context manager and W3C propagators, a meter provider) gets
 * one CLIENT span per request, a child of whatever span the host had active, with its trace
 * context in the `_meta` the server receives, and `mcp.client.operation.duration`; with the
 * globals unregistered, the same pool injects nothing and records nothing. Real pool, real actor
 * threads, real fixture servers (`traceMeta.mjs` answers with the `_meta` it got).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SpanKind, SpanStatusCode, context, metrics, propagation, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type Histogram } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ErrorCode } from '@mcpool/core';
import { fixtureConfig, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000 });

class ManualReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** Registers a host's SDK; undone after each test. */
function registerHostSdk(): { spans: InMemorySpanExporter; reader: ManualReader } {
  const spans = new InMemorySpanExporter();
  const reader = new ManualReader();
  const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  tracerProvider.register();
  const meterProvider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(meterProvider);
  undo.push(async () => {
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
  });
  return { spans, reader };
}

const undo: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of undo.splice(0)) await step();
  trace.disable();
  metrics.disable();
  propagation.disable();
  context.disable();
});

const traceparentOf = (span: ReadableSpan) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;

describe('the pool under a host’s OpenTelemetry SDK', () => {
  it('each request is a CLIENT span under the host’s active span, and the server gets that span as its traceparent', async () => {
    const { spans, reader } = registerHostSdk();
    const pool = newPool();
    const view = await pool.acquire('trace', fixtureConfig('traceMeta.mjs', newMark('otel')), 'A');
    const host = trace.getTracer('host');

    // 1. Inside a host span: the pool's span is its child, and the host's own _meta key survives.
    const { result, hostSpanId } = await host.startActiveSpan('host operation', async (span) => {
      const answer = await view.callTool('meta', {}, { _meta: { 'example.com/key': 'kept' } });
      span.end();
      return { result: answer, hostSpanId: span.spanContext().spanId };
    });
    const seen = JSON.parse(textOf(result)) as Record<string, unknown>;
    const call = spans.getFinishedSpans().find((span) => span.name === 'tools/call meta');
    expect(call).toBeDefined();
    expect(call!.kind).toBe(SpanKind.CLIENT);
    expect(call!.parentSpanContext?.spanId).toBe(hostSpanId);
    expect(call!.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'meta', 'gen_ai.operation.name': 'execute_tool', 'network.transport': 'pipe' });
    expect(seen).toMatchObject({ traceparent: traceparentOf(call!), 'example.com/key': 'kept' });

    // 2. A JSON-RPC error: error.type is its code; the span's status is ERROR.
    await expect(view.callTool('throw')).rejects.toMatchObject({ code: ErrorCode.UPSTREAM_ERROR });
    const thrown = spans.getFinishedSpans().find((span) => span.name === 'tools/call throw');
    expect(thrown?.attributes).toMatchObject({ 'error.type': '-32603', 'rpc.response.status_code': '-32603' });
    expect(thrown?.status.code).toBe(SpanStatusCode.ERROR);

    // 3. A failure of the pool's own: its MCPOOL_* code.
    const echo = await pool.acquire('echo', fixtureConfig('echo.mjs', newMark('otel-echo')), 'A');
    await expect(echo.callTool('slow', { ms: 5_000, steps: 1 }, { timeoutMs: 200 })).rejects.toMatchObject({ code: ErrorCode.CALL_TIMEOUT });
    const timedOut = spans.getFinishedSpans().find((span) => span.name === 'tools/call slow');
    expect(timedOut?.attributes).toMatchObject({ 'error.type': ErrorCode.CALL_TIMEOUT, 'mcpool.server.name': 'echo' });
    expect(timedOut?.parentSpanContext).toBeUndefined();

    // 4. A call the session's filter refuses never reaches the actor: no span.
    const filtered = await pool.acquire('echo', fixtureConfig('echo.mjs', newMark('otel-echo'), { excludeTools: ['add'] }), 'B');
    await expect(filtered.callTool('add', { a: 1, b: 2 })).rejects.toMatchObject({ code: ErrorCode.TOOL_NOT_ALLOWED });
    expect(spans.getFinishedSpans().some((span) => span.name === 'tools/call add')).toBe(false);

    // 5. The duration histogram, in seconds, per server, tool and failure class.
    const { resourceMetrics } = await reader.collect();
    const points = resourceMetrics.scopeMetrics
      .filter((scope) => scope.scope.name === '@mcpool/core')
      .flatMap((scope) => scope.metrics.filter((metric) => metric.descriptor.name === 'mcp.client.operation.duration'))
      .flatMap((metric) => metric.dataPoints.map((point) => ({ unit: metric.descriptor.unit, attributes: point.attributes, count: (point.value as Histogram).count })));
    expect(points.every((point) => point.unit === 's')).toBe(true);
    expect(points).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ count: 1, attributes: expect.objectContaining({ 'gen_ai.tool.name': 'meta', 'mcpool.server.name': 'trace' }) }),
        expect.objectContaining({ count: 1, attributes: expect.objectContaining({ 'gen_ai.tool.name': 'throw', 'error.type': '-32603' }) }),
        expect.objectContaining({ count: 1, attributes: expect.objectContaining({ 'gen_ai.tool.name': 'slow', 'error.type': ErrorCode.CALL_TIMEOUT }) }),
      ]),
    );
  });

  it('once the host’s globals are gone, the same pool injects nothing', async () => {
    const { spans } = registerHostSdk();
    const pool = newPool();
    const view = await pool.acquire('trace', fixtureConfig('traceMeta.mjs', newMark('otel-off')), 'A');
    expect(JSON.parse(textOf(await view.callTool('meta'))).traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    for (const step of undo.splice(0)) await step();
    trace.disable();
    metrics.disable();
    propagation.disable();
    context.disable();
    const before = spans.getFinishedSpans().length;
    expect(JSON.parse(textOf(await view.callTool('meta')))).toEqual({});
    expect(spans.getFinishedSpans()).toHaveLength(before);
  });
});
