/**
 * Zod schemas of the REST API: request schemas validate input (→ 400), response schemas feed
 * `/openapi.json` and the contract tests. Both are checked at compile time against the wire types
 * of `@mcpool/client`, so the API, its description and the client cannot drift apart.
 */
import { z } from 'zod';
import type {
  AuthStartResponse,
  CapabilitiesResponse,
  CreateSessionRequest,
  ErrorBody,
  HealthResponse,
  ReadyResponse,
  ReloadResult,
  RestartResponse,
  SessionInfo,
  SessionList,
  ToolCallRequest,
  ToolCallResponse,
  WorkspaceMcpStatus,
} from '@mcpool/client';
import { DaemonErrorCode, HttpError } from './errors.js';
import { issuesFrom } from '../config/zodIssues.js';

// --- Requests -----------------------------------------------------------------------------------

export const createSessionBody = z
  .object({
    mcpServers: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
    servers: z.array(z.string().min(1)).max(256).optional(),
    label: z.string().max(200).optional(),
  })
  .strict();

export const toolCallBody = z
  .object({
    server: z.string().min(1),
    name: z.string().min(1),
    arguments: z.record(z.string(), z.unknown()).optional(),
    timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
  })
  .strict();

export const authBody = z.object({ device: z.boolean().optional() }).strict();

export const authStartSchema = z.union([
  z.object({ flow: z.literal('authorization_code'), authorizationUrl: z.string(), expiresAt: z.string() }).strict(),
  z.object({ flow: z.literal('device_code'), verificationUri: z.string(), verificationUriComplete: z.string().optional(), userCode: z.string(), expiresAt: z.string() }).strict(),
]);

export const restartQuery = z
  .object({ entryIndex: z.string().regex(/^\d{1,9}$/).optional() })
  .strict();

