// A killed child → its in-flight call rejected, unloaded: the pool against the kernel's floor.
// `node test/bench/killReject.mjs [--rounds=8]`
//
// The floor is what any client of a stdio server waits for: SIGKILL → the end of the child's
// stdout in the parent (the kernel closes the pipe only once it has torn the process's memory
// down, so a warm server takes longer than a fresh one). It is measured on a child in the pool's
// own conditions: the same fixture, its own process group, three pipes, warmed by initialize,
// tools/list and a call, with a `slow` call in flight. Rounds alternate which side goes first.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { McpTransportPool } from '@mcpool/core';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const ROUNDS = Number(args.rounds ?? 8);
const FIXTURE = fileURLToPath(new URL('../fixtures/servers/echo.mjs', import.meta.url));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** SIGKILL → stdout `end` of a warmed child spawned as the pool spawns it. */
async function floorOnce() {
  const child = spawn(process.execPath, [FIXTURE, 'killReject-floor'], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  child.stderr.resume();
  let buffered = '';
  const answered = (id) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${id}`)), 10_000);
      const onData = (chunk) => {
        buffered += chunk;
        if (!buffered.includes(`"id":${id},`) && !buffered.includes(`"id":${id}}`)) return;
        clearTimeout(timer);
        child.stdout.off('data', onData);
        resolve();
      };
      child.stdout.on('data', onData);
    });
  const send = (message) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  try {
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'floor', version: '1' } } });
    await answered(1);
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/list' });
    await answered(2);
    send({ id: 3, method: 'tools/call', params: { name: 'slow', arguments: { ms: 30_000 } } });
    send({ id: 4, method: 'tools/call', params: { name: 'echo', arguments: { text: 'sent' } } });
    await answered(4);
    const ended = new Promise((resolve) => child.stdout.once('end', resolve));
    child.stdout.resume();
    const t0 = performance.now();
    child.kill('SIGKILL');
    await ended;
    return performance.now() - t0;
  } finally {
    child.kill('SIGKILL');
  }
}

/** SIGKILL → the pool's in-flight `slow` call rejected in this thread. */
async function poolOnce(view) {
  // The view reports the restart a moment after its calls start failing with NOT_CONNECTED.
  let answer;
  let last;
  for (let i = 0; i < 500 && answer === undefined; i++) {
    answer = await view.callTool('pid').catch((error) => {
      last = error;
      return sleep(10);
    });
  }
  if (answer === undefined) throw new Error(`the server did not come back: ${last?.message}`);
  const pid = Number(JSON.stringify(answer).match(/\d{2,}/)[0]);
  const rejected = view.callTool('slow', { ms: 30_000 }).then(
    () => undefined,
    () => performance.now(),
  );
  // Answered after the slow call was read: the child has it in flight.
  await view.callTool('echo', { text: 'sent' });
  const t0 = performance.now();
  process.kill(pid, 'SIGKILL');
  const at = await rejected;
  if (at === undefined) throw new Error('the in-flight call was answered');
  return at - t0;
}

// Killed every round on purpose: the restart intensity must not trip.
const pool = new McpTransportPool({ stateDir: false, restartIntensity: { maxRestarts: 1000, periodMs: 1000 } });
try {
  const view = await pool.acquire('echo', { command: process.execPath, args: [FIXTURE, 'killReject-pool'] }, 's1');
  const floor = [];
  const pooled = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      floor.push(await floorOnce());
      pooled.push(await poolOnce(view));
    } else {
      pooled.push(await poolOnce(view));
      floor.push(await floorOnce());
    }
    // The pool restarts the child (immediately, then 500 ms apart): let it settle.
    await sleep(300);
  }
  const sorted = (a) => [...a].sort((x, y) => x - y);
  const p50 = (a) => sorted(a)[a.length >> 1];
  const excess = pooled.map((ms, i) => ms - floor[i]);
  const show = (a) => sorted(a).map((x) => x.toFixed(1)).join(' ');
  console.log(`kill → rejection, ${ROUNDS} rounds: pool p50 ${p50(pooled).toFixed(1)} ms [${show(pooled)}]`);
  console.log(`kill → stdout end (floor):  p50 ${p50(floor).toFixed(1)} ms [${show(floor)}]`);
  console.log(`pool − floor per round:     p50 ${p50(excess).toFixed(1)} ms [${show(excess)}]`);
} finally {
  await pool.drainAll();
}
