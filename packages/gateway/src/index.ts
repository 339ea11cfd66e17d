/**
 * Everything here is public: `@mcpool/gateway` serves MCP clients of both protocol eras over one
 * `@mcpool/core` pool, through one aggregate (per-server views, `<server>__<name>` lists in one
 * order, name and URI resolution, completion, capabilities, instructions) under two thin fronts:
 * - {@link LegacySessions} / {@link LegacySession}: 2025-11-25 (and older) Streamable HTTP
 *   sessions, each on its own wire, written on `node:http`;
 * - {@link ModernRouter}: 2026-07-28 requests, routed statelessly, one parsed message in and its
 *   answer out ({@link writeModernAnswer} writes it on `node:http`);
 * and the stdio bridge that relays a stdio MCP client to such an endpoint. A host (the mcpool
 * daemon, an IDE extension) keeps the HTTP routes, the session map, its reaper and
 * authentication; {@link classifyEra} tells it which front a request is for.
 */
export { classifyEra } from './era.js';
export type { EraVerdict, RequestHeaders } from './era.js';
export type { GatewayAccess } from './aggregate/access.js';
export type { AcquireFailure } from './aggregate/aggregate.js';
export { SYSTEM_IDLE_CLOCK } from './aggregate/idleStop.js';
export type { IdleClock } from './aggregate/idleStop.js';
export type { Params } from './json.js';
export { qualify } from './aggregate/naming.js';
export { CALL_TOOL, SEARCH_ENDPOINT, SEARCH_TOOL, SEARCH_VIEW_TOOLS } from './aggregate/search.js';

// 2025-11-25: a session per client.
export { LegacySession, LegacySessions } from './legacy/session.js';
export type { LegacyOperation, LegacySessionInit, LegacySessionsOptions } from './legacy/session.js';
export type { LegacyParams, LegacyRequestContext, LegacyRequestId } from './legacy/wire.js';

// 2026-07-28: stateless requests.
export { continuationIdOf, MODERN_PROTOCOL_VERSIONS, ModernRouter } from './modern/router.js';
export type { ModernCaller, ModernRequest, ModernRouterOptions } from './modern/router.js';
export type { ModernAnswer } from './modern/answers.js';
export type { ModernHoldInfo } from './modern/holds.js';
export { MessageStream } from './modern/messageStream.js';
export { writeModernAnswer } from './modern/writeAnswer.js';
export type { WriteModernAnswerOptions } from './modern/writeAnswer.js';

// Errors on the MCP wire, for a host's own HTTP-level answers.
export { RpcCode, RpcError, refusalBody, rpcErrorBody, toRpcError } from './rpcErrors.js';
export type { RequestedName } from './rpcErrors.js';

// The bridge: a stdio MCP client ↔ a Streamable HTTP endpoint (the daemon's `/mcp`), as a relay.
export { Bridge } from './bridge/bridge.js';
export { isConnectError } from './bridge/daemonHttp.js';
export type { BridgeLogger, BridgeOptions, BridgeStats, Era as BridgeEra, TokenSource } from './bridge/options.js';
export { BridgeErrorCode, errorResponse } from './bridge/jsonRpc.js';
export type { BridgeFailure, RequestId } from './bridge/jsonRpc.js';
