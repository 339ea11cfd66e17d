/**
 * `/metrics`: prom-client on a registry of the daemon's own (never the global one, so several
 * daemons in one test process do not collide). Gauges read the pool's snapshot when scraped;
 * counters and the call latency histogram are fed by the daemon as things happen.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PoolSnapshot } from '@mcpool/core';
import type { DaemonSettings } from './config/daemonConfig.js';

export interface MetricsSource {
  snapshot(): PoolSnapshot;
  health(): Promise<{ zombies: number; trippedKeys: number }>;
  sessions(): number;
  /** Open `/mcp` sessions. */
  mcpSessions(): number;
  /** Open `/mcp` sessions by the client (token id) that opened them. */
  mcpSessionsByClient(): Map<string, number>;
  /** Injected servers held by open REST sessions. */
  injectedServers(): number;
  settings(): Readonly<DaemonSettings>;
  eventSubscribers(): number;
  /** The configured servers by life state (`cold`, `starting`, `running`, `stopped`). */
  serverStates(): Record<string, number>;
}

/**
 * One server's call figures since the daemon started, read from the registry (what `/metrics`
 * shows, as JSON): a reader takes two readings and divides their difference by the time between
 * them for a rate, and reads latency quantiles from the difference of the buckets.
 */
export interface ServerCallStats {
  server: string;
  /** Tool calls through daemon sessions and `/mcp`, whatever their outcome. */
  calls: number;
  errors: number;
  /** The sum of their latencies. */
  seconds: number;
  /** Cumulative `[upper bound in seconds, calls at most that long]`, the finite buckets of the histogram in order (the last, +Inf, is `calls`). */
  buckets: [number, number][];
  /** Entry restarts that restarted (asked for through the API or `mcpool restart`). */
  restarts: number;
}

export class DaemonMetrics {
  readonly registry = new Registry();
  readonly spawns: Counter<'server'>;
  readonly restarts: Counter<'server' | 'result'>;
  readonly failures: Counter<'server' | 'kind'>;
  readonly reloads: Counter<'result'>;
  readonly refusals: Counter<'limit'>;
  /** Idle `/mcp` sessions ended to admit a new one of the same client at its cap. */
  readonly evictions: Counter;
  /** Notifications a shared server sent that could not be attributed to one principal: dropped, never broadcast. */
  readonly unattributed: Counter<'server'>;
  readonly callDuration: Histogram<'server' | 'outcome'>;

