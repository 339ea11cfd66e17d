/**
 * A `/mcp` client may name its session with the `Mcpool-Session-Label` header on `initialize`:
 * the label is shown with the session (`GET /workspace/sessions`, `mcpool sessions`), so a client
 * that opens several sessions — an editor window, one per server — finds its own again and ends
 * them (`DELETE /workspace/sessions/:id`). It is free text from the caller: printable, bounded.
 */

/** The request header (lower case, as `node:http` gives header names). */
export const SESSION_LABEL_HEADER = 'mcpool-session-label';

/** Longest label kept. */
export const SESSION_LABEL_MAX = 200;

/** The label a header value gives, or undefined for none (absent, empty, or not printable ASCII). */
export function sessionLabelOf(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  const label = text.trim().slice(0, SESSION_LABEL_MAX);
  return label !== '' && /^[\x20-\x7e]+$/.test(label) ? label : undefined;
}
