/**
 * `logging/setLevel` on a shared upstream. Each downstream session keeps its own level, and the
 * gateway filters what it forwards to that session. Upstream gets the most verbose level any
 * session holding that entry asked for, so nobody misses messages they want; one session asking
 * for `error` never silences another that asked for `debug`.
 */

/** RFC 5424 severities, least severe first (the MCP `LoggingLevel` values). */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/** Whether a message at `level` passes a session that asked for `threshold` (none asked: all pass). */
export function passes(level: unknown, threshold: LogLevel | undefined): boolean {
  if (threshold === undefined || !isLogLevel(level)) return true;
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}

/** Per upstream entry: the level each session asked for, and what was last sent upstream. */
export class UpstreamLogLevels {
  readonly #wanted = new Map<string, Map<string, LogLevel>>();
  readonly #sent = new Map<string, LogLevel>();

  /**
   * Records `session`'s level on `entry`; returns the level to send upstream now, or undefined
   * when upstream already has it.
   */
  set(entry: string, session: string, level: LogLevel): LogLevel | undefined {
    let sessions = this.#wanted.get(entry);
    if (sessions === undefined) this.#wanted.set(entry, (sessions = new Map<string, LogLevel>()));
    sessions.set(session, level);
    return this.#due(entry);
  }

  /**
   * The session is gone. Upstream keeps its level (the session's views are being released, so
   * there is nobody to send a new one with); the next `set` on the entry sends the level then due.
   */
  forget(session: string): void {
    for (const [entry, sessions] of this.#wanted) {
      if (sessions.delete(session) && sessions.size === 0) this.#wanted.delete(entry);
    }
  }

  /** The entry reconnected (a new server process knows no level): the level to send again. */
  reset(entry: string): LogLevel | undefined {
    this.#sent.delete(entry);
    return this.#due(entry);
  }

  #due(entry: string): LogLevel | undefined {
    const sessions = this.#wanted.get(entry);
    if (sessions === undefined || sessions.size === 0) return undefined;
    let min = LOG_LEVELS.length - 1;
    for (const level of sessions.values()) min = Math.min(min, LOG_LEVELS.indexOf(level));
    const level = LOG_LEVELS[min]!;
    if (this.#sent.get(entry) === level) return undefined;
    this.#sent.set(entry, level);
    return level;
  }
}