  constructor(source: MetricsSource) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'mcpool_' });
    new Gauge({
      name: 'mcpool_entries',
      help: 'Live pool entries, by server name and entry status.',
      labelNames: ['server', 'status'] as const,
      registers,
      collect() {
        this.reset();
        for (const server of Object.values(source.snapshot().servers)) {
          for (const entry of server.entrySummary) this.inc({ server: server.name, status: entry.status });
        }
      },
    });
    new Gauge({
      name: 'mcpool_entry_refs',
      help: 'Session references held on the entries of each server name.',
      labelNames: ['server'] as const,
      registers,
      collect() {
        this.reset();
        for (const server of Object.values(source.snapshot().servers)) {
          this.set({ server: server.name }, server.entrySummary.reduce((sum, entry) => sum + entry.refs, 0));
        }
      },
    });
    new Gauge({
      name: 'mcpool_budget_live_connections',
      help: 'Live connections counted by the workspace budget.',
      registers,
      collect() {
        this.set(source.snapshot().budget.liveCount);
      },
    });
    new Gauge({
      name: 'mcpool_budget_client_budget',
      help: 'The workspace budget of live connections.',
      registers,
      collect() {
        this.set(source.snapshot().budget.clientBudget);
      },
    });
    new Gauge({
      name: 'mcpool_budget_usage_ratio',
      help: 'liveCount / clientBudget.',
      registers,
      collect() {
        const { liveCount, clientBudget } = source.snapshot().budget;
        this.set(liveCount / clientBudget);
      },
    });
    new Gauge({
      name: 'mcpool_live_actors',
      help: 'Live connection actor threads.',
      registers,
      collect() {
        this.set(source.snapshot().liveActors);
      },
    });
    new Gauge({
      name: 'mcpool_sessions',
      help: 'Open daemon sessions.',
      registers,
      collect() {
        this.set(source.sessions());
      },
    });
    new Gauge({
      name: 'mcpool_actor_cap',
      help: 'The hard cap on live actor threads (daemon.maxActors); compare mcpool_live_actors.',
      registers,
      collect() {
        this.set(source.snapshot().maxActors);
      },
    });
    new Gauge({
      name: 'mcpool_mcp_sessions',
      help: 'Open /mcp sessions.',
      registers,
      collect() {
        this.set(source.mcpSessions());
      },
    });
    new Gauge({
      name: 'mcpool_mcp_client_sessions',
      help: 'Open /mcp sessions and modern listen streams per client (daemon.mcpMaxSessionsPerClient bounds each).',
      labelNames: ['client'],
      registers,
      collect() {
        // Clients whose sessions all closed drop out instead of staying at 0 forever.
        this.reset();
        for (const [client, count] of source.mcpSessionsByClient()) this.set({ client }, count);
      },
    });
    new Gauge({
      name: 'mcpool_injected_servers',
      help: 'Servers injected by open REST sessions.',
      registers,
      collect() {
        this.set(source.injectedServers());
      },
    });
    new Gauge({
      name: 'mcpool_admission_limit',
      help: 'Admission limits from the daemon config, by limit.',
      labelNames: ['limit'] as const,
      registers,
      collect() {
        const s = source.settings();
        this.set({ limit: 'actors' }, s.maxActors);
        this.set({ limit: 'mcp_sessions' }, s.mcpMaxSessions);
        this.set({ limit: 'mcp_sessions_per_client' }, s.mcpMaxSessionsPerClient);
        this.set({ limit: 'sessions_per_client' }, s.maxSessionsPerClient);
        this.set({ limit: 'injected_per_request' }, s.maxInjectedServersPerRequest);
        this.set({ limit: 'injected_per_client' }, s.maxInjectedServersPerClient);
      },
    });
    new Gauge({
      name: 'mcpool_servers',
      help: 'Configured servers by life state: cold (listed from its catalog, not started), starting, running, stopped (let go while idle).',
      labelNames: ['state'] as const,
      registers,
      collect() {
        for (const [state, count] of Object.entries(source.serverStates())) this.set({ state }, count);
      },
    });
    new Gauge({
      name: 'mcpool_event_subscribers',
      help: 'Open event streams.',
      registers,
      collect() {
        this.set(source.eventSubscribers());
      },
    });
    new Gauge({
      name: 'mcpool_zombie_processes',
      help: 'Exited children of the daemon not reaped yet (should stay 0).',
      registers,
      async collect() {
        this.set((await source.health()).zombies);
      },
    });
    new Gauge({
      name: 'mcpool_tripped_keys',
      help: 'Server configs failed past their restart intensity, waiting for a restart.',
      registers,
      async collect() {
        this.set((await source.health()).trippedKeys);
      },
    });
    this.spawns = new Counter({ name: 'mcpool_spawns_total', help: 'Pool entries started.', labelNames: ['server'] as const, registers });
    this.restarts = new Counter({ name: 'mcpool_restarts_total', help: 'Entry restarts, by result (restarted, skipped).', labelNames: ['server', 'result'] as const, registers });
    this.failures = new Counter({ name: 'mcpool_failures_total', help: 'Failures: spawn (a start failed), entry (an entry failed), call (a tool call failed).', labelNames: ['server', 'kind'] as const, registers });
    this.reloads = new Counter({ name: 'mcpool_config_reloads_total', help: 'Config reloads, by result (applied; partial: some servers of the file could not be applied; rejected: the file as a whole).', labelNames: ['result'] as const, registers });
    this.refusals = new Counter({ name: 'mcpool_admission_refusals_total', help: 'Requests refused by an admission limit, by limit (see mcpool_admission_limit).', labelNames: ['limit'] as const, registers });
    this.unattributed = new Counter({ name: 'mcpool_notifications_unattributed_total', help: 'Notifications a server sent on its own that could not be attributed to one principal (calls of several in flight, or none): dropped, never broadcast.', labelNames: ['server'] as const, registers });
    this.evictions = new Counter({ name: 'mcpool_mcp_session_evictions_total', help: 'Idle /mcp sessions ended to admit a new session of the same client at its per-client cap.', registers });
    this.callDuration = new Histogram({
      name: 'mcpool_call_duration_seconds',
      help: 'Tool call latency through daemon sessions, by outcome (ok, error).',
      labelNames: ['server', 'outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
  }

  /** Records one tool call's latency and outcome (REST session calls and `/mcp` calls alike). */
  observeCall(server: string, ok: boolean, seconds: number): void {
    this.callDuration.observe({ server, outcome: ok ? 'ok' : 'error' }, seconds);
    if (!ok) this.failures.inc({ server, kind: 'call' });
  }

  /** Per server, its call figures so far, from the registry's own values; sorted by name. */
  async callStats(): Promise<ServerCallStats[]> {
    const byServer = new Map<string, ServerCallStats & { bounds: Map<number, number> }>();
    const of = (server: string) => {
      let stats = byServer.get(server);
      if (stats === undefined) byServer.set(server, (stats = { server, calls: 0, errors: 0, seconds: 0, buckets: [], restarts: 0, bounds: new Map() }));
      return stats;
    };
    for (const { labels: named, value, metricName } of (await this.callDuration.get()).values) {
      // Bucket values carry `le` (a number, or '+Inf' for the last), a label the histogram adds itself.
      const labels = named as Record<string, string | number | undefined>;
      const server = labels.server;
      if (typeof server !== 'string') continue;
      const stats = of(server);
      if (metricName === 'mcpool_call_duration_seconds_count') {
        stats.calls += value;
        if (labels.outcome === 'error') stats.errors += value;
      } else if (metricName === 'mcpool_call_duration_seconds_sum') {
        stats.seconds += value;
      } else if (typeof labels.le === 'number' && Number.isFinite(labels.le)) {
        // Both outcomes' buckets add up: the histogram's bounds are the same for every label set.
        stats.bounds.set(labels.le, (stats.bounds.get(labels.le) ?? 0) + value);
      }
    }
    for (const { labels, value } of (await this.restarts.get()).values) {
      if (typeof labels.server === 'string' && labels.result === 'restarted') of(labels.server).restarts += value;
    }
    return [...byServer.values()]
      .sort((a, b) => a.server.localeCompare(b.server))
      .map(({ bounds, ...stats }) => ({ ...stats, buckets: [...bounds].sort(([a], [b]) => a - b) }));
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}

