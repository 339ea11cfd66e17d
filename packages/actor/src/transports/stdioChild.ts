/**
 * The process behind a stdio transport, whoever spawned it: its pid (also its process group),
 * its three stdio streams, and its end. The transport reads and writes the streams itself on its
 * own thread; who spawned the process decides only who reaps it.
 */
import type { Readable, Writable } from 'node:stream';
import type { ChildExit, ServerProcessRequest } from '@mcpool/protocol';
import { spawnServerProcess, whenStarted } from '@mcpool/protocol/serverProcess';

export interface StdioChild {
  readonly pid: number;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /**
   * Settles once the process has exited and been reaped; never rejects. Code and signal are both
   * null when its end could not be learned (the supervisor that reaps it stopped telling).
   */
  readonly exited: Promise<ChildExit>;
}

/** Starts a stdio server's process; rejects with the spawn error when it cannot start. */
export type ChildSpawner = (request: ServerProcessRequest) => Promise<StdioChild>;

/**
 * Spawns on pipes, from this thread: right for a thread that lives as long as the process (a
 * transport used on the main thread). An actor thread asks its supervisor instead
 * (`./supervisedChild.ts`), since its loop — the one that would reap — may be terminated first.
 */
export const spawnInThisThread: ChildSpawner = async (request) => {
  const child = spawnServerProcess(request, ['pipe', 'pipe', 'pipe']);
  const exited = new Promise<ChildExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  await whenStarted(child);
  return { pid: child.pid!, stdin: child.stdin!, stdout: child.stdout!, stderr: child.stderr!, exited };
};
