// Part 6: crash under load. 4 entries (echo.mjs, told apart by marker), 16 sessions each holding a
// view of all 4 and calling `echo` on every view at once (64 lanes, each sequential). Each round
// has three runs of the same length, their order rotating from round to round:
//   calm   all 64 lanes call, nothing is killed (the run without kills the target compares with);
//   idle   the same, but the victim's 16 lanes do not call (48 lanes): a control with the load a
//          kill run really has, since there the victim is down most of each second and its lanes
//          wait for the reconnect;
//   kill   all 64 lanes call and the child of one entry (always the same: the "victim") is
//          SIGKILLed every second.
// Measured: calls/s and p50/p99 of the 3 unaffected entries, kill vs calm and kill vs idle (ratio
// per round, then the median), errors on the unaffected entries (target 0) and on the victim by
// error code, and per kill: kill → in-flight call rejected, kill → `disconnected` / `reconnected`
// pool event, kill → the victim's first successful call again.
//
// The measurement runs in a fresh process (scenario.mjs, kind 'crash'): the pool and its actors
// log a warning per lost transport on stderr, which the runner keeps out of the tables (logged
// errors become notes). The ticker finds the victim's pid by its marker with an asynchronous `ps`
// once a second in every run (the kill run only adds the kill), so the lookup costs all the same.
//
// The floors under the 10 ms "kill → in-flight call rejected" target, in the same process after
// the load runs: (a) kill → stdout `end` of an echo.mjs child spawned, warmed and called as the
// pool does it, without the pool (the kernel's teardown and one read of the pipe's EOF), and (b)
// the pool's kill → rejection of one in-flight `slow` call on the victim, both with nothing else
// calling, kill by kill in an order rotating with (d)'s; (c) (a) again, but during one more kill
// run, each bare child killed half-way between two victim kills: the kernel's teardown under the
// load the target is measured in, every other child owned by a worker thread as in (d); (d) (a)
// with the child owned by a worker thread, as an actor owns its server, its stdout's `end` relayed
// to this thread with one message: (b) less (d) is the pool's own share. The main thread's
// event-loop delay is sampled during every run and floor kill.
import { execFile, spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { fixtureConfig, onJsonLines } from '../lib/procs.mjs';
import { floor, fmt, fmtRange, fmtRatio, median, percentile, ratio, summarize, target } from '../lib/stats.mjs';

const ENTRIES = 4;
const SESSIONS = 16;
const VICTIM = 0;
const KILL_EVERY_MS = 1000;
/** The first tick comes this long after the run starts; then one every KILL_EVERY_MS. */
const FIRST_TICK_MS = 500;
const ECHO_ARGS = { text: 'hello from mcpool bench' };
/** The victim must never trip the restart intensity (default: 5 in 30 s). */
const RESTART_INTENSITY = { maxRestarts: 1000, periodMs: 1000 };
/** A call that hangs shows up as MCPOOL_CALL_TIMEOUT instead of stalling the run for a minute. */
const CALL_TIMEOUT_MS = 10_000;
/** A lane that got an error waits at least this long before its next call (no hot loop). */
const ERROR_PAUSE_MS = 5;
const SETTLE_MS = 300;
/** Run kinds, in the order of round 0; later rounds rotate it. */
const MODES = ['calm', 'idle', 'kill'];
const MODE_LABEL = { calm: 'calm', idle: 'calm, victim idle', kill: 'kill' };
/** A floor kill that sees no `end` (or no rejection) within this long is recorded as timed out. */
const FLOOR_KILL_TIMEOUT_MS = 5000;
/** The in-flight call of a floor kill: sleeps far longer than any kill takes to be noticed. */
const FLOOR_SLOW_ARGS = { ms: 4000, steps: 1 };
/** The in-flight call of a child killed during the loaded floor run: outlasts the run and its warm-up. */
const LOADED_SLOW_MS = 120_000;
/** How long the `slow` call is given to reach the child before the kill. */
const FLOOR_INFLIGHT_MS = 50;
/** The loop-delay timer fires every this many ms; what is reported is its lateness beyond that. */
const LOOP_RESOLUTION_MS = 1;

/** Samples the main thread's event-loop delay until `stop()`, which returns p50/p99/max lateness in ms. */
function loopDelay() {
  const h = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  h.enable();
  return () => {
    h.disable();
    // The histogram holds the interval between timer runs (ns): lateness = interval − resolution.
    const late = (ns) => round3(Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS));
    return h.count === 0 ? { n: 0 } : { n: h.count, p50: late(h.percentile(50)), p99: late(h.percentile(99)), max: late(h.max) };
  };
}

/**
 * A child in the pool's conditions, without the pool: echo.mjs spawned as the pool spawns it (its
 * own process group, three pipes, `mark` in its command line), warmed the same way (initialize,
 * tools/list, an answered call) and with a `slow` call of `slowMs` in flight. The kernel closes a
 * killed process's pipes only once it has torn its memory down, and a warmed server has more of
 * it than a fresh one, so a child that only answered a ping is not the floor.
 * Resolves with `{ pid, kill(), dispose() }` or `{ pid, error }`: `kill()` checks by `ps` that the
 * pid still carries `mark`, SIGKILLs it and times kill → its stdout's `end` in this process;
 * `dispose()` kills it if it lives and waits for its `close` (reaped). A child that failed is
 * disposed already.
 */
