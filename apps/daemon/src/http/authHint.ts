/**
 * What the daemon's user does about `MCPOOL_AUTH_REQUIRED`, on every surface that refuses for it:
 * run `mcpool auth <server>` (or its REST route). The pool cannot say it (how a host authorizes
 * is the host's); the daemon adds it to the REST message and to the JSON-RPC error `/mcp`
 * answers in either era, so a client behind `mcpool bridge`, which sees only the message, reads
 * it too. On a step-up the hint names the scope the server asked for: that authorization asks
 * for it (with the scopes asked before).
 */
import { ErrorCode } from '@mcpool/protocol';

/** The sentence that ends a refusal for lack of authorization. */
export function authorizeHint(serverName: string, scope: string | undefined): string {
  const more = scope === undefined ? '' : ` (it asks for ${scope} as well)`;
  return `run \`mcpool auth ${serverName}\`${more} (or POST /workspace/mcp/${encodeURIComponent(serverName)}/auth) and try again`;
}

/** The hint for an error's `data` when it is `MCPOOL_AUTH_REQUIRED` naming its server; else undefined. */
export function authorizeHintOf(code: unknown, data: unknown): string | undefined {
  if (code !== ErrorCode.AUTH_REQUIRED || typeof data !== 'object' || data === null) return undefined;
  const { serverName, scope } = data as { serverName?: unknown; scope?: unknown };
  return typeof serverName === 'string' ? authorizeHint(serverName, typeof scope === 'string' ? scope : undefined) : undefined;
}

/**
 * A JSON-RPC message as `/mcp` sends it: an `MCPOOL_AUTH_REQUIRED` error gets the hint at the end
 * of its message; every other message is returned as it is (the same object).
 */
export function withAuthorizeHint<T extends Record<string, unknown>>(message: T): T {
  const error = message.error as { message?: unknown; data?: { code?: unknown } } | undefined;
  if (error === undefined || typeof error.message !== 'string') return message;
  const hint = authorizeHintOf(error.data?.code, error.data);
  if (hint === undefined || error.message.includes('`mcpool auth ')) return message;
  return { ...message, error: { ...error, message: `${error.message}: ${hint}` } };
}
