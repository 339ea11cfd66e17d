/** JSON values as the gateway reads them from parsed messages. */

/** A JSON-RPC params or result object. */
export type Params = Record<string, unknown>;

/** `value` when it is a JSON object (not null, not an array), else undefined. */
export function asRecord(value: unknown): Params | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Params) : undefined;
}
