/**
 * What the operator always keeps of a daemon-wide cap (live servers, `/mcp` sessions): clients
 * with a share leave it the last eighth of the cap (at least 1, when the cap has room for one
 * more), so a few tokens at their shares can never lock the operator out. The operator and clients
 * holding `admin` hold no share: they run the daemon, and are held by the cap alone.
 */
import { OPERATOR_ID } from '../auth.js';
import type { ClientSpec } from '../config/daemonConfig.js';

/** The part of `cap` only share-free principals may take: an eighth, at least 1, never all of it. */
export function operatorHeadroom(cap: number): number {
  return Math.min(cap - 1, Math.max(1, Math.floor(cap / 8)));
}

/** Whether `principal` holds no share: the operator, or a configured client with the `admin` right. */
export function holdsNoShare(principal: string, clients: readonly ClientSpec[]): boolean {
  return principal === OPERATOR_ID || clients.some((client) => client.id === principal && client.rights.includes('admin'));
}
