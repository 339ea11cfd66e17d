/**
 * The daemon's OAuth client for remote MCP servers (OAuth 2.1 as the MCP authorization spec
 * profiles it), built on `oauth4webapi`. It is the pool's `credentials`: the pool asks it for an
 * `Authorization` value before each connect and tells it when a server refused one.
 *
 * - One grant per key (server URL + client id, + the principal it was granted to, unless it is
 *   shared: see `configuredGrants.ts`), kept in the state directory (`TokenStore`, mode 0600) and
 *   in memory. Every session of that principal uses that one grant: authorizing once is enough
 *   for all of them.
 * - Flows: authorization code + PKCE (S256) with a loopback redirect (RFC 8252: a listener on
 *   127.0.0.1, port chosen by the system, for this one flow), and the device authorization grant
 *   (RFC 8628) when the authorization server offers it. Both send the resource indicator
 *   (RFC 8707) and the scopes of the challenge (else the config's, else the resource's).
 * - Client identity (`./registration.ts`): the config's `oauth.clientId` (+ `clientSecret`), else
 *   mcpool's client ID metadata document, else dynamic client registration (RFC 7591), each
 *   bound to the issuer of the authorization server the flow runs at.
 * - Refresh: a timer refreshes a grant a third of its lifetime (at most a minute) before the
 *   access token expires, and a refused token is refreshed once. A rotated refresh token
 *   replaces the old one; a refresh the server rejects deletes the grant, so the pool's next
 *   refusal makes the server `auth_required`.
 * - Tokens are secrets: they go to the redactor the moment they are known, and no log line,
 *   answer or event built here carries one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oauth from 'oauth4webapi';
import { ErrorCode, PoolError, type CredentialTarget, type Logger, type ServerConfig, type UpstreamCredentials } from '@mcpool/core';
import type { SecretRedactor } from '../secrets.js';
import { discover, insecureFor, parseBearerChallenge, type BearerChallenge, type Discovered } from './discovery.js';
import { GuardedFetch, reachOf, type Reach, type ResolveAll } from './addressGuard.js';
import { bindingRefusal, clientAuth, clientFor, storedClient, type FlowClient, type Registrar } from './registration.js';
import { TokenStore, grantKey, type StoredGrant } from './tokenStore.js';
import { FileStore } from '../store/fileStore.js';
import type { SharedStore } from '../store/sharedStore.js';

export interface OAuthManagerOptions {
  stateDir: string;
  /** Where grants are kept. @default the state directory (`<stateDir>/oauth/`) */
  store?: SharedStore;
  logger: Logger;
  redactor: SecretRedactor;
  /** A grant for `serverName` was obtained: the pool may connect it now. */
  onAuthorized: (serverName: string) => void;
  /** A grant of `serverName` was refreshed: live connections take the new token. */
  onRefreshed: (serverName: string) => void;
  /** A started flow failed (refused answer, token endpoint error): what went wrong, in words. */
  onFailed?: (serverName: string, message: string) => void;
  /**
   * The URL of mcpool's client ID metadata document (an https URL whose JSON names it as
   * `client_id`): the client id at authorization servers that take them.
   */
  clientMetadataUrl?: string | undefined;
  /** How long a started flow waits for its user. @default 600000 (10 min) */
  flowTimeoutMs?: number;
  /** How long one token refresh request may take before it is aborted. @default 10000 */
  refreshTimeoutMs?: number;
  /** How names are resolved, for the address checks of every OAuth request. @default `dns.lookup` */
  resolve?: ResolveAll;
}

/** What `POST /workspace/mcp/:server/auth` answers: where the user goes to authorize. */
export type AuthFlowStart =
  | { flow: 'authorization_code'; authorizationUrl: string; expiresAt: string }
  | { flow: 'device_code'; verificationUri: string; verificationUriComplete?: string; userCode: string; expiresAt: string };

interface Flow {
  close(): void;
}

/** Refresh this long before expiry at most, and a third of the token's lifetime at least. */
const REFRESH_MARGIN_MAX_MS = 60_000;
const DEFAULT_FLOW_TIMEOUT_MS = 600_000;
/** How long one refresh request may take by default: the remote spawn deadline's default, 10 s. */
const DEFAULT_REFRESH_TIMEOUT_MS = 10_000;
const CALLBACK_PATH = '/callback';
const OFFLINE_ACCESS = 'offline_access';