export async function warmBareChild(mark, slowMs = FLOOR_SLOW_ARGS.ms) {
  const config = fixtureConfig(mark);
  const child = spawn(config.command, config.args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const closed = new Promise((resolve) => child.once('close', resolve));
  // A failed spawn still ends in 'close'; its first answer then times out and the kill is recorded as failed.
  child.on('error', () => undefined);
  child.stderr.resume();
  const timers = new Set();
  /** `promise`, or 'timeout' after FLOOR_KILL_TIMEOUT_MS. */
  const within = (promise) => Promise.race([promise, new Promise((resolve) => timers.add(setTimeout(() => resolve('timeout'), FLOOR_KILL_TIMEOUT_MS)))]);
  const dispose = async () => {
    for (const timer of timers) clearTimeout(timer);
    // Only this child, by its pid: a no-op when it is dead already.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await closed;
  };
  // The ids answered so far, read line by line.
  const answered = new Set();
  const waiters = new Map();
  onJsonLines(child.stdout, ({ id }) => {
    answered.add(id);
    waiters.get(id)?.();
  });
  const ended = new Promise((resolve) => child.stdout.once('end', () => resolve(performance.now())));
  const answer = (id) => (answered.has(id) ? Promise.resolve() : new Promise((resolve) => waiters.set(id, resolve)));
  child.stdin.on('error', () => undefined);
  const send = (message) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  const failed = async (error) => {
    await dispose();
    return { pid: child.pid, error };
  };
  send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-floor', version: '1' } } });
  if ((await within(answer(1))) === 'timeout') return failed('no answer to initialize');
  send({ method: 'notifications/initialized' });
  send({ id: 2, method: 'tools/list' });
  send({ id: 3, method: 'tools/call', params: { name: 'slow', arguments: { ...FLOOR_SLOW_ARGS, ms: slowMs } } });
  // Answered after the slow call was read: the child has it in flight.
  send({ id: 4, method: 'tools/call', params: { name: 'echo', arguments: { text: 'sent' } } });
  if ((await within(answer(4))) === 'timeout') return failed('no answer to the call');
  const kill = async () => {
    if (answered.has(3)) return { pid: child.pid, error: 'the slow call ended before the kill' };
    if (!(await livePidsWithMarker(mark)).includes(child.pid)) return { pid: child.pid, error: 'pid not found by its marker' };
    const at = performance.now();
    process.kill(child.pid, 'SIGKILL');
    const end = await within(ended);
    return end === 'timeout' ? { pid: child.pid, error: 'no stdout end' } : { pid: child.pid, ms: round3(end - at) };
  };
  return { pid: child.pid, kill, dispose, ended };
}

/**
 * Floor (a)'s child owned by a worker thread (test/bench/lib/bareChildWorker.mjs), as an actor owns
 * its server. Resolves like {@link warmBareChild}: `kill()` checks the pid's marker, SIGKILLs it
 * from this thread and times until the thread's message that its stdout ended arrives here
 * (`relayed: true` in its result); `dispose()` has the thread end and reap the child, and waits
 * for the thread's exit (bounded, terminated past it).
 */
async function warmRelayedChild(mark, slowMs = FLOOR_SLOW_ARGS.ms) {
  const worker = new Worker(new URL('../lib/bareChildWorker.mjs', import.meta.url), { workerData: { mark, slowMs, holdMs: slowMs + FLOOR_KILL_TIMEOUT_MS } });
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  const inbox = [];
  let wake;
  worker.on('message', (message) => {
    inbox.push({ ...message, at: performance.now() });
    wake?.();
  });
  worker.on('error', (error) => {
    inbox.push({ error: `the worker failed: ${error?.message ?? error}` });
    wake?.();
  });
  /** The next message with `key` (or an error), or undefined after `ms`. */
  const next = async (key, ms) => {
    const deadline = performance.now() + ms;
    for (let i = 0; i < 1000; i++) {
      const found = inbox.find((m) => key in m || m.error !== undefined);
      if (found !== undefined) return found;
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      let timer;
      await new Promise((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, left);
      });
      clearTimeout(timer);
    }
    return undefined;
  };
  const dispose = async () => {
    worker.postMessage('dispose');
    const outcome = await Promise.race([exited, sleep(FLOOR_KILL_TIMEOUT_MS).then(() => 'timeout')]);
    if (outcome === 'timeout') await worker.terminate();
  };
  const started = await next('pid', FLOOR_KILL_TIMEOUT_MS * 2);
  if (started?.pid === undefined) {
    await dispose();
    return { pid: undefined, error: started?.error ?? 'the worker warmed no child in time' };
  }
  const { pid } = started;
  const kill = async () => {
    if (!(await livePidsWithMarker(mark)).includes(pid)) return { pid, relayed: true, error: 'pid not found by its marker' };
    const at = performance.now();
    process.kill(pid, 'SIGKILL');
    const relayed = await next('ended', FLOOR_KILL_TIMEOUT_MS);
    return relayed?.ended === true ? { pid, relayed: true, ms: round3(relayed.at - at) } : { pid, relayed: true, error: 'no stdout end relayed' };
  };
  return { pid, kill, dispose };
}

