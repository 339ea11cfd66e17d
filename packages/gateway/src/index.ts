/**
 * The public API of `@mcpool/gateway`: the MCP router over a pool (the aggregated
 * `<server>__<name>` view and per-server views), for a host that serves it over HTTP or in
 * process, and the bridge that relays a stdio MCP client to such an endpoint. Nothing else is
 * exported.
 */
export { ModernRouter, MODERN_PROTOCOL_VERSIONS, classifyEra } from './modernRouter.js';
export type { EraVerdict, ModernAnswer, ModernCaller, ModernHoldInfo, ModernRequest, ModernRouterOptions, RequestHeaders } from './modernRouter.js';
export { MessageStream } from './messageStream.js';
export { acquireFailure, acquireView } from './acquire.js';
export type { AcquireFailure } from './acquire.js';
export type { GatewayAccess } from './access.js';
export { endpointCapabilities } from './capabilities.js';
export type { EndpointCapabilities } from './capabilities.js';
export { NAME_SEPARATOR, qualify, splitQualified, templateMatches } from './naming.js';
export { RpcCode, RpcError, rpcErrorBody, toRpcError, unknownNameError, upstreamMessage } from './rpcErrors.js';
export type { RequestedName } from './rpcErrors.js';
export { LEGACY_PROTOCOL_VERSIONS, LegacyWire } from './legacyWire.js';
export type { LegacyEndpoint, LegacyParams, LegacyRequestContext, LegacyRequestId, LegacyWireOptions } from './legacyWire.js';

// The bridge: a stdio MCP client ↔ a Streamable HTTP endpoint (the daemon's `/mcp`), as a relay.
export { Bridge } from './bridge/bridge.js';
export { isConnectError } from './bridge/daemonHttp.js';
export type { BridgeLogger, BridgeOptions, BridgeStats, Era as BridgeEra, TokenSource } from './bridge/options.js';
export { BridgeErrorCode, errorResponse } from './bridge/jsonRpc.js';
export type { BridgeFailure, RequestId } from './bridge/jsonRpc.js';
