#!/usr/bin/env node
// The churn that used to leave zombies: `node test/bench/zombieChurn.mjs [--minutes=10]`.
// One pool (the pool's defaults, the crashable actor worker of the tests so actor threads can be
// made to die), six stdio servers, sessions coming and going, calls in flight, and every so often
// a server SIGKILLed, an actor thread made to throw, exit, run out of heap or busy-loop (which the
// heartbeat ends with `worker.terminate()`), or a server restarted by name. Every 15 s it counts
// this process's zombie children and the servers alive; at the end it drains the pool and checks
// nothing is left. Prints one line per sample and a summary; exits 1 if a zombie was ever seen
// after the reap grace, or a process outlived the drain. See test/bench/README.md.
import { BroadcastChannel } from 'node:worker_threads';
import { McpTransportPool } from '@mcpool/core';
import { countZombieChildren } from '@mcpool/protocol/processTree';
import { fixtureConfig, marker, pidsWithMarker, sweep } from './lib/procs.mjs';
import { sleep } from './lib/load.mjs';

const minutes = Number(process.argv.find((arg) => arg.startsWith('--minutes='))?.slice('--minutes='.length) ?? 10);
if (!(minutes > 0)) {
  console.error(`zombieChurn: --minutes must be positive, got ${minutes}`);
  process.exit(2);
}
const CRASHABLE = new URL('../fixtures/workers/crashableWorker.mjs', import.meta.url);
const SERVERS = ['a', 'b', 'c', 'd', 'e', 'f'];
const ACTOR_DEATHS = ['throw', 'exit', 'oom', 'busy'];
const crashes = new BroadcastChannel('mcpool-test-crash');
crashes.unref();

const mark = marker(`churn${process.pid}`, 'zombies');
const configs = Object.fromEntries(SERVERS.map((name) => [name, { ...fixtureConfig(mark), env: { ROLE: name } }]));
const counts = { acquires: 0, releases: 0, calls: 0, callErrors: 0, serverKills: 0, actorDeaths: 0, restarts: 0, failedEvents: 0 };
const pool = new McpTransportPool({
  spawnTimeoutMs: 120_000,
  drainDelayMs: 2000,
  restartIntensity: { maxRestarts: 1000, periodMs: 60_000 },
  // Small heaps, so an actor told to run out of memory does it in a moment.
  actorHost: { workerUrl: CRASHABLE, resourceLimits: { maxOldGenerationSizeMb: 64 } },
  onEvent: (event) => {
    if (event.type === 'failed') counts.failedEvents += 1;
  },
});

const pick = (list) => list[Math.floor(Math.random() * list.length)];
/** session → name → view */
const sessions = new Map();

/** A view some session holds, at random. */
function heldView() {
  const views = [...sessions.values()].flatMap((held) => [...held.values()]);
  return views.length === 0 ? undefined : pick(views);
}

async function step() {
  const roll = Math.random();
  const session = `s${Math.floor(Math.random() * 8)}`;
  const name = pick(SERVERS);
  const held = sessions.get(session) ?? new Map();
  sessions.set(session, held);
  if (roll < 0.3) {
    if (held.has(name)) return;
    held.set(name, await pool.acquire(name, configs[name], session));
    counts.acquires += 1;
  } else if (roll < 0.45) {
    await pool.releaseSession(session);
    counts.releases += held.size;
    held.clear();
  } else if (roll < 0.85) {
    const view = heldView();
    if (view === undefined) return;
    counts.calls += 1;
    // Some calls are still in flight when the next kill comes.
    const call = Math.random() < 0.3 ? view.callTool('slow', { ms: 2000 }) : view.callTool('echo', { text: 'churn' });
    void call.catch(() => (counts.callErrors += 1));
  } else if (roll < 0.92) {
    const view = heldView();
    if (view === undefined) return;
    const pid = await view
      .callTool('pid')
      .then((result) => JSON.parse(result.content[0].text).pid)
      .catch(() => undefined);
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
      counts.serverKills += 1;
    } catch {
      // gone already
    }
  } else if (roll < 0.98) {
    crashes.postMessage({ serverName: name, kind: pick(ACTOR_DEATHS), sentAt: Date.now() });
    counts.actorDeaths += 1;
  } else {
    await pool.restartByName(name);
    counts.restarts += 1;
  }
}

const started = Date.now();
const endAt = started + minutes * 60_000;
let nextSample = started + 15_000;
let worstZombies = 0;
let errors = 0;
console.log(`zombieChurn: ${minutes} min, ${SERVERS.length} servers, pid ${process.pid}`);
try {
  while (Date.now() < endAt) {
    await step().catch(() => (errors += 1));
    await sleep(20 + Math.random() * 60);
    if (Date.now() >= nextSample) {
      nextSample += 15_000;
      // A child killed this instant is a zombie until the next turn of the loop: read again shortly.
      let zombies = await countZombieChildren();
      if (zombies > 0) {
        await sleep(500);
        zombies = await countZombieChildren();
      }
      worstZombies = Math.max(worstZombies, zombies);
      const snapshot = pool.getSnapshot();
      console.log(
        `${Math.round((Date.now() - started) / 1000)}s zombies ${zombies} servers alive ${pidsWithMarker(mark).length} actors ${snapshot.liveActors} threads ${snapshot.actorThreads ?? '?'} ${JSON.stringify(counts)} errors ${errors}`,
      );
    }
  }
} finally {
  const drained = await pool.drainAll({ timeoutMs: 10_000 });
  await sleep(1000);
  const left = pidsWithMarker(mark);
  const zombies = await countZombieChildren();
  console.log(`drained ${JSON.stringify(drained)}; after the drain: zombies ${zombies}, servers alive ${left.length}; worst zombies seen ${worstZombies}`);
  console.log(`summary ${JSON.stringify({ minutes, ...counts, stepErrors: errors, worstZombies, zombiesAtEnd: zombies, leftAtEnd: left.length })}`);
  if (left.length > 0) sweep(mark);
  process.exitCode = worstZombies > 0 || zombies > 0 || left.length > 0 ? 1 : 0;
}
