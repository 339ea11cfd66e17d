// The main job until the daemon lands: pool one fixture server across three sessions and show
// what happened — one process, three filtered views, calls from each, then a clean drain.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { McpTransportPool } from '@mcpool/core';

const server = fileURLToPath(new URL('../test/fixtures/servers/echo.mjs', import.meta.url));
const mark = `--demo-${process.pid}`;
const config = { command: process.execPath, args: [server, mark] };
const countProcesses = () => execFileSync('ps', ['-A', '-o', 'args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(mark)).length;

const events = [];
const pool = new McpTransportPool({ drainDelayMs: 500, budget: { clientBudget: 4, mode: 'warn' }, onEvent: (e) => events.push(e.type) });

let t = performance.now();
const alice = await pool.acquire('echo', { ...config, excludeTools: ['throw', 'fail'] }, 'alice');
console.log(`alice acquired echo (cold, spawned the server) in ${(performance.now() - t).toFixed(0)} ms`);
t = performance.now();
const bob = await pool.acquire('echo', { ...config, includeTools: ['echo', 'pid'], trust: true }, 'bob');
console.log(`bob acquired echo (warm, shared) in ${(performance.now() - t).toFixed(1)} ms`);
const carol = await pool.acquire('echo', config, 'carol');

console.log(`server processes for 3 sessions: ${countProcesses()}`);
for (const view of [alice, bob, carol]) {
  const { text } = (await view.callTool('pid')).content[0];
  console.log(`${view.sessionId.padEnd(5)} sees ${String(view.tools.length).padStart(2)} tools (trust=${view.tools[0]?.trust}) and talks to pid ${JSON.parse(text).pid}`);
}
try {
  await bob.callTool('add', { a: 1, b: 2 });
} catch (error) {
  console.log(`bob calling a filtered tool: ${error.code}`);
}
console.log('snapshot:', JSON.stringify(pool.getSnapshot().servers.echo.entrySummary), JSON.stringify(pool.getSnapshot().budget));

await pool.releaseSession('alice');
await pool.releaseSession('bob');
await carol.release();
console.log('all sessions released; the entry drains after 500 ms');
await new Promise((resolve) => setTimeout(resolve, 900));
console.log(`after the drain: ${Object.keys(pool.getSnapshot().servers).length} entries, ${countProcesses()} processes`);
console.log('drainAll:', JSON.stringify(await pool.drainAll()), 'events:', events.join(', ') || '(none)');
