/**
 * Everything here is public: the pieces of the `mcpool` command, for tests and for embedding the
 * daemon in another process. The command itself is `bin/mcpool.js` → {@link main}.
 */
export { main } from './cli.js';
export type { MainIo } from './cli.js';
export { ExitCode, StartError, runServe, startDaemon } from './serve.js';
export { firstScreen, firstScreenLine, invokedAs, shellWord } from './firstScreen.js';
export type { FirstScreenInfo } from './firstScreen.js';
export type { RunningDaemon, StartOptions } from './serve.js';
export { Daemon } from './daemon.js';
export type { DaemonOptions } from './daemon.js';
export type { DaemonClock } from './daemon/clock.js';
export { diffServers } from './daemon/configState.js';
export { splitStderr } from './daemon/entryWatcher.js';
export { daemonDefaultSharing, shutdownStepFor } from './daemon/poolOptions.js';
export { WARM_SESSION_ID } from './daemon/warmHold.js';
export { decideSharing, packageOf } from './daemon/sharingDefaults.js';
export type { SharingDecision } from './daemon/sharingDefaults.js';
export { buildApp, CAPABILITIES, routeTable } from './http/app.js';
export type { AppOptions } from './http/app.js';
export { DaemonErrorCode, STATUS_BY_CODE, statusOf } from './http/errors.js';
export { LOOPBACK_HOSTS, hostnameOf, securityPolicy } from './http/security.js';
export { DEFAULT_SETTINGS, ENV_OVERRIDE_NAMES, loadConfig, normalizeOrigin, resolveSettings } from './config/daemonConfig.js';
export type { ClientSpec, ConfigSource, DaemonSettings, LoadedConfig, LogLevel, SettingsOverrides, TelemetrySettings } from './config/daemonConfig.js';
export { resolveTelemetry } from './telemetry/telemetry.js';
export type { ResolvedTelemetry, Telemetry, TelemetryExporters } from './telemetry/contract.js';
export { discoverConfig } from './config/discovery.js';
export { DEMO_SERVER_PATH, builtinConfigDocument } from './config/defaultConfig.js';
export { BIN_PATH, DAEMON_LOG_FILE, defaultStateDir, userConfigFile } from './config/paths.js';
export { canonicalCommand, resolveCommand } from './config/commandPath.js';
export type { CommandLookup, CommandResolution } from './config/commandPath.js';
export type { UnavailableServer } from './config/serverAvailability.js';
export { MIN_TOKEN_LENGTH, OPERATOR_ID, TOKEN_FILE, TokenRegistry, ensureOperatorToken, operatorMcpToken } from './auth.js';
export type { Principal } from './auth.js';
export { EventHub } from './events.js';
export { createLogger, REDACT_PATHS } from './logger.js';
export { MIN_SECRET_LENGTH, SecretRedactor } from './secrets.js';
export { VERSION } from './version.js';
export {
  capabilitiesSchema,
  createSessionBody,
  errorBodySchema,
  healthSchema,
  readySchema,
  reloadResultSchema,
  restartResponseSchema,
  sessionInfoSchema,
  sessionListSchema,
  shutdownResponseSchema,
  toolCallBody,
  toolCallResponseSchema,
  workspaceMcpSchema,
} from './http/schemas.js';
export { STDERR_TAIL_DEFAULT_LINES, closeIdleSchema, stderrTailSchema, workspaceSessionsSchema, workspaceStatsSchema } from './http/observeRoutes.js';
export type { WorkspaceSessions } from './http/observeRoutes.js';
export type { ServerCallStats } from './metrics.js';
export type { GatewaySessionInfo } from './gateway/gateway.js';
