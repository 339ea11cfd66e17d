// Part 1's floor of the design itself: a worker thread that owns its own echo.mjs child, as an
// actor owns its server, and does nothing but forward. The parent posts `{ id, method, params }`;
// the thread writes it to the child as one JSON-RPC line, parses each line the child answers
// once, and posts `{ id, result }` (or `{ id, error }`) back, one message per answer. No deadline,
// no correlation beyond the id, no filter, no batching: what a pool call pays for its thread and
// its child before any of mcpool's code runs. The parent's `close()` ends the child by its pid,
// lets this thread reap it and exit, and terminates the thread if it does not within a bound.
import { spawn } from 'node:child_process';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fixtureConfig, onJsonLines } from './procs.mjs';

const START_TIMEOUT_MS = 20_000;
const CLOSE_TIMEOUT_MS = 5_000;

if (!isMainThread && workerData?.forwardThread === true) runForwarder(workerData.mark);

function runForwarder(mark) {
  const config = fixtureConfig(mark);
  const child = spawn(config.command, config.args, { stdio: ['pipe', 'pipe', 'ignore'] });
  let closing = false;
  const closed = new Promise((resolve) => child.once('close', resolve));
  // A child that dies on its own fails the calls in flight rather than leaving them waiting.
  child.once('exit', (code, signal) => {
    if (!closing) parentPort.postMessage({ failed: `it exited (code ${code}, signal ${signal})` });
  });
  child.on('error', (error) => parentPort.postMessage({ failed: error.message }));
  child.stdin.on('error', () => undefined);
  const write = (message) => child.stdin.write(`${JSON.stringify(message)}\n`);
  let started = false;
  onJsonLines(child.stdout, (message) => {
    if (message.id === undefined) return;
    if (!started) {
      // The answer to `initialize`: the session is set up as a client sets it up, then the thread forwards.
      started = true;
      write({ jsonrpc: '2.0', method: 'notifications/initialized' });
      parentPort.postMessage({ ready: true });
      return;
    }
    parentPort.postMessage(message.error === undefined ? { id: message.id, result: message.result } : { id: message.id, error: message.error });
  });
  parentPort.on('message', (message) => {
    if (message === 'close') {
      closing = true;
      // Only this child, by its pid: a no-op when it is dead already.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      void closed.then(() => parentPort.close());
      return;
    }
    write({ jsonrpc: '2.0', id: message.id, method: message.method, params: message.params });
  });
  write({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-forward', version: '1' } } });
}

/**
 * Starts the forwarding thread and its child (tagged with `mark`); resolves once the child has
 * answered `initialize`. `call(method, params)` resolves with the child's result; `close()` ends both.
 */
export async function startForwardThread(mark) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { forwardThread: true, mark } });
  // Not `events.once`: it rejects on an 'error' before the exit, and the exit is all this waits for.
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  const pending = new Map();
  let nextId = 0;
  let failure;
  const failAll = (error) => {
    failure ??= error;
    for (const { reject } of pending.values()) reject(failure);
    pending.clear();
  };
  let onReady;
  const ready = new Promise((resolve, reject) => {
    onReady = { resolve, reject };
  });
  worker.on('message', (message) => {
    if (message.ready) return onReady.resolve();
    if (message.failed) return failAll(new Error(`the forwarder's child failed: ${message.failed}`));
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error === undefined) waiter?.resolve(message.result);
    else waiter?.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
  });
  worker.on('error', failAll);
  void exited.then((code) => {
    failAll(new Error(`the forwarding thread exited (code ${code})`));
    onReady.reject(failure);
  });
  const close = async () => {
    worker.postMessage('close');
    const bound = setTimeout(() => void worker.terminate(), CLOSE_TIMEOUT_MS);
    await exited;
    clearTimeout(bound);
  };
  const startBound = setTimeout(() => onReady.reject(new Error(`the forwarder's child did not answer initialize within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
  try {
    await ready;
  } catch (error) {
    await close();
    throw error;
  } finally {
    clearTimeout(startBound);
  }
  const call = (method, params) =>
    new Promise((resolve, reject) => {
      if (failure) return reject(failure);
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, method, params });
    });
  return { call, close };
}
