/**
 * The worker entry: a thread that hosts connection actors (`./connectionActor.ts`).
 *
 * The thread boots, imports the actor's code (no MCP SDK for stdio and websocket servers) and
 * waits, so the supervisor can keep a warm spare. On `parentPort` it serves `open` (a transferred
 * port becomes one connection's control channel), `dispose` (end one connection now) and `exit`
 * (the thread ends once it hosts none). View traffic never passes through the supervisor.
 * An error no connection owns ends the thread and every connection on it: their children are
 * killed first, since they belong to the process and not to the thread.
 */
import { isMainThread, parentPort, type MessagePort } from 'node:worker_threads';
import { ErrorCode, PoolError, RpcChannel } from '@mcpool/protocol/rpc';
import { openConnectionActor, type ConnectionActor } from './connectionActor.js';

if (isMainThread || parentPort === null) {
  throw new Error('@mcpool/actor/worker must run in a worker thread');
}
const control = parentPort;

/** The connections this thread hosts, by the id `open` returned. */
const hosted = new Map<number, ConnectionActor>();
let nextId = 1;

function open(port: MessagePort): { id: number } {
  const id = nextId++;
  hosted.set(
    id,
    openConnectionActor(port, {
      fatal,
      ended: () => hosted.delete(id),
    }),
  );
  return { id };
}

let dying = false;

/**
 * Last resort: every hosted child's group is killed now (no graceful steps), their exits are
 * awaited (bounded; the supervisor, which spawned them, reaps them), then the thread ends.
 */
function fatal(error: unknown): void {
  if (dying) return;
  dying = true;
  const reaped = [...hosted.values()].map((actor) => actor.abandon(error));
  if (reaped.length === 0) process.exit(1);
  void Promise.allSettled(reaped).finally(() => process.exit(1));
}

process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

const channel = new RpcChannel(control, {
  ownsPort: false,
  handler: (op, opArgs) => {
    switch (op) {
      case 'open':
        return open((opArgs as { port: MessagePort }).port);
      case 'dispose': {
        const { id, reason } = opArgs as { id: number; reason: string };
        hosted.get(id)?.dispose(reason);
        return undefined;
      }
      case 'exit': {
        // Only an empty thread ends: a connection placed meanwhile keeps it.
        if (hosted.size > 0) return { exiting: false };
        // Let the reply go out, then stop listening so the thread can exit by itself.
        setImmediate(() => {
          channel.close('thread finished');
          control.close();
        });
        return { exiting: true };
      }
      case 'ping':
        return 'pong';
      default:
        throw new PoolError(ErrorCode.INVALID_ARGUMENT, `unknown thread operation ${op}`);
    }
  },
});
