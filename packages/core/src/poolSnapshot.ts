/**
 * The pool's snapshot, built fresh and plain from what the pool holds (as undici's `PoolStats`
 * reports a pool without being it): per server name its entries with refs and status, the keys
 * past their restart intensity and those waiting for authorization as entries too, the spawn
 * backoffs, and the budget cell.
 */
import type { EntryStatus, SharingPolicy } from '@mcpool/protocol';
import type { AuthGate } from './authGates.js';
import type { BudgetCell } from './budget.js';
import type { Placement, PoolEntry } from './entry.js';
import type { EntrySummary, PoolSnapshot, ServerSnapshotSummary, SpawnBackoffSummary } from './poolTypes.js';
import type { TrippedKey } from './restartIntensity.js';

export interface SnapshotSource {
  entries: Iterable<PoolEntry>;
  tripped: Iterable<TrippedKey>;
  gates: Iterable<AuthGate>;
  backoffs: Iterable<{ serverName: string; summary: SpawnBackoffSummary }>;
  budget: BudgetCell;
  liveActors: number;
  spareThread: boolean;
  maxActors: number;
  maxParallelSpawnsPerSession: number;
  heartbeat: PoolSnapshot['heartbeat'];
}

export function buildSnapshot(source: SnapshotSource): PoolSnapshot {
  const servers: Record<string, ServerSnapshotSummary> = {};
  const serverOf = (name: string, status: ServerSnapshotSummary['status'] = 'closed'): ServerSnapshotSummary =>
    (servers[name] ??= { name, status, mcpStatus: 'DISCONNECTED', entryCount: 0, entrySummary: [] });
  const add = (name: string, summary: EntrySummary): void => {
    const server = serverOf(name);
    server.entryCount += 1;
    server.entrySummary.push(summary);
  };
  const bySharing: Record<SharingPolicy, number> = { shared: 0, 'per-workspace': 0, 'per-principal': 0, 'per-session': 0 };
  for (const entry of source.entries) {
    add(entry.serverName, {
      entryIndex: entry.entryIndex,
      refs: entry.views.size,
      status: entry.status,
      ...placementFields(entry.placement),
      ...(entry.era ? { era: entry.era } : {}),
      ...(entry.callsTimingOut && !entry.terminal ? { health: 'unresponsive' as const } : {}),
      ...(entry.throttled && !entry.terminal ? { throttled: true as const } : {}),
    });
    if (entry.budgetHeld) bySharing[entry.placement.sharing] += 1;
  }
  // A key past its restart intensity stays visible as failed until it is restarted.
  for (const tripped of source.tripped) add(tripped.serverName, { entryIndex: tripped.entryIndex, refs: 0, status: 'failed', ...placementFields(tripped.key.placement) });
  for (const { serverName, summary } of source.backoffs) serverOf(serverName, 'failed').spawnBackoff = summary;
  for (const gate of source.gates) add(gate.serverName, { entryIndex: gate.entryIndex, refs: 0, status: 'auth_required', ...placementFields(gate.placement) });
  for (const server of Object.values(servers)) {
    if (server.entrySummary.length === 0) continue;
    server.entrySummary.sort((a, b) => a.entryIndex - b.entryIndex);
    server.status = aggregateStatus(server.entrySummary.map((e) => e.status));
    server.mcpStatus = server.status === 'active' || server.status === 'draining' ? 'CONNECTED' : server.status === 'spawning' ? 'CONNECTING' : 'DISCONNECTED';
  }
  return {
    servers,
    budget: { ...source.budget, bySharing },
    liveActors: source.liveActors,
    spareThread: source.spareThread,
    maxActors: source.maxActors,
    maxParallelSpawnsPerSession: source.maxParallelSpawnsPerSession,
    heartbeat: source.heartbeat,
  };
}

function placementFields(placement: Placement): Pick<EntrySummary, 'sharing' | 'ownerLabel'> {
  return placement.ownerLabel === undefined ? { sharing: placement.sharing } : { sharing: placement.sharing, ownerLabel: placement.ownerLabel };
}

/** Per name: any active entry makes it active, else draining, else spawning, else failed, else closed. */
function aggregateStatus(statuses: (EntryStatus | 'auth_required')[]): EntrySummary['status'] {
  for (const status of ['active', 'draining', 'spawning', 'auth_required', 'failed'] as const) if (statuses.includes(status)) return status;
  return 'closed';
}
