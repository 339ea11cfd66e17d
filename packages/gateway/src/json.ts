/** JSON values as the gateway reads them from parsed messages. */

/** A JSON-RPC params or result object. */
export type Params = Record<string, unknown>;

/** `value` when it is a JSON object (not null, not an array), else undefined. */
export function asRecord(value: unknown): Params | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Params) : undefined;
}

/**
 * The params a request is forwarded with: every field the caller sent, the ones mcpool does not
 * know included, but `_meta` — the caller's `_meta` travels as the call's own (without its
 * progress token), never inside the params.
 */
export function forwardedParams(params: Params): Params {
  const { _meta: _caller, ...body } = params;
  return body;
}
