/**
 * The daemon sessions one editor window opened, found again by their label: each definition the
 * window starts sends `Mcpool-Session-Label: vscode/<extension host pid>/<window nonce>`, which
 * the daemon shows with the session. When the window closes, its sessions are ended at once
 * (rather than held until the daemon's idle TTL); when a window starts, sessions of extension
 * hosts that are gone (a killed window runs no deactivation) are ended too.
 */
import { randomUUID } from 'node:crypto';
import type { McpoolClient } from '@mcpool/client';
import { isProcessAlive } from 'mcpool/local';

const LABEL = /^vscode\/(\d+)\/[\w-]+$/;

/** The label of this window's sessions. */
export function windowLabel(pid: number = process.pid, nonce: string = randomUUID()): string {
  return `vscode/${pid}/${nonce}`;
}

/** Ends the sessions labelled `label`; answers how many. A session already gone counts as ended. */
export async function endWindowSessions(client: McpoolClient, label: string, signal?: AbortSignal): Promise<number> {
  const sessions = await client.listWorkspaceSessions(signal ? { signal } : undefined);
  const mine = sessions.filter((session) => session.label === label);
  await Promise.all(mine.map((session) => client.closeWorkspaceSession(session.id, signal ? { signal } : undefined).catch(() => undefined)));
  return mine.length;
}

/**
 * Ends the sessions of windows whose extension host process is gone. Only labels of this form
 * are looked at, and a pid that is alive (whoever it is now) is left alone.
 */
export async function endOrphanedSessions(client: McpoolClient, alive: (pid: number) => boolean = isProcessAlive): Promise<number> {
  const sessions = await client.listWorkspaceSessions();
  const orphans = sessions.filter((session) => {
    const pid = LABEL.exec(session.label ?? '')?.[1];
    return pid !== undefined && !alive(Number(pid));
  });
  await Promise.all(orphans.map((session) => client.closeWorkspaceSession(session.id).catch(() => undefined)));
  return orphans.length;
}
