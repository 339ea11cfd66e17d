/**
 * The tool-search view (`/mcp/~search`): the servers of the aggregating endpoint behind two
 * tools, so a client with many servers spends a few hundred tokens on tool schemas instead of
 * every server's:
 * - `search_tools` ranks, by full text (MiniSearch: BM25 with prefix and fuzzy terms), the tools
 *   the caller may see — their names, titles, descriptions and argument names, live or from a
 *   cold server's catalog — and answers the best ones with their input schemas;
 * - `call_tool` calls one of them by the name `search_tools` gave (`<server>__<tool>`), resolved
 *   exactly as the aggregating endpoint resolves a call, so the caller's filters and access rules
 *   hold: a tool the caller may not see is neither found nor callable, and the two refusals read
 *   alike. The rest of the call's params (unknown ones too) are forwarded with it.
 * Prompts and resources are the aggregating endpoint's, unchanged.
 */
import MiniSearch from 'minisearch';
import { JsonRpcCode } from '@mcpool/protocol/errorCodes';
import { unknownName } from '@mcpool/protocol/refusals';
import { RpcError, stringParam } from '../rpcErrors.js';
import type { GatewayAccess } from './access.js';
import type { Aggregate } from './aggregate.js';
import { listTools, resolveName, type Resolved } from './directory.js';
import { splitQualified } from './naming.js';
import { asRecord, forwardedParams, type Params } from '../json.js';

/** The path segment of the search view under `/mcp/`; `~` is not in a server name a URL would carry unescaped. */
export const SEARCH_ENDPOINT = '~search';

export const SEARCH_TOOL = 'search_tools';
export const CALL_TOOL = 'call_tool';

/** Matches answered when the caller asks for no `limit`, and the most it may ask for. */
export const SEARCH_LIMIT_DEFAULT = 10;
export const SEARCH_LIMIT_MAX = 50;

