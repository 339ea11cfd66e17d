/**
 * Package boundaries, checked from the sources as well as by the lint rule:
 * `protocol` imports no other layer; `actor` and `core` share only `protocol`; `core` never
 * imports the SDK or xstate (it never speaks MCP itself: views talk to actors).
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function sourcesOf(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourcesOf(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)].map((match) => match[1]!);
}

const rules: Record<string, RegExp[]> = {
  protocol: [/^@mcpool\//, /^@modelcontextprotocol\//, /^xstate/, /^pino/],
  actor: [/^@mcpool\/(core|client)/],
  core: [/^@mcpool\/(actor|client)/, /^@modelcontextprotocol\//, /^xstate/],
  // The client's root must load in a webview: web APIs only, and the daemon only over HTTP.
  client: [/^node:/, /^@mcpool\/(core|actor)/, /^pino/, /^@modelcontextprotocol\//],
};

describe('package boundaries', () => {
  for (const [pkg, forbidden] of Object.entries(rules)) {
    it(`${pkg} imports nothing across its boundary`, () => {
      const files = sourcesOf(join(root, 'packages', pkg, 'src'));
      expect(files.length).toBeGreaterThan(0);
      const offences = files.flatMap((file) =>
        importsOf(file)
          .filter((spec) => forbidden.some((pattern) => pattern.test(spec)))
          .map((spec) => `${file.slice(root.length)} imports ${spec}`),
      );
      expect(offences).toEqual([]);
    });
  }

  it('the lint rule catches a forbidden import too', async () => {
    const { ESLint } = await import('eslint');
    const eslint = new ESLint({ cwd: root });
    const [result] = await eslint.lintText("import { connectionMachine } from '@mcpool/actor';\nexport const x = connectionMachine;\n", {
      // A file the TypeScript project has: the type-aware lint refuses a path outside it.
      filePath: join(root, 'packages/core/src/budget.ts'),
    });
    expect(result!.messages.map((message) => message.ruleId)).toContain('no-restricted-imports');
  });
});
