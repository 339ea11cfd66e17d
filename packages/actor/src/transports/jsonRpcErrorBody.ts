/**
 * The JSON-RPC error an HTTP error body carries (how a modern server answers 400 / -32020,
 * -32022, 404 / -32601; how the era probe tells a modern refusal from a legacy one), or
 * undefined when the body is not a JSON-RPC error. Apart from the HTTP transports, which a stdio
 * connection's thread never loads: the actor reads such bodies from the errors those transports throw.
 */
export function jsonRpcErrorIn(body: string): { code: number; message: string; data?: unknown } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  const error = (value as { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown } } | null)?.error;
  if ((value as { jsonrpc?: unknown }).jsonrpc !== '2.0' || error === null || typeof error !== 'object') return undefined;
  if (typeof error.code !== 'number' || typeof error.message !== 'string') return undefined;
  return error as { code: number; message: string; data?: unknown };
}
