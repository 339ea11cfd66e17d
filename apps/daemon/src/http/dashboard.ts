/**
 * The dashboard: a static page at `/` with its assets under `/ui/` (built with Vite into
 * `dist/ui`, shipped in the package, no CDN), and its sign-in routes. The page and its assets
 * load without a token — they hold no data; every datum the page shows comes from the REST API,
 * which needs the session cookie (or a token) like any client.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DaemonErrorCode, HttpError } from './errors.js';
import { UI_COOKIE, type UiSessions } from './uiSessions.js';

/** Where `vite build` puts the page (from `dist/http/dashboard.js`). */
export const UI_DIR = fileURLToPath(new URL('../ui/', import.meta.url));

/** What every dashboard response may load: its own scripts and styles, its own API, nothing else. */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export function sessionCookie(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  return header === undefined ? undefined : parseCookie(header)[UI_COOKIE];
}

export async function registerDashboard(app: FastifyInstance, sessions: UiSessions): Promise<void> {
  const built = existsSync(UI_DIR);
  const page = async (_request: FastifyRequest, reply: FastifyReply) => {
    if (!built) throw new HttpError(DaemonErrorCode.NOT_FOUND, 'the dashboard is not built (npm run build)');
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', CSP)
      .header('cache-control', 'no-store')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(await readFile(`${UI_DIR}index.html`, 'utf8'));
  };
  app.route({ method: 'GET', url: '/', config: { public: true }, handler: page });
  if (built) {
    await app.register(async (assets) => {
      // Every route of this context is public like the page: the security hook reads `config.public`.
      assets.addHook('onRoute', (route) => {
        route.config = { ...(route.config), public: true };
      });
      await assets.register(fastifyStatic, {
        root: `${UI_DIR}assets`,
        prefix: '/ui/assets/',
        decorateReply: false,
        index: false,
        list: false,
        wildcard: false,
        // Asset names carry their content hash: cache them for good.
        immutable: true,
        maxAge: '365d',
        setHeaders: (res) => {
          res.setHeader('x-content-type-options', 'nosniff');
        },
      });
    });
  }

  // A token holder asks for a one-time code; `mcpool ui` opens the page with it.
  app.route({
    method: 'POST',
    url: '/ui/login-code',
    config: { right: 'read' },
    handler: (request) => sessions.mintCode(request.principal!),
  });
  // The page trades the code for the session cookie. Public: the code is the credential.
  app.route({
    method: 'POST',
    url: '/ui/login',
    config: { public: true },
    handler: async (request, reply) => {
      const code = (request.body as { code?: unknown } | undefined)?.code;
      const grant = typeof code === 'string' && code.length <= 128 ? sessions.exchange(code) : undefined;
      if (grant === undefined) throw new HttpError(DaemonErrorCode.UNAUTHORIZED, 'this sign-in code is unknown, used or expired: run `mcpool ui` again');
      const cookie = stringifySetCookie(UI_COOKIE, grant.secret, { httpOnly: true, sameSite: 'strict', path: '/', maxAge: grant.maxAgeSeconds });
      return reply.code(204).header('set-cookie', cookie).header('cache-control', 'no-store').send();
    },
  });
  app.route({
    method: 'POST',
    url: '/ui/logout',
    config: { right: 'read' },
    handler: async (request, reply) => {
      const secret = sessionCookie(request);
      if (secret !== undefined) sessions.revoke(secret);
      return reply.code(204).header('set-cookie', stringifySetCookie(UI_COOKIE, '', { httpOnly: true, sameSite: 'strict', path: '/', maxAge: 0 })).send();
    },
  });
}
