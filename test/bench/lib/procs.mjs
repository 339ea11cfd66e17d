// Processes: markers, counting by marker, tree RSS from one `ps` snapshot, the leak sweep, and
// the loopback-only check. Every process the bench starts carries the run's marker in its
// arguments, so a sweep at the end (or on Ctrl-C) finds whatever survived a failure.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { LineReader } from '@mcpool/protocol/lineReader';

export const FIXTURES = fileURLToPath(new URL('../../fixtures/servers/', import.meta.url));
export const ECHO = FIXTURES + 'echo.mjs';

/** The only address any bench section may bind (the gateway section will need it). */
export const LOOPBACK = '127.0.0.1';

/** `--mcpool-bench=<run>-<label>`: unique per run and purpose, so processes are counted by it. */
export function marker(runId, label) {
  return `--mcpool-bench=${runId}-${label}`;
}

/** A stdio server config running a fixture under this node, tagged with `mark`. */
export function fixtureConfig(mark, fixture = 'echo.mjs') {
  return { command: process.execPath, args: [FIXTURES + fixture, mark] };
}

/**
 * Reads a child's stdout as newline-delimited JSON-RPC (the stdio transport's framing, with the
 * line reader mcpool uses): each complete line parsed once and handed to `onMessage`; a line that
 * is not JSON is skipped.
 */
export function onJsonLines(stdout, onMessage) {
  const reader = new LineReader();
  stdout.on('data', (chunk) => {
    reader.push(chunk);
    for (let line = reader.next(); line !== undefined; line = reader.next()) {
      if (typeof line !== 'string') continue;
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      onMessage(message);
    }
  });
}

/** One `ps` snapshot: [{pid, ppid, rss (KB), stat, args}]. */
export function psSnapshot() {
  const out = execFileSync('ps', ['-A', '-o', 'pid=,ppid=,rss=,stat=,args='], { encoding: 'utf8', maxBuffer: 32 * 1024 * 1024 });
  const rows = [];
  for (const line of out.split('\n')) {
    const match = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line);
    if (match) rows.push({ pid: Number(match[1]), ppid: Number(match[2]), rss: Number(match[3]), stat: match[4], args: match[5] });
  }
  return rows;
}

/** Live (non-zombie) processes whose command line contains `mark`, `ps` itself excluded. */
export function pidsWithMarker(mark, snapshot = psSnapshot()) {
  return snapshot.filter((p) => !p.stat.startsWith('Z') && p.args.includes(mark) && !p.args.startsWith('ps ')).map((p) => p.pid);
}

/**
 * `root` and all its descendants from one snapshot: sum of RSS in bytes, process count, pids.
 * Threads live inside their process, so the supervisor's actor threads are in its own RSS.
 */
export function treeRss(root = process.pid, snapshot = psSnapshot()) {
  const children = new Map();
  for (const p of snapshot) {
    if (!children.has(p.ppid)) children.set(p.ppid, []);
    children.get(p.ppid).push(p);
  }
  const byPid = new Map(snapshot.map((p) => [p.pid, p]));
  const seen = new Set();
  const queue = [root];
  let rssKb = 0;
  while (queue.length > 0) {
    const pid = queue.shift();
    if (seen.has(pid)) continue;
    seen.add(pid);
    const row = byPid.get(pid);
    // `ps` itself is a child of ours while it runs: leave it out.
    if (row && !row.args.startsWith('ps ')) rssKb += row.rss;
    for (const child of children.get(pid) ?? []) queue.push(child.pid);
  }
  const pids = [...seen].filter((pid) => byPid.has(pid) && !byPid.get(pid).args.startsWith('ps '));
  return { bytes: rssKb * 1024, processes: pids.length, pids };
}

/** SIGKILLs every live process carrying `mark`; returns the pids it found. */
export function sweep(mark) {
  const pids = pidsWithMarker(mark);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * Listening TCP/UDP sockets held by `pids`, from `ss` (empty when `ss` is missing). The bench
 * asserts none of them listens anywhere but loopback: peers that `listen(port)` bind every
 * interface unless forced (reference/peers-baseline.md).
 */
export function listeningSockets(pids) {
  let out;
  try {
    out = execFileSync('ss', ['-H', '-l', '-t', '-u', '-n', '-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return { checked: false, sockets: [] };
  }
  const wanted = new Set(pids);
  const sockets = [];
  for (const line of out.split('\n')) {
    const pidsOnLine = [...line.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
    if (!pidsOnLine.some((pid) => wanted.has(pid))) continue;
    const local = line.trim().split(/\s+/)[4] ?? '';
    sockets.push({ local, loopback: /^(127\.|\[::1\]|\[::ffff:127\.)/.test(local) });
  }
  return { checked: true, sockets };
}
