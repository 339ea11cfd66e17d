/**
 * `@mcpool/client`'s root entry must load where there is no Node (a browser, an IDE webview):
 * 1. the built module graph from `dist/index.js` imports no Node built-in, and no package at run
 *    time but the browser-safe ones listed here (the plain-data error-code table, the SSE parser);
 * 2. the built entry really loads, and works, in a Node whose built-in modules cannot be imported.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
/** Packages the root entry may import at run time: no Node built-in anywhere in them (test 2 loads them). */
const BROWSER_SAFE = new Set(['@mcpool/protocol/errorCodes', 'eventsource-parser']);
const entry = join(dist, 'index.js');

/** Every runtime import specifier of a built ES module (static, dynamic and re-exports). */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => (m[1] ?? m[2] ?? m[3])!);
}

describe('@mcpool/client root entry', () => {
  it('has a module graph with no Node built-in and no run-time package import but the browser-safe ones', () => {
    expect(existsSync(entry)).toBe(true);
    const seen = new Set<string>();
    const bare: string[] = [];
    const queue = [entry];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const specifier of runtimeImports(file)) {
        if (specifier.startsWith('.')) queue.push(resolve(dirname(file), specifier));
        else if (!BROWSER_SAFE.has(specifier)) bare.push(`${file.slice(dist.length)} imports ${specifier}`);
      }
    }
    expect(seen.size).toBeGreaterThan(3);
    expect(bare).toEqual([]);
  });

  it('loads and works in a Node where every built-in module is blocked', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-barrel-'));
    try {
      const blocked = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];
      writeFileSync(
        join(dir, 'hooks.mjs'),
        `const blocked = new Set(${JSON.stringify(blocked)});
export async function resolve(specifier, context, next) {
  if (blocked.has(specifier) || specifier.startsWith('node:')) throw new Error('built-in blocked: ' + specifier);
  return next(specifier, context);
}
`,
      );
      writeFileSync(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`);
      writeFileSync(
        join(dir, 'probe.mjs'),
        `const client = await import(${JSON.stringify(pathToFileURL(entry).href)});
let blockedWorks = false;
try { await import('node:fs'); } catch { blockedWorks = true; }
const c = new client.McpoolClient({ token: 'x', baseUrl: 'http://127.0.0.1:1' });
const state = client.reduceSessionViewState(client.INITIAL_SESSION_VIEW_STATE, { type: 'mcp_budget_warning', scope: 'workspace' });
const frames = [];
// The SSE parser is not public; the events() reader uses it, so it must load here too.
const { SseParser } = await import(${JSON.stringify(pathToFileURL(join(dist, 'sse.js')).href)});
const sse = new SseParser({ onMessage: (m) => frames.push(m) });
sse.push('id: 1\\ndata: {"ok":true}\\n\\n');
console.log(JSON.stringify({ blockedWorks, baseUrl: c.baseUrl, count: state.mcpBudgetWarningCount, code: client.ErrorCode.UNREACHABLE, frames, exports: Object.keys(client).sort() }));
`,
      );
      const out = execFileSync(process.execPath, ['--import', pathToFileURL(join(dir, 'register.mjs')).href, join(dir, 'probe.mjs')], { encoding: 'utf8' });
      const result = JSON.parse(out.trim().split('\n').at(-1)!) as { blockedWorks: boolean; baseUrl: string; count: number; code: string; frames: unknown[]; exports: string[] };
      expect(result.blockedWorks).toBe(true);
      expect(result.baseUrl).toBe('http://127.0.0.1:1');
      expect(result.count).toBe(1);
      // The run-time packages it imports (the error table, the SSE parser) load without Node too.
      expect(result.code).toBe('MCPOOL_UNREACHABLE');
      expect(result.frames).toEqual([{ event: 'message', data: '{"ok":true}', lastEventId: '1', hasId: true }]);
      // The public runtime surface, pinned.
      expect(result.exports).toEqual([
        'ErrorCode',
        'INITIAL_SESSION_VIEW_STATE',
        'McpoolClient',
        'McpoolHttpError',
        'McpoolRequestError',
        'isRestartEntries',
        'isWorkspaceScopedBudgetEvent',
        'reduceSessionViewState',
        'reduceSessionViewStates',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
