/**
 * Spawns the stdio servers of actor threads from the supervisor's event loop, which lives as long
 * as the process and so always reaps them. Node reaps a child only from the loop that spawned it:
 * a child of a worker thread that is terminated (or dies) would stay a zombie until the process
 * exits, one per server it ran.
 *
 * The actor keeps the data path: it listens on three Unix sockets in a private directory; this
 * connects to them (without reading), gives the connections to the child as its fds 0–2, and
 * closes its own copies at once. The pid goes back as progress of the actor's request, and the
 * answer when the child has exited and been reaped. Everything else about the process (its group,
 * the shutdown sequence, the descendant sweep) stays where it was: with the actor and the pool;
 * only a child whose actor is gone before it is ended here, since nobody else would.
 */
import { Socket } from 'node:net';
import { once } from 'node:events';
import type { ChildExit, RpcHandlerContext, SupervisorOps } from '@mcpool/protocol';
import { ErrorCode, PoolError } from '@mcpool/protocol';
import { spawnServerProcess, whenStarted } from '@mcpool/protocol/serverProcess';

type SpawnChildArgs = SupervisorOps['spawnChild']['args'];

/**
 * Serves one `spawnChild` request of an actor. `onSpawned` hears the pid (its process group)
 * before the actor does, so a thread that dies right after still has its group ended.
 */
export async function spawnChild(args: SpawnChildArgs, ctx: RpcHandlerContext, onSpawned: (pgid: number) => void): Promise<ChildExit> {
  // Read before any await: the signal aborts when the actor's channel closes (see below).
  const actorGone = ctx.signal;
  if (typeof args?.command !== 'string' || !Array.isArray(args.sockets) || args.sockets.length !== 3) {
    throw new PoolError(ErrorCode.INVALID_ARGUMENT, 'spawnChild needs a command and three socket paths');
  }
  // All three at once: each goes to its own path, so the order they connect in does not matter.
  const connecting = args.sockets.map((path) => connectQuiet(path));
  const connected = await Promise.allSettled(connecting);
  const sockets = connected.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const refused = connected.find((outcome) => outcome.status === 'rejected');
  if (refused !== undefined) {
    for (const socket of sockets) socket.destroy();
    const reason = refused.reason as Error;
    throw new PoolError(ErrorCode.SPAWN_FAILED, `the actor's stdio for ${args.command} could not be reached: ${reason.message}`, { cause: reason });
  }
  let child;
  try {
    child = spawnServerProcess(args, [sockets[0]!, sockets[1]!, sockets[2]!]);
  } finally {
    // The child has its own copies (dup'd before exec): ours are closed, never shut down.
    for (const socket of sockets) socket.destroy();
  }
  const exited = new Promise<ChildExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  try {
    await whenStarted(child);
  } catch (error) {
    throw new PoolError(ErrorCode.SPAWN_FAILED, (error as Error).message, { cause: error as Error, data: { errno: (error as NodeJS.ErrnoException).code } });
  }
  const pgid = child.pid!;
  // Nothing signals the ChildProcess itself (groups are signalled by pgid): an error now is not ours to raise.
  child.on('error', () => undefined);
  // The actor's thread decides whether the host is kept alive, as it did when it spawned.
  child.unref();
  onSpawned(pgid);
  // An actor gone before its child (its thread died during the spawn, or it ended without it):
  // nobody would end the child, so it goes now. Only while unreaped: the pid is surely ours then.
  const orphaned = (): void => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  };
  if (actorGone.aborted) orphaned();
  else actorGone.addEventListener('abort', orphaned, { once: true });
  void exited.then(() => actorGone.removeEventListener('abort', orphaned));
  ctx.progress({ pid: pgid } satisfies SupervisorOps['spawnChild']['progress']);
  return exited;
}

/** A connection to `path` that never reads: what arrives on it is the child's to read. */
async function connectQuiet(path: string): Promise<Socket> {
  const socket = new Socket();
  // Paused before it connects, the socket never starts reading.
  socket.pause();
  socket.connect(path);
  try {
    await once(socket, 'connect');
  } catch (error) {
    socket.destroy();
    throw error;
  }
  return socket;
}
