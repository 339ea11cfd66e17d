/**
 * Where a `/mcp` request goes on a replica of a cluster, decided before the gateway sees it:
 * - every answer names the replica that served it;
 * - a request carrying a legacy session id goes by the id (`Cluster.route`): served here, sent to
 *   its owner, or 404 (the client opens a new session);
 * - a modern retry carrying a `requestState` this cluster minted goes to the replica that holds
 *   its call (the call's id in the state is sealed like a session id: owner, principal, expiry),
 *   with its body as it came. An owner that cannot be reached answers `CONTINUATION_LOST` in-band,
 *   as a call's failure is: the call went with its replica. Any other state the gateway here
 *   refuses as it refuses every state it does not hold (one message).
 * The body is read once by the app's parser; the route reads the JSON it made and forwards the
 * text it kept.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { continuationIdOf, RpcCode, rpcErrorBody } from '@mcpool/gateway';
import { continuationLost } from '@mcpool/protocol';
import { gatewayRefusalBody, isGatewayUrl } from '../gateway/gateway.js';
import { FORWARDED_BY, SERVED_BY, type Cluster } from './cluster.js';
import { Forwarder } from './forward.js';

/** The body of each request, as the app's parser read it (a forwarded retry goes on with it). */
const bodies = new WeakMap<IncomingMessage, string>();

/** Keeps `body` for a route that may forward its request after it was parsed. */
export function keepBody(req: IncomingMessage, body: string): void {
  bodies.set(req, body);
}

/** Adds the cluster's routes to `app`: a hook on every request, and one on every parsed `/mcp` POST. */
export function routeToOwners(app: FastifyInstance, cluster: Cluster): void {
  const notFound = JSON.stringify(rpcErrorBody(RpcCode.SESSION_NOT_FOUND, 'Session not found'));
  const forwarder = new Forwarder({ replicaId: cluster.replicaId, ownerGone: (res) => void res.writeHead(404, { 'content-type': 'application/json' }).end(notFound) });
  app.addHook('onClose', () => forwarder.close());
  const forwardedBy = (value: string | string[] | undefined): string | undefined => (typeof value === 'string' ? value : undefined);

  app.addHook('onRequest', async (request, reply) => {
    reply.raw.setHeader(SERVED_BY, cluster.replicaId);
    const id = request.headers['mcp-session-id'];
    if (typeof id !== 'string' || request.principal === null || !isGatewayUrl(request.url)) return;
    const route = cluster.route(id, request.principal.id, forwardedBy(request.headers[FORWARDED_BY]));
    if (route.kind === 'local') return;
    if (route.kind === 'unknown') return reply.code(404).type('application/json').send(notFound);
    reply.hijack();
    await forwarder.forward(request.raw, reply.raw, route.url);
    return reply;
  });

  app.addHook('preHandler', async (request, reply) => {
    // A legacy session's requests went by its id; a modern request has none.
    if (request.method !== 'POST' || request.headers['mcp-session-id'] !== undefined || request.principal === null || !isGatewayUrl(request.url)) return;
    const id = continuationIdOf(request.body);
    if (id === undefined) return;
    const route = cluster.route(id, request.principal.id, forwardedBy(request.headers[FORWARDED_BY]));
    const body = bodies.get(request.raw);
    if (route.kind !== 'forward' || body === undefined) return;
    const given = (request.body as { id?: unknown }).id;
    const requestId = typeof given === 'string' || typeof given === 'number' ? given : null;
    const lost = (res: ServerResponse): void => {
      const refusal = continuationLost();
      const answer = { ...gatewayRefusalBody(refusal.code, refusal.message), id: requestId };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    };
    reply.hijack();
    await forwarder.forward(request.raw, reply.raw, route.url, { body, ownerGone: lost });
    return reply;
  });
}
