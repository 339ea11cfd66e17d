/**
 * A host of both MCP eras in one process, as an IDE extension would write one: a `node:http`
 * server on 127.0.0.1 over a pool, with nothing but `@mcpool/gateway` and `@mcpool/core` (the
 * embedding test checks this file's imports). `/mcp` aggregates every server, `/mcp/<server>`
 * is one server unprefixed.
 * - A POST with an `Mcp-Session-Id` goes to that legacy session; an `initialize` opens one.
 * - Any other POST is classified by era: a 2026-07-28 request goes to the modern router.
 * - GET and DELETE are a legacy session's.
 * The session map, its lifetime and who may use what are the host's, as the gateway leaves them.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpTransportPool, ServerConfig, ViewClientInfo } from '@mcpool/core';
import { classifyEra, LegacySessions, ModernRouter, writeModernAnswer, type GatewayAccess, type LegacySession } from '@mcpool/gateway';

export interface HostOptions {
  pool: McpTransportPool;
  configs: Record<string, ServerConfig | Record<string, unknown>>;
  /** What each principal may use (every configured server, everything, when absent). */
  access?: (principal: string) => GatewayAccess;
  /** How long a call's answer waits for its modern caller's retry. */
  continuationGraceMs?: number;
}

export interface Host {
  /** `http://127.0.0.1:<port>` */
  base: string;
  router: ModernRouter;
  sessions: ReadonlyMap<string, LegacySession>;
  close(): Promise<void>;
}

/** The principal of a request: its bearer token, as is (a test host; a real one verifies it). */
const principalOf = (req: IncomingMessage): string => /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? 'anonymous';

export async function startHost(options: HostOptions): Promise<Host> {
  const names = Object.keys(options.configs);
  const config = (name: string): ServerConfig | undefined => (Object.hasOwn(options.configs, name) ? (options.configs[name] as ServerConfig) : undefined);
  const everything: GatewayAccess = { servers: new Set(names), allows: () => true };
  const accessOf = options.access ?? (() => everything);
  const legacy = new LegacySessions({ pool: options.pool, config, version: '0.0.0-host' });
  const router = new ModernRouter({ pool: options.pool, config, version: '0.0.0-host', ...(options.continuationGraceMs === undefined ? {} : { continuationGraceMs: options.continuationGraceMs }) });
  const sessions = new Map<string, LegacySession>();

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const scope = path === '/mcp' ? undefined : path.startsWith('/mcp/') ? decodeURIComponent(path.slice('/mcp/'.length)) : null;
    if (scope === null || (scope !== undefined && config(scope) === undefined)) return void res.writeHead(404).end();
    const principal = principalOf(req);
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const session = sessions.get(id);
      if (session === undefined || session.principal !== principal || session.scope !== scope) return void res.writeHead(404).end();
      return session.handle(req, res, req.method === 'POST' ? await readJson(req) : undefined);
    }
    if (req.method !== 'POST') return void res.writeHead(400).end();
    const body = await readJson(req);
    const verdict = classifyEra('POST', req.headers, body);
    if (verdict.era === 'reject') return void res.writeHead(verdict.status, { 'content-type': 'application/json' }).end(JSON.stringify(verdict.body));
    if (verdict.era === 'modern') {
      const gone = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) gone.abort();
      });
      const answer = await router.handle({ message: body, headers: req.headers, caller: { principal, scope, access: accessOf(principal) }, signal: gone.signal });
      return writeModernAnswer(res, answer, { signal: gone.signal });
    }
    const init = body as { method?: string; params?: { protocolVersion: string; capabilities: Record<string, unknown>; clientInfo: { name: string; version: string } } };
    if (init.method !== 'initialize' || init.params === undefined) return void res.writeHead(400).end();
    const access = accessOf(principal);
    const client: ViewClientInfo = { protocolVersion: init.params.protocolVersion, capabilities: init.params.capabilities, clientInfo: init.params.clientInfo };
    const session = await legacy.open({
      principal,
      scope,
      servers: scope === undefined ? [...access.servers] : [scope],
      access: () => accessOf(principal),
      client,
      onInitialized: (opened) => sessions.set(opened.id, opened),
      onClosed: (closed) => sessions.delete(closed.id),
    });
    await session.handle(req, res, body);
    if (!sessions.has(session.id)) await session.close('initialize refused');
  };

  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    router,
    sessions,
    async close() {
      await Promise.all([...sessions.values()].map((session) => session.close('host closing')));
      await router.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text === '' ? undefined : JSON.parse(text));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    req.once('error', reject);
  });
}
