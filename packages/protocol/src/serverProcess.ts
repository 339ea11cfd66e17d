/**
 * How a stdio server's process is started, whichever thread starts it: in its own process group
 * (`detached`), so `kill(-pgid)` reaches every descendant that did not leave the group; no shell;
 * no console window; exactly the environment asked for (the caller merges in the defaults).
 *
 * The supervisor (main thread) starts the servers of its actor threads, because Node reaps a
 * child only from the event loop that spawned it, and a terminated thread's loop is gone: its
 * children would stay zombies until the process exits. An actor used outside a worker starts its
 * own, from a loop that lives as long as the process.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { ServerProcessRequest } from './messages.js';

export function spawnServerProcess(request: ServerProcessRequest, stdio: StdioOptions): ChildProcess {
  return spawn(request.command, request.args, {
    cwd: request.cwd,
    env: request.env,
    stdio,
    shell: false,
    detached: true,
    windowsHide: true,
  });
}

/** Resolves once `child` has started; rejects with its spawn error (ENOENT, EACCES…). */
export function whenStarted(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onSpawn = (): void => {
      child.off('error', onError);
      resolve();
    };
    const onError = (error: Error): void => {
      child.off('spawn', onSpawn);
      reject(error);
    };
    child.once('spawn', onSpawn);
    child.once('error', onError);
  });
}
