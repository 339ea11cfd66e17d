/**
 * What the OAuth tests run against: a real authorization server (`oidc-provider`), a v2-SDK MCP
 * server that takes only its tokens (RFC 9728 metadata, JWTs checked with `jose`), and a daemon
 * with its OAuth client, configured with that server as `remote`. Each part is closed by a
 * function pushed on `open` (close them last opened first).
 */
import { startHttpModernServer, type HttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';
import { startOAuthServer, type OAuthServer } from '../../../test/fixtures/servers/oauthServer.mjs';
import { harness, type Harness } from './helpers.js';

export interface OAuthStack {
  as: OAuthServer;
  mcp: HttpModernServer;
  h: Harness;
  /** The daemon's URL when it listens (`listen: true`), else ''. */
  base: string;
  events: { type: string; serverName?: string }[];
  /** Every event as JSON, for the canary. */
  eventText: string[];
}

export interface OAuthStackOptions {
  accessTokenTtlS?: number;
  listen?: boolean;
  /** The scopes the authorization server may grant for the MCP server. @default 'mcp:tools' */
  resourceScope?: string;
  /** Tools whose calls need a scope beyond `mcp:tools` (tool → scope): the MCP server answers 403 without it. */
  requireScopes?: Record<string, string>;
  /** More fields of the `remote` server's config (`oauth`). */
  remote?: Record<string, unknown>;
  /** The daemon's `clients`, with their tokens in `env`. */
  clients?: { id: string; tokenEnv: string; rights: string[] }[];
  env?: Record<string, string>;
}

export async function oauthStack(open: (() => Promise<void>)[], options: OAuthStackOptions = {}): Promise<OAuthStack> {
  const as = await startOAuthServer({
    ...(options.accessTokenTtlS === undefined ? {} : { accessTokenTtlS: options.accessTokenTtlS }),
    ...(options.resourceScope === undefined ? {} : { resourceScope: options.resourceScope }),
  });
  open.push(() => as.close());
  let check: (authorization: string | undefined) => Promise<boolean> = () => Promise.resolve(false);
  const mcp = await startHttpModernServer({
    verify: (authorization) => check(authorization),
    resourceMetadata: { authorization_servers: [as.issuer], scopes_supported: ['mcp:tools'] },
    scope: 'mcp:tools',
    ...(options.requireScopes === undefined ? {} : { requireScopes: options.requireScopes, scopesOf: (authorization) => as.scopesOf(authorization) }),
  });
  open.push(() => mcp.close());
  check = as.verifier(mcp.url);
  const h = await harness(
    { mcpServers: { remote: { type: 'http', url: mcp.url, ...options.remote } }, ...(options.clients === undefined ? {} : { daemon: { clients: options.clients } }) },
    { oauth: true, start: false, logLevel: 'debug', ...(options.env === undefined ? {} : { env: options.env }) },
  );
  open.push(() => h.close());
  const events: OAuthStack['events'] = [];
  const eventText: string[] = [];
  h.daemon.events.subscribe(({ payload }) => {
    events.push(payload);
    eventText.push(JSON.stringify(payload));
  });
  const base = options.listen === true ? await h.app.listen({ host: '127.0.0.1', port: 0 }) : '';
  await h.daemon.start();
  return { as, mcp, h, base, events, eventText };
}
