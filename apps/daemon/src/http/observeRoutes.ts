/**
 * Read-only routes the dashboard polls (and any operator may curl): every session of the daemon,
 * REST and `/mcp`, with its client and last activity; per server call figures read from the
 * metrics registry; the tail of a server's stderr. They need the read right like every route but
 * `/healthz`, and their bodies go through the app's scrubbing like every other.
 */
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Daemon } from '../daemon.js';
import type { GatewaySessionInfo } from '../gateway/gateway.js';
import type { Principal } from '../auth.js';
import { DaemonErrorCode, HttpError } from './errors.js';
import type { RouteDoc } from './openapi.js';
import { parseInput } from './schemas.js';

/** Lines of stderr a tail holds unless asked otherwise, and at most (the actor keeps 100). */
export const STDERR_TAIL_DEFAULT_LINES = 50;
const STDERR_TAIL_MAX_LINES = 100;

const sessionServer = z.object({ name: z.string(), status: z.enum(['connected', 'connecting', 'disconnected', 'failed', 'released', 'cold']) }).strict();

export const workspaceSessionsSchema = z.object({
  sessions: z.array(
    z.object({
      kind: z.enum(['rest', 'mcp']),
      id: z.string(),
      /** The client (token) that opened it: `operator` for the daemon's own token. */
      clientId: z.string(),
      label: z.string().optional(),
      /** `/mcp/<server>` sessions: that server. */
      scope: z.string().optional(),
      /** `/mcp` only: the MCP client, as it named itself (`clientInfo`), beside the token's `clientId`. */
      client: z.object({ name: z.string(), version: z.string() }).strict().optional(),
      /**
       * `/mcp` only. `legacy`: a 2025-11-25 session (`Mcp-Session-Id`); `modern`: the views held
       * for one client's stateless 2026-07-28 requests on one endpoint, with its listen streams.
       */
      era: z.enum(['legacy', 'modern']).optional(),
      /** `modern` only: its open `subscriptions/listen` streams. */
      listens: z.number().int().nonnegative().optional(),
      createdAt: z.string(),
      lastActivityAt: z.string(),
      servers: z.array(sessionServer),
    }).strict(),
  ),
}).strict();

export const workspaceStatsSchema = z.object({
  /** When the figures were read (ms since the epoch): a reader divides the difference of two readings by the difference of their `at`. */
  at: z.number(),
  servers: z.array(
    z.object({
      server: z.string(),
      calls: z.number(),
      errors: z.number(),
      seconds: z.number(),
      buckets: z.array(z.tuple([z.number(), z.number()])),
      restarts: z.number(),
    }).strict(),
  ),
}).strict();

/** A week: longer than any session lives without a request (`daemon.mcpSessionTtlMs` is at most that). */
const MAX_IDLE_FOR_MS = 7 * 24 * 3600 * 1000;

export const closeIdleBody = z.object({ idleForMs: z.number().int().min(0).max(MAX_IDLE_FOR_MS).optional() }).strict();

export const closeIdleSchema = z.object({ closed: z.array(z.object({ kind: z.enum(['rest', 'mcp']), id: z.string() }).strict()) }).strict();

export const stderrQuery = z.object({ lines: z.string().regex(/^\d+$/, 'must be a whole number').optional() }).strict();

export const stderrTailSchema = z.object({
  server: z.string(),
  entries: z.array(z.object({ entryIndex: z.number().int(), lines: z.array(z.string()) }).strict()),
}).strict();

export type WorkspaceSessions = z.infer<typeof workspaceSessionsSchema>;

export interface ObserveRoute extends RouteDoc {
  handler: (request: FastifyRequest, reply: FastifyReply) => unknown;
}

/** Both kinds of session, REST first, each oldest first. */
/** What the routes need of the `/mcp` gateway's sessions. */
export interface McpSessionsAccess {
  list(): GatewaySessionInfo[];
  /** Ends one for `principal`; false when it has no such session. */
  close(principal: Principal, id: string): Promise<boolean>;
  /** Ends those of `principal` (the operator: all) idle for `idleForMs`; resolves with their ids. */
  closeIdle(principal: Principal, idleForMs: number): Promise<string[]>;
}

