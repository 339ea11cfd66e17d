/**
 * The workspace budget: live connections, pooled and unpooled, against
 * `clientBudget`. A warning fires once when usage rises through 75 % and re-arms only after it
 * falls below 37.5 %; refusals in one pass (the same turn of the event loop) coalesce into one
 * `mcp_child_refused_batch`. Events are workspace-scoped and go to every session.
 */
import { ErrorCode, PoolError, type BudgetEvent, type BudgetMode } from '@mcpool/protocol';

export const BUDGET_WARN_FRACTION = 0.75;
export const BUDGET_REARM_FRACTION = 0.375;

export interface BudgetOptions {
  /** How many live connections the workspace may hold. @default 50 */
  clientBudget?: number;
  /** `enforce` refuses past the budget, `warn` only warns, `off` neither. @default 'warn' */
  mode?: BudgetMode;
}

export type BudgetStatus = 'ok' | 'warning' | 'exhausted' | 'off';

/** The snapshot cell the REST API serves as is. */
export interface BudgetCell {
  kind: 'mcp_budget';
  scope: 'workspace';
  liveCount: number;
  clientBudget: number;
  budgetMode: BudgetMode;
  status: BudgetStatus;
}

export class WorkspaceBudget {
  readonly clientBudget: number;
  readonly mode: BudgetMode;
  #live = 0;
  #warnArmed = true;
  #refused: { serverName: string; sessionId: string }[] = [];
  #flush: NodeJS.Immediate | undefined;
  readonly #emit: (event: BudgetEvent) => void;

  constructor(options: BudgetOptions, emit: (event: BudgetEvent) => void) {
    const { clientBudget = 50, mode = 'warn' } = options;
    if (!Number.isInteger(clientBudget) || clientBudget < 1) {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.budget.clientBudget must be a positive integer, got ${clientBudget}`);
    }
    if (mode !== 'enforce' && mode !== 'warn' && mode !== 'off') {
      throw new PoolError(ErrorCode.INVALID_ARGUMENT, `options.budget.mode must be 'enforce', 'warn' or 'off', got ${String(mode)}`);
    }
    this.clientBudget = clientBudget;
    this.mode = mode;
    this.#emit = emit;
  }

  get liveCount(): number {
    return this.#live;
  }

  /**
   * Takes a slot for a new live connection, synchronously. Returns false when `enforce` refuses
   * (the refusal is batched into one event per pass).
   */
  tryReserve(serverName: string, sessionId: string): boolean {
    if (this.mode === 'enforce' && this.#live >= this.clientBudget) {
      this.#refused.push({ serverName, sessionId });
      this.#flush ??= setImmediate(() => this.#flushRefusals());
      return false;
    }
    this.#live += 1;
    this.#check();
    return true;
  }

  /** Gives back a slot taken by {@link tryReserve}. */
  release(): void {
    if (this.#live === 0) return;
    this.#live -= 1;
    this.#check();
  }

  /** Would one more live connection be refused? (restart's `budget_would_exceed`) */
  wouldRefuse(extra = 1): boolean {
    return this.mode === 'enforce' && this.#live + extra > this.clientBudget;
  }

  cell(): BudgetCell {
    let status: BudgetStatus = 'ok';
    if (this.mode === 'off') status = 'off';
    else if (this.#live >= this.clientBudget) status = 'exhausted';
    else if (this.#live / this.clientBudget >= BUDGET_WARN_FRACTION) status = 'warning';
    return { kind: 'mcp_budget', scope: 'workspace', liveCount: this.#live, clientBudget: this.clientBudget, budgetMode: this.mode, status };
  }

  /** Drops a pending refusal batch timer (pool shutdown). */
  dispose(): void {
    if (this.#flush !== undefined) clearImmediate(this.#flush);
    this.#flush = undefined;
    this.#refused = [];
  }

  #check(): void {
    if (this.mode === 'off') return;
    const ratio = this.#live / this.clientBudget;
    if (this.#warnArmed && ratio >= BUDGET_WARN_FRACTION) {
      this.#warnArmed = false;
      this.#emit({ type: 'mcp_budget_warning', scope: 'workspace', liveCount: this.#live, clientBudget: this.clientBudget, budgetMode: this.mode });
    } else if (!this.#warnArmed && ratio < BUDGET_REARM_FRACTION) {
      this.#warnArmed = true;
    }
  }

  #flushRefusals(): void {
    this.#flush = undefined;
    const refused = this.#refused;
    this.#refused = [];
    if (refused.length === 0) return;
    this.#emit({ type: 'mcp_child_refused_batch', scope: 'workspace', refused, liveCount: this.#live, clientBudget: this.clientBudget, budgetMode: this.mode });
  }
}
