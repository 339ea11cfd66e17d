/**
 * Which client a flow authorizes as at an authorization server, and how it authenticates there.
 * In the order the MCP spec sets (client registration): the config's pre-registered
 * `oauth.clientId` (+ `clientSecret`), else mcpool's client ID metadata document URL when the
 * daemon has one and the authorization server takes them, else a client registered dynamically
 * (RFC 7591) for this flow at this authorization server.
 *
 * Client credentials belong to the authorization server that issued them, keyed by its `issuer`
 * (MCP authorization, "Authorization Server Binding"): a dynamic registration is made anew for
 * every flow at the issuer discovery names for that flow and kept only inside its grant, so one
 * server's client id or secret never reaches another; a metadata document URL is valid
 * everywhere. Pre-registered credentials cannot follow a move: see {@link checkBinding}.
 */
import * as oauth from 'oauth4webapi';
import { z } from 'zod';
import { ErrorCode, PoolError, type ServerConfig } from '@mcpool/core';
import type { SecretRedactor } from '../secrets.js';
import type { StoredGrant, TokenAuthMethod } from './tokenStore.js';

/** What a dynamic registration needs of the daemon. */
export interface Registrar {
  /** mcpool's client ID metadata document URL (`daemon.oauthClientMetadataUrl`), if it has one. */
  clientMetadataUrl?: string | undefined;
  /** A registered secret is a secret from the moment it is known. */
  redactor: SecretRedactor;
  /** How a request to `url` is made: the guarded fetch of the flow's reach, http allowed on loopback. */
  requestOptions(url: string): { [oauth.customFetch]: typeof fetch; [oauth.allowInsecureRequests]?: boolean };
}

/**
 * The client a flow at `as` authorizes as, and its token endpoint authentication.
 *
 * @throws PoolError AUTH_FAILED (no way to get a client there, or the registration failed)
 */