export function workspaceSessions(daemon: Daemon, mcpSessions: () => GatewaySessionInfo[]): WorkspaceSessions {
  const rest = daemon.sessions.listActivity().map((session) => ({
    kind: 'rest' as const,
    id: session.id,
    clientId: session.clientId,
    ...(session.label === undefined ? {} : { label: session.label }),
    createdAt: session.createdAt,
    lastActivityAt: session.lastActivityAt,
    servers: session.servers.map((server) => ({ name: server.name, status: server.status })),
  }));
  const mcp = mcpSessions().map((session) => ({
    kind: 'mcp' as const,
    id: session.id,
    clientId: session.clientId,
    ...(session.scope === undefined ? {} : { scope: session.scope }),
    ...(session.label === undefined ? {} : { label: session.label }),
    ...(session.client === undefined ? {} : { client: session.client }),
    era: session.era,
    ...(session.listens === undefined ? {} : { listens: session.listens }),
    createdAt: session.createdAt,
    lastActivityAt: session.lastActivityAt,
    servers: session.servers.map((server) => ({ ...server })),
  }));
  const byAge = (a: { createdAt: string }, b: { createdAt: string }) => a.createdAt.localeCompare(b.createdAt);
  return { sessions: [...rest.sort(byAge), ...mcp.sort(byAge)] };
}

export function observeRoutes(daemon: Daemon, mcp: McpSessionsAccess): ObserveRoute[] {
  return [
    {
      method: 'GET',
      url: '/workspace/sessions',
      summary: 'Every session, REST (`kind: rest`) and `/mcp` (`kind: mcp`, `era: legacy` for a 2025-11-25 session, `modern` for the views held for a 2026-07-28 client with its listen streams): its client, its servers, when it was opened and last used',
      right: 'read',
      responses: { 200: { description: 'The sessions', schema: workspaceSessionsSchema } },
      handler: () => workspaceSessions(daemon, () => mcp.list()),
    },
    {
      method: 'DELETE',
      url: '/workspace/sessions/:id',
      summary: 'End a session of either kind: a REST session releases its pool references, a `/mcp` session (legacy or modern) also ends its streams (the operator may end any; a client only its own)',
      right: 'write',
      responses: { 204: { description: 'Ended' } },
      errors: [404],
      handler: async (request, reply) => {
        const { id } = request.params as { id: string };
        const principal = request.principal!;
        if (daemon.sessions.has(principal, id)) await daemon.sessions.delete(principal, id);
        else if (!(await mcp.close(principal, id))) throw new HttpError(DaemonErrorCode.NOT_FOUND, `no session ${JSON.stringify(id)}`);
        return reply.code(204).send();
      },
    },
    {
      method: 'POST',
      url: '/workspace/sessions/close-idle',
      summary: 'End in one go every session (REST and `/mcp`) with nothing in flight — no call, no open stream — and no request for `idleForMs` (default 0): the operator any, a client its own. `/mcp` clients get 404 on their next request and initialize again',
      right: 'write',
      body: closeIdleBody,
      responses: { 200: { description: 'The sessions ended', schema: closeIdleSchema } },
      errors: [400],
      handler: async (request) => {
        const { idleForMs = 0 } = parseInput(closeIdleBody, request.body ?? {}, 'body');
        const principal = request.principal!;
        const [rest, mcpIds] = await Promise.all([daemon.sessions.closeIdle(principal, idleForMs), mcp.closeIdle(principal, idleForMs)]);
        return { closed: [...rest.map((id) => ({ kind: 'rest' as const, id })), ...mcpIds.map((id) => ({ kind: 'mcp' as const, id }))] };
      },
    },
    {
      method: 'GET',
      url: '/workspace/stats',
      summary: 'Per server tool-call figures since the start (calls, errors, latency sum and histogram buckets, restarts), read from the metrics registry',
      right: 'read',
      responses: { 200: { description: 'Call figures', schema: workspaceStatsSchema } },
      handler: async () => ({ at: Date.now(), servers: await daemon.metrics.callStats() }),
    },
    {
      method: 'GET',
      url: '/workspace/mcp/:server/stderr',
      summary: `The last lines (\`lines\`, default ${STDERR_TAIL_DEFAULT_LINES}, at most ${STDERR_TAIL_MAX_LINES}) each live entry of a server wrote to stderr, secrets scrubbed`,
      right: 'read',
      query: stderrQuery,
      responses: { 200: { description: 'The stderr tail per entry', schema: stderrTailSchema } },
      errors: [400, 404],
      handler: (request) => {
        const { server } = request.params as { server: string };
        const { lines } = parseInput(stderrQuery, request.query ?? {}, 'query');
        return daemon.stderrTail(server, Math.min(STDERR_TAIL_MAX_LINES, lines === undefined ? STDERR_TAIL_DEFAULT_LINES : Number(lines)));
      },
    },
  ];
}
