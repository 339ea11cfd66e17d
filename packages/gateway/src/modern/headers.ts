/**
 * The 2026-07-28 revision's header rules, checked before a request is routed: the headers a
 * request must carry, and that they agree with its body. A mismatch is 400 + -32020.
 * - `MCP-Protocol-Version` and `Mcp-Method` are required, and must match the body (the era
 *   classifier checked both pairs when both were present; their absence is checked here).
 * - `Mcp-Name` must mirror `params.name` (`tools/call`, `prompts/get`) or `params.uri`
 *   (`resources/read`), plain or as `=?base64?…?=` of its UTF-8.
 * - Each tool argument whose input schema property says `x-mcp-header: Name` must come with an
 *   `Mcp-Param-Name` header equal to it once decoded (numbers compared as numbers); an absent or
 *   null argument needs none.
 */
import { headerValue as header, type RequestHeaders } from '../era.js';
import { asRecord, type Params } from '../json.js';


/** Methods whose `Mcp-Name` header mirrors a body field, and which field. */
const NAME_SOURCE: Readonly<Record<string, string>> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };
const BASE64_SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;
/** How deep `x-mcp-header` declarations are looked for in a tool's input schema. */
const MAX_SCHEMA_DEPTH = 16;


/** Why the request's headers disagree with its body (undefined: they agree). */
export function headerMismatch(headers: RequestHeaders, method: string, params: Params): string | undefined {
  if (header(headers, 'mcp-protocol-version') === undefined) return 'the required MCP-Protocol-Version header is absent';
  const named = header(headers, 'mcp-method');
  if (named === undefined) return `the body names method ${method} but the required Mcp-Method header is absent`;
  if (named !== method) return `the body names method ${method} but the Mcp-Method header names ${named}`;
  const field = NAME_SOURCE[method];
  if (field === undefined) return undefined;
  const value = params[field];
  if (typeof value !== 'string') return undefined;
  const raw = header(headers, 'mcp-name');
  if (raw === undefined) return `the body carries params.${field}=${JSON.stringify(value)} but the required Mcp-Name header is absent`;
  const decoded = decodeName(raw);
  if (decoded === undefined) return 'the Mcp-Name header carries an invalid Base64 sentinel value';
  if (decoded !== value) return `the body carries params.${field}=${JSON.stringify(value)} but the Mcp-Name header names ${JSON.stringify(decoded)}`;
  return undefined;
}

/** Why a tool call's `Mcp-Param-{Name}` headers disagree with its arguments under `schema` (undefined: they agree). */
export function paramHeaderMismatch(schema: unknown, args: Params, headers: RequestHeaders): string | undefined {
  const declarations: { path: string[]; name: string; type: unknown }[] = [];
  const visit = (node: unknown, path: string[]): void => {
    const properties = asRecord(asRecord(node)?.properties);
    if (properties === undefined || path.length > MAX_SCHEMA_DEPTH) return;
    for (const [key, child] of Object.entries(properties)) {
      const declared = asRecord(child)?.['x-mcp-header'];
      if (typeof declared === 'string' && declared.length > 0) declarations.push({ path: [...path, key], name: declared, type: asRecord(child)?.type });
      visit(child, [...path, key]);
    }
  };
  visit(schema, []);
  for (const { path, name, type } of declarations) {
    let value: unknown = args;
    for (const key of path) value = asRecord(value)?.[key];
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') continue;
    const expected = String(value);
    const raw = header(headers, `mcp-param-${name.toLowerCase()}`);
    if (raw === undefined) return `the body carries arguments.${path.join('.')}=${JSON.stringify(value)} but the Mcp-Param-${name} header is absent`;
    const decoded = decodeName(raw);
    if (decoded === undefined) return `the Mcp-Param-${name} header carries an invalid Base64 sentinel value`;
    const numeric = (type === 'number' || type === 'integer') && typeof value === 'number';
    if (numeric ? Number(decoded) !== value : decoded !== expected) return `the Mcp-Param-${name} header decodes to ${JSON.stringify(decoded)} but the body carries arguments.${path.join('.')}=${JSON.stringify(value)}`;
  }
  return undefined;
}

/** An `Mcp-Name` or `Mcp-Param-*` value: as is, or the UTF-8 of its `=?base64?…?=` payload (undefined when that is not valid). */
function decodeName(raw: string): string | undefined {
  if (!raw.startsWith('=?base64?')) return raw;
  const match = BASE64_SENTINEL.exec(raw);
  if (match === null) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(match[1]!, 'base64'));
  } catch {
    return undefined;
  }
}
