/**
 * Everything here is public (`mcpool/local`): what a program on this machine needs to use the
 * daemon — where it listens, where its state is, its token, and starting it once when none
 * answers. The `mcpool` commands and the VS Code extension share it. Light on purpose: Node
 * built-ins and a JSONC reader, nothing of the daemon itself, so an editor extension can bundle it.
 */
export { DEFAULT_HOST, DEFAULT_PORT, configuredAddress, dialUrl, findConfigFile, localDaemonUrl } from './address.js';
export type { ConfigFileChoice, FindConfigOptions, LocateOptions } from './address.js';
export { TOKEN_FILE, readOperatorToken } from './token.js';
export { DaemonStarter, START_FAILED_FILE, START_LOCK_FILE } from './daemonStarter.js';
export type { DaemonStarterOptions, StarterLogger } from './daemonStarter.js';
export { SESSION_LABEL_HEADER, SESSION_LABEL_MAX, sessionLabelOf } from './sessionLabel.js';
export { isProcessAlive, tryStartLock } from './startLock.js';
export type { HeldStartLock, StartLockOptions } from './startLock.js';
export { DAEMON_LOG_FILE, defaultStateDir, userConfigFile } from './paths.js';
export type { PathEnv } from './paths.js';
