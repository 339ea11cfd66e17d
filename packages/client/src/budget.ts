/**
 * Budget events seen from a session. Under the pool, budget events are
 * workspace-scoped: one event concerns every session, so each attached session's counters
 * increment together. An event without `scope` comes from an old daemon and means `session`.
 */
import type { BudgetGuardrailEvent, BudgetWarningEvent, ChildRefusedBatchEvent } from './types.js';

/**
 * True when `event` is a budget guardrail event for the whole workspace (`scope: 'workspace'`).
 * An event without `scope` (an old daemon) is session-scoped: false.
 *
 * @example
 * if (isWorkspaceScopedBudgetEvent(e)) showWorkspaceBadge(e.liveCount, e.clientBudget);
 */
export function isWorkspaceScopedBudgetEvent(event: { type?: unknown; scope?: unknown }): event is BudgetGuardrailEvent & { scope: 'workspace' } {
  return (event.type === 'mcp_budget_warning' || event.type === 'mcp_child_refused_batch') && event.scope === 'workspace';
}

/** Budget counters of one session's view (the `DaemonSessionViewState` shape). */
export interface DaemonSessionViewState {
  /**
   * Count of `mcp_budget_warning` events the session has observed. Under the pool
   * (`scope: 'workspace'`) it increments on every attached session at once, because budget
   * events fan out at workspace level. Use `isWorkspaceScopedBudgetEvent(lastMcpBudgetWarning)`
   * to inspect the scope of the most recent one.
   */
  mcpBudgetWarningCount: number;
  /** Count of `mcp_child_refused_batch` events observed; same workspace semantics. */
  mcpChildRefusedBatchCount: number;
  lastMcpBudgetWarning: BudgetWarningEvent | undefined;
  lastMcpChildRefusedBatch: ChildRefusedBatchEvent | undefined;
}

/** A session that has seen no budget event. */
export const INITIAL_SESSION_VIEW_STATE: DaemonSessionViewState = Object.freeze({
  mcpBudgetWarningCount: 0,
  mcpChildRefusedBatchCount: 0,
  lastMcpBudgetWarning: undefined,
  lastMcpChildRefusedBatch: undefined,
});

/**
 * One session's reducer: counts budget warnings and refused batches, whatever their scope (the
 * scope is a property of each event, not a separate stream). Other events return `state` as is.
 */
export function reduceSessionViewState(state: DaemonSessionViewState, event: { type?: unknown }): DaemonSessionViewState {
  if (event.type === 'mcp_budget_warning') {
    return { ...state, mcpBudgetWarningCount: state.mcpBudgetWarningCount + 1, lastMcpBudgetWarning: event as BudgetWarningEvent };
  }
  if (event.type === 'mcp_child_refused_batch') {
    return { ...state, mcpChildRefusedBatchCount: state.mcpChildRefusedBatchCount + 1, lastMcpChildRefusedBatch: event as ChildRefusedBatchEvent };
  }
  return state;
}

/**
 * Every session's reducer: a workspace-scoped event increments every session's counters; a
 * session-scoped one (old daemons, or carrying `sessionId`) only that session's. Sessions not
 * yet in `states` start from {@link INITIAL_SESSION_VIEW_STATE} when an event names them.
 * Returns a new record when anything changed, else `states` itself.
 *
 * @example
 * let states: Record<string, DaemonSessionViewState> = { [a.id]: INITIAL_SESSION_VIEW_STATE, [b.id]: INITIAL_SESSION_VIEW_STATE };
 * for await (const e of client.events()) states = reduceSessionViewStates(states, e.data);
 */
export function reduceSessionViewStates(
  states: Readonly<Record<string, DaemonSessionViewState>>,
  event: { type?: unknown; scope?: unknown; sessionId?: unknown },
): Record<string, DaemonSessionViewState> {
  if (event.type !== 'mcp_budget_warning' && event.type !== 'mcp_child_refused_batch') return states;
  const targets = isWorkspaceScopedBudgetEvent(event) ? Object.keys(states) : typeof event.sessionId === 'string' ? [event.sessionId] : [];
  if (targets.length === 0) return states;
  const next: Record<string, DaemonSessionViewState> = { ...states };
  for (const id of targets) next[id] = reduceSessionViewState(next[id] ?? INITIAL_SESSION_VIEW_STATE, event);
  return next;
}
