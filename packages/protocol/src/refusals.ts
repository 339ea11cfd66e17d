/**
 * Every refusal mcpool answers a request with, one function each, so that a refusal has one code
 * and one wording on every surface. A refusal is a {@link PoolError} whose code comes from the one
 * registry (`errorCodes.ts`, which gives its HTTP status and its JSON-RPC code) and whose
 * `data.refusal` names it; whoever answers — `/mcp` in either era, the REST API, a library view,
 * or the upstream server a server→client request is refused to — sends its message as it is.
 *
 * | refusal | code | HTTP | JSON-RPC |
 * | --- | --- | --- | --- |
 * | a server→client request nobody can take | `SERVER_REQUEST_REFUSED` | 502 | -32601 |
 * | a `requestState` that continues no call of this gateway | `INVALID_ARGUMENT` | 400 | -32602 |
 * | a `requestState` whose call is held by a replica that cannot be reached | `CONTINUATION_LOST` | 502 | -32000 |
 * | a tool or prompt the caller may not see, or that does not exist | `TOOL_NOT_ALLOWED` | 403 | -32602 |
 * | a resource URI no server of the endpoint has | `RESOURCE_NOT_FOUND` | 404 | -32002 (-32602 in 2026-07-28) |
 * | a server of the endpoint that is not available | the failure's own (`SPAWN_FAILED`, …) | 502–504 | -32000 |
 * | a configured server that cannot run (a bad entry, an unset variable, a missing command) | `SERVER_UNAVAILABLE` | 503 | -32000 |
 * | an upstream that cannot be reached or does not speak JSON-RPC | `UPSTREAM_UNAVAILABLE` | 502 | -32000 |
 * | the host is shutting down, or draining before it stops | `SHUTTING_DOWN` | 503 | -32000 |
 * | an endpoint `/mcp/<server>` of no configured server | `NOT_FOUND` | 404 | -32602 |
 * | an endpoint `/mcp/<server>` the caller may not use | `FORBIDDEN` | 403 | -32000 |
 * | a route the caller's token lacks the right for | `FORBIDDEN` | 403 | -32000 |
 * | a `subscriptions/listen` naming more distinct resources than one listen may subscribe to | `REQUEST_TOO_LARGE` | 400 | -32602 |
 *
 * Only `PoolError` and the code table: actor threads load this module too.
 */
import { ErrorCode } from './errorCodes.js';
import { PoolError } from './errors.js';

/** The refusals, by name (`data.refusal` of the error). */
export type RefusalKind =
  | 'serverRequest'
  | 'requestState'
  | 'continuationLost'
  | 'unknownName'
  | 'resourceNotFound'
  | 'serverUnavailable'
  | 'serverNotRunnable'
  | 'upstreamUnavailable'
  | 'shuttingDown'
  | 'noSuchServer'
  | 'serverForbidden'
  | 'rightMissing'
  | 'tooManySubscriptions';

function refusal(kind: RefusalKind, code: ErrorCode, message: string, data?: Record<string, unknown>, cause?: unknown): PoolError {
  return new PoolError(code, message, { data: { refusal: kind, ...data }, ...(cause === undefined ? {} : { cause }) });
}

/** Which refusal `error` is, or undefined when it is not one (a failure, a bug). */
export function refusalOf(error: unknown): RefusalKind | undefined {
  if (!(error instanceof PoolError)) return undefined;
  const kind = error.data?.refusal;
  return typeof kind === 'string' ? (kind as RefusalKind) : undefined;
}

/**
 * A request the server sent (sampling, elicitation, roots) that nobody can take. The server gets
 * -32601, what a client without that capability answers.
 * @param why what is missing, for the server's log: "no call that takes it is in flight".
 */
export function serverRequestRefused(method: string, why: string): PoolError {
  return refusal('serverRequest', ErrorCode.SERVER_REQUEST_REFUSED, `mcpool cannot route ${method}: ${why}`, { method });
}

/**
 * The one message of every `requestState` the gateway will not continue: forged, another
 * caller's, minted for another endpoint, method, tool or prompt, its call over, not the
 * gateway's own on a server that mints none, or a modern server's own state outside the envelope
 * the gateway gave its caller. One wording, so a caller learns nothing of which.
 */
export const REQUEST_STATE_REFUSAL =
  'Invalid requestState: it continues no call this gateway holds for this endpoint, method and name; send the request again without requestState and inputResponses';

export function requestStateRefused(): PoolError {
  return refusal('requestState', ErrorCode.INVALID_ARGUMENT, REQUEST_STATE_REFUSAL);
}

