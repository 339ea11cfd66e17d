/**
 * What each 2026-07-28 method means at the gateway, one handler each, over the caller's held
 * views (the same aggregate and directory the legacy session reads):
 * - `server/discover`: the capabilities and instructions of the servers behind the endpoint;
 * - the four lists: the directory's, in its one order, carrying `cacheScope: "private"` and
 *   `ttlMs: 0` (they vary by who asks, and a listen stream says when they change);
 * - `tools/call`, `prompts/get`, `resources/read`, `completion/complete`: resolved by name or
 *   URI, then forwarded as the same method (`forward.ts`); a tool call's `Mcp-Param-*` headers
 *   are checked against the tool's own schema first;
 * - `subscriptions/listen`: a listen stream (`listen.ts`).
 * A server the caller has not used yet is waited for until the host's join deadline.
 */
import { ErrorCode } from '@mcpool/protocol';
import { MODERN_META } from '@mcpool/protocol/modernMeta';
import type { GatewayAccess } from '../aggregate/access.js';
import {
  capabilitiesOf,
  instructionsOf,
  listPrompts,
  listResources,
  listResourceTemplates,
  resolveCompletion,
  resolveName,
  resolveUri,
  serverInfoOf,
} from '../aggregate/directory.js';
import { endpointTools, resolveToolCall } from '../aggregate/search.js';
import { stringParam } from '../rpcErrors.js';
import { listResult, refusalAnswer, result, type ModernAnswer } from './answers.js';
import type { Continuations } from './continuations.js';
import type { UpstreamStates } from './upstreamStates.js';
import { forward, type ForwardContext } from './forward.js';
import { paramHeaderMismatch } from './headers.js';
import type { Holds } from './holds.js';
import { asRecord } from '../json.js';


/** One routed request: who asks, on which endpoint, with what access. */
export interface HandlerContext extends ForwardContext {
  principal: string;
  access: GatewayAccess;
}

export type Handler = (ctx: HandlerContext) => Promise<ModernAnswer>;

export interface HandlerDeps {
  continuations: Continuations;
  /** Modern servers' own `requestState`s, enveloped for the caller they were given to. */
  upstreamStates: UpstreamStates;
  holds: Holds;
  /** The protocol revisions served. */
  versions: readonly string[];
  /** `serverInfo.version` of the aggregating endpoint. */
  version: string;
  joinDeadline?(name: string): number;
  observeCall?(server: string, ok: boolean, seconds: number): void;
  admitListen?(principal: string): { code: ErrorCode; message: string } | undefined;
  /** The most distinct resource URIs one listen may subscribe to. */
  maxListenSubscriptions?: number;
}

/** The method table: the router dispatches a request to the handler its method names. */
export function modernHandlers(deps: HandlerDeps): Readonly<Record<string, Handler>> {
  const { holds } = deps;
  const states = { continuations: deps.continuations, upstream: deps.upstreamStates };
  /** The caller's servers, joined (each waited for until its deadline). */
  const joined = async (ctx: HandlerContext): Promise<void> => {
    await ctx.hold.aggregate.join(ctx.access, deps.joinDeadline === undefined ? undefined : (name) => deps.joinDeadline!(name));
  };
  const binding = (ctx: HandlerContext, method: string, name: string) => ({ principal: ctx.principal, scope: ctx.hold.scope, method, name });
  /** A list method: the directory's list, once the caller's servers joined. */
  const listing =
    (key: string, list: (aggregate: HandlerContext['hold']['aggregate'], access: GatewayAccess) => Record<string, unknown>[]): Handler =>
    async (ctx) => {
      await joined(ctx);
      return listResult(ctx.id, { [key]: list(ctx.hold.aggregate, ctx.access) });
    };

  return {
    'server/discover': async (ctx) => {
      await joined(ctx);
      const { aggregate } = ctx.hold;
      const instructions = instructionsOf(aggregate, ctx.access);
      return result(ctx.id, {
        supportedVersions: [...deps.versions],
        capabilities: capabilitiesOf(aggregate, ctx.access),
        ...(instructions ? { instructions } : {}),
        ttlMs: 0,
        cacheScope: 'private',
        resultType: 'complete',
        _meta: { [MODERN_META.serverInfo]: serverInfoOf(aggregate, ctx.access, deps.version) },
      });
    },
    'tools/list': listing('tools', endpointTools),
    'prompts/list': listing('prompts', listPrompts),
    'resources/list': listing('resources', listResources),
    'resources/templates/list': listing('resourceTemplates', listResourceTemplates),
    'tools/call': async (ctx) => {
      // A search reads every server's list, as a list request does.
      if (ctx.hold.aggregate.search) await joined(ctx);
      const call = await resolveToolCall(ctx.hold.aggregate, ctx.access, ctx.params);
      if (call.kind === 'answer') return result(ctx.id, { ...call.result, resultType: 'complete' });
      const { resolved, asked } = call;
      // The Mcp-Param-* headers mirror the arguments of the tool the request names (a search view's call_tool declares none).
      if (!ctx.hold.aggregate.search) {
        const schema = resolved.view.tools.find((tool) => tool.name === resolved.name)?.inputSchema;
        const mismatch = paramHeaderMismatch(schema, asRecord(ctx.params.arguments) ?? {}, ctx.headers);
        if (mismatch !== undefined) return refusalAnswer(ctx.id, { code: ErrorCode.HEADER_MISMATCH, message: `Bad Request: the request headers and body disagree: ${mismatch}` });
      }
      const started = performance.now();
      let ok = false;
      try {
        const answer = await forward(states, holds, ctx, resolved.view, 'tools/call', call.params, { binding: binding(ctx, 'tools/call', asked), requested: { kind: 'tool', name: asked }, name: asked });
        ok = true;
        return answer;
      } finally {
        deps.observeCall?.(resolved.server, ok, (performance.now() - started) / 1000);
      }
    },
    'prompts/get': async (ctx) => {
      const asked = stringParam(ctx.params, 'name');
      const { name, view } = await resolveName(ctx.hold.aggregate, ctx.access, 'prompt', asked);
      return forward(states, holds, ctx, view, 'prompts/get', { ...ctx.params, name }, { binding: binding(ctx, 'prompts/get', asked), requested: { kind: 'prompt', name: asked }, name: asked });
    },
    'resources/read': async (ctx) => {
      const uri = stringParam(ctx.params, 'uri');
      await joined(ctx);
      const { view } = await resolveUri(ctx.hold.aggregate, ctx.access, uri);
      return forward(states, holds, ctx, view, 'resources/read', ctx.params, { binding: binding(ctx, 'resources/read', uri), name: uri });
    },
    'completion/complete': async (ctx) => {
      await joined(ctx);
      const target = await resolveCompletion(ctx.hold.aggregate, ctx.access, ctx.params);
      return forward(states, holds, ctx, target.view, 'completion/complete', target.params, { requested: target.asked, name: target.named });
    },
    'subscriptions/listen': async (ctx) => {
      await joined(ctx);
      return ctx.hold.listens.open({
        id: ctx.id,
        params: ctx.params,
        access: ctx.access,
        signal: ctx.signal,
        ...(deps.admitListen === undefined ? {} : { admit: () => deps.admitListen!(ctx.principal) }),
        ...(deps.maxListenSubscriptions === undefined ? {} : { maxSubscriptions: deps.maxListenSubscriptions }),
      });
    },
  };
}

