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
import type { TelemetrySettings } from '../config/daemonConfig.js';
import type { ResolvedTelemetry, StartTelemetryOptions, Telemetry } from './contract.js';

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
