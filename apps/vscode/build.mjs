// Builds the extension: type-checks the sources, bundles them with esbuild (the extension
// ships no node_modules: everything it runs is in dist/), and packages dist/mcpool-vscode.vsix
// with @vscode/vsce. Two bundles: `extension.js`, loaded in every window, and `move.js`, the
// `mcpool import` logic, loaded only when a user moves servers into the pool.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const dist = join(here, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', here, '--noEmit'], { stdio: 'inherit' });

const common = {
  bundle: true,
  platform: 'node',
  // VS Code 1.101's extension host runs Node 22; code-server 4.139 runs Node 24.
  target: 'node20',
  format: 'cjs',
  // `vscode` is the editor's, given to the extension at run time.
  external: ['vscode'],
  // ESM builds first: jsonc-parser's `main` is a UMD bundle whose requires esbuild cannot follow.
  mainFields: ['module', 'main'],
  minify: true,
  sourcemap: false,
  logLevel: 'warning',
  // The bundles never read import.meta: a dependency that would is a build error, not a silent undefined.
  logOverride: { 'empty-import-meta': 'error', 'unsupported-require-call': 'error' },
};
await build({ ...common, entryPoints: [join(here, 'src', 'extension.ts')], outfile: join(dist, 'extension.js') });
await build({ ...common, entryPoints: [join(here, 'src', 'move', 'moveEntry.ts')], outfile: join(dist, 'move.js') });

const vsce = require.resolve('@vscode/vsce/vsce');
execFileSync(process.execPath, [vsce, 'package', '--no-dependencies', '--out', join(dist, 'mcpool-vscode.vsix')], { cwd: here, stdio: ['ignore', 'inherit', 'inherit'] });
for (const file of ['extension.js', 'move.js', 'mcpool-vscode.vsix']) console.log(`${file}: ${Math.round(statSync(join(dist, file)).size / 1024)} KiB`);