/** One floor kill of a child warmed by `warm` (bare, or owned by a worker thread): warmed, killed, reaped. */
async function floorChildKill(warm, mark) {
  const child = await warm(mark);
  if (child.error !== undefined) return child;
  try {
    return await child.kill();
  } finally {
    await child.dispose();
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Live (non-zombie) pids whose command line holds `mark`, from one asynchronous `ps`. */
function livePidsWithMarker(mark) {
  return new Promise((resolve) => {
    execFile('ps', ['-A', '-o', 'pid=,stat=,args='], { encoding: 'utf8', maxBuffer: 32 * 1024 * 1024 }, (error, stdout) => {
      if (error) return resolve([]);
      const pids = [];
      for (const line of stdout.split('\n')) {
        const match = /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line);
        if (match && !match[2].startsWith('Z') && match[3].includes(mark) && !match[3].startsWith('ps ')) pids.push(Number(match[1]));
      }
      resolve(pids);
    });
  });
}

/** "MCPCallInterruptedError MCPOOL_CALL_INTERRUPTED", "PoolError MCPOOL_NOT_CONNECTED", … */
function errorKey(error) {
  return `${error?.name ?? typeof error} ${error?.code ?? '(no code)'}`;
}

/**
 * Latencies (µs) → a histogram at 1 µs resolution: `{ values, counts }`, values ascending. Exact to
 * the µs, so any percentile can be recomputed, at a fraction of the size of every call's latency
 * (a full run makes ~3 million calls).
 */
function histogram(latenciesUs) {
  const counts = new Map();
  for (const v of latenciesUs) {
    const us = Math.round(v);
    counts.set(us, (counts.get(us) ?? 0) + 1);
  }
  const values = [...counts.keys()].sort((a, b) => a - b);
  return { values, counts: values.map((v) => counts.get(v)) };
}

/** After the victim serves again, this long counts as "just back" (its lanes resume at once). */
const BACK_WINDOW_MS = 300;

/**
 * p50/p99/max of the unaffected calls of a kill run by what the victim was doing when they started:
 * `down` (kill → its first successful call: the child respawning on the same CPUs), `back` (the
 * BACK_WINDOW_MS after that), `rest`. `windows` are [killAt, servedAgainAt] in ms since the start.
 */
function splitByVictimState(starts, latencies, windows) {
  const groups = { down: [], back: [], rest: [] };
  for (let i = 0; i < starts.length; i++) {
    const t = starts[i];
    const state = windows.some(([from, to]) => t >= from && t < to) ? 'down' : windows.some(([, to]) => t >= to && t < to + BACK_WINDOW_MS) ? 'back' : 'rest';
    groups[state].push(latencies[i]);
  }
  const pick = ({ n, p50, p99, max }) => ({ n, p50, p99, max });
  return { down: pick(summarize(groups.down)), back: pick(summarize(groups.back)), rest: pick(summarize(groups.rest)) };
}
const round3 = (v) => Math.round(v * 1000) / 1000;

/**
 * The scenario side (runs inside scenario.mjs). `spec`: { mark, seconds, rounds, warmupMs }.
 * Returns raw numbers only; the section below turns them into tables.
 */
export async function crashScenario(spec) {
  const { McpTransportPool, MCPCallInterruptedError } = await import('@mcpool/core');
  const entries = Array.from({ length: ENTRIES }, (_, k) => {
    const label = k === VICTIM ? 'victim' : `other${k}`;
    const mark = `${spec.mark}-${label}`;
    return { k, name: label, mark, config: fixtureConfig(mark) };
  });
  const victim = entries[VICTIM];
  const poolEvents = {};
  /** The run being measured (its kills get the victim's pool events). */
  let current;
  const pool = new McpTransportPool({
    drainDelayMs: 60_000,
    callTimeoutMs: CALL_TIMEOUT_MS,
    restartIntensity: RESTART_INTENSITY,
    onEvent: (event) => {
      const now = performance.now();
      const who = event.serverName === victim.name ? 'victim' : event.serverName ?? 'pool';
      const key = `${event.type}${who === 'victim' || who === 'pool' ? '' : ' (unaffected)'}`;
      poolEvents[key] = (poolEvents[key] ?? 0) + 1;
      if (current === undefined) return;
      (current.events[event.type] ??= { victim: 0, unaffected: 0 })[who === 'victim' ? 'victim' : 'unaffected'] += 1;
      if (who !== 'victim') return;
      const kill = current.kills.at(-1);
      if (kill === undefined) return;
      if (event.type === 'disconnected') kill.disconnectedMs ??= now - kill.at;
      else if (event.type === 'reconnected') kill.reconnectedMs ??= now - kill.at;
      else if (event.type === 'failed') kill.failedMs ??= now - kill.at;
    },
  });

  const runs = [];
  const notes = [];
  let health;
  try {
    // views[s][k]: session s's view of entry k.
    const views = await Promise.all(
      Array.from({ length: SESSIONS }, (_, s) => Promise.all(entries.map(({ name, config }) => pool.acquire(name, config, `session-${s}`)))),
    );
    const processes = await Promise.all(entries.map((e) => livePidsWithMarker(e.mark).then((pids) => pids.length)));

    /** Waits until every victim view is connected and one call on it succeeds; returns the ms it took. */
    const victimReady = async (timeoutMs = 15_000) => {
      const t0 = performance.now();
      const deadline = t0 + timeoutMs;
      while (performance.now() < deadline) {
        if (views.some((row) => row[VICTIM].status === 'failed' || row[VICTIM].status === 'released')) {
          throw new Error(`the victim's views are ${views.map((row) => row[VICTIM].status).join(',')}: the entry failed`);
        }
        if (views.every((row) => row[VICTIM].status === 'connected')) {
          try {
            await views[0][VICTIM].callTool('echo', ECHO_ARGS);
            return performance.now() - t0;
          } catch {
            // still reconnecting
          }
        }
        await sleep(ERROR_PAUSE_MS);
      }
      throw new Error(`the victim did not serve a call within ${timeoutMs} ms`);
    };

    /**
     * One run of `ms`: every lane calls until the deadline; the ticker kills the victim in 'kill'
     * mode. `bare`: warmed children outside the pool, one killed half-way between two victim
     * kills each tick (kill → its stdout's `end` under this run's load), in `run.bareKills`.
     */
    const runLoad = async (mode, ms, round, bare = []) => {
      const run = {
        mode,
        round,
        ms,
        latenciesUs: Array.from({ length: ENTRIES }, () => []),
        /** Start (ms since the run began) of each unaffected call, parallel to `unaffectedUs`. */
        unaffectedStarts: [],
        unaffectedUs: [],
        ok: new Array(ENTRIES).fill(0),
        errors: Array.from({ length: ENTRIES }, () => ({})),
        errorSamples: {},
        kills: [],
        ticks: [],
        events: {},
        lanesStopped: [],
        bareKills: [],
      };
      current = run;
      const stopLoopDelay = loopDelay();
      /** Victim calls in flight: the ticker marks them when it kills. */
      const inflight = new Set();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const deadline = t0 + ms;

      const lane = async (s, k) => {
        const view = views[s][k];
        while (performance.now() < deadline) {
          const call = { start: performance.now(), atKill: undefined };
          if (k === VICTIM) inflight.add(call);
          let error;
          try {
            await view.callTool('echo', ECHO_ARGS);
          } catch (e) {
            error = e;
          }
          const end = performance.now();
          inflight.delete(call);
          const atKill = call.atKill === undefined ? undefined : run.kills[call.atKill];
          if (error === undefined) {
            run.ok[k] += 1;
            const us = (end - call.start) * 1000;
            run.latenciesUs[k].push(us);
            if (k !== VICTIM) {
              run.unaffectedStarts.push(call.start - t0);
              run.unaffectedUs.push(us);
            }
            if (atKill !== undefined) atKill.inflightOk += 1;
            if (k === VICTIM) {
              // The first call started after the kill that succeeds: the victim serves again.
              for (const kill of run.kills) if (kill.firstOkMs === undefined && call.start > kill.at) kill.firstOkMs = end - kill.at;
            }
            continue;
          }
          const key = errorKey(error);
          run.errors[k][key] = (run.errors[k][key] ?? 0) + 1;
          run.errorSamples[key] ??= {
            message: String(error?.message ?? error).slice(0, 300),
            typed: error instanceof MCPCallInterruptedError ? 'MCPCallInterruptedError' : undefined,
          };
          if (atKill !== undefined) atKill.inflightRejects.push({ ms: round3(end - atKill.at), key });
          if (view.status === 'failed' || view.status === 'released') {
            run.lanesStopped.push({ session: s, entry: k, status: view.status, key });
            return;
          }
          await sleep(ERROR_PAUSE_MS);
          // The documented way: retry after the `reconnected` event (the view's status).
          while (view.status === 'disconnected' && performance.now() < deadline) await sleep(ERROR_PAUSE_MS);
        }
      };

      const ticker = async () => {
        for (let i = 0; ; i++) {
          const at = t0 + FIRST_TICK_MS + i * KILL_EVERY_MS;
          if (at >= deadline) return;
          await sleep(at - performance.now());
          const pids = await livePidsWithMarker(victim.mark);
          const tick = { i, atMs: round3(performance.now() - t0), pids };
          run.ticks.push(tick);
          if (mode !== 'kill') continue;
          const last = run.kills.at(-1);
          if (last !== undefined && last.firstOkMs === undefined) {
            tick.skipped = 'the victim has not served a call since the last kill';
            continue;
          }
          const pid = pids.find((p) => !run.kills.some((kill) => kill.pid === p));
          if (pid === undefined) {
            tick.skipped = 'no live victim process';
            continue;
          }
          const kill = { pid, at: performance.now(), atMs: undefined, inflight: inflight.size, inflightOk: 0, inflightRejects: [], firstOkMs: undefined };
          kill.atMs = round3(kill.at - t0);
          run.kills.push(kill);
          for (const call of inflight) call.atKill = run.kills.length - 1;
          try {
            process.kill(pid, 'SIGKILL');
          } catch (error) {
            kill.killError = String(error?.message ?? error);
          }
        }
      };

      const bareTicker = async () => {
        for (let i = 0; i < bare.length; i++) {
          const at = t0 + FIRST_TICK_MS + KILL_EVERY_MS / 2 + i * KILL_EVERY_MS;
          if (at >= deadline) return;
          await sleep(at - performance.now());
          run.bareKills.push({ ...(await bare[i].kill()), atMs: round3(at - t0) });
        }
      };

      const lanes = views.flatMap((row, s) => row.flatMap((_, k) => (mode === 'idle' && k === VICTIM ? [] : [lane(s, k)])));
      run.lanes = lanes.length;
      await Promise.all([ticker(), bareTicker(), ...lanes]);
      const wallMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      run.loopDelayMs = stopLoopDelay();
      current = undefined;
      // The last kill may not have been served again within the run: time it with a probe.
      const last = run.kills.at(-1);
      try {
        const readyMs = await victimReady();
        if (last !== undefined && last.firstOkMs === undefined) {
          last.firstOkMs = performance.now() - last.at;
          last.firstOkAfterRun = true;
        }
        run.victimReadyAfterMs = round3(readyMs);
      } catch (error) {
        run.victimReadyError = error.message;
      }
      for (const kill of run.kills) {
        delete kill.at;
        for (const key of ['disconnectedMs', 'reconnectedMs', 'failedMs', 'firstOkMs']) if (kill[key] !== undefined) kill[key] = round3(kill[key]);
      }
      // Where the time goes: unaffected calls started while the victim was down (kill → its first
      // successful call: its child respawning on the same CPUs) vs the rest of the run.
      const windows = run.kills.filter((kill) => kill.firstOkMs !== undefined).map((kill) => [kill.atMs, kill.atMs + kill.firstOkMs]);
      const { latenciesUs, unaffectedStarts, unaffectedUs, ...kept } = run;
      return {
        ...kept,
        unaffected: summarize(unaffectedUs),
        victimLatency: summarize(latenciesUs[VICTIM]),
        ...(mode === 'kill' ? { unaffectedByVictimState: splitByVictimState(unaffectedStarts, unaffectedUs, windows) } : {}),
        histogramsUs: latenciesUs.map(histogram),
        wallMs,
        cpuUs: cpu.user + cpu.system,
        victimProcessesAfter: (await livePidsWithMarker(victim.mark)).length,
      };
    };

    // Warm-up: JIT, every lane, the spare thread's boot; not measured.
    await runLoad('warmup', spec.warmupMs, -1);
    await sleep(SETTLE_MS);
    try {
      for (let round = 0; round < spec.rounds; round++) {
        const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]);
        for (const mode of order) {
          await victimReady();
          await sleep(SETTLE_MS);
          runs.push(await runLoad(mode, spec.seconds * 1000, round));
        }
      }
    } catch (error) {
      // Keep the runs measured so far; the section reports what stopped the rest.
      notes.push(`stopped after ${runs.length} run(s): ${error?.message ?? error}`);
    }
    // The kernel's part under this load: one more kill run, and half-way between two victim kills
    // a bare child (warmed before the run, outside the pool) is killed; every other one is owned by
    // a worker thread, as for floor (d). A warmed server's teardown competes for the same two CPUs
    // as everything else here, so under load it is not the quiet floor's few ms.
    let loaded;
    if ((spec.floorKills ?? 0) > 0 && runs.length > 0) {
      const bare = [];
      try {
        // One at a time: their start-up is not part of the run, and started together they would load it.
        // Every other one is owned by a worker thread, as an actor owns its server (floor (d) under load).
        for (let i = 0; i < spec.floorKills; i++) bare.push(await (i % 2 === 0 ? warmBareChild : warmRelayedChild)(`${spec.mark}-loaded`, LOADED_SLOW_MS));
        const usable = bare.filter((child) => child.error === undefined);
        await victimReady();
        await sleep(SETTLE_MS);
        const run = await runLoad('kill', (usable.length + 1) * KILL_EVERY_MS, 'floor', usable);
        loaded = { bareKills: run.bareKills, warmErrors: bare.filter((child) => child.error !== undefined).map((child) => child.error), kills: run.kills, loopDelayMs: run.loopDelayMs };
      } catch (error) {
        notes.push(`the loaded floor run stopped: ${error?.message ?? error}`);
      } finally {
        await Promise.all(bare.filter((child) => child.dispose !== undefined).map((child) => child.dispose()));
      }
    }

    /** One floor kill through the pool: one `slow` call in flight on the victim, nothing else calling. */
    const poolKill = async () => {
      await victimReady();
      await sleep(SETTLE_MS);
      const pids = await livePidsWithMarker(victim.mark);
      if (pids.length !== 1) return { error: `${pids.length} victim processes` };
      let rejectedAt;
      let outcome;
      const call = views[0][VICTIM].callTool('slow', FLOOR_SLOW_ARGS).then(
        () => (outcome = 'answered'),
        (error) => {
          rejectedAt = performance.now();
          outcome = errorKey(error);
        },
      );
      await sleep(FLOOR_INFLIGHT_MS);
      if (outcome !== undefined) return { error: `the slow call ended before the kill (${outcome})` };
      // Still the same child (it is the one answering the call): kill that pid.
      if (!(await livePidsWithMarker(victim.mark)).includes(pids[0])) return { error: 'the victim pid changed before the kill' };
      const at = performance.now();
      process.kill(pids[0], 'SIGKILL');
      await call;
      return rejectedAt === undefined ? { pid: pids[0], error: `not rejected (${outcome})` } : { pid: pids[0], ms: round3(rejectedAt - at), key: outcome };
    };

    const floors = { kills: spec.floorKills ?? 0, bare: [], relayed: [], pool: [] };
    const floorKinds = ['bare', 'relayed', 'pool'];
    const floorKill = { bare: () => floorChildKill(warmBareChild, `${spec.mark}-bare`), relayed: () => floorChildKill(warmRelayedChild, `${spec.mark}-relayed`), pool: poolKill };
    try {
      for (let i = 0; i < floors.kills; i++) {
        // The order rotates, so a burst of machine noise lands on every kind.
        for (let k = 0; k < floorKinds.length; k++) {
          const kind = floorKinds[(i + k) % floorKinds.length];
          const stop = loopDelay();
          const one = await floorKill[kind]();
          floors[kind].push({ ...one, loopDelayMs: stop() });
          await sleep(SETTLE_MS);
        }
      }
      await victimReady();
    } catch (error) {
      notes.push(`floor kills stopped: ${error?.message ?? error}`);
    }
    health = await pool.getHealth();
    return { entries: entries.map(({ name, mark }) => ({ name, mark })), victim: victim.name, sessions: SESSIONS, processes, runs, floors, loaded, health, notes, poolEventsByServer: poolEvents, restartIntensity: RESTART_INTENSITY };
  } finally {
    current = undefined;
    await pool.drainAll({ timeoutMs: 10_000 });
  }
}

