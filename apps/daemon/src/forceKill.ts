/**
 * The forced-exit path (a second signal, or a shutdown far past its deadline): there is no time
 * left for the pool's orderly close, so every process this daemon started is killed at once —
 * its child processes and their process groups (stdio servers run in their own group), found
 * from one `ps` snapshot. Synchronous, so it runs to the end before the process exits.
 */
import { execFileSync } from 'node:child_process';

/** SIGKILLs every descendant of this process and their process groups; returns how many it signalled. */
export function killDescendantsSync(): number {
  if (process.platform === 'win32') return 0;
  let listing: string;
  try {
    listing = execFileSync('ps', ['-A', '-o', 'pid=,ppid=,pgid='], { encoding: 'utf8', timeout: 2000, maxBuffer: 16 * 1024 * 1024 });
  } catch {
    return 0;
  }
  const rows = listing
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
    .filter((row): row is [number, number, number] => row.length === 3 && row.every((n) => Number.isInteger(n) && n > 0));
  const own = new Set([process.pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of rows) {
      if (own.has(ppid) && !own.has(pid)) {
        own.add(pid);
        grew = true;
      }
    }
  }
  own.delete(process.pid);
  const ownGroup = rows.find(([pid]) => pid === process.pid)?.[2];
  let signalled = 0;
  const groups = new Set(rows.filter(([pid]) => own.has(pid)).map(([, , pgid]) => pgid));
  for (const group of groups) {
    if (group === ownGroup) continue;
    try {
      process.kill(-group, 'SIGKILL');
      signalled += 1;
    } catch {
      // gone already
    }
  }
  for (const pid of own) {
    try {
      process.kill(pid, 'SIGKILL');
      signalled += 1;
    } catch {
      // gone already, or killed with its group
    }
  }
  return signalled;
}