export async function clientFor(config: ServerConfig, as: oauth.AuthorizationServer, registrar: Registrar, redirectUris: string[], grantTypes: string[]): Promise<{ client: FlowClient; auth: oauth.ClientAuth }> {
  const { clientId, clientSecret } = config.oauth ?? {};
  if (clientId !== undefined) {
    const client: FlowClient = { client_id: clientId, ...(clientSecret === undefined ? {} : { client_secret: clientSecret }), token_endpoint_auth_method: authMethodFor(as, clientSecret, undefined) };
    return { client, auth: clientAuth(client) };
  }
  const metadataUrl = registrar.clientMetadataUrl;
  if (metadataUrl !== undefined && as.client_id_metadata_document_supported === true) {
    const client: FlowClient = { client_id: metadataUrl, token_endpoint_auth_method: 'none' };
    return { client, auth: clientAuth(client) };
  }
  if (as.registration_endpoint === undefined) {
    throw new PoolError(ErrorCode.AUTH_FAILED, `the authorization server ${as.issuer} offers no dynamic client registration${metadataUrl === undefined && as.client_id_metadata_document_supported === true ? ' (it takes client ID metadata documents: set daemon.oauthClientMetadataUrl)' : ''}: set oauth.clientId (and clientSecret) in the server's config`);
  }
  try {
    const response = await oauth.dynamicClientRegistrationRequest(
      as,
      { client_name: 'mcpool', redirect_uris: redirectUris, grant_types: grantTypes, response_types: redirectUris.length > 0 ? ['code'] : [], token_endpoint_auth_method: 'none', application_type: 'native' },
      registrar.requestOptions(as.registration_endpoint),
    );
    const registered = await registrationOf(response);
    // The grant that follows holds the client secret (and replaces this owner's entry); until then it is this registration's.
    registrar.redactor.setCredentials(`oauth-client:${registered.client_id}`, [registered.client_secret]);
    const client: FlowClient = {
      client_id: registered.client_id,
      ...(registered.client_secret === undefined ? {} : { client_secret: registered.client_secret }),
      token_endpoint_auth_method: authMethodFor(as, registered.client_secret, registered.token_endpoint_auth_method),
    };
    return { client, auth: clientAuth(client) };
  } catch (error) {
    throw new PoolError(ErrorCode.AUTH_FAILED, `dynamic client registration at ${as.issuer} failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
  }
}

/**
 * A new authorization of `serverName` at `as`, when its last grant was issued to the configured
 * `oauth.clientId` by another issuer: the protected resource moved to another authorization
 * server, and pre-registered credentials belong to the one that issued them. They are not
 * presented to the new one unasked (the MCP spec asks a client to say so rather than try a
 * mismatched pair): the grant of the old server is dropped by the caller and the user told what
 * to do. Nothing to check for a dynamically registered client or a metadata document URL.
 *
 * @returns the refusal to throw, or undefined when the flow may go on
 */
export function bindingRefusal(serverName: string, config: ServerConfig, previous: StoredGrant | undefined, as: oauth.AuthorizationServer): PoolError | undefined {
  const clientId = config.oauth?.clientId;
  if (clientId === undefined || previous === undefined || previous.client.client_id !== clientId || previous.as.issuer === as.issuer) return undefined;
  return new PoolError(
    ErrorCode.AUTH_FAILED,
    `${serverName} now names the authorization server ${as.issuer}, but its oauth.clientId was issued by ${previous.as.issuer}: client credentials belong to the server that issued them. Register mcpool at ${as.issuer} and set oauth.clientId (and clientSecret) to that client; to use the configured one there anyway, run \`mcpool auth ${serverName}\` again (the grant of ${previous.as.issuer} is dropped)`,
    { data: { serverName, issuer: as.issuer, previousIssuer: previous.as.issuer } },
  );
}

/** A client as a flow uses it: its id, its secret if it has one, and how it authenticates at the token endpoint. */
export type FlowClient = oauth.Client & { client_id: string; client_secret?: string; token_endpoint_auth_method: TokenAuthMethod };

/**
 * How a client authenticates at the token endpoint: as its registration answered, else, with a
 * secret, the way the server lists (`client_secret_basic`, which RFC 8414 §2 makes the default
 * when it lists none, before `client_secret_post`); without a secret, `none`.
 */
function authMethodFor(as: oauth.AuthorizationServer, secret: string | undefined, registered: string | undefined): TokenAuthMethod {
  if (secret === undefined || registered === 'none') return 'none';
  if (registered === 'client_secret_basic' || registered === 'client_secret_post') return registered;
  const supported = as.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
  return !supported.includes('client_secret_basic') && supported.includes('client_secret_post') ? 'client_secret_post' : 'client_secret_basic';
}

/**
 * `client_secret_basic` as RFC 6749 §2.3.1 writes it: id and secret each form-urlencoded (the
 * WHATWG algorithm: `-`, `.`, `_`, `*` stay as they are), joined by `:`, in base64.
 * `oauth4webapi`'s own also escapes `-` and `.`, which servers that do not decode (several do
 * not) read as another client id.
 */
function clientSecretBasic(clientSecret: string): oauth.ClientAuth {
  const encode = (value: string): string => new URLSearchParams([['', value]]).toString().slice(1);
  return (_as, client, _body, headers) => {
    headers.set('authorization', `Basic ${Buffer.from(`${encode(client.client_id)}:${encode(clientSecret)}`).toString('base64')}`);
  };
}

export function clientAuth(client: FlowClient): oauth.ClientAuth {
  if (client.token_endpoint_auth_method === 'client_secret_basic') return clientSecretBasic(client.client_secret ?? '');
  if (client.token_endpoint_auth_method === 'client_secret_post') return oauth.ClientSecretPost(client.client_secret ?? '');
  return oauth.None();
}

/** The client of a stored grant (one kept before methods were stored sent its secret in the body). */
export function storedClient(grant: StoredGrant): FlowClient {
  const { client_id, client_secret } = grant.client;
  const method = grant.client.token_endpoint_auth_method ?? (client_secret === undefined ? 'none' : 'client_secret_post');
  return { client_id, ...(client_secret === undefined ? {} : { client_secret }), token_endpoint_auth_method: method };
}

/** What a registration answered (RFC 7591 §3.2.1). Read leniently: servers omit `client_secret_expires_at`, which the RFC requires with a secret. */
const registrationSchema = z.looseObject({ client_id: z.string().min(1), client_secret: z.string().min(1).optional(), token_endpoint_auth_method: z.string().optional() });

async function registrationOf(response: Response): Promise<z.infer<typeof registrationSchema>> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new Error(`the registration endpoint answered HTTP ${response.status} without JSON`);
  }
  if (response.status !== 201 && response.status !== 200) {
    const error = body as { error?: unknown; error_description?: unknown } | null;
    throw new Error(`the registration endpoint answered HTTP ${response.status}${typeof error?.error === 'string' ? `: ${error.error}` : ''}${typeof error?.error_description === 'string' ? `: ${error.error_description}` : ''}`);
  }
  const parsed = registrationSchema.safeParse(body);
  if (!parsed.success) throw new Error(`the registration answer is not usable: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