/** "0.12 / 3.40" (ms), or '–'. */
function loopText(delay) {
  return delay && Number.isFinite(delay.p50) ? `${fmt(delay.p50)} / ${fmt(delay.p99)}` : '–';
}

/** The floor kills of the scenario: p50 [min–max] (n) of each kind, failures counted, loop delay. */
function floorSummary(floors) {
  const of = (list = []) => {
    const ms = list.filter((x) => Number.isFinite(x.ms)).map((x) => x.ms);
    const failed = list.filter((x) => x.error);
    const p50 = median(ms);
    const why = failed.length > 0 ? `; ${failed.length} failed: ${[...new Set(failed.map((x) => x.error))].join(', ')}` : '';
    return { p50, text: ms.length > 0 ? `${fmt(p50)} ms [${fmt(Math.min(...ms))}–${fmt(Math.max(...ms))}] (n ${ms.length}${why})` : `not measured${why}` };
  };
  const delays = [...(floors?.bare ?? []), ...(floors?.relayed ?? []), ...(floors?.pool ?? [])].map((x) => x.loopDelayMs).filter((d) => d?.n > 0);
  return {
    bare: of(floors?.bare),
    relayed: of(floors?.relayed),
    pool: of(floors?.pool),
    loop: { text: loopText({ p50: median(delays.map((d) => d.p50)), p99: median(delays.map((d) => d.p99)) }) },
  };
}

