/**
 * `per-workspace` sharing against the real filesystem server from npm, started with no directory
 * argument (as editors run it): it asks its client for roots as soon as it is initialized, and
 * works on those. The pool answers that `roots/list` itself from the entry's roots, so sessions
 * with the same roots share one process and each set of roots gets its own.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ErrorCode, PoolError, type PooledConnection } from '@mcpool/core';
import { pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000 });
const FILESYSTEM = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

const base = mkdtempSync(join(tmpdir(), 'mcpool-roots-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A workspace folder holding one file named after it. */
function workspace(name: string): { dir: string; uri: string } {
  const dir = join(base, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.txt`), name);
  return { dir, uri: pathToFileURL(dir).href };
}

/** The server with no directory argument; the marker rides in its process title (any other argument would be a directory). */
function filesystemConfig(mark: string): Record<string, unknown> {
  return { command: process.execPath, args: [`--title=${mark}`, FILESYSTEM], sharing: 'per-workspace' };
}

async function allowed(view: PooledConnection): Promise<string> {
  return textOf(await view.callTool('list_allowed_directories', {}));
}

describe('per-workspace sharing: the filesystem server without directories', { timeout: 120_000 }, () => {
  it('sessions with the same roots share one process, other roots get their own, and each sees only its own files', async () => {
    const pool = newPool();
    const mark = newMark('roots');
    const cfg = filesystemConfig(mark);
    const alpha = workspace('alpha');
    const beta = workspace('beta');
    const a1 = await pool.acquire('files', cfg, 's1', { roots: [{ uri: alpha.uri, name: 'alpha' }] });
    const b = await pool.acquire('files', cfg, 's2', { roots: [{ uri: beta.uri }] });
    // The same folder, named otherwise and listed twice: the same workspace.
    const a2 = await pool.acquire('files', cfg, 's3', { roots: [{ uri: alpha.uri }, { uri: alpha.uri, name: 'again' }] });

    expect(a1.id).toBe(a2.id);
    expect(b.id).not.toBe(a1.id);
    expect(pidsWithMarker(mark)).toHaveLength(2);
    const entries = pool.getSnapshot().servers.files!.entrySummary;
    expect(entries.map(({ refs, sharing }) => ({ refs, sharing }))).toEqual([
      { refs: 2, sharing: 'per-workspace' },
      { refs: 1, sharing: 'per-workspace' },
    ]);

    // The server applies its roots once it has them (right after it is initialized).
    await vi.waitFor(async () => expect(await allowed(a1)).toContain(alpha.dir), { timeout: 30_000, interval: 100 });
    await vi.waitFor(async () => expect(await allowed(b)).toContain(beta.dir), { timeout: 30_000, interval: 100 });
    expect(await allowed(a1)).not.toContain(beta.dir);
    expect(await allowed(b)).not.toContain(alpha.dir);

    expect(textOf(await a2.callTool('list_directory', { path: alpha.dir }))).toContain('alpha.txt');
    expect(textOf(await b.callTool('list_directory', { path: beta.dir }))).toContain('beta.txt');
    // Outside its roots the server refuses (a tool error, not a pool one).
    const denied = await a1.callTool('list_directory', { path: beta.dir });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).not.toContain('beta.txt');
  });

  it('refuses roots that are not a list of { uri }', async () => {
    const pool = newPool();
    const cfg = filesystemConfig(newMark('bad-roots'));
    const error = await pool.acquire('files', cfg, 's1', { roots: [{ name: 'no uri' }] as never }).catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(PoolError);
    expect((error as PoolError).code).toBe(ErrorCode.INVALID_ARGUMENT);
  });
});
