/**
 * The forced-exit path (a second signal, or a shutdown far past its deadline): there is no time
 * left for the pool's orderly close, so every process this daemon started is killed at once —
 * its child processes and their process groups (stdio servers run in their own group), found
 * from one synchronous `ps` snapshot, so it runs to the end before the process exits.
 */
import { descendantsIn, readProcessTableSync } from '@mcpool/protocol/processTree';

/** SIGKILLs every descendant of this process and their process groups; returns how many it signalled. */
export function killDescendantsSync(): number {
  if (process.platform === 'win32') return 0;
  const rows = readProcessTableSync();
  if (rows === undefined) return 0;
  // Every descendant, however deep or many: this is the last chance to end them.
  const own = descendantsIn(rows, process.pid, { maxDepth: 1024, maxProcesses: Number.MAX_SAFE_INTEGER });
  const ownGroup = rows.find((row) => row.pid === process.pid)?.pgid;
  let signalled = 0;
  for (const group of new Set(own.map((row) => row.pgid))) {
    if (group === ownGroup || group <= 1) continue;
    try {
      process.kill(-group, 'SIGKILL');
      signalled += 1;
    } catch {
      // gone already
    }
  }
  for (const { pid } of own) {
    try {
      process.kill(pid, 'SIGKILL');
      signalled += 1;
    } catch {
      // gone already, or killed with its group
    }
  }
  return signalled;
}
