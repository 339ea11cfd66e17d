/**
 * The gateway as a protected resource (RFC 9728), so an MCP client signs its user in by itself:
 * - a 401 carries `WWW-Authenticate: Bearer resource_metadata="<url>"` (RFC 9728 §5.1), with
 *   `error="invalid_token"` and why when a token was sent and refused (RFC 6750 §3);
 * - the metadata is published where a client looks for it, the well-known path inserted before
 *   the resource's path (`/.well-known/oauth-protected-resource/mcp`, and `…/mcp/<server>` for one
 *   server's endpoint), and at the root for clients that only try there;
 * - each endpoint is a resource of its own (`<resource>` and `<resource>/<server>`: RFC 9728 §3.3
 *   wants the document's `resource` to be the URL it was asked for), and a token for any of them
 *   is a token for the gateway.
 */
import type { UsersSettings } from '../config/teamSettings.js';
import type { RefusalReason } from './jwtUsers.js';

export const METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The Protected Resource Metadata document (RFC 9728 §2). */
export interface ResourceMetadata {
  resource: string;
  authorization_servers: string[];
  bearer_methods_supported: ['header'];
  scopes_supported?: string[];
  resource_name: string;
}

export class ProtectedResource {
  readonly #settings: UsersSettings;
  readonly #servers: () => readonly string[];
  /** The resource's own path (`/mcp`), without a trailing slash. */
  readonly #path: string;
  readonly #origin: string;

  /** @param servers the configured server names (each has an endpoint of its own) */
  constructor(settings: UsersSettings, servers: () => readonly string[]) {
    this.#settings = settings;
    this.#servers = servers;
    const url = new URL(settings.resource);
    this.#origin = url.origin;
    this.#path = url.pathname.replace(/\/$/, '');
  }

  /** The audiences a token may be for: the configured ones, and each server endpoint's resource. */
  audiences(): string[] {
    return [...this.#settings.audience, ...this.#servers().map((name) => this.#serverResource(name))];
  }

  /**
   * The metadata served at `METADATA_PATH + suffix`, or undefined (404) for a suffix that names
   * no endpoint of the gateway. The root and the resource's own path describe the gateway.
   */
  metadata(suffix: string): ResourceMetadata | undefined {
    const resource = this.#resourceAt(suffix);
    if (resource === undefined) return undefined;
    const scopes = Object.keys(this.#settings.scopeRights);
    return {
      resource,
      authorization_servers: [this.#settings.issuer],
      bearer_methods_supported: ['header'],
      ...(scopes.length > 0 ? { scopes_supported: scopes } : {}),
      resource_name: 'mcpool',
    };
  }

  /**
   * The `WWW-Authenticate` value of a 401 (or, with `insufficientScope`, a 403) for a request to
   * `requestPath`: where its resource's metadata is, and what was wrong with the token sent.
   */
  challenge(requestPath: string, refusal?: { reason: RefusalReason; description: string } | { insufficientScope: string }): string {
    const parts = [`realm="mcpool"`, `resource_metadata="${this.#metadataUrl(requestPath)}"`];
    if (refusal !== undefined && 'reason' in refusal) parts.push(`error="invalid_token"`, `error_description="${refusal.description}"`);
    if (refusal !== undefined && 'insufficientScope' in refusal) parts.push(`error="insufficient_scope"`, `scope="${refusal.insufficientScope}"`);
    return `Bearer ${parts.join(', ')}`;
  }

  /** A scope that grants `right`, for a step-up challenge; undefined when none does. */
  scopeFor(right: string): string | undefined {
    return Object.entries(this.#settings.scopeRights).find(([, rights]) => (rights as string[]).includes(right))?.[0];
  }

  #serverResource(name: string): string {
    return `${this.#origin}${this.#path}/${encodeURIComponent(name)}`;
  }

  /** Where the metadata of the endpoint `requestPath` is served; the gateway's for any other path. */
  #metadataUrl(requestPath: string): string {
    const server = this.#serverOf(requestPath);
    const path = server === undefined ? this.#path : `${this.#path}/${encodeURIComponent(server)}`;
    return `${this.#origin}${METADATA_PATH}${path}`;
  }

  /** The configured server whose endpoint `path` is (`/mcp/<server>`), if any. */
  #serverOf(path: string): string | undefined {
    const prefix = `${this.#path}/`;
    if (!path.startsWith(prefix)) return undefined;
    let name: string;
    try {
      name = decodeURIComponent(path.slice(prefix.length));
    } catch {
      return undefined;
    }
    return this.#servers().includes(name) ? name : undefined;
  }

  #resourceAt(suffix: string): string | undefined {
    const path = suffix.replace(/\/$/, '');
    if (path === '' || path === this.#path) return this.#settings.resource;
    const server = this.#serverOf(path);
    return server === undefined ? undefined : this.#serverResource(server);
  }
}
