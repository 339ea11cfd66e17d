/**
 * Which connections the daemon's grants may authorize: a configured server's only, under its own
 * name and with its own config (by fingerprint). A server a session injects never inherits a
 * stored grant, not even with the URL of a configured one: the grant was given for the server the
 * operator configured, and lending it to whoever names that URL would make the daemon a confused
 * deputy. The injected server then gets no token and, answering 401, is `auth_required`.
 */
import type { CredentialTarget, ServerConfig, UpstreamCredentials } from '@mcpool/core';
import { fingerprint } from '@mcpool/protocol';

export function configuredGrantsOnly(credentials: UpstreamCredentials, configured: (name: string) => ServerConfig | undefined): UpstreamCredentials {
  const isConfigured = (target: CredentialTarget): boolean => {
    const config = configured(target.serverName);
    return config !== undefined && fingerprint(config) === fingerprint(target.config);
  };
  return {
    authorization: (target, options) => (isConfigured(target) ? credentials.authorization(target, options) : Promise.resolve(undefined)),
    refused: (target, refused, challenge) => (isConfigured(target) ? credentials.refused(target, refused, challenge) : Promise.resolve(undefined)),
  };
}
