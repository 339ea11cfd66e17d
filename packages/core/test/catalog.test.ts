/**
 * The catalog: what each server config offers, recorded by the pool after every discovery and
 * list change, kept in the host's catalog dir, and read by a new pool (a restarted host) without
 * starting anything; a changed config or another mcpool version never reads a stale record.
 */
import { describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fingerprint, normalizeServerConfig } from '@mcpool/protocol';
// Not public (the pool owns its catalog): this test reads a record as another version would.
import { ServerCatalog, CATALOG_FORMAT } from '../src/catalog.js';
import { factsOfRequest, mergeFacts } from '../src/catalogFacts.js';
import { fixtureConfig, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000, stateDir: false });
const LONG = 60_000;

function withDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-catalog-'));
  return run(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

describe('the catalog', () => {
  it('is written at discovery and on list_changed, and read by a new pool that starts nothing', () =>
    withDir(async (dir) => {
      const mark = newMark('catalog');
      const cfg = fixtureConfig('listChanged.mjs', mark);
      const first = newPool({ catalogDir: dir });
      expect(first.catalogOf('lc', cfg)).toBeUndefined();
      const view = await first.acquire('lc', cfg, 's1');
      const fp = fingerprint(normalizeServerConfig(cfg, { path: 'lc' }).config);
      const record = first.catalogOf('lc', cfg);
      expect(record).toMatchObject({ format: CATALOG_FORMAT, fingerprint: fp, era: 'legacy', serverInfo: { name: 'fixture-list-changed' } });
      expect(record!.tools.map((tool) => tool.name)).toContain('base');
      expect(record!.capabilities).toMatchObject({ tools: { listChanged: true } });
      expect(readdirSync(dir)).toEqual([`${fp}.json`]);
      // Shown once per config object and record: a host listing it for every session recomputes nothing.
      expect(first.catalogOf('lc', cfg)).toBe(record);

      // A list change is recorded, on disk too, and shown to the same config object.
      expect(textOf(await view.callTool('add_tool', { name: 'late' }))).toBeDefined();
      await vi.waitFor(() => expect(first.catalogOf('lc', cfg)!.tools.map((tool) => tool.name)).toContain('late'), { timeout: 20_000, interval: 50 });
      expect(record!.tools.map((tool) => tool.name)).not.toContain('late');
      const onDisk = JSON.parse(readFileSync(join(dir, `${fp}.json`), 'utf8')) as { tools: { name: string }[] };
      expect(onDisk.tools.map((tool) => tool.name)).toContain('late');
      await first.drainAll({ force: true });
      expect(pidsWithMarker(mark)).toEqual([]);

      // A new pool on the same dir lists from it; nothing runs.
      const second = newPool({ catalogDir: dir });
      expect(second.catalogOf('lc', cfg)!.tools.map((tool) => tool.name)).toContain('late');
      expect(second.getSnapshot().servers).toEqual({});
      expect(pidsWithMarker(mark)).toEqual([]);
      // Another config (one more argument) has no record.
      expect(second.catalogOf('lc', { ...cfg, args: [...(cfg.args as string[]), '--other'] })).toBeUndefined();
      // Another mcpool version, or another format, reads nothing.
      expect(new ServerCatalog({ dir }).get(fp)).toBeDefined();
      expect(new ServerCatalog({ dir, version: '99.0.0' }).get(fp)).toBeUndefined();
    }),
  LONG);

  it('records a modern server as modern; without a dir it is kept in memory only', async () => {
    const mark = newMark('catalogModern');
    const cfg = fixtureConfig('v2EraServer.mjs', mark);
    const pool = newPool({});
    await pool.acquire('dual', cfg, 's1');
    expect(pool.catalogOf('dual', cfg)).toMatchObject({ era: 'modern', serverInfo: { name: 'fixture-dual-era' } });
    expect(pool.catalogOf('dual', cfg)!.tools.length).toBeGreaterThan(0);
  }, LONG);

  it('ignores a record of another format or fingerprint, and a file that is not JSON', () =>
    withDir(async (dir) => {
      const catalog = new ServerCatalog({ dir });
      const source = { tools: [{ name: 't', inputSchema: { type: 'object' } }], prompts: [], resources: [], resourceTemplates: [], serverInfo: { name: 's', version: '1' }, capabilities: {}, instructions: undefined, era: 'legacy' as const };
      catalog.record('abc123', source, { usesRoots: true });
      catalog.learn('abc123', { makesServerRequests: true });
      const file = join(dir, 'abc123.json');
      const saved = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      expect(saved.learned).toEqual({ usesRoots: true, makesServerRequests: true });
      writeFileSync(file, JSON.stringify({ ...saved, format: CATALOG_FORMAT + 1 }));
      expect(new ServerCatalog({ dir }).get('abc123')).toBeUndefined();
      writeFileSync(file, JSON.stringify({ ...saved, fingerprint: 'def456' }));
      expect(new ServerCatalog({ dir }).get('abc123')).toBeUndefined();
      writeFileSync(file, '{not json');
      expect(new ServerCatalog({ dir }).get('abc123')).toBeUndefined();
      // A name that is not a fingerprint never reaches the disk.
      expect(new ServerCatalog({ dir }).get('../abc123')).toBeUndefined();
    }));

  it('learned facts only grow, across records and learnings, and a file’s facts are read as known and bounded ones', () =>
    withDir(async (dir) => {
      const written: string[] = [];
      const catalog = new ServerCatalog({ dir, written: (_fp, text) => written.push(text) });
      const source = { tools: [{ name: 't', inputSchema: { type: 'object' } }], prompts: [], resources: [], resourceTemplates: [], serverInfo: { name: 's', version: '1' }, capabilities: {}, instructions: undefined, era: 'legacy' as const };
      catalog.record('abc123', source);
      const listed = (tool: string): boolean => tool === 't';
      catalog.learn('abc123', factsOfRequest('sampling/createMessage', 't', listed));
      catalog.learn('abc123', factsOfRequest('elicitation/create', 't', listed));
      // A tool the server does not list teaches nothing but that the server asks.
      catalog.learn('abc123', factsOfRequest('roots/list', 'made_up', listed));
      const facts = { usesRoots: true, makesServerRequests: true, askingTools: { t: ['elicitation/create', 'sampling/createMessage'] } };
      expect(catalog.get('abc123')!.learned).toEqual(facts);
      // Nothing new learned: nothing written.
      const writes = written.length;
      catalog.learn('abc123', factsOfRequest('sampling/createMessage', 't', listed));
      expect(written).toHaveLength(writes);
      // A new discovery keeps them; a false never unlearns.
      catalog.record('abc123', { ...source, tools: [] }, { usesRoots: false });
      expect(new ServerCatalog({ dir }).get('abc123')!.learned).toEqual(facts);

      // A file's facts: unknown fields and malformed tools dropped, methods bounded.
      const file = join(dir, 'abc123.json');
      const saved = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      const many = Array.from({ length: 40 }, (_, i) => `m${String(i).padStart(2, '0')}`);
      writeFileSync(file, JSON.stringify({ ...saved, learned: { usesRoots: 'yes', other: 1, askingTools: { a: many, b: 'not a list' } } }));
      const read = new ServerCatalog({ dir }).get('abc123')!.learned;
      expect(read).toEqual({ askingTools: { a: many.slice(0, 16) } });
      expect(mergeFacts(undefined, {})).toEqual({});
    }));
});