export class OAuthManager implements UpstreamCredentials {
  readonly #store: TokenStore;
  readonly #options: OAuthManagerOptions;
  readonly #logger: Logger;
  readonly #grants = new Map<string, StoredGrant | undefined>();
  readonly #refreshing = new Map<string, Promise<StoredGrant | undefined>>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  /** The challenge of each server's last 401 (no secret in it: where its metadata is, the scope). */
  readonly #challenges = new Map<string, string>();
  readonly #flows = new Map<string, Flow>();
  /**
   * The scopes each key's last grant was asked for: a new authorization asks for them again
   * with the challenge's (step-up: the union keeps what other operations need).
   */
  readonly #requested = new Map<string, string[]>();
  readonly #registrar: Omit<Registrar, 'requestOptions'>;
  #closed = false;
  /** Every request of discovery and the flows: its connects refused where the server may not send us. */
  readonly #net: GuardedFetch;

  constructor(options: OAuthManagerOptions) {
    this.#options = options;
    this.#net = new GuardedFetch(options.resolve);
    this.#registrar = { clientMetadataUrl: options.clientMetadataUrl, redactor: options.redactor };
    this.#store = new TokenStore(options.store ?? new FileStore(options.stateDir));
    this.#logger = options.logger.child({ component: 'oauth' });
  }

  // --- UpstreamCredentials ----------------------------------------------------------------------

  /**
   * The current token, refreshed first when it is about to expire. `signal` is the caller's
   * deadline (the pool's spawn deadline): the wait for a refresh ends with it, while the refresh
   * itself, shared by every caller of the key, runs under its own bound.
   */
  async authorization(target: CredentialTarget, options: { signal?: AbortSignal } = {}): Promise<string | undefined> {
    const key = keyOf(target.config, target.principal);
    let grant = await this.#grant(key);
    if (grant === undefined) return undefined;
    if (grant.expiresAt !== undefined && grant.expiresAt - Date.now() < refreshMargin(grant)) grant = await untilAborted(this.#refresh(key, target.serverName, grant), options.signal);
    if (grant !== undefined) this.#schedule(key, target.serverName, grant);
    return grant === undefined ? undefined : bearer(grant);
  }

  async refused(target: CredentialTarget, refused: string | undefined, challenge: string | undefined): Promise<string | undefined> {
    if (challenge !== undefined) this.#challenges.set(target.serverName, challenge);
    const key = keyOf(target.config, target.principal);
    const grant = await this.#grant(key);
    if (grant === undefined) return undefined;
    // Authorized (or refreshed) since that token was sent: the current one is worth a try.
    if (bearer(grant) !== refused) return bearer(grant);
    const parsed = parseBearerChallenge(challenge);
    if (parsed?.error === 'insufficient_scope') return this.#stepUp(target.serverName, key, grant, parsed);
    const fresh = await this.#refresh(key, target.serverName, grant);
    return fresh === undefined ? undefined : bearer(fresh);
  }

  /**
   * A token refused for a scope it lacks (RFC 6750 `insufficient_scope`): undefined when a step-up
   * authorization can help (the next flow asks for the challenged scopes with those asked before,
   * as the MCP spec's step-up flow says). Asked once per scope: when the challenge names only
   * scopes this grant was already asked for (or names none), authorizing again would ask the same
   * and meet the same refusal, so it is final.
   *
   * @throws PoolError AUTH_FAILED (final)
   */
  #stepUp(serverName: string, key: string, grant: StoredGrant, challenge: BearerChallenge): undefined {
    const wanted = challenge.scope?.split(' ').filter(Boolean) ?? [];
    const asked = this.#requested.get(key) ?? grant.requestedScopes ?? [];
    const granted = grant.scope?.split(' ').filter(Boolean) ?? [];
    if (wanted.some((scope) => !asked.includes(scope) && !granted.includes(scope))) return undefined;
    const said = challenge.errorDescription === undefined ? '' : ` (it says: ${challenge.errorDescription.slice(0, 200)})`;
    const why =
      wanted.length === 0
        ? 'without naming the scope it wants'
        : `for lack of ${wanted.join(' ')}, which ${wanted.every((scope) => granted.includes(scope)) ? 'the token was issued with' : 'the authorization server did not grant when asked'}`;
    this.#logger.warn({ server: serverName, scope: wanted.join(' ') }, `${serverName} refused its token ${why}: not asking again`);
    throw new PoolError(ErrorCode.AUTH_FAILED, `${serverName} refused its token ${why}${said}: authorizing again would ask for the same scopes, so it is not asked again`, {
      data: { serverName, status: 403, ...(wanted.length === 0 ? {} : { scope: wanted.join(' ') }) },
    });
  }

