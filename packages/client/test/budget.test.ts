/**
 * The budget reducer: workspace-scoped events increment every attached
 * session at once; an event without scope (an old daemon) is session-scoped.
 */
import { describe, expect, it } from 'vitest';
import {
  INITIAL_SESSION_VIEW_STATE,
  isWorkspaceScopedBudgetEvent,
  reduceSessionViewState,
  reduceSessionViewStates,
  type BudgetWarningEvent,
  type ChildRefusedBatchEvent,
  type DaemonSessionViewState,
} from '@mcpool/client';

const warning: BudgetWarningEvent = { type: 'mcp_budget_warning', scope: 'workspace', liveCount: 8, clientBudget: 10, budgetMode: 'warn' };
const refused: ChildRefusedBatchEvent = {
  type: 'mcp_child_refused_batch',
  scope: 'workspace',
  refused: [{ serverName: 'github', sessionId: 's1' }],
  liveCount: 10,
  clientBudget: 10,
  budgetMode: 'enforce',
};

describe('isWorkspaceScopedBudgetEvent', () => {
  it('is true for budget events with scope workspace only', () => {
    expect(isWorkspaceScopedBudgetEvent(warning)).toBe(true);
    expect(isWorkspaceScopedBudgetEvent(refused)).toBe(true);
    expect(isWorkspaceScopedBudgetEvent({ ...warning, scope: 'session' })).toBe(false);
    // An old daemon sends no scope: that means session.
    const { scope: _scope, ...old } = warning;
    expect(isWorkspaceScopedBudgetEvent(old)).toBe(false);
    expect(isWorkspaceScopedBudgetEvent({ type: 'entry_status', scope: 'workspace' })).toBe(false);
  });
});

describe('reduceSessionViewState', () => {
  it('counts warnings and refused batches whatever the scope, and keeps the last of each', () => {
    let state = reduceSessionViewState(INITIAL_SESSION_VIEW_STATE, warning);
    const sessionScoped: { type: 'mcp_budget_warning'; scope: string; liveCount: number } = { ...warning, scope: 'session', liveCount: 9 };
    state = reduceSessionViewState(state, sessionScoped);
    state = reduceSessionViewState(state, refused);
    expect(state.mcpBudgetWarningCount).toBe(2);
    expect(state.mcpChildRefusedBatchCount).toBe(1);
    expect(state.lastMcpBudgetWarning?.liveCount).toBe(9);
    expect(state.lastMcpChildRefusedBatch).toBe(refused);
    expect(isWorkspaceScopedBudgetEvent(state.lastMcpBudgetWarning!)).toBe(false);
  });

  it('returns the same state for other events, and never mutates the initial state', () => {
    expect(reduceSessionViewState(INITIAL_SESSION_VIEW_STATE, { type: 'entry_status' })).toBe(INITIAL_SESSION_VIEW_STATE);
    reduceSessionViewState(INITIAL_SESSION_VIEW_STATE, warning);
    expect(INITIAL_SESSION_VIEW_STATE.mcpBudgetWarningCount).toBe(0);
  });
});

describe('reduceSessionViewStates', () => {
  const two = (): Record<string, DaemonSessionViewState> => ({ a: INITIAL_SESSION_VIEW_STATE, b: INITIAL_SESSION_VIEW_STATE });

  it('increments every subscribed session at once for a workspace-scoped event', () => {
    const next = reduceSessionViewStates(reduceSessionViewStates(two(), warning), refused);
    expect(next.a).toEqual(next.b);
    expect(next.a!.mcpBudgetWarningCount).toBe(1);
    expect(next.b!.mcpChildRefusedBatchCount).toBe(1);
  });

  it('gives a session-scoped event (old daemon) to the session it names only', () => {
    const { scope: _scope, ...old } = warning;
    const next = reduceSessionViewStates(two(), { ...old, sessionId: 'b' });
    expect(next.a!.mcpBudgetWarningCount).toBe(0);
    expect(next.b!.mcpBudgetWarningCount).toBe(1);
    // No session named: nobody to count it for.
    const states = two();
    expect(reduceSessionViewStates(states, old)).toBe(states);
  });

  it('leaves the record as is for events that are not budget events', () => {
    const states = two();
    expect(reduceSessionViewStates(states, { type: 'session_created' })).toBe(states);
  });
});
