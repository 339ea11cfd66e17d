// A worker thread that starts `echo.mjs` the two ways an actor could, on request of the isolation
// section, and times each: `inThread` spawns it from this thread on pipes (what actors did: a
// terminated thread then leaves a zombie), `supervisor` asks the main thread over an RpcChannel,
// as an actor asks its supervisor (the main thread spawns it on sockets this thread listens on,
// and reaps it). Each sample: the spawn until the child's stdio is in hand, then one `initialize`
// round trip on it, then SIGKILL of its group and the wait for its exit to be reported.
import { parentPort, workerData } from 'node:worker_threads';
import { RpcChannel } from '@mcpool/protocol/rpc';
import { LineReader } from '@mcpool/protocol/lineReader';

const { actorDist, control } = workerData;
const { spawnInThisThread } = await import(new URL('transports/stdioChild.js', actorDist).href);
const { spawnThroughSupervisor } = await import(new URL('transports/supervisedChild.js', actorDist).href);

const supervisor = new RpcChannel(control, { ownsPort: true });
const spawners = { inThread: spawnInThisThread, supervisor: spawnThroughSupervisor(supervisor) };

const INITIALIZE = `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } })}\n`;

async function sample({ kind, command, args }) {
  const t0 = performance.now();
  const child = await spawners[kind]({ command, args, env: { PATH: process.env.PATH ?? '' } });
  const spawnedMs = performance.now() - t0;
  const reader = new LineReader();
  const answered = new Promise((resolve) => {
    child.stdout.on('data', (chunk) => {
      reader.push(chunk);
      if (reader.next() !== undefined) resolve();
    });
  });
  child.stderr.resume();
  child.stdin.write(INITIALIZE);
  await answered;
  const initializedMs = performance.now() - t0;
  process.kill(-child.pid, 'SIGKILL');
  await child.exited;
  const endedMs = performance.now() - t0 - initializedMs;
  child.stdin.destroy();
  return { spawnedMs, initializedMs, endedMs };
}

const channel = new RpcChannel(parentPort, { ownsPort: false, handler: (op, args) => (op === 'sample' ? sample(args) : undefined) });
void channel;
parentPort.postMessage('ready');