/** calls/s, p50/p99 of the unaffected entries in one run. */
function unaffected(run) {
  const calls = run.ok.reduce((n, c, k) => (k === VICTIM ? n : n + c), 0);
  const errors = run.errors.reduce((n, byKey, k) => (k === VICTIM ? n : n + countErrors(byKey)), 0);
  return { ...run.unaffected, calls, callsPerSec: (calls / run.wallMs) * 1000, errors };
}

function countErrors(byKey) {
  return Object.values(byKey).reduce((a, b) => a + b, 0);
}

function describeErrors(byKey) {
  const parts = Object.entries(byKey).map(([key, n]) => `${key} ×${n}`);
  return parts.length > 0 ? parts.join(', ') : '0';
}

function addErrors(into, byKey) {
  for (const [key, n] of Object.entries(byKey)) into[key] = (into[key] ?? 0) + n;
  return into;
}

const msStats = (values) => {
  const finite = values.filter(Number.isFinite);
  return finite.length === 0 ? '–' : `${fmt(percentile(finite, 50))} / ${fmt(Math.max(...finite))} ms (n ${finite.length})`;
};

/** Per-round ratios kill/`base` of p50, p99 and calls/s; their median and range. */
function killRatios(perRound, base) {
  const out = {};
  for (const key of ['p50', 'p99', 'callsPerSec']) {
    const list = perRound.filter((p) => p.kill && p[base]).map((p) => ratio(p.kill[key], p[base][key]));
    out[key] = { median: median(list), perRound: list, text: `${fmtRatio(median(list))} ${fmtRange(list)}` };
  }
  return out;
}

