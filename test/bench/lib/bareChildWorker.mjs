// Part 6's floor (d): a bare echo.mjs child owned by a worker thread, as an actor owns its server.
// The thread warms the child as part 6's floor (a) does (a `slow` call left in flight), posts its
// pid, and relays the end of its stdout to the parent with one message, nothing else: what is
// left of the pool's kill → rejection is the kernel's teardown, this thread waking for the pipe's
// end, and the parent waking for one message. On 'dispose' (or when the parent never kills it) the
// child is ended by its pid and reaped by this thread, then the thread exits.
import { parentPort, workerData } from 'node:worker_threads';
import { warmBareChild } from '../sections/crash.mjs';

const child = await warmBareChild(workerData.mark, workerData.slowMs);
if (child.error !== undefined) {
  parentPort.postMessage({ error: child.error });
} else {
  const disposed = new Promise((resolve) => parentPort.once('message', resolve));
  void child.ended.then(() => parentPort.postMessage({ ended: true }));
  parentPort.postMessage({ pid: child.pid });
  // Bounded: a parent that never answers still gets its child ended once its `slow` call would have.
  await Promise.race([disposed, new Promise((resolve) => setTimeout(resolve, workerData.holdMs).unref())]);
  await child.dispose();
}
parentPort.close();
