/**
 * The HTTP headers a 2026-07-28 Streamable HTTP request mirrors from its body, so that proxies
 * and load balancers can route without reading JSON (the server checks each against the body and
 * answers a mismatch with 400 / -32020):
 *
 * - `MCP-Protocol-Version`: the request's `_meta` protocol version.
 * - `Mcp-Method`: the JSON-RPC method.
 * - `Mcp-Name`: `params.name` for `tools/call` and `prompts/get`, `params.uri` for
 *   `resources/read`, `params.taskId` for the `tasks/get|update|cancel` extension methods.
 * - `Mcp-Param-{Name}`: each `tools/call` argument the tool's `inputSchema` marks with
 *   `"x-mcp-header": "{Name}"`.
 *
 * A value that is not a plain visible-ASCII header value (non-ASCII, control characters, leading
 * or trailing space, empty, or already shaped like the sentinel) is sent as
 * `=?base64?{base64 of its UTF-8}?=`.
 */

import { MODERN_META } from '@mcpool/protocol/modernMeta';

/** The `_meta` key carrying a modern request's protocol version. */
export const PROTOCOL_VERSION_META_KEY = MODERN_META.protocolVersion;

const NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';

/** The `Mcp-Name` value a request mirrors, or undefined when its method mirrors none. */
export function mcpNameOf(method: string, params: Record<string, unknown> | undefined): string | undefined {
  const field = Object.hasOwn(NAME_SOURCE, method) ? NAME_SOURCE[method] : undefined;
  if (field === undefined || params === undefined) return undefined;
  const value = params[field];
  return typeof value === 'string' ? value : undefined;
}

/** A header value as sent: plain when it is safe visible ASCII, else the base64 sentinel. */
export function encodeHeaderValue(value: string): string {
  return isPlainHeaderValue(value) ? value : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

function isPlainHeaderValue(value: string): boolean {
  if (value.length === 0 || value !== value.trim()) return false;
  if (value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX)) return false;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code !== 0x09 && (code < 0x20 || code > 0x7e)) return false;
  }
  return true;
}

/** One `x-mcp-header` declaration: the argument's path through `properties`, and the header name. */
export interface ParamHeaderDeclaration {
  path: readonly string[];
  header: string;
}

export type ParamHeaderScan = { valid: true; declarations: ParamHeaderDeclaration[] } | { valid: false; reason: string };

/** RFC 9110 token characters: what a header name may consist of. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_TYPES = new Set(['string', 'integer', 'boolean']);
/** Schema keywords whose subschemas are not reached through `properties` alone; a declaration under one is invalid. */
const UNREACHABLE_KEYWORDS = [
  'items', 'prefixItems', 'contains', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems',
  'propertyNames', 'patternProperties', 'dependentSchemas', 'oneOf', 'anyOf', 'allOf', 'not', 'if', 'then',
  'else', '$defs', 'definitions',
];
/** Of those, the ones whose value maps names to subschemas. */
const NAMED_SUBSCHEMAS = new Set(['patternProperties', 'dependentSchemas', '$defs', 'definitions']);

/**
 * Collects a tool's `x-mcp-header` declarations. A tool is invalid (a client must leave it out of
 * its tool list) when a declaration sits anywhere but on a property reached by a chain of
 * `properties` keys, names no RFC 9110 token, is on a property that is not a string, integer or
 * boolean, or repeats another declaration's name case-insensitively.
 */
export function scanParamHeaders(inputSchema: unknown): ParamHeaderScan {
  const declarations: ParamHeaderDeclaration[] = [];
  const seen = new Set<string>();
  const visit = (node: unknown, path: string[], reachable: boolean): string | undefined => {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    const schema = node as Record<string, unknown>;
    if (Object.hasOwn(schema, 'x-mcp-header')) {
      const where = path.length === 0 ? 'the schema root' : path.join('.');
      if (!reachable || path.length === 0) return `x-mcp-header on ${where} is not on a property reached through "properties"`;
      const header = schema['x-mcp-header'];
      if (typeof header !== 'string' || !TOKEN.test(header)) return `x-mcp-header on ${where} is not a valid header name`;
      if (typeof schema.type !== 'string' || !HEADER_TYPES.has(schema.type)) return `x-mcp-header on ${where} is on a property of type ${String(schema.type)}`;
      const lower = header.toLowerCase();
      if (seen.has(lower)) return `x-mcp-header "${header}" is declared twice`;
      seen.add(lower);
      declarations.push({ path, header });
    }
    const properties = schema.properties;
    if (properties !== null && typeof properties === 'object' && !Array.isArray(properties)) {
      for (const [key, child] of Object.entries(properties)) {
        const fault = visit(child, [...path, key], reachable);
        if (fault !== undefined) return fault;
      }
    }
    for (const keyword of UNREACHABLE_KEYWORDS) {
      const sub = schema[keyword];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub) ? sub : NAMED_SUBSCHEMAS.has(keyword) && sub !== null && typeof sub === 'object' ? Object.values(sub) : [sub];
      for (const branch of branches) {
        const fault = visit(branch, [...path, keyword], false);
        if (fault !== undefined) return fault;
      }
    }
    return undefined;
  };
  const fault = visit(inputSchema, [], true);
  return fault === undefined ? { valid: true, declarations } : { valid: false, reason: fault };
}

/**
 * The `Mcp-Param-*` headers of one `tools/call`. An argument that is absent, null or not a
 * primitive gets no header (the server then decides); numbers are sent in decimal, booleans as
 * `true` / `false`.
 */
export function paramHeaders(declarations: readonly ParamHeaderDeclaration[], args: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { path, header } of declarations) {
    let value: unknown = args;
    for (const key of path) value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
    let text: string | undefined;
    if (typeof value === 'string') text = value;
    else if (typeof value === 'boolean') text = value ? 'true' : 'false';
    else if (typeof value === 'number' && Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) text = String(value);
    if (text !== undefined) out[`mcp-param-${header.toLowerCase()}`] = encodeHeaderValue(text);
  }
  return out;
}
