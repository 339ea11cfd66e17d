/**
 * Which open `/mcp` sessions are idle, and which one goes first when a client is at its cap.
 *
 * A session is idle when nothing of it is under way — no request in flight, no GET stream open
 * (a client that is still there keeps its stream) — and nothing arrived for a while. Ending one
 * is safe by the MCP spec (2025-11-25): its client's next request gets 404 and it initializes a
 * new session. So a client at its cap loses its least recently used idle session, never the new
 * one: clients that never DELETE (SDK v2 `close()`, inspector-cli) cannot lock their own token out.
 */

/** What these rules read of a session. */
export interface IdleCandidate {
  readonly principal: string;
  readonly closed: boolean;
  /** HTTP requests under way, GET streams included. */
  readonly active: number;
  /** When a request last arrived or ended (ms since the epoch). */
  readonly lastSeen: number;
}

/** Whether `session` is idle at `now` for at least `idleForMs`. */
export function isIdle(session: IdleCandidate, now: number, idleForMs = 0): boolean {
  return !session.closed && session.active === 0 && now - session.lastSeen >= idleForMs;
}

/** The idle session of `principalId` used least recently, or undefined when every one of its sessions is busy. */
export function leastRecentlyUsedIdle<S extends IdleCandidate>(sessions: Iterable<S>, principalId: string, now: number): S | undefined {
  let oldest: S | undefined;
  for (const session of sessions) {
    if (session.principal !== principalId || !isIdle(session, now)) continue;
    if (oldest === undefined || session.lastSeen < oldest.lastSeen) oldest = session;
  }
  return oldest;
}