/** The two tools the search view lists, in the list order. */
export const SEARCH_VIEW_TOOLS: readonly Params[] = [
  {
    name: CALL_TOOL,
    title: 'Call a tool',
    description: `Calls a tool that ${SEARCH_TOOL} found, by the name it gave, with the arguments its input schema asks for.`,
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', description: `The tool's name as ${SEARCH_TOOL} gave it (<server>__<tool>).` },
        arguments: { type: 'object', description: "The tool's arguments, as its input schema says." },
      },
      required: ['name'],
    },
  },
  {
    name: SEARCH_TOOL,
    title: 'Search tools',
    description: `Finds tools of every server you can use by words of their names, descriptions and arguments; answers the best matches with their input schemas. Call one with ${CALL_TOOL}.`,
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Words describing what the tool should do.' },
        limit: { type: 'integer', minimum: 1, maximum: SEARCH_LIMIT_MAX, description: `How many tools at most (default ${SEARCH_LIMIT_DEFAULT}).` },
      },
      required: ['query'],
    },
    annotations: { readOnlyHint: true },
  },
];

/** The tools an endpoint lists: the search view's two, else the directory's. */
export function endpointTools(aggregate: Aggregate, access: GatewayAccess): Params[] {
  return aggregate.search ? [...SEARCH_VIEW_TOOLS] : listTools(aggregate, access);
}

/** A tool as `search_tools` answers it. */
export interface FoundTool {
  name: string;
  server: string;
  title?: string;
  description?: string;
  inputSchema: unknown;
  score: number;
}

interface Document {
  id: string;
  server: string;
  words: string;
  title: string;
  description: string;
  args: string;
}

/** Splits names into words: `get_issue`, `getIssue` and `github__get-issue` all read "get issue". */
function words(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/gu, '$1 $2')
    .replace(/[_\-.:/]+/gu, ' ')
    .toLowerCase();
}

/** A caller's index, kept while the tools it was built from stay the same. */
interface Indexed {
  signature: string;
  index: MiniSearch<Document>;
  byId: Map<string, { tool: Params; server: string }>;
}

/** One index per caller (its aggregate): building one over 250 tools costs tens of ms, searching it one. */
const indexes = new WeakMap<Aggregate, Indexed>();

/** Short words every description has; fuzzy matching is for words long enough to be misspelt. */
const STOP_WORDS = new Set(['a', 'an', 'and', 'for', 'from', 'in', 'of', 'on', 'or', 'the', 'to', 'with']);
const SEARCH_OPTIONS = {
  prefix: true,
  fuzzy: (term: string) => (term.length > 4 ? 0.2 : false),
  combineWith: 'OR',
  boost: { words: 3, title: 2, server: 1.5, args: 1.2 },
} as const;

function indexOf(aggregate: Aggregate, access: GatewayAccess): Indexed {
  const servers = aggregate.servers(access);
  const byId = new Map<string, { tool: Params; server: string }>();
  const documents: Document[] = [];
  for (const tool of listTools(aggregate, access)) {
    const id = String(tool.name);
    const split = splitQualified(id, servers);
    if (split === undefined) continue;
    byId.set(id, { tool, server: split.server });
    const properties = asRecord(asRecord(tool.inputSchema)?.properties) ?? {};
    documents.push({
      id,
      server: words(split.server),
      words: words(split.name),
      title: typeof tool.title === 'string' ? tool.title : '',
      description: typeof tool.description === 'string' ? tool.description : '',
      args: Object.keys(properties).map(words).join(' '),
    });
  }
  const signature = JSON.stringify(documents);
  const kept = indexes.get(aggregate);
  if (kept?.signature === signature) return { ...kept, byId };
  const index = new MiniSearch<Document>({
    fields: ['words', 'server', 'title', 'description', 'args'],
    storeFields: [],
    processTerm: (term) => {
      const lower = term.toLowerCase();
      return STOP_WORDS.has(lower) ? null : lower;
    },
  });
  index.addAll(documents);
  const indexed = { signature, index, byId };
  indexes.set(aggregate, indexed);
  return indexed;
}

/** Ranks the tools `access` lets the caller see on the aggregate's servers by `query`. */
export function searchTools(aggregate: Aggregate, access: GatewayAccess, query: string, limit: number): FoundTool[] {
  const { index, byId } = indexOf(aggregate, access);
  const hits = index.search(query, SEARCH_OPTIONS);
  return hits.slice(0, limit).map((hit) => {
    const { tool, server } = byId.get(String(hit.id))!;
    return {
      name: String(tool.name),
      server,
      ...(typeof tool.title === 'string' ? { title: tool.title } : {}),
      ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
      inputSchema: tool.inputSchema,
      score: Math.round(hit.score * 1000) / 1000,
    };
  });
}

/** A `tools/call` on an endpoint: answered by the gateway itself (the search), or forwarded to a server's tool. */
export type ToolCall =
  | { kind: 'answer'; result: Params }
  | { kind: 'forward'; resolved: Resolved; params: Params; /** The name as the caller's request gave it. */ asked: string };

/**
 * What a `tools/call` with `params` is on `aggregate`'s endpoint. On every endpoint but the
 * search view, the tool `params.name` resolves as the directory says; on the search view it is
 * one of its two tools.
 * @throws the unknown-name refusal; -32602 for a search without a query or a call without a name.
 */
export async function resolveToolCall(aggregate: Aggregate, access: GatewayAccess, params: Params): Promise<ToolCall> {
  const asked = stringParam(params, 'name');
  if (!aggregate.search) {
    const resolved = await resolveName(aggregate, access, 'tool', asked);
    return { kind: 'forward', resolved, params: { ...forwardedParams(params), name: resolved.name }, asked };
  }
  const args = asRecord(params.arguments) ?? {};
  if (asked === SEARCH_TOOL) {
    const query = typeof args.query === 'string' ? args.query.trim() : '';
    if (query === '') throw new RpcError(JsonRpcCode.INVALID_PARAMS, `${SEARCH_TOOL} needs a query: words describing the tool`);
    const limit = typeof args.limit === 'number' && Number.isInteger(args.limit) ? Math.min(Math.max(args.limit, 1), SEARCH_LIMIT_MAX) : SEARCH_LIMIT_DEFAULT;
    const tools = searchTools(aggregate, access, query, limit);
    const text = tools.length === 0 ? `No tool matches "${query}".` : JSON.stringify(tools.map(({ score: _score, ...tool }) => tool));
    return { kind: 'answer', result: { content: [{ type: 'text', text }], structuredContent: { tools } } };
  }
  if (asked === CALL_TOOL) {
    if (typeof args.name !== 'string') throw new RpcError(JsonRpcCode.INVALID_PARAMS, `${CALL_TOOL} needs the name of the tool to call, as ${SEARCH_TOOL} gave it`);
    const inner = args.name;
    const resolved = await resolveName(aggregate, access, 'tool', inner);
    const { arguments: _outer, ...rest } = forwardedParams(params);
    const innerArgs = asRecord(args.arguments);
    return { kind: 'forward', resolved, params: { ...rest, name: resolved.name, ...(innerArgs === undefined ? {} : { arguments: innerArgs }) }, asked: inner };
  }
  throw unknownName('tool', asked);
}
