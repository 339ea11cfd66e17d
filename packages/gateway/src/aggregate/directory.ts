/**
 * What a gateway caller sees of its servers, by name, the same in both eras:
 * - lists: every live view of the servers its access allows, and the catalog of each cold one
 *   (a server started on first use: a request that needs it starts it); tools and prompts the access hides
 *   are left out, and the pool's own `trust` field is not passed on; on the aggregating endpoint
 *   tools and prompts are `<server>__<name>`. One order, whatever order the servers joined in:
 *   by the name the caller sees (tools, prompts), by URI (resources), by URI template
 *   (templates), compared as strings — so two calls list alike and a client's cache stays valid;
 * - a name resolves to its server and the server's own name only when the access allows it and
 *   the server's view lists it; unknown and forbidden answer alike (one refusal, no `data`);
 * - a resource URI belongs to the server listing it, else the one with a template matching it,
 *   else the only server with resources; a server's own endpoint sends every URI to its server;
 * - completion goes where its `ref` resolves (a prompt by name, a resource by URI);
 * - capabilities merge over the live views (`capabilities.ts`); instructions are each server's
 *   under its name on the aggregating endpoint, the server's own on a server's endpoint.
 */
import type { PooledConnection, ToolInfo } from '@mcpool/core';
import { JsonRpcCode } from '@mcpool/protocol/errorCodes';
import { resourceNotFound, unknownName } from '@mcpool/protocol/refusals';
import { RpcError } from '../rpcErrors.js';
import type { GatewayAccess } from './access.js';
import type { Aggregate, Listed, Listing } from './aggregate.js';
import { endpointCapabilities, type EndpointCapabilities } from './capabilities.js';
import { qualify, splitQualified, templateMatches } from './naming.js';
import { asRecord, forwardedParams, type Params } from '../json.js';


/** A name as the caller asked for it, and what it resolved to. */
export interface Resolved {
  server: string;
  /** The server's own name for the tool or prompt. */
  name: string;
  view: PooledConnection;
}

/**
 * A server's tools as a caller sees them (no `trust`; `<server>__<name>` on the aggregating
 * endpoint, `qualifiedAs`), made once per tool list and name: a view's list and a catalog's are
 * replaced, never changed, when the server's tools change, and every caller of every session
 * lists the same ones. Parallel to the list (the caller's access filters by index).
 */
const shownTools = new WeakMap<readonly ToolInfo[], Map<string, ToolInfo[]>>();

function toolsShown(tools: readonly ToolInfo[], qualifiedAs: string | undefined): ToolInfo[] {
  let byName = shownTools.get(tools);
  if (byName === undefined) shownTools.set(tools, (byName = new Map<string, ToolInfo[]>()));
  const key = qualifiedAs ?? '';
  let shown = byName.get(key);
  if (shown === undefined) {
    shown = tools.map(({ trust: _trust, ...tool }: ToolInfo & { trust?: boolean }) => (qualifiedAs === undefined ? tool : { ...tool, name: qualify(qualifiedAs, tool.name) }));
    byName.set(key, shown);
  }
  return shown;
}

export function listTools(aggregate: Aggregate, access: GatewayAccess): Params[] {
  const qualified = aggregate.scope === undefined;
  const tools: ToolInfo[] = [];
  for (const { name: server, view } of aggregate.listed(access)) {
    const shown = toolsShown(view.tools, qualified ? server : undefined);
    for (let i = 0; i < shown.length; i++) if (access.allows(server, view.tools[i]!.name)) tools.push(shown[i]!);
  }
  return tools.sort(byKey('name'));
}

export function listPrompts(aggregate: Aggregate, access: GatewayAccess): Params[] {
  const qualified = aggregate.scope === undefined;
  const prompts = aggregate.listed(access).flatMap(({ name: server, view }) =>
    view.prompts.filter((prompt) => access.allows(server, prompt.name)).map((prompt) => (qualified ? { ...prompt, name: qualify(server, prompt.name) } : prompt)),
  );
  return prompts.sort(byKey('name'));
}

export function listResources(aggregate: Aggregate, access: GatewayAccess): Params[] {
  return aggregate.listed(access).flatMap(({ view }) => view.resources).sort(byKey('uri'));
}

export function listResourceTemplates(aggregate: Aggregate, access: GatewayAccess): Params[] {
  return aggregate.listed(access).flatMap(({ view }) => view.resourceTemplates).sort(byKey('uriTemplate'));
}

/**
 * `<server>__<name>` (the bare name on a server's endpoint) → its server, the server's own name
 * and the view (acquired now if it has none).
 * @throws the unknown-name refusal; the server-unavailable one when its view cannot be had.
 */
