/**
 * Signals on the real `mcpool serve` process: SIGINT shuts down cleanly (exit 0), SIGHUP reloads
 * the config of a daemon not on a terminal, SIGTERM stops every server gracefully (stdin EOF,
 * then SIGTERM, then SIGKILL, within `shutdownTimeoutMs`: marker files written by the servers
 * prove which step reached them), and a second signal during the shutdown forces the exit
 * (exit 1) — even then no server process outlives it (their stdin closes with the daemon).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { McpoolClient } from '@mcpool/client';
import { fixtureConfig, killMarked, marker, pidsWithMarker } from '../../../../test/helpers/processes.js';

const BIN = fileURLToPath(new URL('../../bin/mcpool.js', import.meta.url));

interface Daemon {
  child: ChildProcess;
  lines: string[];
  client: McpoolClient;
  configPath: string;
  exited: Promise<number | null>;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function serve(mark: string, servers: Record<string, unknown>, waitReady = true, settings: Record<string, unknown> = {}): Promise<Daemon> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-signals-'));
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify({ mcpServers: servers, daemon: { port: 0, watchConfig: false, ...settings } }));
  const child = spawn(process.execPath, [BIN, 'serve', '--config', configPath], {
    env: { PATH: process.env.PATH, HOME: dir, XDG_STATE_HOME: join(dir, 'xdg-state'), MCPOOL_STATE_DIR: join(dir, 'state') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
    killMarked(mark);
    rmSync(dir, { recursive: true, force: true });
  });
  const lines: string[] = [];
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop()!;
    lines.push(...parts.filter((line) => line.length > 0));
  });
  const url = await vi.waitFor(
    () => {
      const line = lines.map((l) => JSON.parse(l) as { msg: string }).find((l) => l.msg.startsWith('listening on '));
      if (!line) throw new Error('not listening yet');
      return line.msg.slice('listening on '.length);
    },
    { timeout: 60_000, interval: 20 },
  );
  const client = new McpoolClient({ baseUrl: url, token: readFileSync(join(dir, 'state', 'token'), 'utf8').trim() });
  // Generous: a loaded machine takes seconds to boot an actor thread and spawn a server.
  if (waitReady) await vi.waitFor(async () => expect((await client.ready()).ready).toBe(true), { timeout: 60_000, interval: 50 });
  return { child, lines, client, configPath, exited };
}

/** The daemon's own lines (actor threads' records come through the same logger, tagged `actor`). */
const messages = (d: Daemon): string[] =>
  d.lines
    .map((line) => JSON.parse(line) as { msg: string; component?: string })
    .filter((record) => record.component !== 'actor')
    .map((record) => record.msg);

describe('mcpool serve signals', () => {
  it('SIGHUP reloads the config; SIGINT shuts down cleanly with exit code 0', async () => {
    const mark = marker('signals');
    const d = await serve(mark, { echo: fixtureConfig('echo.mjs', mark) });
    writeFileSync(d.configPath, JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark), prompts: fixtureConfig('promptsOnly.mjs', mark) }, daemon: { port: 0, watchConfig: false } }));
    d.child.kill('SIGHUP');
    await vi.waitFor(() => expect(messages(d)).toContain('config reloaded'), { timeout: 10_000, interval: 20 });
    expect((await d.client.getWorkspaceMcp()).servers.map((s) => s.name)).toEqual(['echo', 'prompts']);
    expect(pidsWithMarker(mark)).toHaveLength(2);
    d.child.kill('SIGINT');
    expect(await d.exited).toBe(0);
    // (each server's end is one `<name>#<i> gone` line among them)
    expect(messages(d).filter((msg) => !msg.endsWith(' gone')).slice(-4)).toEqual(['SIGINT: shutting down', 'shutting down', 'pool drained', 'stopped']);
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 5000, interval: 50 });
  }, 120_000);

  it('SIGTERM stops each server gracefully: EOF, then SIGTERM, then SIGKILL, inside shutdownTimeoutMs, forcing nothing', async () => {
    const mark = marker('signals-graceful');
    const markers = mkdtempSync(join(tmpdir(), 'mcpool-markers-'));
    cleanups.push(() => rmSync(markers, { recursive: true, force: true }));
    const server = (name: string, stopOn: string) => fixtureConfig('shutdownMarkers.mjs', mark, { env: { FIXTURE_MARKER_DIR: markers, FIXTURE_NAME: name, FIXTURE_STOP_ON: stopOn } });
    const timeoutMs = 6000;
    const d = await serve(mark, { polite: server('p', 'eof'), stubborn: server('s', 'sigterm'), deaf: server('d', 'never') }, true, { shutdownTimeoutMs: timeoutMs });
    expect(pidsWithMarker(mark)).toHaveLength(3);
    const signalled = Date.now();
    d.child.kill('SIGTERM');
    expect(await d.exited).toBe(0);
    const took = Date.now() - signalled;
    const drained = d.lines.map((l) => JSON.parse(l) as { msg: string; drained?: number; forced?: number }).find((l) => l.msg === 'pool drained');
    expect(drained).toMatchObject({ drained: 3, forced: 0 });
    const seen = (name: string): string[] => ['eof', 'sigterm'].filter((what) => existsSync(join(markers, `${name}.${what}`)));
    expect(seen('p')).toEqual(['eof']);
    expect(seen('s')).toEqual(['eof', 'sigterm']);
    expect(seen('d')).toEqual(['eof', 'sigterm']);
    expect(pidsWithMarker(mark)).toEqual([]);
    // The whole stop is bounded by the setting (the rest is the process ending).
    expect(took).toBeLessThan(timeoutMs + 5000);
  }, 120_000);

  it('a second signal during the shutdown forces the exit (code 1), and still no server survives', async () => {
    const mark = marker('signals-force');
    // A server still starting holds the shutdown (drainAll waits for spawns in flight, up to its deadline).
    const d = await serve(mark, { slow: fixtureConfig('slowInit.mjs', mark, { env: { FIXTURE_INIT_DELAY_MS: '30000' } }) }, false);
    // Generous waits: a loaded machine can take seconds to spawn the server or log a line.
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toHaveLength(1), { timeout: 60_000, interval: 20 });
    d.child.kill('SIGTERM');
    await vi.waitFor(() => expect(messages(d)).toContain('shutting down'), { timeout: 30_000, interval: 10 });
    d.child.kill('SIGTERM');
    expect(await d.exited).toBe(1);
    expect(messages(d)).toContain('second signal (SIGTERM): forcing exit');
    expect(messages(d)).not.toContain('pool drained');
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 10_000, interval: 50 });
  }, 120_000);
});
