/**
 * What the daemon's OpenTelemetry switch (`telemetry.ts`) and the SDK module it loads on demand
 * (`sdk.ts`) agree on: where the exports go, what starting takes, what a running telemetry offers.
 * Types only, so the SDK module can name them without importing the switch that imports it.
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

export interface StartTelemetryOptions {
  settings: TelemetrySettings;
  env: Record<string, string | undefined>;
  logger: Logger;
  version: string;
  exporters?: TelemetryExporters | undefined;
}