export async function resolveName(aggregate: Aggregate, access: GatewayAccess, kind: 'tool' | 'prompt', asked: string): Promise<Resolved> {
  const servers = aggregate.servers(access);
  const found = aggregate.scope === undefined ? splitQualified(asked, servers) : servers.length > 0 ? { server: aggregate.scope, name: asked } : undefined;
  if (found === undefined || !access.allows(found.server, found.name)) throw unknownName(kind, asked);
  const view = await aggregate.viewOf(found.server);
  // A name the caller's view does not list is unknown, whoever would refuse it upstream.
  const listed = kind === 'tool' ? view.tools.some((tool) => tool.name === found.name) : view.prompts.some((prompt) => prompt.name === found.name);
  if (!listed) throw unknownName(kind, asked);
  return { server: found.server, name: found.name, view };
}

/** The server a resource URI belongs to, and its view (a cold server is started). @throws the resource-not-found refusal. */
export async function resolveUri(aggregate: Aggregate, access: GatewayAccess, uri: string): Promise<{ server: string; view: PooledConnection }> {
  if (aggregate.scope !== undefined) {
    const [server] = aggregate.servers(access);
    if (server === undefined) throw resourceNotFound(uri);
    return { server, view: await aggregate.viewOf(server) };
  }
  const candidates = aggregate.listed(access).filter(({ view }) => view.capabilities.resources !== undefined);
  const found: Listed | undefined =
    candidates.find(({ view }) => ownsUri(view, uri, false)) ?? candidates.find(({ view }) => ownsUri(view, uri, true)) ?? (candidates.length === 1 ? candidates[0] : undefined);
  if (found === undefined) throw resourceNotFound(uri);
  return { server: found.name, view: await aggregate.viewOf(found.name) };
}

/** Whether `view` lists `uri` (or, `byTemplate`, has a template matching it). */
export function ownsUri(view: Listing, uri: string, byTemplate = true): boolean {
  if (view.resources.some((resource) => resource.uri === uri)) return true;
  return byTemplate && view.resourceTemplates.some((template) => templateMatches(template.uriTemplate, uri));
}

/**
 * Where a `completion/complete` goes (`named`: the prompt as asked, or the URI), and its params
 * as the server must see them: a prompt's own name, no `_meta` (the caller's goes as the call's
 * own, never with its progress token).
 * @throws a -32602 error for a `ref` that names neither a prompt nor a resource.
 */
export async function resolveCompletion(
  aggregate: Aggregate,
  access: GatewayAccess,
  params: Params,
): Promise<{ server: string; view: PooledConnection; params: Params; asked: { kind: 'prompt'; name: string } | undefined; named: string }> {
  const body = forwardedParams(params);
  const ref = asRecord(body.ref) ?? {};
  if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
    const asked = ref.name;
    const { server, name, view } = await resolveName(aggregate, access, 'prompt', asked);
    return { server, view, params: { ...body, ref: { ...ref, name } }, asked: { kind: 'prompt', name: asked }, named: asked };
  }
  if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
    const { server, view } = await resolveUri(aggregate, access, ref.uri);
    return { server, view, params: body, asked: undefined, named: ref.uri };
  }
  throw new RpcError(JsonRpcCode.INVALID_PARAMS, 'completion/complete needs a ref of type ref/prompt (with a name) or ref/resource (with a uri)');
}

/** The capabilities of the servers the caller may use (`joining`: a server of the endpoint is still starting). */
export function capabilitiesOf(aggregate: Aggregate, access: GatewayAccess, joining = false): EndpointCapabilities {
  return endpointCapabilities(aggregate.scope === undefined, aggregate.listed(access).map(({ view }) => view.capabilities), joining);
}

/** Each server's instructions under its name (the aggregating endpoint), or the one server's own. */
export function instructionsOf(aggregate: Aggregate, access: GatewayAccess): string | undefined {
  const live = aggregate.listed(access);
  if (aggregate.scope !== undefined) return live[0]?.view.instructions;
  const merged = live
    .filter(({ view }) => view.instructions)
    .map(({ name, view }) => `## ${name}\n${view.instructions}`)
    .join('\n\n');
  return merged === '' ? undefined : merged;
}

/** The endpoint's `serverInfo`: the server's own on its endpoint, mcpool's on the aggregating one. */
export function serverInfoOf(aggregate: Aggregate, access: GatewayAccess, version: string): Params {
  const own = aggregate.scope === undefined ? undefined : aggregate.listed(access)[0]?.view.serverInfo;
  return own ?? { name: 'mcpool', version };
}


function byKey<K extends string>(key: K): (a: Record<K, unknown>, b: Record<K, unknown>) => number {
  return (a, b) => {
    const x = String(a[key]);
    const y = String(b[key]);
    return x < y ? -1 : x > y ? 1 : 0;
  };
}