/** Parses `value` with `schema`; a mismatch is a 400 naming each path, never echoing a value. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query'): z.infer<S> {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  const issues = issuesFrom(parsed.error, where);
  const message = issues.map((issue) => `${issue.path}: expected ${issue.expected}, ${issue.received}`).join('; ');
  throw new HttpError(DaemonErrorCode.BAD_REQUEST, message);
}

// --- Responses ----------------------------------------------------------------------------------

const serverStatus = z.enum(['spawning', 'active', 'draining', 'closed', 'failed', 'auth_required', 'unavailable', 'cold']);
const budgetMode = z.enum(['enforce', 'warn', 'off']);
const sharingPolicy = z.enum(['shared', 'per-workspace', 'per-principal', 'per-session']);
const plainError = z.object({ code: z.string(), message: z.string() });

export const errorBodySchema = z.object({ statusCode: z.number().int(), code: z.string(), error: z.string(), message: z.string() });

export const workspaceMcpSchema = z.object({
  initialized: z.literal(true),
  ready: z.boolean(),
  servers: z.array(
    z.object({
      kind: z.literal('mcp_server'),
      name: z.string(),
      status: serverStatus,
      errorKind: z.literal('auth_required').optional(),
      mcpStatus: z.enum(['connected', 'connecting', 'disconnected']),
      entryCount: z.number().int(),
      entrySummary: z.array(
        z.object({ entryIndex: z.number().int(), refs: z.number().int(), status: serverStatus, sharing: sharingPolicy, ownerLabel: z.string().optional(), era: z.enum(['legacy', 'modern']).optional(), health: z.literal('unresponsive').optional(), throttled: z.literal(true).optional() }).strict(),
      ),
      configured: z.boolean(),
      transport: z.enum(['stdio', 'http', 'sse', 'websocket']).optional(),
      lastError: plainError.optional(),
      configProblem: plainError.optional(),
      sharing: z.object({ policy: sharingPolicy, reason: z.string() }).strict().optional(),
      retryAt: z.string().optional(),
      state: z.enum(['cold', 'starting', 'running', 'stopped']).optional(),
      lastStartMs: z.number().optional(),
      learned: z.object({ usesRoots: z.literal(true).optional(), makesServerRequests: z.literal(true).optional() }).strict().optional(),
    }).strict(),
  ),
  budget: z.object({
    kind: z.literal('mcp_budget'),
    scope: z.literal('workspace'),
    liveCount: z.number().int(),
    clientBudget: z.number().int(),
    budgetMode,
    status: z.enum(['ok', 'warning', 'exhausted', 'off']),
    bySharing: z.object({ shared: z.number().int(), 'per-workspace': z.number().int(), 'per-principal': z.number().int(), 'per-session': z.number().int() }).strict(),
  }).strict(),
  sessions: z.number().int(),
  limits: z.object({
    actors: z.object({ live: z.number().int(), max: z.number().int() }).strict(),
    parallelSpawns: z.object({ perSession: z.number().int() }).strict(),
    actorHeartbeat: z.object({ intervalMs: z.number().int(), timeoutMs: z.number().int(), misses: z.number().int() }).strict(),
    mcpSessions: z.object({ open: z.number().int(), max: z.number().int(), perClient: z.number().int() }).strict(),
    sessions: z.object({ open: z.number().int(), perClient: z.number().int() }).strict(),
    injectedServers: z.object({ live: z.number().int(), perRequest: z.number().int(), perClient: z.number().int() }).strict(),
  }).strict(),
}).strict();

const restartResultSchema = z.object({ entryIndex: z.number().int(), restarted: z.boolean(), durationMs: z.number(), reason: z.string().optional() }).strict();

export const restartResponseSchema = z.union([
  z.object({ restarted: z.boolean(), durationMs: z.number(), skipped: z.boolean().optional(), reason: z.string().optional() }).strict(),
  z.object({ entries: z.array(restartResultSchema) }).strict(),
]);

export const reloadResultSchema = z.object({
  source: z.string().nullable(),
  added: z.array(z.string()),
  removed: z.array(z.string()),
  changed: z.array(z.string()),
  unchanged: z.array(z.string()),
  needsRestart: z.array(z.string()),
  rejected: z.array(z.object({ name: z.string(), code: z.string(), message: z.string(), keptRunning: z.boolean() }).strict()),
}).strict();

export const sessionInfoSchema = z.object({
  id: z.string(),
  clientId: z.string(),
  createdAt: z.string(),
  label: z.string().optional(),
  servers: z.array(
    z.object({
      name: z.string(),
      injected: z.boolean(),
      status: z.enum(['connected', 'disconnected', 'failed', 'released']),
      entryIndex: z.number().int().optional(),
      tools: z.array(z.string()),
      error: plainError.optional(),
    }).strict(),
  ),
}).strict();

export const sessionListSchema = z.object({ sessions: z.array(sessionInfoSchema) }).strict();
export const toolCallResponseSchema = z.object({ result: z.record(z.string(), z.unknown()) }).strict();
export const capabilitiesSchema = z.object({ version: z.string(), capabilities: z.array(z.string()) }).strict();
/** `POST /workspace/shutdown`: the stop has begun; it ends within `timeoutMs` (daemon.shutdownTimeoutMs). */
export const shutdownResponseSchema = z.object({ stopping: z.literal(true), timeoutMs: z.number().int() }).strict();
export const healthSchema = z.object({ status: z.literal('ok'), uptimeMs: z.number() }).strict();
export const readySchema = z.object({ ready: z.boolean(), servers: z.object({ total: z.number().int(), ready: z.number().int(), failed: z.number().int(), unavailable: z.number().int() }).strict(), draining: z.boolean().optional() });

// --- Compile-time agreement with @mcpool/client --------------------------------------------------

// Mutual assignability misses an optional field one side lacks, so the top-level keys must match too.
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Same<A, B> = Mutual<A, B> extends true ? Mutual<keyof A, keyof B> : false;
type Assert<T extends true> = T;
export type _SchemasAgreeWithClientTypes = [
  Assert<Same<z.infer<typeof errorBodySchema>, ErrorBody>>,
  Assert<Same<z.infer<typeof workspaceMcpSchema>, WorkspaceMcpStatus>>,
  Assert<Same<z.infer<typeof restartResponseSchema>, RestartResponse>>,
  Assert<Same<z.infer<typeof authStartSchema>, AuthStartResponse>>,
  Assert<Same<z.infer<typeof reloadResultSchema>, ReloadResult>>,
  Assert<Same<z.infer<typeof sessionInfoSchema>, SessionInfo>>,
  Assert<Same<z.infer<typeof sessionListSchema>, SessionList>>,
  Assert<Same<z.infer<typeof toolCallResponseSchema>, ToolCallResponse>>,
  Assert<Same<z.infer<typeof capabilitiesSchema>, CapabilitiesResponse>>,
  Assert<Same<z.infer<typeof healthSchema>, HealthResponse>>,
  Assert<Same<z.infer<typeof readySchema>, ReadyResponse>>,
  Assert<Same<z.infer<typeof toolCallBody>, ToolCallRequest>>,
  Assert<Same<z.infer<typeof createSessionBody>, CreateSessionRequest>>,
];
