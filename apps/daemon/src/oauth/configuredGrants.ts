/**
 * Which connections the daemon's grants may authorize, and with whose grant.
 * - A configured server's only, under its own name and with its own config (by fingerprint). A
 *   server a session injects never inherits a stored grant, not even with the URL of a configured
 *   one: the grant was given for the server the operator configured, and lending it to whoever
 *   names that URL would make the daemon a confused deputy. The injected server then gets no
 *   token and, answering 401, is `auth_required`.
 * - A grant is its principal's: the one who ran `mcpool auth` (or the REST route), used for that
 *   principal's connections only. One grant serves everybody only where the operator's config
 *   says so (`oauth.shared: true`). A connection every principal shares (a pooled `shared` remote)
 *   has no principal, so it gets the shared grant or none.
 */
import type { CredentialTarget, ServerConfig, UpstreamCredentials } from '@mcpool/core';
import { fingerprint } from '@mcpool/protocol';

/** Whose grant a connection of `principal` to `config` uses, or is stored as: `undefined` is the shared grant. */
export function grantOwner(config: ServerConfig, principal: string | undefined): string | undefined {
  return config.oauth?.shared === true ? undefined : principal;
}

export function configuredGrantsOnly(credentials: UpstreamCredentials, configured: (name: string) => ServerConfig | undefined): UpstreamCredentials {
  /** The target as the grants see it, or undefined when no grant may serve it. */
  const grantTarget = (target: CredentialTarget): CredentialTarget | undefined => {
    const config = configured(target.serverName);
    if (config === undefined || fingerprint(config) !== fingerprint(target.config)) return undefined;
    const owner = grantOwner(config, target.principal);
    // Not shared, and no one principal's connection: no grant is whose it would be.
    if (owner === undefined && config.oauth?.shared !== true) return undefined;
    return { ...target, principal: owner };
  };
  return {
    authorization: (target, options) => {
      const granted = grantTarget(target);
      return granted === undefined ? Promise.resolve(undefined) : credentials.authorization(granted, options);
    },
    refused: (target, refused, challenge) => {
      const granted = grantTarget(target);
      return granted === undefined ? Promise.resolve(undefined) : credentials.refused(granted, refused, challenge);
    },
  };
}
