/**
 * The OpenTelemetry SDK of the daemon: the only module that imports SDK packages, and it is
 * imported dynamically by `startTelemetry` once an OTLP endpoint is configured (see
 * `./telemetry.ts`), so a daemon with telemetry off never loads it.
 *
 * Traces: a NodeTracerProvider (AsyncLocalStorage context, so the `/mcp` handler's span is the
 * active context of the pool call it makes) with a batch processor over OTLP/HTTP. Metrics: a
 * MeterProvider with a periodic reader over OTLP/HTTP. Both carry `service.name` and
 * `service.version`. The exporters read the rest of the standard `OTEL_EXPORTER_OTLP_*`
 * variables themselves (headers, timeout, compression).
 */
import { context, metrics, propagation, trace, ProxyTracerProvider } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader, type MetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { ServerTelemetry } from './serverTelemetry.js';
import type { ResolvedTelemetry, StartTelemetryOptions, Telemetry } from './contract.js';

/** How long a stop waits for the last export. */
const FLUSH_DEADLINE_MS = 2_000;

export function startSdk(resolved: ResolvedTelemetry, options: StartTelemetryOptions): Telemetry | undefined {
  const logger = options.logger.child({ component: 'telemetry' });
  const resource = defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: resolved.serviceName, [ATTR_SERVICE_VERSION]: options.version }));
  const given = options.exporters?.spanExporter;
  // A test's exporter sees each span as it ends; OTLP gets batches.
  const processor: SpanProcessor = given === undefined ? new BatchSpanProcessor(new OTLPTraceExporter({ url: resolved.tracesUrl })) : new SimpleSpanProcessor(given);
  const reader: MetricReader =
    options.exporters?.metricReader ??
    new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url: resolved.metricsUrl }), exportIntervalMillis: resolved.metricExportIntervalMs });
  const tracerProvider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  const meterProvider = new MeterProvider({ resource, readers: [reader] });

  // A host embedding the daemon may have its own SDK: the API keeps the first registration.
  tracerProvider.register();
  const global = trace.getTracerProvider();
  const ours = global instanceof ProxyTracerProvider && global.getDelegate() === tracerProvider;
  if (!ours || !metrics.setGlobalMeterProvider(meterProvider)) {
    if (ours) trace.disable();
    logger.warn('this process already has an OpenTelemetry provider: the daemon exports nothing itself (its spans go to that provider)');
    void tracerProvider.shutdown().catch(() => undefined);
    void meterProvider.shutdown().catch(() => undefined);
    return undefined;
  }
  logger.info({ traces: resolved.tracesUrl, metrics: resolved.metricsUrl, serviceName: resolved.serviceName }, 'OpenTelemetry export on');

  let stopping: Promise<void> | undefined;
  return {
    server: new ServerTelemetry(options.version),
    resolved,
    shutdown() {
      stopping ??= (async () => {
        // Last spans and the last metric points leave before the providers stop, but an
        // unreachable collector (the exporter's own timeout is 10 s) must not hold the stop.
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), FLUSH_DEADLINE_MS);
          timer.unref();
        });
        const flushed = Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
        const outcome = await Promise.race([flushed, late]);
        clearTimeout(timer);
        if (outcome === 'late') logger.warn({ deadlineMs: FLUSH_DEADLINE_MS }, 'OpenTelemetry export did not finish at shutdown; what was left is dropped');
        else for (const result of outcome) if (result.status === 'rejected') logger.warn({ err: result.reason as unknown }, 'OpenTelemetry export failed at shutdown');
        trace.disable();
        metrics.disable();
        propagation.disable();
        context.disable();
      })();
      return stopping;
    },
  };
}
