// Per server call figures from two readings of GET /workspace/stats: calls/s over the time between
// them, and p50/p95 latency from the difference of their histogram buckets (as Prometheus'
// histogram_quantile does: linear within the bucket the rank falls in). With no call between the
// readings, the quantiles are those of every call so far, marked `sinceStart`.

/**
 * The q-quantile (0..1) in seconds of a histogram: `buckets` cumulative `[upperBound, count]`
 * ascending (finite bounds only), `total` every observation (the +Inf bucket). Beyond the last
 * finite bound it answers that bound (the histogram knows no more). Undefined with no observation.
 */
export function quantile(buckets, total, q) {
  if (!(total > 0)) return undefined;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [bound, count] of buckets) {
    if (count >= rank) {
      const inside = count - below;
      return inside <= 0 ? bound : lower + (bound - lower) * ((rank - below) / inside);
    }
    lower = bound;
    below = count;
  }
  return buckets.length > 0 ? buckets[buckets.length - 1][0] : undefined;
}

/** `current` minus `previous`, bucket by bucket (same bounds: the daemon's histogram has fixed ones). */
function difference(current, previous) {
  const before = new Map(previous?.buckets ?? []);
  return {
    calls: current.calls - (previous?.calls ?? 0),
    buckets: current.buckets.map(([bound, count]) => [bound, count - (before.get(bound) ?? 0)]),
  };
}

/**
 * name → { calls, errors, restarts, perSecond, p50Ms, p95Ms, sinceStart } from the latest reading
 * and the one before it (undefined on the first poll: no rate yet).
 */
export function serverStats(previous, current) {
  const out = new Map();
  const seconds = previous ? (current.at - previous.at) / 1000 : 0;
  const before = new Map((previous?.servers ?? []).map((server) => [server.server, server]));
  for (const server of current.servers) {
    const delta = difference(server, before.get(server.server));
    const windowed = previous !== undefined && delta.calls > 0;
    const source = windowed ? delta : { calls: server.calls, buckets: server.buckets };
    const ms = (q) => {
      const value = quantile(source.buckets, source.calls, q);
      return value === undefined ? undefined : value * 1000;
    };
    out.set(server.server, {
      calls: server.calls,
      errors: server.errors,
      restarts: server.restarts,
      perSecond: previous !== undefined && seconds > 0 ? delta.calls / seconds : undefined,
      p50Ms: ms(0.5),
      p95Ms: ms(0.95),
      sinceStart: !windowed,
    });
  }
  return out;
}
