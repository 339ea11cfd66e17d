/**
 * Names on the aggregating `/mcp` endpoint: tools and prompts of every server as
 * `<server>__<name>`; resources keep their URIs, so a URI is routed to the server that lists it
 * (or whose template matches it).
 */

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

const templateCache = new Map<string, RegExp | null>();

/**
 * Whether `uri` is one of the URIs an RFC 6570 template describes. Enough for routing: a simple
 * `{var}` matches one path segment, `{+var}` / `{#var}` anything, a `{?q,r}` / `{&q}` query part
 * an optional query string, `{/var}` / `{.var}` / `{;var}` their prefixed segments.
 */
export function templateMatches(template: string, uri: string): boolean {
  let pattern = templateCache.get(template);
  if (pattern === undefined) {
    pattern = compileTemplate(template);
    if (templateCache.size > 1000) templateCache.clear();
    templateCache.set(template, pattern);
  }
  return pattern !== null && pattern.test(uri);
}

function compileTemplate(template: string): RegExp | null {
  let source = '^';
  let rest = template;
  while (rest.length > 0) {
    const open = rest.indexOf('{');
    if (open === -1) {
      source += escapeRegExp(rest);
      break;
    }
    const close = rest.indexOf('}', open);
    if (close === -1) return null;
    source += escapeRegExp(rest.slice(0, open));
    const expression = rest.slice(open + 1, close);
    const operator = expression[0];
    switch (operator) {
      case '+':
      case '#':
        source += '.*';
        break;
      case '?':
      case '&':
        source += '(?:[?&].*)?';
        break;
      case '/':
      case '.':
      case ';':
        source += `(?:\\${operator}[^/?#]*)*`;
        break;
      default:
        source += '[^/?#]*';
    }
    rest = rest.slice(close + 1);
  }
  try {
    return new RegExp(`${source}$`, 's');
  } catch {
    return null;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
