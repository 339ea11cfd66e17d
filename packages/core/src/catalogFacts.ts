/**
 * What the pool learns about a server config from using it, as its catalog keeps it: that it
 * asks its client for roots, that it sends its client requests at all (sampling, elicitation,
 * roots), and which of its tools did so, with the methods each asked.
 *
 * Rules:
 * - Facts only grow: a merge keeps every fact either side holds (a tool keeps every method it
 *   ever asked), so a later discovery or list change never drops what was learned.
 * - A tool is kept only when the server lists it: the names come from callers, and a name the
 *   server does not offer teaches nothing. Both the tools and their methods are bounded, so
 *   whatever a caller names or a server sends, a record stays small.
 */

/** What the pool learned about a server from using it. */
export interface CatalogFacts {
  /** The server asked its client for `roots/list`. */
  usesRoots?: boolean | undefined;
  /** The server sent requests to its client (sampling, elicitation, roots). */
  makesServerRequests?: boolean | undefined;
  /**
   * Tools that sent their client requests while a call of theirs was in flight, with the methods
   * each sent (sorted): a connection of the server serialises their calls from its start.
   */
  askingTools?: Record<string, string[]> | undefined;
}

/** How many asking tools a record keeps (a connection learns as many at most). */
const MAX_ASKING_TOOLS = 1000;
/** How many methods a record keeps per tool: the client requests are three today. */
const MAX_METHODS_PER_TOOL = 16;

/**
 * What a server's request teaches: it makes server requests, uses roots when it asked
 * `roots/list`, and `tool` (a call of it was in flight) asks `method` — when `listed` says the
 * server offers that tool.
 */
export function factsOfRequest(method: string, tool: string | undefined, listed: (tool: string) => boolean): CatalogFacts {
  return {
    makesServerRequests: true,
    ...(method === 'roots/list' ? { usesRoots: true } : {}),
    ...(tool !== undefined && listed(tool) ? { askingTools: { [tool]: [method] } } : {}),
  };
}

/** Every fact `before` or `added` holds (`true` wins over absent or false; tools' methods are united). */
export function mergeFacts(before: CatalogFacts | undefined, added: CatalogFacts): CatalogFacts {
  const out: CatalogFacts = {};
  if (before?.usesRoots === true || added.usesRoots === true) out.usesRoots = true;
  if (before?.makesServerRequests === true || added.makesServerRequests === true) out.makesServerRequests = true;
  const tools = mergeTools(before?.askingTools, added.askingTools);
  if (tools !== undefined) out.askingTools = tools;
  return out;
}

/** Whether `a` and `b` hold the same facts (both as {@link mergeFacts} leaves them). */
export function sameFacts(a: CatalogFacts, b: CatalogFacts): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function mergeTools(before: CatalogFacts['askingTools'], added: CatalogFacts['askingTools']): CatalogFacts['askingTools'] {
  const tools = new Map<string, Set<string>>();
  for (const source of [before, added]) {
    if (typeof source !== 'object' || source === null) continue;
    for (const [tool, methods] of Object.entries(source)) {
      if (!Array.isArray(methods)) continue;
      let kept = tools.get(tool);
      if (kept === undefined) {
        if (tools.size >= MAX_ASKING_TOOLS) continue;
        tools.set(tool, (kept = new Set()));
      }
      for (const method of methods) if (typeof method === 'string' && kept.size < MAX_METHODS_PER_TOOL) kept.add(method);
    }
  }
  if (tools.size === 0) return undefined;
  // Sorted, so a record's text says the same facts the same way (and an unchanged one is not written again).
  return Object.fromEntries([...tools.keys()].sort().map((tool) => [tool, [...tools.get(tool)!].sort()]));
}
