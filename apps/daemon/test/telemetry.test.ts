/**
 * OpenTelemetry end to end: a real daemon on a socket, a real stdio fixture server
 * (`traceMeta.mjs`, which answers with the `_meta` it received), and the daemon's SDK with an
 * in-memory span exporter and a manual metric reader in place of the OTLP exporters.
 * One call must make one trace: the daemon's SERVER span (a child of the caller's context), the
 * pool's CLIENT span (its child), and the upstream's `_meta.traceparent` naming that CLIENT span.
 * Off, nothing is exported and no trace context is injected.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProxyTracerProvider, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { MetricReader, type Histogram, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  METRIC_MCP_CLIENT_OPERATION_DURATION,
  METRIC_MCP_SERVER_OPERATION_DURATION,
} from '@opentelemetry/semantic-conventions/incubating';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_SETTINGS, resolveSettings, resolveTelemetry, startDaemon, type RunningDaemon } from 'mcpool';
import { fixtureConfig, killMarked, marker, textOf } from '../../../test/helpers/processes.js';
import { connectClient } from './gatewayHelpers.js';
import { memoryDestination } from './helpers.js';

// Each test starts a real daemon and a real server: on a loaded machine that alone takes seconds.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A reader the test collects from itself (no timer). */
class ManualReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const CALLER_TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

interface Started {
  running: RunningDaemon;
  token: string;
  spans: InMemorySpanExporter;
  reader: ManualReader;
}

async function start(telemetry: Record<string, unknown> | undefined, env: Record<string, string> = {}, options: { otlp?: boolean; logs?: string[] } = {}): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-otel-'));
  const mark = marker('otel');
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify({ mcpServers: { trace: fixtureConfig('traceMeta.mjs', mark) }, daemon: telemetry === undefined ? {} : { telemetry } }));
  const spans = new InMemorySpanExporter();
  const reader = new ManualReader();
  const logs: string[] = options.logs ?? [];
  const running = await startDaemon({
    configPath,
    env: { MCPOOL_STATE_DIR: join(dir, 'state'), ...env },
    cwd: dir,
    overrides: { port: 0 },
    destination: memoryDestination(logs),
      ...(options.otlp ? {} : { telemetryExporters: { spanExporter: spans, metricReader: reader } }),
  });
  cleanups.push(async () => {
    await running.stop('test');
    killMarked(mark);
    rmSync(dir, { recursive: true, force: true });
  });
  await running.warmed;
  return { running, token: readFileSync(join(dir, 'state', 'token'), 'utf8').trim(), spans, reader };
}

/** Waits (bounded) until the exporter holds a span that `match` accepts. */
async function spanWhere(exporter: InMemorySpanExporter, what: string, match: (span: ReadableSpan) => boolean): Promise<ReadableSpan> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = exporter.getFinishedSpans().find(match);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no span ${what} among ${JSON.stringify(exporter.getFinishedSpans().map((span) => span.name))}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const childOf = (parent: ReadableSpan) => (span: ReadableSpan) => span.parentSpanContext?.spanId === parent.spanContext().spanId;

/** The `traceparent` of `span`, as a W3C propagator writes it (sampled). */
const traceparentOf = (span: ReadableSpan) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;

async function histogramPoints(reader: ManualReader, name: string): Promise<{ attributes: Record<string, unknown>; count: number; unit: string }[]> {
  const { resourceMetrics }: { resourceMetrics: ResourceMetrics } = await reader.collect();
  const out: { attributes: Record<string, unknown>; count: number; unit: string }[] = [];
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const point of metric.dataPoints) out.push({ attributes: point.attributes, count: (point.value as Histogram).count, unit: metric.descriptor.unit });
    }
  }
  return out;
}

