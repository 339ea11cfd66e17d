/**
 * Everything here is public. The connection actor: its machine, and the transports it uses.
 * The worker entry is `@mcpool/actor/worker` (compiled JS; Node 20 cannot run TS workers).
 */
export { connectionMachine, statusOf } from './connectionMachine.js';
export type { ConnectionContext, ConnectionEvent, ConnectionHooks, ConnectionInput, ReconnectPolicy } from './connectionMachine.js';
export { ProcessGroupStdioTransport, TransportLostError, groupAlive, signalGroup } from './transports/processGroupStdioTransport.js';
export type { ProcessGroupStdioOptions } from './transports/processGroupStdioTransport.js';
export { SnapshotStore } from './snapshotStore.js';
export { UpstreamClient, UpstreamClosedError, UpstreamRpcError } from './upstreamClient.js';
export type { UpstreamClientHooks, UpstreamClientOptions, UpstreamRequestOptions } from './upstreamClient.js';
export { UpstreamHttpError } from './transports/upstreamTransport.js';
export type { JsonRpcMessage, ProtocolEra, SendOptions, UpstreamTransport } from './transports/upstreamTransport.js';
export { ServerConnection } from './serverConnection.js';
export type { ListKind, Lists } from './serverConnection.js';

export { WebSocketConnectError, WebSocketTransport } from './transports/websocketTransport.js';
export type { WebSocketTransportOptions } from './transports/websocketTransport.js';
export { UNASKED_LOGS_PER_SECOND, VIEW_NOTIFICATIONS_PER_SECOND } from './outbox.js';
export { SOURCE_MESSAGES_PER_SECOND } from './sourceThrottle.js';
