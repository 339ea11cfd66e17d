/**
 * The worker entry: one thread, one connection actor (`./connectionActor.ts`).
 *
 * The thread is the connection's failure domain: a crash, a blocked loop, an out-of-memory or a
 * runaway message ends this connection and no other. The thread boots, imports the actor's code
 * (a transport's own code is imported when a connection of that kind starts) and waits, so the
 * supervisor can keep one booted as a warm spare. `parentPort` is the connection's control
 * channel; once the connection ended it closes, and the thread ends by itself.
 * An error the connection does not handle ends the thread: its child is killed first, since it
 * belongs to the process and not to the thread.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { openConnectionActor } from './connectionActor.js';
import { serveLiveness } from './liveness.js';

if (isMainThread || parentPort === null) {
  throw new Error('@mcpool/actor/worker must run in a worker thread');
}
const control = parentPort;

serveLiveness(control, (workerData as { liveness?: SharedArrayBuffer } | null)?.liveness);

let dying = false;

/**
 * Last resort: the child's group is killed now (no graceful steps), its exit is awaited (bounded;
 * the supervisor, which spawned it, reaps it), then the thread ends.
 */
function fatal(error: unknown): void {
  if (dying) return;
  dying = true;
  void actor.abandon(error).finally(() => process.exit(1));
}

// The actor closes `control` when its connection ended: nothing is left to keep the thread alive.
const actor = openConnectionActor(control, { fatal, ended: () => undefined });

process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);
