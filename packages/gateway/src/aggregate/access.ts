/**
 * What a caller may use through the router: which servers, and which of their tools and prompts.
 * The host decides (its tokens, its config) and passes one per request, so a narrowed client is
 * narrowed on its next request, on lists and calls alike.
 */
export interface GatewayAccess {
  /** Configured servers this caller may list and call. */
  readonly servers: ReadonlySet<string>;
  /** Whether the tool or prompt `name` of `server` is visible and callable. */
  allows(server: string, name: string): boolean;
}