describe('OpenTelemetry on (daemon.telemetry.otlpEndpoint)', () => {
  it('one /mcp call is one trace: caller → daemon SERVER span → pool CLIENT span → the upstream’s traceparent; failures carry error.type', async () => {
    const { running, token, spans, reader } = await start({ otlpEndpoint: 'http://127.0.0.1:9/', serviceName: 'mcpool-test' });
    const { client, transport } = await connectClient(`${running.url}/mcp`, token);
    cleanups.push(() => client.close());

    // 1. A call that carries the caller's trace context in _meta.
    const result = await client.callTool({ name: 'trace__meta', arguments: {}, _meta: { traceparent: CALLER_TRACEPARENT } });
    const upstreamMeta = JSON.parse(textOf(result)) as Record<string, unknown>;

    // 2. The daemon's SERVER span is the caller's child.
    const server = await spanWhere(spans, 'tools/call trace__meta', (span) => span.name === 'tools/call trace__meta');
    expect(server.kind).toBe(SpanKind.SERVER);
    expect(server.spanContext().traceId).toBe(CALLER_TRACE);
    expect(server.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(server.attributes).toMatchObject({
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_GEN_AI_TOOL_NAME]: 'trace__meta',
      [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
      [ATTR_MCP_SESSION_ID]: transport.sessionId,
      [ATTR_MCP_PROTOCOL_VERSION]: LATEST_PROTOCOL_VERSION,
      [ATTR_JSONRPC_REQUEST_ID]: expect.stringMatching(/^\d+$/),
    });
    expect(server.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    expect(server.resource.attributes['service.name']).toBe('mcpool-test');

    // 3. The pool's CLIENT span is the SERVER span's child, named after the upstream tool.
    const pooled = await spanWhere(spans, 'tools/call meta (child of the server span)', (span) => span.name === 'tools/call meta' && childOf(server)(span));
    expect(pooled.kind).toBe(SpanKind.CLIENT);
    expect(pooled.spanContext().traceId).toBe(CALLER_TRACE);
    expect(pooled.attributes).toMatchObject({ [ATTR_MCP_METHOD_NAME]: 'tools/call', [ATTR_GEN_AI_TOOL_NAME]: 'meta', 'network.transport': 'pipe', 'mcpool.server.name': 'trace' });
    expect(pooled.instrumentationScope.name).toBe('@mcpool/core');

    // 4. The server received the CLIENT span as its parent, in _meta (the caller's was replaced).
    expect(upstreamMeta.traceparent).toBe(traceparentOf(pooled));

    // 5. A JSON-RPC error upstream: both spans fail with its code.
    await expect(client.callTool({ name: 'trace__throw', arguments: {} })).rejects.toMatchObject({ code: -32603 });
    const thrownServer = await spanWhere(spans, 'tools/call trace__throw', (span) => span.name === 'tools/call trace__throw');
    const thrownClient = await spanWhere(spans, 'tools/call throw', (span) => span.name === 'tools/call throw' && childOf(thrownServer)(span));
    for (const span of [thrownServer, thrownClient]) {
      expect(span.attributes).toMatchObject({ [ATTR_ERROR_TYPE]: '-32603', [ATTR_RPC_RESPONSE_STATUS_CODE]: '-32603' });
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
    }
    // Without a caller context the SERVER span starts the trace.
    expect(thrownServer.parentSpanContext).toBeUndefined();

    // 6. A tool result with isError: tool_error.
    expect((await client.callTool({ name: 'trace__fail', arguments: {} })).isError).toBe(true);
    const failedServer = await spanWhere(spans, 'tools/call trace__fail', (span) => span.name === 'tools/call trace__fail');
    const failedClient = await spanWhere(spans, 'tools/call fail', (span) => span.name === 'tools/call fail' && childOf(failedServer)(span));
    expect(failedServer.attributes[ATTR_ERROR_TYPE]).toBe('tool_error');
    expect(failedClient.attributes[ATTR_ERROR_TYPE]).toBe('tool_error');

    // 7. Both duration histograms, in seconds, with the operation and its failure class.
    const serverPoints = await histogramPoints(reader, METRIC_MCP_SERVER_OPERATION_DURATION);
    const clientPoints = await histogramPoints(reader, METRIC_MCP_CLIENT_OPERATION_DURATION);
    for (const points of [serverPoints, clientPoints]) {
      expect(points.every((point) => point.unit === 's')).toBe(true);
      expect(points.find((point) => point.attributes[ATTR_ERROR_TYPE] === '-32603')).toMatchObject({ count: 1, attributes: { [ATTR_MCP_METHOD_NAME]: 'tools/call' } });
      expect(points.find((point) => point.attributes[ATTR_ERROR_TYPE] === 'tool_error')).toMatchObject({ count: 1 });
    }
    const succeeded = serverPoints.find((point) => point.attributes[ATTR_GEN_AI_TOOL_NAME] === 'trace__meta');
    expect(succeeded).toMatchObject({ count: 1, attributes: { [ATTR_MCP_PROTOCOL_VERSION]: LATEST_PROTOCOL_VERSION, 'network.transport': 'tcp' } });
    expect(succeeded!.attributes).not.toHaveProperty(ATTR_ERROR_TYPE);
    expect(clientPoints.find((point) => point.attributes[ATTR_GEN_AI_TOOL_NAME] === 'meta')).toMatchObject({ count: 1, attributes: { 'mcpool.server.name': 'trace' } });
  });

  it('the REST tool call continues the caller’s HTTP traceparent; OTEL_EXPORTER_OTLP_ENDPOINT alone turns telemetry on', async () => {
    const { running, token, spans } = await start(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const session = (await (await fetch(`${running.url}/sessions`, { method: 'POST', headers, body: '{}' })).json()) as { id: string };
    const response = await fetch(`${running.url}/sessions/${session.id}/tools/call`, {
      method: 'POST',
      headers: { ...headers, traceparent: CALLER_TRACEPARENT },
      body: JSON.stringify({ server: 'trace', name: 'meta', arguments: {} }),
    });
    expect(response.status).toBe(200);
    const { result } = (await response.json()) as { result: Record<string, unknown> };
    const upstreamMeta = JSON.parse(textOf(result)) as Record<string, unknown>;

    const server = await spanWhere(spans, 'REST SERVER span', (span) => span.kind === SpanKind.SERVER && span.name === 'tools/call meta');
    expect(server.spanContext().traceId).toBe(CALLER_TRACE);
    expect(server.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(server.attributes).toMatchObject({ [ATTR_MCP_METHOD_NAME]: 'tools/call', 'mcpool.session.id': session.id });
    const pooled = await spanWhere(spans, 'CLIENT span under the REST span', (span) => span.kind === SpanKind.CLIENT && childOf(server)(span));
    expect(upstreamMeta.traceparent).toBe(traceparentOf(pooled));
  });
});

describe('OpenTelemetry off (no endpoint configured)', () => {
  it('registers no provider, exports nothing, and injects no traceparent; a caller’s own passes through untouched', async () => {
    const { running, token, spans, reader } = await start(undefined);
    // No SDK registered: the API's global tracer provider has no delegate of ours.
    const global = trace.getTracerProvider();
    expect(global instanceof ProxyTracerProvider ? global.getDelegate().constructor.name : 'other').toBe('NoopTracerProvider');
    const { client } = await connectClient(`${running.url}/mcp`, token);
    cleanups.push(() => client.close());

    const bare = JSON.parse(textOf(await client.callTool({ name: 'trace__meta', arguments: {} }))) as Record<string, unknown>;
    expect(bare.traceparent).toBeUndefined();
    const carried = JSON.parse(textOf(await client.callTool({ name: 'trace__meta', arguments: {}, _meta: { traceparent: CALLER_TRACEPARENT, tracestate: 'rojo=1' } }))) as Record<string, unknown>;
    expect(carried).toMatchObject({ traceparent: CALLER_TRACEPARENT, tracestate: 'rojo=1' });

    expect(spans.getFinishedSpans()).toEqual([]);
    // The reader was never attached to a meter provider: collecting from it fails.
    await expect(reader.collect()).rejects.toThrow();
  });

  it('OTEL_SDK_DISABLED=true wins over a configured endpoint', async () => {
    const { running, token, spans } = await start({ otlpEndpoint: 'http://127.0.0.1:9' }, { OTEL_SDK_DISABLED: 'true' });
    const { client } = await connectClient(`${running.url}/mcp`, token);
    cleanups.push(() => client.close());
    const seen = JSON.parse(textOf(await client.callTool({ name: 'trace__meta', arguments: {} }))) as Record<string, unknown>;
    expect(seen.traceparent).toBeUndefined();
    expect(spans.getFinishedSpans()).toEqual([]);
  });
});

describe('OpenTelemetry export over OTLP', () => {
  it('a collector that never answers does not hold the stop: the last export is given up after its deadline', async () => {
    // A TCP listener that accepts and never answers: the OTLP exporter's request hangs.
    const sockets = new Set<Socket>();
    const blackHole = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => blackHole.close(() => resolve()));
    });
    const port = (blackHole.address() as AddressInfo).port;
    const logs: string[] = [];
    const { running, token } = await start({ otlpEndpoint: `http://127.0.0.1:${port}` }, {}, { otlp: true, logs });
    const { client } = await connectClient(`${running.url}/mcp`, token);
    await client.callTool({ name: 'trace__meta', arguments: {} });
    await client.close();
    // 1. The stop ends (the exporter's own timeout is 10 s; the stop gives it 2).
    expect(await running.stop('test')).toBe(0);
    // 2. And says what it dropped.
    const messages = logs.map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages).toContain('OpenTelemetry export did not finish at shutdown; what was left is dropped');
    expect(messages.at(-1)).toBe('stopped');
  });
});

