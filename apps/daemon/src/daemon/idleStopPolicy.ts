/**
 * Which configured servers the daemon stops when idle, and after how long (`idleStopMs`): a
 * server's own `idleStopMs` wins (0: never); otherwise a modern-era (2026-07-28) server stops
 * after the daemon's `idleStopMs` — its spec says a stdio process is not a session, so it holds
 * nothing a caller would lose — and a legacy-era one, or one whose era is not known yet, never
 * does (it may keep a conversation in its process) unless its config says so.
 */
import type { ServerConfig } from '@mcpool/core';
import type { DaemonSettings } from '../config/daemonConfig.js';

export function idleStopMsOf(config: ServerConfig | undefined, settings: Pick<DaemonSettings, 'idleStopMs'>, era: 'legacy' | 'modern' | undefined): number | undefined {
  if (config === undefined) return undefined;
  if (config.idleStopMs !== undefined) return config.idleStopMs > 0 ? config.idleStopMs : undefined;
  return era === 'modern' && settings.idleStopMs > 0 ? settings.idleStopMs : undefined;
}
