/**
 * The REST control API: a fastify app over one {@link Daemon}. Paths and shapes are those of
 * `@mcpool/client`'s `types.ts`. Every route goes through the security hook first (Host,
 * Origin, token, right), bodies are JSON only and size-limited, and every error answers
 * `{statusCode, code, error, message}` from the one table in `errors.ts`.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { CapabilitiesResponse, HealthResponse, Right } from '@mcpool/client';
import { OPERATOR_ID, type Principal } from '../auth.js';
import type { Daemon } from '../daemon.js';
import type { SecretRedactor } from '../secrets.js';
import { ErrorCode as ProtocolErrorCode, PoolError, type ErrorCode } from '@mcpool/protocol';
import { DaemonErrorCode, HttpError, classifyError, errorBody, statusOf } from './errors.js';
import { buildOpenApi, type RouteDoc } from './openapi.js';
import {
  authBody,
  authStartSchema,
  capabilitiesSchema,
  createSessionBody,
  healthSchema,
  parseInput,
  readySchema,
  reloadResultSchema,
  restartQuery,
  restartResponseSchema,
  sessionInfoSchema,
  sessionListSchema,
  shutdownResponseSchema,
  toolCallBody,
  toolCallResponseSchema,
  workspaceMcpSchema,
} from './schemas.js';
import { Gateway, gatewayRefusalBody, isGatewayUrl } from '../gateway/gateway.js';
import { observeRoutes, type McpSessionsAccess } from './observeRoutes.js';
import { limitConnectionsPerAddress, securityHook, securityPolicy, serverTimeouts, type SecurityPolicy } from './security.js';
import { eventStreamHandler } from './sse.js';
import { registerDashboard, sessionCookie } from './dashboard.js';
import { UiSessions } from './uiSessions.js';
import { JwtUsers } from '../users/jwtUsers.js';
import { keepBody, routeToOwners } from '../cluster/routing.js';
import { METADATA_PATH, ProtectedResource } from '../users/protectedResource.js';
import { cameOverLocalSocket } from './localSocket.js';
import { ConnectionAdmission } from './connectionAdmission.js';
import { holdsNoShare } from '../daemon/operatorHeadroom.js';

/** Feature tags of `GET /capabilities`. Clients ignore tags they do not know. */
export const CAPABILITIES: readonly string[] = Object.freeze([
  'mcp_workspace_pool',
  'mcp_pool_restart',
  'mcp_budget_workspace_scope',
  'mcp_pool_reload',
  'mcp_pool_events',
  'mcp_session_injection',
  'mcp_upstream_oauth',
]);

declare module 'fastify' {
  interface FastifyInstance {
    /** The `/mcp` gateway of this app. */
    gateway: Gateway;
  }
}

