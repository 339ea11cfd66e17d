/**
 * A server definition's `version`: the editor shows "tools changed" and re-reads a server's tools
 * when it changes, so it is derived from the tools alone — a hash of their canonical JSON (keys
 * sorted at every level, list order kept: the daemon lists tools in a stable order). A restart,
 * a reconnect or another window changes nothing unless the tools do.
 */
import { createHash } from 'node:crypto';
import type { ToolDefinition } from './serverMetadata.js';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  const record = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(record)
      .sort()
      .map((key) => [key, canonical(record[key])]),
  );
}

/** 16 hex characters of the SHA-256 of the tools' canonical JSON. */
export function toolsVersion(tools: readonly ToolDefinition[]): string {
  return createHash('sha256').update(JSON.stringify(canonical(tools))).digest('hex').slice(0, 16);
}