/**
 * A `requestState` minted by another replica of a cluster, which cannot be reached: the call it
 * continues went with that replica. Unlike {@link requestStateRefused} this says what happened,
 * as the state was sealed by the cluster and names its replica: nothing a caller could probe.
 */
export function continuationLost(): PoolError {
  return refusal(
    'continuationLost',
    ErrorCode.CONTINUATION_LOST,
    'The gateway replica holding the call this requestState continues is gone: the call is lost and its outcome unknown; send the request again without requestState and inputResponses',
  );
}

/**
 * A tool or prompt the caller may not use, whatever the reason (no such name, a server that does
 * not list it, a filter hiding it): one code and one message, which say nothing of why, so a
 * caller cannot probe for what it may not use. On MCP it carries no `data`.
 * @param name the name as the caller wrote it.
 */
export function unknownName(kind: 'tool' | 'prompt', name: string): PoolError {
  return refusal('unknownName', ErrorCode.TOOL_NOT_ALLOWED, `Unknown ${kind}: ${name}`);
}

/** No server of the endpoint lists the URI, has a template matching it, or is the only one with resources. */
export function resourceNotFound(uri: string): PoolError {
  return refusal('resourceNotFound', ErrorCode.RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri });
}

/** A server of the endpoint did not start (or failed since): its failure's own code. */
export function serverUnavailable(name: string, failure?: { code: ErrorCode; message: string }): PoolError {
  return refusal('serverUnavailable', failure?.code ?? ErrorCode.SERVER_FAILED, `${name} is not available: ${failure?.message ?? 'it did not start'}`, { serverName: name });
}

/**
 * A configured server whose entry cannot run (`reason`: `MCPOOL_CONFIG_INVALID`,
 * `MCPOOL_CONFIG_VARIABLE_UNSET`, `MCPOOL_COMMAND_NOT_FOUND`): one server's problem, the others run.
 */
export function serverNotRunnable(name: string, problem: { code: ErrorCode; message: string }): PoolError {
  return refusal('serverNotRunnable', ErrorCode.SERVER_UNAVAILABLE, `${name} is unavailable: ${problem.message}`, { serverName: name, reason: problem.code });
}

/** The upstream could not be reached, or did not answer in JSON-RPC (`httpStatus` when it answered HTTP). */
export function upstreamUnavailable(server: string, detail: string, options: { httpStatus?: number; cause?: unknown } = {}): PoolError {
  const data = options.httpStatus === undefined ? { serverName: server } : { serverName: server, httpStatus: options.httpStatus };
  return refusal('upstreamUnavailable', ErrorCode.UPSTREAM_UNAVAILABLE, `${server} is unavailable: ${detail}`, data, options.cause);
}

/** @param who what is shutting down: "the daemon", "the gateway". */
export function shuttingDown(who: string): PoolError {
  return refusal('shuttingDown', ErrorCode.SHUTTING_DOWN, `${who} is shutting down`);
}

/** A new session while the host drains before it stops (a balancer sends the retry to another replica). */
export function draining(): PoolError {
  return refusal('shuttingDown', ErrorCode.SHUTTING_DOWN, 'the daemon is draining before it stops: open the session again (another replica takes it)');
}

/** A server endpoint (`/mcp/<server>`) of no configured server. */
export function noSuchServer(name: string): PoolError {
  return refusal('noSuchServer', ErrorCode.NOT_FOUND, `no configured server is named ${JSON.stringify(name)}`);
}

/** A server endpoint (`/mcp/<server>`), or a configured server a REST session names, that the caller may not use. */
export function serverForbidden(name: string): PoolError {
  return refusal('serverForbidden', ErrorCode.FORBIDDEN, `this client may not use server ${JSON.stringify(name)}`);
}

/** A request that needs a right the caller's token lacks (`admin` for restart, reload, shutdown; `write` for sessions). */
export function rightMissing(right: string): PoolError {
  return refusal('rightMissing', ErrorCode.FORBIDDEN, `this token lacks the ${right} right`, { right });
}

/**
 * A `subscriptions/listen` naming more distinct resource URIs than one listen may subscribe to:
 * each is an upstream `resources/subscribe` and state held while the listen lives, so the list is
 * refused whole, before anything is subscribed.
 */
export function tooManySubscriptions(requested: number, max: number): PoolError {
  return refusal('tooManySubscriptions', ErrorCode.REQUEST_TOO_LARGE, `the listen subscribes to ${requested} resources; one listen may subscribe to at most ${max}`, { requested, max });
}
