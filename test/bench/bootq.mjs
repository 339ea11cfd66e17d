// Actor thread boot: new Worker → first answer on its channel, interleaved against other workers.
// usage: node test/bench/bootq.mjs [rounds] [otherWorker.js ...]
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { RpcChannel } from '@mcpool/protocol/rpc';

const rounds = Number(process.argv[2] ?? 10);
const paths = {
  actor: new URL('../../packages/actor/dist/worker.js', import.meta.url),
  empty: new URL('data:text/javascript,import {parentPort} from "node:worker_threads"; parentPort.on("message", m => parentPort.postMessage({k:"res",id:m.id,ok:true,result:"pong"}));'),
};
for (const [i, other] of process.argv.slice(3).entries()) paths[`other${i}`] = pathToFileURL(other);
const res = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
async function one(url) {
  const t0 = performance.now();
  const w = new Worker(url, { stderr: false, stdout: false, execArgv: [] });
  const ch = new RpcChannel(w, { ownsPort: false });
  await ch.request('ping', null, { timeoutMs: 10_000 });
  const dt = performance.now() - t0;
  await w.terminate();
  return dt;
}
const kinds = Object.keys(paths);
for (let i = 0; i < rounds; i++) {
  const order = i % 2 ? [...kinds].reverse() : kinds;
  for (const k of order) res[k].push(await one(paths[k]));
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(kinds.map((k) => `${k} p50 ${med(res[k]).toFixed(1)} ms`).join(' · '));
