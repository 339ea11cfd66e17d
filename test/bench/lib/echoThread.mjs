// The floor of one thread hop: a worker thread that posts every message straight back over its
// MessagePort, and a round trip to it. Part 1 adds one such round trip to a direct SDK call to
// price the one hop a pool call cannot avoid (its actor lives on another thread), measured in
// the same rounds as the pool. The caller terminates the thread (`close`) in a finally.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { ECHO_ARGS } from './load.mjs';

// The thread's whole program: echo on its port. Inline (eval) so nothing else is loaded there.
const ECHO_PROGRAM = "require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));";

/** Starts the echo thread; resolves once it runs. `roundTrip()` posts a `tools/call`-sized message and resolves on its echo. */
export async function startEchoThread() {
  const worker = new Worker(ECHO_PROGRAM, { eval: true });
  const pending = new Map();
  let nextId = 0;
  let failure;
  const failAll = (error) => {
    failure ??= error;
    for (const reject of [...pending.values()].map((p) => p.reject)) reject(failure);
    pending.clear();
  };
  worker.on('message', (message) => {
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    waiter?.resolve(message);
  });
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`the echo thread exited (code ${code})`)));
  await once(worker, 'online');
  const roundTrip = () =>
    new Promise((resolve, reject) => {
      if (failure) return reject(failure);
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      // The shape and size of the request a view posts for `callTool('echo', …)`.
      worker.postMessage({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: ECHO_ARGS, _meta: {} } });
    });
  return { roundTrip, close: () => worker.terminate() };
}