export const crashSection = {
  id: 'crash',
  part: 6,
  title: 'Crash under load: kill 1 of 4 entries every second while 16 sessions call',
  async run(ctx) {
    // Three rounds, so the median of the per-round ratios is a real median.
    const seconds = ctx.quick ? 3 : 10;
    const rounds = 3;
    const warmupMs = ctx.quick ? 1000 : 2000;
    const floorKills = ctx.quick ? 6 : 15;
    const spec = { kind: 'crash', mark: ctx.mark('crash'), seconds, rounds, warmupMs, sessions: SESSIONS, floorKills };
    let r;
    try {
      // A floor kill pair takes ~1–2 s (the pool's reconnect); 10 s each is a generous bound.
      r = await ctx.runScenario(spec, { timeoutMs: 60_000 + rounds * MODES.length * seconds * 1000 * 3 + floorKills * 10_000 });
    } catch (error) {
      return {
        tables: [{ title: 'crash under load', columns: ['result'], rows: [['failed']], notes: [`failed: ${error.message.slice(0, 1200)}`] }],
        targets: [
          target('crash under load: 0 errors on the unaffected entries', 'the run failed', undefined),
          target('crash under load: unaffected p99 ≤ 1.5× the calm run', 'the run failed', undefined),
        ],
        raw: { spec, error: error.message },
      };
    }

    const rows = [];
    const perRound = [];
    for (let round = 0; round < rounds; round++) {
      const byMode = {};
      for (const run of r.runs.filter((x) => x.round === round)) {
        const u = unaffected(run);
        byMode[run.mode] = u;
        const allCalls = run.ok.reduce((a, b) => a + b, 0);
        rows.push([
          `${round + 1}`,
          MODE_LABEL[run.mode],
          run.lanes,
          fmt((allCalls / run.wallMs) * 1000),
          fmt(u.callsPerSec),
          fmt(u.p50),
          fmt(u.p99),
          fmt(u.max / 1000, 1),
          u.errors,
          run.mode === 'idle' ? '–' : fmt((run.ok[VICTIM] / run.wallMs) * 1000),
          run.mode === 'idle' ? '–' : countErrors(run.errors[VICTIM]),
          run.mode === 'kill' ? `${run.kills.length} (${run.ticks.filter((t) => t.skipped).length} skipped)` : '–',
          fmt(run.cpuUs / allCalls),
          loopText(run.loopDelayMs),
        ]);
      }
      perRound.push(byMode);
    }
    const vsCalm = killRatios(perRound, 'calm');
    const vsIdle = killRatios(perRound, 'idle');
    rows.push(['', 'kill ÷ calm', '', '', vsCalm.callsPerSec.text, vsCalm.p50.text, vsCalm.p99.text, '', '', '', '', '', '', '']);
    rows.push(['', 'kill ÷ victim idle', '', '', vsIdle.callsPerSec.text, vsIdle.p50.text, vsIdle.p99.text, '', '', '', '', '', '', '']);
    // The main thread's loop delay by run kind: median over rounds of each run's p50 and p99.
    const loopByMode = Object.fromEntries(
      MODES.map((mode) => {
        const of = r.runs.filter((run) => run.mode === mode && run.loopDelayMs?.n > 0).map((run) => run.loopDelayMs);
        return [mode, { p50: median(of.map((x) => x.p50)), p99: median(of.map((x) => x.p99)), runs: of.length }];
      }),
    );
    const floors = floorSummary(r.floors);
    const loadedKills = r.loaded?.bareKills ?? [];
    const loaded = floorSummary({ bare: loadedKills.filter((kill) => !kill.relayed), pool: [] }).bare;
    const loadedRelayed = floorSummary({ relayed: loadedKills.filter((kill) => kill.relayed), pool: [] }).relayed;
    const loadedPool = (r.loaded?.kills ?? []).flatMap((kill) => kill.inflightRejects).map((x) => x.ms);
    const loadedText = r.loaded === undefined ? 'not measured' : `${loaded.text}${r.loaded.warmErrors.length > 0 ? `; ${r.loaded.warmErrors.length} child(ren) not warmed: ${[...new Set(r.loaded.warmErrors)].join(', ')}` : ''}; the pool's rejections in the same run: ${msStats(loadedPool)}`;

    // The victim, over every kill run.
    const killRuns = r.runs.filter((run) => run.mode === 'kill');
    const kills = killRuns.flatMap((run) => run.kills);
    const rejects = kills.flatMap((kill) => kill.inflightRejects);
    const victimErrors = {};
    for (const run of killRuns) addErrors(victimErrors, run.errors[VICTIM]);
    const calmVictimErrors = {};
    for (const run of r.runs.filter((x) => x.mode === 'calm')) addErrors(calmVictimErrors, run.errors[VICTIM]);
    const typedKey = (key) => key === 'MCPCallInterruptedError MCPOOL_CALL_INTERRUPTED' || key.endsWith(' MCPOOL_NOT_CONNECTED');
    const untyped = Object.keys(victimErrors).filter((key) => !typedKey(key));
    const skipped = killRuns.flatMap((run) => run.ticks.filter((t) => t.skipped));
    const victimRows = [
      ['kills (SIGKILL of the victim child, found by marker)', `${kills.length} in ${killRuns.length} run(s) of ${seconds} s; ${skipped.length} tick(s) skipped (victim not serving again yet)`],
      ['victim errors by code (kill runs)', describeErrors(victimErrors)],
      ['victim errors in the calm runs', describeErrors(calmVictimErrors)],
      ['victim calls in flight at a kill: rejected / answered anyway', `${rejects.length} / ${kills.reduce((n, k) => n + k.inflightOk, 0)} (of ${kills.reduce((n, k) => n + k.inflight, 0)})`],
      ['kill → in-flight call rejected, p50 / max', msStats(rejects.map((x) => x.ms))],
      ['kill → pool `disconnected` event, p50 / max', msStats(kills.map((k) => k.disconnectedMs))],
      ['kill → pool `reconnected` event, p50 / max', msStats(kills.map((k) => k.reconnectedMs))],
      ['kill → first successful victim call, p50 / max (reconnect time)', msStats(kills.map((k) => k.firstOkMs))],
      ['floor (a): kill → stdout `end` of a bare echo.mjs child (no pool, nothing else running), p50 [min–max]', floors.bare.text],
      ['floor (b): pool kill → rejection of one in-flight `slow` call, no other load, p50 [min–max]', floors.pool.text],
      ['floor (d): kill → this thread hears of the stdout `end` of a bare echo.mjs child owned by a worker thread (one message), no other load, p50 [min–max]', floors.relayed.text],
      [`floor (c): kill → stdout \`end\` of a bare warmed echo.mjs child (outside the pool) during one more kill run, half-way between victim kills, p50 [min–max]`, loadedText],
      ['floor (d) under this load: the same, every other child owned by a worker thread (one message to this thread), p50 [min–max]', r.loaded === undefined ? 'not measured' : loadedRelayed.text],
      ['main thread event-loop delay p50 / p99 ms (median of runs): calm | victim idle | kill | floor kills', `${MODES.map((mode) => loopText(loopByMode[mode])).join(' | ')} | ${floors.loop.text}`],
      [
        `unaffected p50 / p99 µs by victim state at the call's start: down (kill → served again) | back (next ${BACK_WINDOW_MS} ms) | rest of the kill run`,
        killRuns
          .map((run) => {
            const { down, back, rest } = run.unaffectedByVictimState;
            return `r${run.round + 1}: ${[down, back, rest].map((g) => `${fmt(g.p50)} / ${fmt(g.p99)}`).join(' | ')}`;
          })
          .join('; '),
      ],
    ];

    const notes = [...(r.notes ?? [])];
    const strays = r.runs.filter((run) => run.victimProcessesAfter !== 1);
    if (strays.length > 0) notes.push(`victim processes after a run (expected 1): ${strays.map((run) => `${run.mode} r${run.round + 1}: ${run.victimProcessesAfter}`).join(', ')}`);
    const unaffectedErrors = {};
    for (const run of r.runs) {
      for (const [k, byKey] of run.errors.entries()) {
        if (k === VICTIM) continue;
        for (const [key, n] of Object.entries(byKey)) unaffectedErrors[`${run.mode}: ${key}`] = (unaffectedErrors[`${run.mode}: ${key}`] ?? 0) + n;
      }
    }
    if (Object.keys(unaffectedErrors).length > 0) notes.push(`errors on the unaffected entries: ${describeErrors(unaffectedErrors)}`);
    const samples = {};
    for (const run of r.runs) for (const [key, sample] of Object.entries(run.errorSamples)) samples[key] ??= sample;
    for (const [key, sample] of Object.entries(samples)) notes.push(`${key}: "${sample.message}"`);
    const stopped = r.runs.flatMap((run) => run.lanesStopped.map((l) => `${run.mode} r${run.round + 1}: session ${l.session} entry ${l.entry} ${l.status} (${l.key})`));
    if (stopped.length > 0) notes.push(`lanes stopped (view failed/released): ${stopped.slice(0, 5).join('; ')}${stopped.length > 5 ? ` … (${stopped.length})` : ''}`);
    const unaffectedEvents = Object.entries(r.poolEventsByServer).filter(([key]) => key.endsWith('(unaffected)'));
    if (unaffectedEvents.length > 0) notes.push(`pool events on the unaffected entries: ${unaffectedEvents.map(([key, n]) => `${key} ×${n}`).join(', ')}`);
    const calmVictimEvents = r.runs.filter((run) => run.mode !== 'kill' && run.events.disconnected?.victim > 0);
    if (calmVictimEvents.length > 0) notes.push(`the victim disconnected in ${calmVictimEvents.length} run(s) without kills`);
    for (const run of r.runs) if (run.victimReadyError) notes.push(`${run.mode} r${run.round + 1}: ${run.victimReadyError}`);
    const killErrors = kills.filter((k) => k.killError).map((k) => `${k.pid}: ${k.killError}`);
    if (killErrors.length > 0) notes.push(`kill failed: ${killErrors.join('; ')}`);
    if (r.health?.zombies > 0) notes.push(`${r.health.zombies} zombie child process(es) after the runs`);
    if (r.logErrors?.length > 0) notes.push(`the pool logged ${r.logErrors.length} error(s): ${[...new Set(r.logErrors)].slice(0, 3).join(' | ')}`);
    const late = kills.filter((k) => k.firstOkAfterRun).length;
    if (late > 0) notes.push(`${late} reconnect time(s) measured after the run ended (a kill near its end), by a probe call retried every ${ERROR_PAUSE_MS} ms`);

    const unaffectedErrorCount = r.runs.reduce((n, run) => n + unaffected(run).errors, 0);
    const unaffectedStopped = r.runs.some((run) => run.lanesStopped.some((l) => l.entry !== VICTIM));
    const judged = (value, ok) => (Number.isFinite(value) ? ok : undefined);
    return {
      tables: [
        {
          title: `${ENTRIES} entries (echo.mjs) × ${SESSIONS} sessions, every session calling all ${ENTRIES} at once (one lane per session and entry, each sequential); ${rounds} rounds of 3 runs of ${seconds} s (order rotates), after ${warmupMs} ms warm-up. "unaffected" = the 3 entries never killed. calm: all lanes; victim idle: the victim's lanes do not call (the load a kill run really has); kill: the victim's child is SIGKILLed every ${KILL_EVERY_MS} ms. Ratios: median of per-round kill/other [range]. CPU = the supervisor process per call (all entries). Loop delay = the supervisor's main thread, lateness of a ${LOOP_RESOLUTION_MS} ms timer (perf_hooks.monitorEventLoopDelay) over the run`,
          columns: ['round', 'run', 'lanes', 'all calls/s', 'unaffected calls/s', 'p50 µs', 'p99 µs', 'max ms', 'unaffected errors', 'victim ok calls/s', 'victim errors', 'kills', 'CPU µs/call', 'loop delay p50 / p99 ms'],
          rows,
          notes: [],
        },
        {
          title: `The victim: restartIntensity ${RESTART_INTENSITY.maxRestarts}/${RESTART_INTENSITY.periodMs} ms, default stdio reconnect (3 tries, 500 ms apart); its lanes retry ${ERROR_PAUSE_MS} ms after an error, once the view is no longer 'disconnected'`,
          columns: ['measure', 'value'],
          rows: victimRows,
          notes,
        },
      ],
      targets: [
        target('crash under load: 0 errors on the unaffected entries', `${unaffectedErrorCount}${unaffectedStopped ? ' (and lanes stopped)' : ''}`, unaffectedErrorCount === 0 && !unaffectedStopped),
        target('child killed → in-flight call rejected, p50 ≤ 10 ms', `${fmt(median(rejects.map((x) => x.ms)))} ms (${rejects.length} calls)`, rejects.length > 0 ? median(rejects.map((x) => x.ms)) <= 10 : undefined),
        floor('kernel: SIGKILL → stdout `end` of a warmed node child with a call in flight, no pool, no other load of ours', floors.bare.text),
        floor('pool: kill → rejection, one call in flight, no other load', `${floors.pool.text}${Number.isFinite(floors.pool.p50) && Number.isFinite(floors.bare.p50) ? ` (${fmtRatio(ratio(floors.pool.p50, floors.bare.p50))} the bare child)` : ''}`),
        floor(
          'a child owned by a worker thread: SIGKILL → the main thread hears of its stdout `end` (one message), no pool, no other load of ours',
          `${floors.relayed.text}${Number.isFinite(floors.pool.p50) && Number.isFinite(floors.relayed.p50) ? `; the pool is ${fmtRatio(ratio(floors.pool.p50, floors.relayed.p50))} this (+${fmt(floors.pool.p50 - floors.relayed.p50)} ms)` : ''}`,
        ),
        floor('kernel under this load: SIGKILL → stdout `end` of a warmed node child outside the pool, during a kill run', loadedText),
        floor(
          'a child owned by a worker thread, under this load: SIGKILL → the main thread hears of its stdout `end`, during the same run',
          r.loaded === undefined ? 'not measured' : `${loadedRelayed.text}${Number.isFinite(loadedRelayed.p50) && loadedPool.length > 0 ? `; the pool's rejections ${fmtRatio(ratio(median(loadedPool), loadedRelayed.p50))} this` : ''}`,
        ),
        floor(
          'main thread event-loop delay p50 / p99 during: calm | victim idle | kill | floor kills',
          `${MODES.map((mode) => loopText(loopByMode[mode])).join(' | ')} | ${floors.loop.text} ms`,
        ),
        target('crash under load: unaffected p99 ≤ 1.5× the calm run', `${vsCalm.p99.text} (p50 ${vsCalm.p50.text})`, judged(vsCalm.p99.median, vsCalm.p99.median <= 1.5)),
        target('crash under load: unaffected p99 ≤ 1.5× the same-load control (victim idle)', `${vsIdle.p99.text} (p50 ${vsIdle.p50.text})`, judged(vsIdle.p99.median, vsIdle.p99.median <= 1.5)),
        target(
          'crash under load: victim errors typed (MCPCallInterruptedError / MCPOOL_NOT_CONNECTED)',
          untyped.length === 0 ? `${countErrors(victimErrors)} error(s), all typed` : `untyped: ${untyped.join(', ')}`,
          kills.length > 0 ? untyped.length === 0 : undefined,
        ),
      ],
      raw: {
        spec,
        ...r,
        ratios: {
          killVsCalm: Object.fromEntries(Object.entries(vsCalm).map(([k, v]) => [k, { median: v.median, perRound: v.perRound }])),
          killVsIdle: Object.fromEntries(Object.entries(vsIdle).map(([k, v]) => [k, { median: v.median, perRound: v.perRound }])),
        },
      },
    };
  },
};
