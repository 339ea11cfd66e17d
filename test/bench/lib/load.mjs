// The paths under test and the load loops: a direct SDK client over stdio (the floor), and the
// call loops (sequential, fixed concurrency) that time each call and the process CPU.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/**
 * A direct, unpooled client: what a session does without mcpool. "Ready" means connected
 * (spawn + initialize) and tools listed, because the pool's acquire includes discovery too.
 */
export async function connectDirect(config, { listTools = true } = {}) {
  const client = new Client({ name: 'mcpool-bench-direct', version: '0.0.0' }, { capabilities: {} });
  const transport = new StdioClientTransport({ command: config.command, args: config.args, stderr: 'ignore' });
  try {
    await client.connect(transport);
    if (listTools) await client.listTools();
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
  return client;
}

/** Closes direct clients (stdin end → SIGTERM → SIGKILL, as the SDK does), never throwing. */
export async function closeDirect(clients) {
  await Promise.all(clients.map((client) => client?.close().catch(() => undefined)));
}

/** `call()` for a direct client and for a PooledConnection: the same tool, the same arguments. */
export const ECHO_ARGS = { text: 'hello from mcpool bench' };
export const directCall = (client) => () => client.callTool({ name: 'echo', arguments: ECHO_ARGS });
export const pooledCall = (view) => () => view.callTool('echo', ECHO_ARGS);

/**
 * Runs `count` calls, `concurrency` at a time (1 = sequential). Returns each call's latency in µs,
 * the wall time, and the whole process's CPU (user + system, every thread) over the run.
 */
export async function runCalls(call, count, concurrency = 1) {
  const latencies = new Float64Array(count);
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const start = performance.now();
      await call();
      latencies[i] = (performance.now() - start) * 1000;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { latenciesUs: Array.from(latencies), wallMs, cpuUs: cpu.user + cpu.system, calls: count };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `predicate` every `everyMs` until it holds or `timeoutMs` passes; returns whether it held. */
export async function waitFor(predicate, timeoutMs, everyMs = 10) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await predicate()) return true;
    await sleep(everyMs);
  }
  return Boolean(await predicate());
}
