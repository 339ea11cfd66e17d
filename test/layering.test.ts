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
  // Of OpenTelemetry, a library uses the API only (a no-op until its host registers an SDK).
  core: [/^@mcpool\/(actor|client)/, /^@modelcontextprotocol\//, /^xstate/, /^@opentelemetry\/(?!api$)/],
  // The client's root must load in a webview: web APIs only, and the daemon only over HTTP.
  client: [/^node:/, /^@mcpool\/(core|actor)/, /^pino/, /^@modelcontextprotocol\//],
};

describe('package boundaries', () => {
  for (const [pkg, forbidden] of Object.entries(rules)) {
    it(`${pkg} imports nothing across its boundary`, () => {
      // The client's `./node` subpath (`node.ts`: the local socket) is for Node hosts only; the root never imports it.
      const files = sourcesOf(join(root, 'packages', pkg, 'src')).filter((file) => !(pkg === 'client' && file.endsWith(`${join('src', 'node.ts')}`)));
      expect(files.length).toBeGreaterThan(0);
      const offences = files.flatMap((file) =>
        importsOf(file)
          .filter((spec) => forbidden.some((pattern) => pattern.test(spec)))
          .map((spec) => `${file.slice(root.length)} imports ${spec}`),
      );
      expect(offences).toEqual([]);
    });
  }

  it('the daemon loads the OpenTelemetry SDK in one module, and imports that module only dynamically', () => {
    const files = sourcesOf(join(root, 'apps', 'daemon', 'src'));
    const sdkModule = join(root, 'apps', 'daemon', 'src', 'telemetry', 'sdk.ts');
    // Type-only imports cost nothing at run time.
    const runtimeImports = (file: string) =>
      [...readFileSync(file, 'utf8').matchAll(/^import\s+(?!type\s)[^;]*?from\s+['"]([^'"]+)['"]/gms)].map((match) => match[1]!);
    const sdkUsers = files.filter((file) => runtimeImports(file).some((spec) => /^@opentelemetry\/(?!api$)/.test(spec)));
    expect(sdkUsers.map((file) => file.slice(root.length))).toEqual([sdkModule.slice(root.length)]);
    const staticSdkImports = files.filter((file) => runtimeImports(file).some((spec) => spec.endsWith('/sdk.js')));
    expect(staticSdkImports).toEqual([]);
    const dynamic = files.filter((file) => /import\(\s*['"]\.\/sdk\.js['"]\s*\)/.test(readFileSync(file, 'utf8')));
    expect(dynamic.map((file) => file.slice(root.length))).toEqual([join('apps', 'daemon', 'src', 'telemetry', 'telemetry.ts')]);
  });

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
