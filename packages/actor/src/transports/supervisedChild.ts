/**
 * A stdio server spawned by the supervisor on stdio this thread owns.
 *
 * Node reaps a child only from the event loop that spawned it: a child of a worker thread that
 * is terminated (or dies) stays a zombie until the process exits. So the supervisor's loop, which
 * lives as long as the process, spawns it, and this thread keeps the data path: it listens on
 * three Unix sockets in a fresh private directory (0700), the supervisor connects to them and
 * hands its ends to the child as fds 0–2 (a socket, as `spawn`'s own pipes are), then closes its
 * copies. Messages go thread ⇄ child directly, never through the supervisor. A thread that ends
 * closes its ends: the child reads EOF on stdin, as when a parent dies.
 *
 * The supervisor reports the pid as progress of its `spawnChild` request and answers it once the
 * child exited and was reaped.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildExit, SupervisorOps } from '@mcpool/protocol';
import type { RpcChannel } from '@mcpool/protocol/rpc';
import type { ChildSpawner, StdioChild } from './stdioChild.js';
import { signalGroup } from './processGroupStdioTransport.js';

/** How long the supervisor's connections may take to be accepted once it has spawned the child. */
const ACCEPT_MS = 10_000;

/** Spawns through the supervisor at the other end of `control`. */
export function spawnThroughSupervisor(control: Pick<RpcChannel, 'request'>): ChildSpawner {
  return async (request) => {
    const dir = await mkdtemp(join(tmpdir(), 'mcpool-'));
    const sockets = [join(dir, 'stdin'), join(dir, 'stdout'), join(dir, 'stderr')] as [string, string, string];
    // stdin is never read, as a pipe's write end: a child gone is seen on stdout, and a write
    // after it fails with EPIPE. stdout and stderr close once the child's ends are closed.
    const servers = [createServer({ pauseOnConnect: true, allowHalfOpen: true }), createServer(), createServer()];
    const accepted: (Socket | undefined)[] = [undefined, undefined, undefined];
    const connected = Promise.all(
      servers.map((server, i) => new Promise<Socket>((resolve) => server.once('connection', (socket: Socket) => resolve((accepted[i] = socket))))),
    ) as Promise<[Socket, Socket, Socket]>;
    let pid: number | undefined;
    try {
      await Promise.all(servers.map((server, i) => listen(server, sockets[i]!)));
      let exited!: Promise<ChildExit>;
      pid = await new Promise<number>((resolve, reject) => {
        const args: SupervisorOps['spawnChild']['args'] = { ...request, sockets };
        exited = control.request<ChildExit>('spawnChild', args, { onProgress: (data) => resolve((data as SupervisorOps['spawnChild']['progress']).pid) });
        exited.then(() => reject(new Error('the server process ended before it was reported started')), reject);
      });
      // The supervisor connected before it spawned: the connections are queued, accepted within a turn or two.
      const [stdin, stdout, stderr] = await within(connected, ACCEPT_MS, 'the server process started, but its stdio never connected');
      // The channel closing (the actor ended) leaves the end unknown: the supervisor still reaps it.
      const ended = exited.catch(() => ({ code: null, signal: null }));
      // As a ChildProcess does with its stdin pipe: never read, it would otherwise stay open.
      void ended.then(() => stdin.destroy());
      const child: StdioChild = { pid, stdin, stdout, stderr, exited: ended };
      return child;
    } catch (error) {
      for (const socket of accepted) socket?.destroy();
      // Started but unusable: nobody else would end it before its entry does.
      if (pid !== undefined) signalGroup(pid, 'SIGKILL');
      throw error;
    } finally {
      for (const server of servers) server.close();
      await rm(dir, { recursive: true, force: true });
    }
  };
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