describe('the telemetry switch', () => {
  const off = DEFAULT_SETTINGS.telemetry;

  it('is off by default, on with daemon.telemetry.otlpEndpoint, and the standard variables win over the file', () => {
    expect(off.otlpEndpoint).toBeUndefined();
    expect(resolveTelemetry(off, {})).toBeUndefined();
    const settings = resolveSettings({ daemon: { telemetry: { otlpEndpoint: 'http://collector:4318/', serviceName: 'pool-a' } } }, {});
    expect(resolveTelemetry(settings.telemetry, {})).toEqual({
      tracesUrl: 'http://collector:4318/v1/traces',
      metricsUrl: 'http://collector:4318/v1/metrics',
      serviceName: 'pool-a',
      metricExportIntervalMs: 60_000,
    });
    expect(resolveTelemetry(settings.telemetry, { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example:4318', OTEL_SERVICE_NAME: 'from-env', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://m.example/custom' })).toMatchObject({
      tracesUrl: 'https://otel.example:4318/v1/traces',
      metricsUrl: 'https://m.example/custom',
      serviceName: 'from-env',
    });
    expect(resolveTelemetry(off, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toMatchObject({ tracesUrl: 'http://127.0.0.1:4318/v1/traces', serviceName: 'mcpool' });
    expect(resolveTelemetry(settings.telemetry, { OTEL_SDK_DISABLED: 'TRUE' })).toBeUndefined();
    expect(resolveTelemetry(settings.telemetry, { OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toMatchObject({ tracesUrl: 'http://collector:4318/v1/traces' });
  });

  it('a bad telemetry section is a config error naming the field', () => {
    expect(() => resolveSettings({ daemon: { telemetry: { otlpEndpoint: 'collector:4318' } } }, {})).toThrow(/daemon\.telemetry\.otlpEndpoint/);
    expect(() => resolveSettings({ daemon: { telemetry: { endpoint: 'http://collector:4318' } } }, {})).toThrow(/daemon\.telemetry/);
  });
});