  // --- Flows ----------------------------------------------------------------------------------

  /**
   * Starts an authorization for `serverName` and says where its user goes. `device` asks for the
   * device grant (refused when the server does not offer it). A flow already under way for the
   * same key is replaced.
   *
   * @throws PoolError AUTH_FAILED (discovery, validation, registration), INVALID_ARGUMENT (not a remote server)
   */
  async start(serverName: string, config: ServerConfig, principal: string | undefined, options: { device?: boolean } = {}): Promise<AuthFlowStart> {
    const url = config.transport === 'http' ? (config.httpUrl ?? config.url) : config.transport === 'sse' ? (config.url ?? config.httpUrl) : undefined;
    if (url === undefined) throw new PoolError(ErrorCode.INVALID_ARGUMENT, `${serverName} is not a remote (http or sse) server: it has nothing to authorize`);
    const key = keyOf(config, principal);
    const found = await discover(url, parseBearerChallenge(this.#challenges.get(serverName)), config.oauth?.scopes, this.#net);
    const previous = await this.#grant(key);
    const moved = bindingRefusal(serverName, config, previous, found.as);
    if (moved !== undefined) {
      this.#logger.warn({ server: serverName, issuer: found.as.issuer, previousIssuer: previous?.as.issuer }, moved.message);
      await this.forget(config, principal);
      throw moved;
    }
    const discovered = { ...found, scopes: withOfflineAccess(found.as, union(this.#requested.get(key) ?? previous?.requestedScopes, found.scopes)) };
    this.#flows.get(key)?.close();
    if (options.device === true) return this.#startDevice(serverName, key, config, discovered);
    return this.#startCode(serverName, key, config, discovered);
  }

  /** Forgets a server's grant (memory and disk). */
  async forget(config: ServerConfig, principal: string | undefined): Promise<void> {
    const key = keyOf(config, principal);
    this.#grants.set(key, undefined);
    this.#options.redactor.drop(`oauth:${key}`);
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    await this.#store.remove(key);
  }

  /** Ends every flow and refresh timer. Idempotent. */
  close(): void {
    this.#closed = true;
    for (const flow of this.#flows.values()) flow.close();
    this.#flows.clear();
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    void this.#net.close();
  }

  /** The options of an `oauth4webapi` request to `url` for a server of `reach`: its guarded fetch, and http allowed on loopback only. */
  #requestOptions(url: string, reach: Reach): { [oauth.customFetch]: typeof fetch; [oauth.allowInsecureRequests]?: boolean } {
    return { [oauth.customFetch]: this.#net.fetchFor(reach), ...insecureFor(new URL(url)) };
  }

  async #startCode(serverName: string, key: string, config: ServerConfig, discovered: Discovered): Promise<AuthFlowStart> {
    const { as } = discovered;
    if (as.authorization_endpoint === undefined) throw new PoolError(ErrorCode.AUTH_FAILED, `the authorization server ${as.issuer} has no authorization endpoint`);
    const listener = await listenLoopback();
    const redirectUri = `http://127.0.0.1:${(listener.address() as AddressInfo).port}${CALLBACK_PATH}`;
    let timer: NodeJS.Timeout | undefined;
    const flow: Flow = {
      close: () => {
        clearTimeout(timer);
        listener.close();
        listener.closeAllConnections();
        if (this.#flows.get(key) === flow) this.#flows.delete(key);
      },
    };
    try {
      const { client, auth } = await clientFor(config, discovered.as, { ...this.#registrar, requestOptions: (url) => this.#requestOptions(url, discovered.reach) }, [redirectUri], ['authorization_code', 'refresh_token']);
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const authorizationUrl = new URL(as.authorization_endpoint);
      const params = authorizationUrl.searchParams;
      params.set('response_type', 'code');
      params.set('client_id', client.client_id);
      params.set('redirect_uri', redirectUri);
      params.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
      params.set('code_challenge_method', 'S256');
      params.set('state', state);
      params.set('resource', discovered.resource);
      if (discovered.scopes !== undefined) params.set('scope', discovered.scopes.join(' '));
      const timeoutMs = this.#options.flowTimeoutMs ?? DEFAULT_FLOW_TIMEOUT_MS;
      listener.on('request', (req, res) => {
        const callback = new URL(req.url ?? '/', redirectUri);
        if (req.method !== 'GET' || callback.pathname !== CALLBACK_PATH) return void res.writeHead(404).end();
        void (async () => {
          try {
            const answer = oauth.validateAuthResponse(as, client, callback.searchParams, state);
            const response = await oauth.authorizationCodeGrantRequest(as, client, auth, answer, redirectUri, verifier, {
              additionalParameters: { resource: discovered.resource },
              ...this.#requestOptions(as.token_endpoint!, discovered.reach),
            });
            const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
            await this.#granted(serverName, key, discovered, client, tokens);
            res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(`mcpool: ${serverName} is authorized. You can close this window.\n`);
          } catch (error) {
            this.#logger.warn({ server: serverName, error: oauthMessage(error) }, `${serverName}: the authorization failed`);
            this.#options.onFailed?.(serverName, oauthMessage(error));
            res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' }).end(`mcpool: the authorization of ${serverName} failed: ${oauthMessage(error)}\n`);
          } finally {
            flow.close();
          }
        })();
      });
      timer = setTimeout(() => flow.close(), timeoutMs);
      timer.unref();
      this.#flows.set(key, flow);
      this.#logger.info({ server: serverName, issuer: as.issuer }, `${serverName}: authorization started (code flow, loopback redirect)`);
      return { flow: 'authorization_code', authorizationUrl: authorizationUrl.href, expiresAt: new Date(Date.now() + timeoutMs).toISOString() };
    } catch (error) {
      flow.close();
      throw error;
    }
  }

  async #startDevice(serverName: string, key: string, config: ServerConfig, discovered: Discovered): Promise<AuthFlowStart> {
    const { as } = discovered;
    if (as.device_authorization_endpoint === undefined) {
      throw new PoolError(ErrorCode.AUTH_FAILED, `the authorization server ${as.issuer} does not offer the device authorization grant; use the browser flow`);
    }
    const { client, auth } = await clientFor(config, discovered.as, { ...this.#registrar, requestOptions: (url) => this.#requestOptions(url, discovered.reach) }, [], ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token']);
    const params: Record<string, string> = { resource: discovered.resource };
    if (discovered.scopes !== undefined) params.scope = discovered.scopes.join(' ');
    let device: oauth.DeviceAuthorizationResponse;
    try {
      const response = await oauth.deviceAuthorizationRequest(as, client, auth, params, this.#requestOptions(as.device_authorization_endpoint, discovered.reach));
      device = await oauth.processDeviceAuthorizationResponse(as, client, response);
    } catch (error) {
      throw new PoolError(ErrorCode.AUTH_FAILED, `the device authorization of ${serverName} could not start: ${oauthMessage(error)}`, { cause: error });
    }
    const deadline = Date.now() + device.expires_in * 1000;
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const flow: Flow = {
      close: () => {
        stopped = true;
        clearTimeout(timer);
        if (this.#flows.get(key) === flow) this.#flows.delete(key);
      },
    };
    let intervalMs = (device.interval ?? 5) * 1000;
    const poll = async (): Promise<void> => {
      if (stopped || this.#closed) return;
      if (Date.now() > deadline) {
        this.#logger.warn({ server: serverName }, `${serverName}: the device code expired before it was used`);
        return flow.close();
      }
      try {
        const response = await oauth.deviceCodeGrantRequest(as, client, auth, device.device_code, {
          additionalParameters: { resource: discovered.resource },
          ...this.#requestOptions(as.token_endpoint!, discovered.reach),
        });
        const tokens = await oauth.processDeviceCodeResponse(as, client, response);
        if (stopped) return;
        await this.#granted(serverName, key, discovered, client, tokens);
        return flow.close();
      } catch (error) {
        const code = error instanceof oauth.ResponseBodyError ? error.error : undefined;
        if (code === 'slow_down') intervalMs += 5000;
        else if (code !== 'authorization_pending') {
          this.#logger.warn({ server: serverName, error: oauthMessage(error) }, `${serverName}: the device authorization failed`);
          this.#options.onFailed?.(serverName, oauthMessage(error));
          return flow.close();
        }
      }
      if (stopped) return;
      timer = setTimeout(() => void poll(), intervalMs);
      timer.unref();
    };
    timer = setTimeout(() => void poll(), intervalMs);
    timer.unref();
    this.#flows.set(key, flow);
    this.#logger.info({ server: serverName, issuer: as.issuer }, `${serverName}: authorization started (device code)`);
    return {
      flow: 'device_code',
      verificationUri: device.verification_uri,
      ...(device.verification_uri_complete === undefined ? {} : { verificationUriComplete: device.verification_uri_complete }),
      userCode: device.user_code,
      expiresAt: new Date(deadline).toISOString(),
    };
  }

  async #granted(serverName: string, key: string, discovered: Discovered, client: FlowClient, tokens: oauth.TokenEndpointResponse): Promise<void> {
    const grant = { ...grantOf(discovered.resource, discovered.as, client, tokens, undefined), ...(discovered.scopes === undefined ? {} : { requestedScopes: discovered.scopes }) };
    if (discovered.scopes !== undefined) this.#requested.set(key, discovered.scopes);
    this.#remember(key, grant);
    await this.#store.write(key, grant);
    this.#grants.set(key, grant);
    this.#schedule(key, serverName, grant);
    this.#logger.info({ server: serverName, expiresInS: tokens.expires_in, refreshable: grant.refreshToken !== undefined }, `${serverName}: authorized`);
    this.#options.onAuthorized(serverName);
  }

  async #grant(key: string): Promise<StoredGrant | undefined> {
    if (this.#grants.has(key)) return this.#grants.get(key);
    const grant = await this.#store.read(key);
    if (grant !== undefined) this.#remember(key, grant);
    if (!this.#grants.has(key)) this.#grants.set(key, grant);
    return this.#grants.get(key);
  }

  /**
   * The grant in the store when it is not `grant` any more (another replica sharing the store
   * refreshed it): adopted here as a refresh of our own would be. Undefined when it is the same.
   */
  async #newerInStore(key: string, serverName: string, grant: StoredGrant): Promise<StoredGrant | undefined> {
    const stored = await this.#store.read(key);
    if (stored === undefined || (stored.accessToken === grant.accessToken && stored.refreshToken === grant.refreshToken)) return undefined;
    this.#remember(key, stored);
    this.#grants.set(key, stored);
    this.#schedule(key, serverName, stored);
    this.#options.onRefreshed(serverName);
    return stored;
  }

  /** One refresh per key at a time; undefined (and the grant deleted) when the server rejects it. */
  #refresh(key: string, serverName: string, grant: StoredGrant): Promise<StoredGrant | undefined> {
    const running = this.#refreshing.get(key);
    if (running !== undefined) return running;
    const refresh = (async (): Promise<StoredGrant | undefined> => {
      // A shared store: another replica may have refreshed this grant already; its grant is the current one.
      const newer = await this.#newerInStore(key, serverName, grant);
      if (newer !== undefined) return newer;
      // Nothing to refresh with: the grant is spent, the user authorizes again.
      if (grant.refreshToken === undefined) {
        this.#grants.set(key, undefined);
        await this.#store.remove(key);
        return undefined;
      }
      const client = storedClient(grant);
      const auth = clientAuth(client);
      try {
        // Where the token endpoint may be is judged again from the server, as at discovery.
        const reach = await reachOf(new URL(grant.resource), this.#net.resolve);
        const response = await oauth.refreshTokenGrantRequest(grant.as, client, auth, grant.refreshToken, {
          additionalParameters: { resource: grant.resource },
          // A token endpoint that never answers must not hold the refresh (and every caller of
          // the key): fetch itself would wait for minutes.
          signal: AbortSignal.timeout(this.#options.refreshTimeoutMs ?? DEFAULT_REFRESH_TIMEOUT_MS),
          ...this.#requestOptions(grant.as.token_endpoint!, reach),
        });
        const tokens = await oauth.processRefreshTokenResponse(grant.as, client, response);
        const next = { ...grantOf(grant.resource, grant.as, client, tokens, grant.refreshToken), ...(grant.requestedScopes === undefined ? {} : { requestedScopes: grant.requestedScopes }) };
        this.#remember(key, next);
        await this.#store.write(key, next);
        this.#grants.set(key, next);
        this.#schedule(key, serverName, next);
        this.#logger.info({ server: serverName, rotated: next.refreshToken !== grant.refreshToken }, `${serverName}: token refreshed`);
        this.#options.onRefreshed(serverName);
        return next;
      } catch (error) {
        const rejected = error instanceof oauth.ResponseBodyError;
        this.#logger.warn({ server: serverName, error: oauthMessage(error) }, `${serverName}: the token could not be refreshed${rejected ? '; authorize again' : ''}`);
        if (!rejected) return grant;
        // Rejected because another replica rotated the refresh token first: theirs is the grant now.
        const rotated = await this.#newerInStore(key, serverName, grant).catch(() => undefined);
        if (rotated !== undefined) return rotated;
        this.#grants.set(key, undefined);
        clearTimeout(this.#timers.get(key));
        this.#timers.delete(key);
        await this.#store.remove(key);
        return undefined;
      }
    })().finally(() => this.#refreshing.delete(key));
    this.#refreshing.set(key, refresh);
    return refresh;
  }

  /** Refreshes ahead of expiry, so calls never meet an expired token. */
  #schedule(key: string, serverName: string, grant: StoredGrant): void {
    if (this.#closed || grant.expiresAt === undefined || grant.refreshToken === undefined) return;
    clearTimeout(this.#timers.get(key));
    const delay = Math.max(1000, grant.expiresAt - Date.now() - refreshMargin(grant));
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      const current = this.#grants.get(key);
      if (current !== undefined) void this.#refresh(key, serverName, current);
    }, delay);
    timer.unref();
    this.#timers.set(key, timer);
  }

  /** A grant's tokens are credentials while it is held: a refresh replaces them, `forget` drops them. */
  #remember(key: string, grant: StoredGrant): void {
    this.#options.redactor.setCredentials(`oauth:${key}`, [grant.accessToken, grant.refreshToken, grant.client.client_secret]);
  }
}

function keyOf(config: ServerConfig, principal: string | undefined): string {
  const url = config.transport === 'http' ? (config.httpUrl ?? config.url) : (config.url ?? config.httpUrl);
  return grantKey({ resource: url ?? '', clientId: config.oauth?.clientId, principal });
}

/** A grant's refresh margin: a third of the token's lifetime, at most a minute. */
function refreshMargin(grant: StoredGrant): number {
  const lifetime = grant.lifetimeMs ?? REFRESH_MARGIN_MAX_MS * 3;
  return Math.min(REFRESH_MARGIN_MAX_MS, lifetime / 3);
}

function grantOf(resource: string, as: oauth.AuthorizationServer, client: FlowClient, tokens: oauth.TokenEndpointResponse, previousRefresh: string | undefined): StoredGrant {
  const lifetimeMs = tokens.expires_in === undefined ? undefined : tokens.expires_in * 1000;
  return {
    resource,
    as,
    client: { client_id: client.client_id, ...(client.client_secret === undefined ? {} : { client_secret: client.client_secret }), token_endpoint_auth_method: client.token_endpoint_auth_method },
    accessToken: tokens.access_token,
    // Rotation: a new refresh token replaces the old one; none given keeps the old one.
    refreshToken: tokens.refresh_token ?? previousRefresh,
    ...(lifetimeMs === undefined ? {} : { expiresAt: Date.now() + lifetimeMs, lifetimeMs }),
    ...(tokens.scope === undefined ? {} : { scope: tokens.scope }),
  };
}

/** `a ∪ b` in order (a's first), or undefined when both are. */
function union(a: readonly string[] | undefined, b: readonly string[] | undefined): string[] | undefined {
  if (a === undefined && b === undefined) return undefined;
  return [...new Set([...(a ?? []), ...(b ?? [])])];
}

/**
 * Scopes with `offline_access` added when the authorization server lists it: the daemon runs
 * for days and wants a refresh token (the MCP spec lets a client ask for it then, and only then).
 * Never added on its own: a request that names no scope leaves the choice to the server.
 */
function withOfflineAccess(as: oauth.AuthorizationServer, scopes: string[] | undefined): string[] | undefined {
  if (scopes === undefined || scopes.length === 0 || scopes.includes(OFFLINE_ACCESS) || !as.scopes_supported?.includes(OFFLINE_ACCESS)) return scopes;
  return [...scopes, OFFLINE_ACCESS];
}

function bearer(grant: StoredGrant): string {
  return `Bearer ${grant.accessToken}`;
}

/** An OAuth failure in words, never with a token in it (oauth4webapi messages name fields, not values). */
function oauthMessage(error: unknown): string {
  if (error instanceof oauth.ResponseBodyError) return `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`;
  if (error instanceof oauth.AuthorizationResponseError) return `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`;
  return (error as Error)?.message ?? String(error);
}

function listenLoopback(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** `promise`, or the rejection of `signal` once it aborts first (the promise runs on for its other callers). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: Error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
