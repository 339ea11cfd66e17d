/**
 * The thread's side of the supervisor's liveness check: the thread bumps a shared counter each
 * time its event loop handles a beat, and publishes its kernel thread id once, so the supervisor
 * can read its CPU time and state. Nothing here answers a message: a thread whose loop turns
 * shows it in shared memory, whatever the supervisor's own loop is doing.
 */
import { readlinkSync } from 'node:fs';
import type { MessagePort } from 'node:worker_threads';
import { LIVENESS_CELLS, isBeat } from '@mcpool/protocol/threadLiveness';

/** Serves beats on `port` into `buffer` (the supervisor's `workerData.liveness`); nothing without one. */
export function serveLiveness(port: MessagePort, buffer: SharedArrayBuffer | undefined): void {
  if (!(buffer instanceof SharedArrayBuffer)) return;
  const cells = new Int32Array(buffer);
  Atomics.store(cells, LIVENESS_CELLS.threadId, kernelThreadId());
  port.on('message', (message: unknown) => {
    if (isBeat(message)) Atomics.add(cells, LIVENESS_CELLS.beats, 1);
  });
}

/** This thread's id in the kernel (`/proc/thread-self` → `<pid>/task/<tid>`), or 0 where there is none. */
function kernelThreadId(): number {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : 0;
  } catch {
    return 0;
  }
}
