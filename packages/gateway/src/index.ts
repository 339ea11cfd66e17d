/**
 * The public API of `@mcpool/gateway`: the MCP router over a pool (the aggregated
 * `<server>__<name>` view and per-server views), for a host that serves it over HTTP or in
 * process. Nothing else is exported.
 */
export { ModernRouter, MODERN_PROTOCOL_VERSIONS, classifyEra } from './modernRouter.js';
export type { EraVerdict, ModernAnswer, ModernCaller, ModernRequest, ModernRouterOptions, RequestHeaders } from './modernRouter.js';
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
export type { LegacyEndpoint, LegacyRequestContext, LegacyWireOptions } from './legacyWire.js';