export interface AppOptions {
  daemon: Daemon;
  logger: Logger;
  redactor: SecretRedactor;
  /**
   * What `POST /workspace/shutdown` does once its answer is on its way: `mcpool serve` stops the
   * whole process (HTTP server included). @default the daemon's own shutdown (the pool drains)
   */
  stop?: (reason: string) => void;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => unknown;

interface Route extends RouteDoc {
  handler: Handler;
}

/** The routes, in one table: registration and `/openapi.json` both read it. */
function routes(daemon: Daemon, redactor: SecretRedactor, openapi: () => Record<string, unknown>, stop: (reason: string) => void, mcpSessions: McpSessionsAccess): Route[] {
  const principal = (request: FastifyRequest) => request.principal!;
  return [
    {
      method: 'GET',
      url: '/workspace/mcp',
      summary: 'Servers with their pool entries (no fingerprint, env value or header), and the workspace budget cell',
      right: 'read',
      responses: { 200: { description: 'The workspace MCP status', schema: workspaceMcpSchema } },
      handler: () => daemon.status(),
    },
    {
      method: 'POST',
      url: '/workspace/mcp/reload-all',
      summary: 'Re-read the config, server by server: changed fingerprints get new entries, old ones drain as their sessions leave; an entry that cannot run is reported in `rejected` (a running server keeps its last good config)',
      right: 'admin',
      responses: { 200: { description: 'What changed', schema: reloadResultSchema } },
      errors: [409, 501, 503],
      handler: () => daemon.reload('api'),
    },
    {
      method: 'POST',
      url: '/workspace/shutdown',
      summary: 'Stop the daemon: answers 202 at once, then shuts down as on SIGTERM (each server gets stdin EOF → SIGTERM → SIGKILL within daemon.shutdownTimeoutMs) and exits',
      right: 'admin',
      responses: { 202: { description: 'The shutdown has started', schema: shutdownResponseSchema } },
      errors: [503],
      handler: async (request, reply) => {
        if (!daemon.accepting) throw new HttpError(DaemonErrorCode.SHUTTING_DOWN, 'the daemon is already shutting down');
        request.log.info({ client: principal(request).id }, 'shutdown requested through the API');
        await reply.code(202).send({ stopping: true, timeoutMs: daemon.settings.shutdownTimeoutMs });
        // After the answer: the stop closes the HTTP server this request came through.
        setImmediate(() => stop('api'));
        return reply;
      },
    },
    {
      method: 'POST',
      url: '/workspace/mcp/:server/restart',
      summary: 'Restart a server’s entries: {restarted, durationMs} for one entry without entryIndex, else {entries}',
      right: 'admin',
      query: restartQuery,
      responses: { 200: { description: 'Restart outcome', schema: restartResponseSchema } },
      errors: [400, 404, 503],
      handler: (request) => {
        const { server } = request.params as { server: string };
        const { entryIndex } = parseInput(restartQuery, request.query ?? {}, 'query');
        return daemon.restart(server, entryIndex === undefined ? undefined : Number(entryIndex));
      },
    },
    {
      method: 'POST',
      url: '/workspace/mcp/:server/auth',
      summary: 'Start an OAuth authorization of a remote server: answers the URL to open (or, with {device: true}, a device code); the daemon completes the flow and announces auth_completed',
      right: 'write',
      body: authBody,
      responses: { 200: { description: 'Where the user goes to authorize', schema: authStartSchema } },
      errors: [400, 404, 502, 503],
      handler: (request) => {
        const { server } = request.params as { server: string };
        const body = parseInput(authBody, request.body ?? {}, 'body');
        return daemon.authorize(server, principal(request).id, body.device === undefined ? {} : { device: body.device });
      },
    },
    {
      method: 'GET',
      url: '/workspace/mcp/events',
      summary: 'Server-sent events: entry lifecycle, budget (scope workspace), reloads, restarts, sessions; ids for Last-Event-ID; heartbeat comments',
      right: 'read',
      responses: { 200: { description: 'An event stream', contentType: 'text/event-stream' } },
      handler: eventStreamHandler(daemon, redactor) as Handler,
    },
    {
      method: 'POST',
      url: '/sessions',
      summary: 'Create a session (one pool session) holding the configured servers and any injected mcpServers (never returned)',
      right: 'write',
      body: createSessionBody,
      responses: { 201: { description: 'The session', schema: sessionInfoSchema } },
      errors: [400, 409, 413, 415, 429, 503],
      handler: async (request, reply) => {
        const servers = (request.body as { mcpServers?: unknown } | null | undefined)?.mcpServers;
        if (typeof servers === 'object' && servers !== null) daemon.sessions.assertInjectionSize(Object.keys(servers).length);
        const body = parseInput(createSessionBody, request.body ?? {}, 'body');
        const info = await daemon.sessions.create(principal(request), body);
        return reply.code(201).send(info);
      },
    },
    {
      method: 'GET',
      url: '/sessions',
      summary: 'List the sessions',
      right: 'read',
      responses: { 200: { description: 'The sessions', schema: sessionListSchema } },
      handler: () => ({ sessions: daemon.sessions.list() }),
    },
    {
      method: 'GET',
      url: '/sessions/:id',
      summary: 'One session',
      right: 'read',
      responses: { 200: { description: 'The session', schema: sessionInfoSchema } },
      errors: [404],
      handler: (request) => daemon.sessions.get((request.params as { id: string }).id),
    },
    {
      method: 'DELETE',
      url: '/sessions/:id',
      summary: 'Close a session: release its pool references (its entries drain when no one else holds them)',
      right: 'write',
      responses: { 204: { description: 'Closed' } },
      errors: [404],
      handler: async (request, reply) => {
        await daemon.sessions.delete(principal(request), (request.params as { id: string }).id);
        return reply.code(204).send();
      },
    },
    {
      method: 'POST',
      url: '/sessions/:id/tools/call',
      summary: 'Call a tool through the session’s filtered view',
      right: 'write',
      body: toolCallBody,
      responses: { 200: { description: 'The MCP result as the server sent it', schema: toolCallResponseSchema } },
      errors: [400, 404, 413, 415, 502, 503, 504],
      handler: (request) => daemon.sessions.callTool(principal(request), (request.params as { id: string }).id, parseInput(toolCallBody, request.body ?? {}, 'body'), request.headers),
    },
    ...observeRoutes(daemon, mcpSessions),
    {
      method: 'GET',
      url: '/capabilities',
      summary: 'Feature tags (mcp_workspace_pool, mcp_pool_restart, …)',
      right: 'read',
      responses: { 200: { description: 'Capabilities', schema: capabilitiesSchema } },
      handler: (): CapabilitiesResponse => ({ version: daemon.version, capabilities: [...CAPABILITIES] }),
    },
    {
      method: 'GET',
      url: '/healthz',
      summary: 'Liveness: the daemon answers. No token needed (for service managers and probes); no server or session data',
      right: 'read',
      public: true,
      responses: { 200: { description: 'Alive', schema: healthSchema } },
      handler: (): HealthResponse => ({ status: 'ok', uptimeMs: Date.now() - daemon.startedAt }),
    },
    {
      method: 'GET',
      url: '/readyz',
      summary: 'Ready once every server of the current config has been started once (503 before, again while servers a reload added start, and from SIGTERM on while the daemon drains). No token needed (a balancer or Kubernetes probe has none); counts only, no names',
      right: 'read',
      public: true,
      responses: { 200: { description: 'Ready', schema: readySchema } },
      errors: [503],
      handler: (_request, reply) => {
        const readiness = daemon.readiness();
        if (readiness.ready) return readiness;
        if (readiness.draining === true) return reply.code(503).send({ ...errorBody(DaemonErrorCode.SHUTTING_DOWN, 'draining: the daemon is stopping'), ...readiness });
        const { ready, failed, total } = readiness.servers;
        return reply.code(503).send({ ...errorBody(DaemonErrorCode.NOT_READY, `${ready + failed}/${total} servers started`), ...readiness });
      },
    },
    {
      method: 'GET',
      url: '/metrics',
      summary: 'Prometheus metrics: entries, refs, spawns, restarts, failures, call latency, budget, zombies',
      right: 'read',
      responses: { 200: { description: 'Prometheus text exposition', contentType: 'text/plain' } },
      handler: async (_request, reply) => reply.type(daemon.metrics.contentType).send(await daemon.metrics.metrics()),
    },
    {
      method: 'GET',
      url: '/openapi.json',
      summary: 'This description',
      right: 'read',
      responses: { 200: { description: 'OpenAPI 3.1' } },
      handler: () => openapi(),
    },
  ];
}

/** An error answer in the shape of the surface: JSON-RPC on `/mcp`, `{statusCode, code, error, message}` elsewhere. */
function refusalBody(url: string, code: ErrorCode, message: string): unknown {
  return isGatewayUrl(url) ? gatewayRefusalBody(code, message) : errorBody(code, message);
}

/** Builds the app (not listening). The caller listens, and closes it at shutdown. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { daemon, logger, redactor } = options;
  const stop = options.stop ?? ((reason: string) => void daemon.shutdown(reason).catch(() => undefined));
  const settings = daemon.settings;
  const app = Fastify({
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- it fixes Fastify's logger type parameter, which the app's type depends on
    loggerInstance: logger.child({ component: 'http' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: settings.bodyLimitBytes,
    // Timeouts of Node's server, which hold before any hook (so before auth): a request whose
    // headers or body are not in within them is cut with 408. Long-lived answers (the event
    // stream, `/mcp` GET and SSE replies) are not bounded by them: their requests are complete.
    // No socket inactivity timeout (`connectionTimeout`): it would cut a quiet stream.
    requestTimeout: settings.requestTimeoutMs,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    http: serverTimeouts(settings),
    return503OnClosing: true,
    // No implicit HEAD twins: the documented routes are all there is (HEAD of the event stream would never end).
    exposeHeadRoutes: false,
    forceCloseConnections: 'idle',
    // Routing errors (a malformed URL) answer in our shape too.
    frameworkErrors: (error, request, reply) => {
      const { code, message } = classifyError(error);
      void (reply as FastifyReply).code(statusOf(code)).send(refusalBody(request.url, code, message));
    },
  });
  app.decorateRequest('principal', null);
  // JSON only: text/plain would let a web page POST here without a preflight.
  app.removeContentTypeParser('text/plain');
  // A DELETE carries no body; some clients still send `Content-Type: application/json` with it.
  // Fastify's own JSON parser (prototype-poisoning checks included) reads every other body.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (request.method === 'DELETE' && body === '') return done(null, undefined);
    if (daemon.cluster !== undefined) keepBody(request.raw, body as string);
    void parseJson(request, body as string, done);
  });
  limitConnectionsPerAddress(app.server, settings.maxConnectionsPerAddress, logger.child({ component: 'http' }));
  const admission = new ConnectionAdmission(app.server, {
    maxUnauthenticated: settings.maxUnauthenticatedConnections,
    perClient: settings.maxConnectionsPerClient,
    holdsNoShare: (principal) => holdsNoShare(principal, daemon.settings.clients),
    logger: logger.child({ component: 'http' }),
  });

  let cachedFor: unknown;
  let cached: SecurityPolicy | undefined;
  const policy = (): SecurityPolicy => {
    const current = daemon.settings;
    if (cachedFor !== current || cached === undefined) {
      cached = securityPolicy(current.host, current.allowedHosts, current.allowedOrigins);
      cachedFor = current;
    }
    return cached;
  };
  // The /mcp gateway: its sessions end with the daemon's shutdown and with the app.
  const gateway = new Gateway({ daemon, logger, redactor });
  daemon.trackStream(() => void gateway.close());
  app.addHook('onClose', () => gateway.close());
  app.decorate('gateway', gateway);
  const uiSessions = new UiSessions();
  const cookieSession = (request: FastifyRequest) => {
    const secret = sessionCookie(request);
    return secret === undefined ? undefined : uiSessions.identify(secret);
  };
  // Signed-in users: JWTs from the configured issuer, and the metadata that tells clients where it is.
  const users = settings.users === undefined ? undefined : { verifier: new JwtUsers(settings.users), resource: new ProtectedResource(settings.users, () => Object.keys(daemon.config.servers)) };
  // The local socket authenticates by its file's permissions: its requests are the operator's.
  const operator: Principal = { id: OPERATOR_ID, rights: new Set<Right>(['read', 'write']) };
  const connectionPrincipal = (request: FastifyRequest) => (cameOverLocalSocket(request.raw) ? operator : undefined);
  app.addHook('onRequest', securityHook(policy, daemon.tokens, { anonymous: gateway.anonymousPrincipal, cookieSession, connectionPrincipal, ...(users === undefined ? {} : { users }) }));
  // Authenticated: the connection leaves the unauthenticated pool and counts against its principal.
  app.addHook('onRequest', async (request, reply) => {
    if (request.principal === null || cameOverLocalSocket(request.raw) || admission.admit(request.raw.socket, request.principal.id)) return;
    reply.header('connection', 'close');
    throw new PoolError(ProtocolErrorCode.CLIENT_LIMIT_REACHED, `client ${request.principal.id} holds ${daemon.settings.maxConnectionsPerClient} open connections, its limit (daemon.maxConnectionsPerClient); close some`, {
      data: { limit: 'maxConnectionsPerClient', max: daemon.settings.maxConnectionsPerClient },
    });
  });
  // A replica of a cluster: every answer names it; a session or a continuation another replica holds goes there.
  if (daemon.cluster !== undefined) routeToOwners(app, daemon.cluster);
  if (users !== undefined) {
    const metadata = (suffix: string, reply: FastifyReply) => {
      const document = users.resource.metadata(suffix);
      return document === undefined ? reply.code(404).send(errorBody(DaemonErrorCode.NOT_FOUND, 'no protected resource there')) : reply.header('cache-control', 'max-age=300').send(document);
    };
    app.get(METADATA_PATH, { config: { public: true } }, (_request, reply) => metadata('', reply));
    app.get(`${METADATA_PATH}/*`, { config: { public: true } }, (request, reply) => metadata(`/${(request.params as { '*': string })['*']}`, reply));
  }
  // Last line of defence: no known secret leaves in a body.
  app.addHook('onSend', async (_request, _reply, payload) => (typeof payload === 'string' ? redactor.scrubBody(payload) : payload));
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    const fields = { method: request.method, path: request.url.split('?')[0], status, ms: Math.round(reply.elapsedTime), client: request.principal?.id };
    // 503 is "not ready" or "shutting down": an answer, not a fault.
    if (status >= 500 && status !== 503) request.log.error(fields, 'request failed');
    else if (status >= 400) request.log.debug(fields, 'request refused');
    else request.log.debug(fields, 'request');
  });

  app.setErrorHandler((error, request, reply) => {
    const { code, message, internal } = classifyError(error);
    if (internal) request.log.error({ err: error, code }, 'internal error');
    return reply.code(statusOf(code)).send(refusalBody(request.url, code, message));
  });
  app.setNotFoundHandler((request, reply) => {
    return reply.code(404).send(refusalBody(request.url, DaemonErrorCode.NOT_FOUND, `no route ${request.method} ${request.url.split('?')[0]}`));
  });

  let document: Record<string, unknown> | undefined;
  const table = routes(daemon, redactor, () => (document ??= buildOpenApi(table, daemon.version)), stop, { list: () => gateway.list(), close: (principal, id) => gateway.closeSession(principal, id), closeIdle: (principal, idleForMs) => gateway.closeIdle(principal, idleForMs) });
  for (const route of table) {
    app.route({ method: route.method, url: route.url, config: { right: route.right, ...(route.public ? { public: true } : {}) }, handler: route.handler });
  }
  gateway.register(app);
  await registerDashboard(app, uiSessions);
  return app;
}

/** The documented routes (for tests comparing them with what fastify registered). */
export function routeTable(daemon: Daemon, redactor: SecretRedactor): RouteDoc[] {
  return routes(daemon, redactor, () => ({}), () => undefined, { list: () => [], close: () => Promise.resolve(false), closeIdle: () => Promise.resolve([]) }).map(({ handler: _handler, ...doc }) => doc);
}
