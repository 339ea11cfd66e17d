/**
 * The `_meta` keys the 2026-07-28 revision reserves on requests, results and notifications: a
 * modern request carries its protocol version, the client's capabilities, its info and its log
 * level itself (there is no `initialize`); a `server/discover` result names the server; a
 * `subscriptions/listen` stream tags each notification with the listen request's id.
 * Plain data with no import, so every layer (the actor thread included) can take it.
 */
export const MODERN_META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;
