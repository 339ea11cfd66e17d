/**
 * Pool events. Entry events carry `generation`, the entry's snapshot generation: it only grows, so
 * a receiver can drop anything older than what it already applied (stale never wins).
 * Budget events carry `scope: 'workspace'` and go to every session (one budget for all).
 */
import type { WireError } from './errors.js';

/** A tool as the upstream server listed it (fields passed on as received). */
export interface ToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  [field: string]: unknown;
}

/** A tool as one session sees it: the shared definition plus this session's trust. */
export interface SessionTool extends ToolInfo {
  /** Copied per view from the session's config; never written into the shared snapshot. */
  trust: boolean;
}

export interface PromptInfo {
  name: string;
  description?: string;
  arguments?: { name: string; description?: string; required?: boolean }[];
  [field: string]: unknown;
}

export interface ResourceInfo {
  uri: string;
  name: string;
  [field: string]: unknown;
}

export interface ResourceTemplateInfo {
  uriTemplate: string;
  name: string;
  [field: string]: unknown;
}

/** What the actor knows of its server; replayed to every view on attach. */
export interface ServerSnapshot {
  /** Grows by one on every change of any list, and on reconnect. */
  generation: number;
  /** The transport incarnation: 1 for the first connection, +1 per reconnect. */
  clientGeneration: number;
  tools: ToolInfo[];
  prompts: PromptInfo[];
  resources: ResourceInfo[];
  resourceTemplates: ResourceTemplateInfo[];
  serverInfo: { name: string; version: string; [field: string]: unknown } | undefined;
  capabilities: Record<string, unknown>;
  instructions: string | undefined;
  /** The protocol era the connection speaks (undefined before the first connection). */
  era?: 'legacy' | 'modern' | undefined;
}

/** The states of one pool entry (the connection actor's machine). */
export type EntryStatus = 'spawning' | 'active' | 'draining' | 'closed' | 'failed';

export interface EntryEventBase {
  serverName: string;
  entryIndex: number;
  generation: number;
}

export type DisconnectReason = 'transport_closed' | 'transport_error' | 'restart' | 'actor_died';

export type EntryEvent =
  | (EntryEventBase & { type: 'toolsChanged'; tools: SessionTool[] })
  | (EntryEventBase & { type: 'promptsChanged'; prompts: PromptInfo[] })
  | (EntryEventBase & { type: 'resourcesChanged'; resources: ResourceInfo[]; resourceTemplates: ResourceTemplateInfo[] })
  | (EntryEventBase & { type: 'disconnected'; reason: DisconnectReason })
  | (EntryEventBase & { type: 'reconnected'; clientGeneration: number })
  | (EntryEventBase & { type: 'failed'; lastError: WireError })
  | (EntryEventBase & { type: 'statusChanged'; status: EntryStatus; lastError?: WireError })
  /** Notifications the server sent on its own that could not be attributed to one principal's sessions: dropped, never broadcast. */
  | (EntryEventBase & { type: 'notificationsDropped'; dropped: number });

export interface BudgetWarningEvent {
  type: 'mcp_budget_warning';
  scope: 'workspace';
  liveCount: number;
  clientBudget: number;
  budgetMode: BudgetMode;
}

export interface ChildRefusedBatchEvent {
  type: 'mcp_child_refused_batch';
  scope: 'workspace';
  refused: { serverName: string; sessionId: string }[];
  liveCount: number;
  clientBudget: number;
  budgetMode: BudgetMode;
}

export type BudgetEvent = BudgetWarningEvent | ChildRefusedBatchEvent;

export type BudgetMode = 'enforce' | 'warn' | 'off';

/**
 * A remote server needs authorization (`authRequired`: it answered 401 and the pool has no token
 * it accepts), or got it (`authorized`: the host has a token; the next acquire connects).
 * `challenge` is the server's `WWW-Authenticate` header, which names no secret.
 */
export type AuthEvent =
  | { type: 'authRequired'; serverName: string; challenge?: string | undefined }
  | { type: 'authorized'; serverName: string };

/** Everything `McpTransportPool`'s `onEvent` receives. */
export type PoolEvent = EntryEvent | BudgetEvent | AuthEvent;

export type PoolEventType = PoolEvent['type'];

/** True for events that concern the whole workspace rather than one entry. Old senders without `scope` count as session-scoped. */
export function isWorkspaceScopedBudgetEvent(event: { type?: unknown; scope?: unknown }): event is BudgetEvent {
  return (event.type === 'mcp_budget_warning' || event.type === 'mcp_child_refused_batch') && event.scope === 'workspace';
}
