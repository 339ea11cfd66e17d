/**
 * The capabilities a gateway endpoint announces, from the capabilities of the servers behind it
 * (either era's callers get the same): the aggregating endpoint always has tools (possibly none
 * yet), and every list change is forwarded, so each list kind announces `listChanged`.
 */
export interface EndpointCapabilities {
  tools?: { listChanged: true };
  prompts?: { listChanged: true };
  resources?: { listChanged: true; subscribe?: true };
  logging?: Record<string, never>;
  completions?: Record<string, never>;
}

/**
 * @param aggregating true for the endpoint that serves every server as `<server>__<name>`.
 * @param servers the capabilities of each server with a live view.
 * @param joining true while a server of the endpoint is still starting: it may bring any of the
 *   lists, and a legacy session cannot add a capability later, so prompts and resources are
 *   announced up front (empty until it joins).
 */
export function endpointCapabilities(aggregating: boolean, servers: readonly Record<string, unknown>[], joining = false): EndpointCapabilities {
  const has = (kind: string) => servers.some((caps) => caps[kind] !== undefined && caps[kind] !== null);
  const out: EndpointCapabilities = {};
  if (aggregating || has('tools')) out.tools = { listChanged: true };
  if (joining || has('prompts')) out.prompts = { listChanged: true };
  if (joining || has('resources')) {
    const subscribe = servers.some((caps) => (caps.resources as { subscribe?: unknown } | undefined)?.subscribe === true);
    out.resources = { listChanged: true, ...(subscribe ? { subscribe: true as const } : {}) };
  }
  if (has('logging')) out.logging = {};
  if (has('completions')) out.completions = {};
  return out;
}
