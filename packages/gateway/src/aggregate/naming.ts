/**
 * Names on the aggregating `/mcp` endpoint: tools and prompts of every server as
 * `<server>__<name>`; resources keep their URIs, so a URI is routed to the server that lists it
 * (or whose template matches it).
 */
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';

/** Between the server name and the tool or prompt name on `/mcp`. */
export const NAME_SEPARATOR = '__';

export function qualify(server: string, name: string): string {
  return `${server}${NAME_SEPARATOR}${name}`;
}

/**
 * Splits `<server>__<name>` against the servers this session has. The longest server name that
 * fits wins (server names may themselves contain `__`); undefined when none does.
 */
export function splitQualified(qualified: string, servers: Iterable<string>): { server: string; name: string } | undefined {
  let best: string | undefined;
  for (const server of servers) {
    const prefix = server + NAME_SEPARATOR;
    if (qualified.length > prefix.length && qualified.startsWith(prefix) && (best === undefined || server.length > best.length)) best = server;
  }
  return best === undefined ? undefined : { server: best, name: qualified.slice(best.length + NAME_SEPARATOR.length) };
}

/** A parsed template, and the same without its query expressions (null: not a valid template). */
type Parsed = { full: UriTemplate; withoutQuery: UriTemplate | undefined } | null;

const templateCache = new Map<string, Parsed>();
const QUERY_EXPRESSION = /\{[?&][^}]*\}/g;

function parse(template: string): Parsed {
  try {
    const stripped = template.replace(QUERY_EXPRESSION, '');
    return { full: new UriTemplate(template), withoutQuery: stripped === template ? undefined : new UriTemplate(stripped) };
  } catch {
    return null;
  }
}

/**
 * Whether `uri` is one of the URIs an RFC 6570 template describes, by the SDK's `UriTemplate`
 * (the matcher SDK servers route their own resource reads with). Its query expressions
 * (`{?q,r}`, `{&q}`) match only when every variable is present; RFC 6570 leaves undefined ones
 * out, so a URI is also tried without its query against the template without them.
 */
export function templateMatches(template: string, uri: string): boolean {
  let parsed = templateCache.get(template);
  if (parsed === undefined) {
    parsed = parse(template);
    if (templateCache.size > 1000) templateCache.clear();
    templateCache.set(template, parsed);
  }
  if (parsed === null) return false;
  try {
    if (parsed.full.match(uri) !== null) return true;
    return parsed.withoutQuery !== undefined && parsed.withoutQuery.match(uri.replace(/\?.*$/s, '')) !== null;
  } catch {
    // A URI longer than the SDK's limits matches nothing.
    return false;
  }
}
