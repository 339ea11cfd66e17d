/**
 * What a host gives a bridge and gets back from it: its options, the logger and token source it
 * is given, and the snapshot of what it has done.
 */
import type { Readable, Writable } from 'node:stream';
import type { Logger } from '@mcpool/core';

/**
 * The logger a bridge writes to: the pool's logger interface (pino satisfies it), and pino's
 * `isLevelEnabled` when it has one, so per-message debug lines are not even built below debug.
 */
export interface BridgeLogger extends Logger {
  isLevelEnabled?(level: string): boolean;
}

/** Where the bearer token comes from; `refresh` re-reads it after a 401 (a restarted daemon may have written a new one). */
export interface TokenSource {
  get(): Promise<string | undefined>;
  refresh(): Promise<string | undefined>;
}

export interface BridgeOptions {
  /** The daemon's MCP endpoint, e.g. `http://127.0.0.1:7070/mcp`. */
  url: string;
  token: TokenSource;
  /** What the client writes (stdin). */
  input: Readable;
  /** What the client reads (stdout): JSON-RPC lines only. */
  output: Writable;
  /** Where the bridge logs; never its output, which carries MCP only. */
  logger: BridgeLogger;
  /** Delays between attempts to reach a daemon that refuses connections; then the request fails. @default [100, 200, 400, 800, 1600] */
  retryDelaysMs?: readonly number[];
  /** Backoff of the GET stream's reconnects (doubling from `initialMs`), unless the daemon sent `retry:`. @default { initialMs: 100, maxMs: 2000 } */
  streamBackoff?: { initialMs: number; maxMs: number };
  /** Bound on one re-initialization (initialize + initialized), retries included. @default 30000 */
  reinitTimeoutMs?: number;
  /** On close: how long answers still in flight may arrive before the session is deleted. @default 300 */
  closeGraceMs?: number;
  /** Bound on the DELETE sent at close. @default 400 */
  deleteTimeoutMs?: number;
  /** Nothing is sent before this settles (the autostart's first check). */
  ready?: Promise<unknown>;
  /** Called when the daemon refuses a connection; resolves true when it answers now (autostart). */
  onUnreachable?: () => Promise<boolean>;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** The version the bridge names in the `initialize` it sends for a 2026-07-28 client that gave no client info. @default '0.0.0' */
  version?: string;
}

/** How the stdio client opened: `initialize` (legacy), a 2026-07-28 request (modern), or not yet. */
export type Era = 'unknown' | 'legacy' | 'modern';

/** A fresh snapshot of what the bridge has done. */
export interface BridgeStats {
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  /** Successful re-initializations. */
  reinits: number;
  /** Client requests waiting for their answer. */
  pending: number;
  era: Era;
}
