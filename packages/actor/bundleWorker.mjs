// Builds the actor thread's entry as one file per transport (`dist/bundle/`): what every
// connection thread loads (the actor, its machine, xstate, the stdio transport, the channel code
// of @mcpool/protocol) in `worker.js`, and each remote transport (Streamable HTTP, legacy SSE,
// websocket) in a chunk of its own, imported when a connection of that kind starts. One file
// instead of ~30 modules, whitespace removed: a thread keeps less of its code in memory and
// loads it sooner (measured in test/bench/actorRss.mjs against a bare worker). Identifiers are not
// mangled and names are kept, so a stack trace in an actor's log stays readable without a map.
// Node's built-ins and `ws` (a dependency with optional native parts) stay imports.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const dist = fileURLToPath(new URL('./dist/', import.meta.url));
rmSync(`${dist}bundle`, { recursive: true, force: true });
await build({
  input: `${dist}worker.js`,
  platform: 'node',
  external: [/^node:/, 'ws'],
  logLevel: 'warn',
  output: {
    dir: `${dist}bundle`,
    format: 'esm',
    entryFileNames: 'worker.js',
    chunkFileNames: '[name].js',
    keepNames: true,
    minify: { compress: true, mangle: false, codegen: { removeWhitespace: true } },
  },
});
