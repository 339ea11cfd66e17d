/**
 * What the pool learns about a server from using it goes into that config's catalog and outlives
 * the connection that learned it: a server's requests to its client (sampling, roots) and the
 * tools that sent them are recorded in the catalog file; a new pool over the same catalog dir (a
 * restarted daemon) starts each connection with those tools learned, so the very first
 * concurrent calls of an asking tool from two sessions are serialised; a later list change keeps
 * the facts. Real fixture servers (SDK v1) and the real filesystem server from npm.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { fingerprint, normalizeServerConfig } from '@mcpool/protocol';
import { fixtureConfig, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000, stateDir: false });
const LONG = 120_000;
const FILESYSTEM = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

function withDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-learned-'));
  return run(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** The catalog file of `cfg` (named `name`) in `dir`, as JSON. */
function onDisk(dir: string, name: string, cfg: Record<string, unknown>): { learned?: Record<string, unknown>; tools: { name: string }[] } {
  const fp = fingerprint(normalizeServerConfig(cfg, { path: name }).config);
  return JSON.parse(readFileSync(join(dir, `${fp}.json`), 'utf8')) as { learned?: Record<string, unknown>; tools: { name: string }[] };
}

/** A client's sampling answer naming it, after a moment's thought (so unserialised calls would overlap on the server). */
function answeredBy(who: string) {
  return async (request: { params: Record<string, unknown> }): Promise<Record<string, unknown>> => {
    await delay(50);
    const messages = request.params.messages as { content: { text: string } }[];
    return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `${who} answers ${messages[0]!.content.text}` } };
  };
}

const SAMPLING = { makesServerRequests: true, askingTools: { test_sampling: ['sampling/createMessage'] } };

describe('what the pool learned, in the catalog', () => {
  it('a sampling call records its tool in the catalog file; a new pool over it serialises two sessions’ first concurrent calls', () =>
    withDir(async (dir) => {
      const cfg = fixtureConfig('conformance.mjs', newMark('learnedSampling'));
      const first = newPool({ catalogDir: dir });
      const view = await first.acquire('conf', cfg, 's1');
      expect(first.catalogOf('conf', cfg)!.learned).toEqual({});
      view.setServerRequestHandler(answeredBy('A'));
      expect(textOf(await view.callTool('test_sampling', { prompt: 'once' }))).toBe('LLM response: A answers once');
      await vi.waitFor(() => expect(onDisk(dir, 'conf', cfg).learned).toEqual(SAMPLING), { timeout: 20_000, interval: 50 });
      await first.drainAll({ force: true });

      // A restarted host: nothing was called on this pool, yet its first calls are serialised.
      const second = newPool({ catalogDir: dir });
      expect(second.catalogOf('conf', cfg)!.learned).toEqual(SAMPLING);
      const a = await second.acquire('conf', cfg, 'A');
      const b = await second.acquire('conf', cfg, 'B');
      expect(a.id).toBe(b.id);
      a.setServerRequestHandler(answeredBy('A'));
      b.setServerRequestHandler(answeredBy('B'));
      const prompts = ['a1', 'b1', 'a2', 'b2'];
      const results = await Promise.all(prompts.map((prompt) => (prompt.startsWith('a') ? a : b).callTool('test_sampling', { prompt })));
      expect(results.map(textOf)).toEqual(prompts.map((prompt) => `LLM response: ${prompt.startsWith('a') ? 'A' : 'B'} answers ${prompt}`));
    }),
  LONG);

  it('a list change records the new lists and keeps the facts', () =>
    withDir(async (dir) => {
      const cfg = fixtureConfig('listChanged.mjs', newMark('learnedListChanged'));
      const pool = newPool({ catalogDir: dir });
      const view = await pool.acquire('lc', cfg, 's1');
      view.setServerRequestHandler(answeredBy('A'));
      expect(textOf(await view.callTool('ask', { prompt: 'hi' }))).toBe('A answers hi');
      const asked = { makesServerRequests: true, askingTools: { ask: ['sampling/createMessage'] } };
      await vi.waitFor(() => expect(onDisk(dir, 'lc', cfg).learned).toEqual(asked), { timeout: 20_000, interval: 50 });

      await view.callTool('add_tool', { name: 'late' });
      await vi.waitFor(() => expect(onDisk(dir, 'lc', cfg).tools.map((tool) => tool.name)).toContain('late'), { timeout: 20_000, interval: 50 });
      expect(onDisk(dir, 'lc', cfg).learned).toEqual(asked);
      expect(pool.catalogOf('lc', cfg)!.learned).toEqual(asked);
    }),
  LONG);

  it('a server that asks for roots during its handshake is recorded as using roots', () =>
    withDir(async (dir) => {
      const workspace = join(dir, 'workspace');
      mkdirSync(workspace);
      // No directory argument: the filesystem server asks its client for roots as soon as it is initialized.
      const cfg = { command: process.execPath, args: [`--title=${newMark('learnedRoots')}`, FILESYSTEM], sharing: 'per-workspace' };
      const pool = newPool({ catalogDir: join(dir, 'catalog') });
      await pool.acquire('files', cfg, 's1', { roots: [{ uri: pathToFileURL(workspace).href }] });
      await vi.waitFor(() => expect(pool.catalogOf('files', cfg)!.learned).toEqual({ usesRoots: true, makesServerRequests: true }), { timeout: 20_000, interval: 50 });
      expect(onDisk(join(dir, 'catalog'), 'files', cfg).learned).toEqual({ usesRoots: true, makesServerRequests: true });
    }),
  LONG);
});
