/**
 * Commands found as spawning finds them (a path relative to the server's cwd, a bare name on the
 * PATH it is spawned with), and the one spelling two equivalent commands get: `/x/bin/tool` where
 * `tool` resolves to exactly `/x/bin/tool` is `tool`, so both are one server, one fingerprint,
 * one process — and a reload from one spelling to the other changes nothing. Real files on disk.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fingerprint, normalizeServerConfig } from '@mcpool/protocol';
import { canonicalCommand, loadConfig, resolveCommand } from 'mcpool';

let dir: string;
let binA: string;
let binB: string;

function executable(path: string): void {
  writeFileSync(path, '#!/bin/sh\nexit 0\n');
  chmodSync(path, 0o755);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-command-'));
  binA = join(dir, 'a');
  binB = join(dir, 'b');
  mkdirSync(binA);
  mkdirSync(binB);
  executable(join(binA, 'tool'));
  executable(join(binB, 'tool'));
  executable(join(binB, 'other'));
  writeFileSync(join(binA, 'plain'), 'not executable');
  symlinkSync(join(binB, 'other'), join(binA, 'alias'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const stdio = (command: string, extra: Record<string, unknown> = {}) => normalizeServerConfig({ command, ...extra }).config;

describe('resolveCommand', () => {
  it('finds a bare name on PATH (the first executable wins), a path relative to the server’s cwd, and says what it looked for when there is none', () => {
    const path = `${binA}:${binB}`;
    expect(resolveCommand(stdio('tool'), { path })).toEqual({ found: join(binA, 'tool') });
    expect(resolveCommand(stdio('other'), { path })).toEqual({ found: join(binB, 'other') });
    // Not executable: skipped, as execvp skips it.
    expect(resolveCommand(stdio('plain'), { path })).toEqual({ missing: '"plain" is not on the PATH it would be spawned with' });
    expect(resolveCommand(stdio('./tool', { cwd: binB }), { path: '' })).toEqual({ found: join(binB, 'tool') });
    expect(resolveCommand(stdio('./tool'), { path: '', cwd: binA })).toEqual({ found: join(binA, 'tool') });
    expect(resolveCommand(stdio(join(dir, 'nope')), { path })).toEqual({ missing: `no executable file at ${join(dir, 'nope')}` });
    // The server's own env.PATH is the one it is spawned with.
    expect(resolveCommand(stdio('other', { env: { PATH: binB } }), { path: binA })).toEqual({ found: join(binB, 'other') });
    expect(resolveCommand(stdio('other', { env: { PATH: binA } }), { path: binB })).toEqual({ missing: '"other" is not on the server\'s env.PATH it would be spawned with' });
  });
});

describe('canonicalCommand', () => {
  it('writes an absolute path as its name only when PATH finds exactly that file; another directory or a symlink stays a different command', () => {
    const path = `${binA}:${binB}`;
    expect(canonicalCommand(stdio(join(binA, 'tool')), { path }).command).toBe('tool');
    expect(canonicalCommand(stdio(`${binA}//tool`), { path }).command).toBe('tool');
    // PATH finds a/tool first: b/tool is another program.
    expect(canonicalCommand(stdio(join(binB, 'tool')), { path }).command).toBe(join(binB, 'tool'));
    // a/alias is a symlink to b/other: a multi-call binary would see another name.
    expect(canonicalCommand(stdio(join(binB, 'other')), { path: binA }).command).toBe(join(binB, 'other'));
    expect(canonicalCommand(stdio('tool'), { path }).command).toBe('tool');
    expect(fingerprint(canonicalCommand(stdio(join(binA, 'tool')), { path }))).toBe(fingerprint(stdio('tool')));
  });

  it('the daemon loads both spellings as one fingerprint, so a reload between them changes nothing', async () => {
    const file = join(dir, 'config.json');
    const saved = process.env.PATH;
    process.env.PATH = `${binA}:${saved ?? ''}`;
    try {
      writeFileSync(file, JSON.stringify({ mcpServers: { t: { command: 'tool', args: ['x'] }, u: { type: 'stdio', command: join(binA, 'tool'), args: ['x'], env: {} } } }));
      const loaded = await loadConfig({ kind: 'file', path: file, origin: 'flag' }, {});
      expect(loaded.unavailable).toEqual({});
      expect(loaded.servers.u).toEqual({ transport: 'stdio', command: 'tool', args: ['x'], env: {} });
      expect(fingerprint(loaded.servers.u!)).toBe(fingerprint(loaded.servers.t!));
    } finally {
      process.env.PATH = saved;
    }
  });
});
