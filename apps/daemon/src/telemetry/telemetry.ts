/**
 * The daemon's OpenTelemetry switch. Off unless an OTLP endpoint is configured
 * (`daemon.telemetry.otlpEndpoint`, or `OTEL_EXPORTER_OTLP_ENDPOINT`, which wins as environment
 * variables win over the file); `OTEL_SDK_DISABLED=true` turns it off whatever the config says,
 * as the OpenTelemetry SDK environment spec defines.
 *
 * Off, nothing of the OpenTelemetry SDK is loaded: `./sdk.js` (the one module that imports SDK
 * packages) is imported only here, dynamically, once telemetry is on. The `/mcp` and REST call
 * paths then have no server instrumentation at all, and the pool's own client spans go to the
 * API's no-op tracer.
 */
import type { MetricReader } from '@opentelemetry/sdk-metrics';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import type { TelemetrySettings } from '../config/daemonConfig.js';
import type { ServerTelemetry } from './serverTelemetry.js';

/** Where the exports go, once resolved from the config and the environment. */
export interface ResolvedTelemetry {
  /** The OTLP/HTTP URL of traces (`<endpoint>/v1/traces`, or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given). */
  tracesUrl: string;
  /** The OTLP/HTTP URL of metrics (`<endpoint>/v1/metrics`, or `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` as given). */
  metricsUrl: string;
  serviceName: string;
  metricExportIntervalMs: number;
}

/**
 * Replaces the OTLP exporters (tests: an in-memory span exporter and metric reader). Used only
 * when telemetry is on; it does not turn it on.
 */
export interface TelemetryExporters {
  spanExporter?: SpanExporter;
  metricReader?: MetricReader;
}

/** Telemetry that is on: the server-side instrumentation and the way to flush and stop it. */
export interface Telemetry {
  readonly server: ServerTelemetry;
  readonly resolved: ResolvedTelemetry;
  /** Flushes what is buffered, stops the exporters and unregisters the global providers. Idempotent. */
  shutdown(): Promise<void>;
}

/** The telemetry `settings` and `env` ask for, or undefined when it is off. */
export function resolveTelemetry(settings: TelemetrySettings, env: Record<string, string | undefined>): ResolvedTelemetry | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const base = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) ?? settings.otlpEndpoint;
  if (base === undefined) return undefined;
  const trimmed = base.replace(/\/+$/, '');
  return {
    // Signal-specific variables are full URLs, used as they are (the OTLP exporter spec).
    tracesUrl: nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ?? `${trimmed}/v1/traces`,
    metricsUrl: nonEmpty(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) ?? `${trimmed}/v1/metrics`,
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? settings.serviceName,
    metricExportIntervalMs: settings.metricExportIntervalMs,
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

export interface StartTelemetryOptions {
  settings: TelemetrySettings;
  env: Record<string, string | undefined>;
  logger: Logger;
  version: string;
  exporters?: TelemetryExporters | undefined;
}

/**
 * Starts telemetry when it is configured: loads the SDK, registers the global tracer provider
 * (with the AsyncLocalStorage context manager and the W3C propagators) and meter provider.
 * Resolves undefined when it is off, or when this process already has a global provider (a host
 * embedding the daemon keeps its own; the pool's spans go to it).
 */
export async function startTelemetry(options: StartTelemetryOptions): Promise<Telemetry | undefined> {
  const resolved = resolveTelemetry(options.settings, options.env);
  if (resolved === undefined) return undefined;
  const { startSdk } = await import('./sdk.js');
  return startSdk(resolved, options);
}
