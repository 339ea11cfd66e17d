/**
 * The public API of the published libraries, pinned: each package's `exports` map, the names
 * that exist at run time, and the types, against the checked-in list in `publicApi.json`.
 * Adding or removing an export is a decision: change the list in the same commit. To print the
 * current surface in the list's format, run this file with MCPOOL_PRINT_API=1.
 *
 * Also: every type that a public declaration names, declared in one of our packages, is
 * exported (a user who meets it in a signature can import it), and no `@internal` member
 * reaches a shipped `.d.ts`.
 */
import { readFileSync, readdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { surfaceOf, typesEntryOf } from './apiSurface.js';

const root = realpathSync(fileURLToPath(new URL('../..', import.meta.url)));
const ownRoots = [join(root, 'packages'), join(root, 'apps')];

interface Pinned {
  dir: string;
  exports: unknown;
  values?: string[];
  types?: string[];
}
const pinned = JSON.parse(readFileSync(new URL('publicApi.json', import.meta.url), 'utf8')) as Record<string, Pinned>;

const libraries = ['@mcpool/core', '@mcpool/client'];

function packageJson(dir: string): { name: string; exports: unknown } {
  return JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { name: string; exports: unknown };
}

describe('public API', () => {
  it('every published package has the pinned export map', () => {
    for (const [name, spec] of Object.entries(pinned)) {
      const pkg = packageJson(spec.dir);
      expect(pkg.name, spec.dir).toBe(name);
      expect(pkg.exports, `${name} exports`).toEqual(spec.exports);
    }
  });

  for (const name of libraries) {
    describe(name, () => {
      const spec = pinned[name]!;
      const surface = surfaceOf(typesEntryOf(join(root, spec.dir)), ownRoots);
      if (process.env.MCPOOL_PRINT_API) console.log(name, JSON.stringify({ values: surface.values, types: surface.types }, null, 2));

      it('exports at run time exactly the pinned values', async () => {
        const module = (await import(name)) as Record<string, unknown>;
        expect(Object.keys(module).sort()).toEqual(spec.values);
      });

      it('declares exactly the pinned values and types (compiled from its .d.ts)', () => {
        expect(surface.values).toEqual(spec.values);
        expect(surface.types).toEqual(spec.types);
      });

      it('exports every type its public declarations name', () => {
        expect(surface.missing).toEqual([]);
      });
    });
  }

  it('no @internal member is left in a shipped declaration file', () => {
    const offenders: string[] = [];
    for (const spec of Object.values(pinned)) {
      const dist = join(root, spec.dir, 'dist');
      for (const file of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
        if (!file.endsWith('.d.ts')) continue;
        if (readFileSync(join(dist, file), 'utf8').includes('@internal')) offenders.push(join(spec.dir, 'dist', file));
      }
    }
    expect(offenders).toEqual([]);
  });
});
