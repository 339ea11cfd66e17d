// Part 2's processes: the daemon (`mcpool serve`) and the peers users would pick instead, each
// fronting @modelcontextprotocol/server-everything over stdio, each bound to 127.0.0.1 only.
// - Every process is `process.execPath` + the package's bin JS (never npx), with the section's
//   marker in its command line (and `<marker>-child` in the server's), so it is found, counted and
//   swept by marker; stopped by pid (SIGTERM, then SIGKILL past a deadline) in the section's finally.
// - Peers run with `--import=lib/loopbackOnly.mjs`, which forces every listen onto 127.0.0.1
//   (mcp-hub and supergateway have no host option and would bind `::`); mcp-proxy also gets
//   `--host 127.0.0.1` (its default is `::`). The daemon binds its config's host, 127.0.0.1.
// - The peers are root devDependencies (exact versions below); a missing or different version is
//   reported, never fatal.
import { spawn, execFileSync } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from '@modelcontextprotocol/client';
import { listeningSockets, LOOPBACK, pidsWithMarker, psSnapshot, treeRss } from './procs.mjs';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MODULES = join(ROOT, 'node_modules');
export const LOOPBACK_SHIM = fileURLToPath(new URL('./loopbackOnly.mjs', import.meta.url));
export const EVERYTHING = join(MODULES, '@modelcontextprotocol/server-everything/dist/index.js');
export const EVERYTHING_VERSION = '2026.8.31';
const HTTP_FLOOR = fileURLToPath(new URL('./httpFloorServer.mjs', import.meta.url));
const HANGING = fileURLToPath(new URL('../../fixtures/servers/hanging.mjs', import.meta.url));

/** The same call on every path: server-everything's `echo` (its argument is `message`). */
export const ECHO_MESSAGE = { message: 'hello from mcpool bench' };
const CALL_TIMEOUT_MS = 15_000;

/** Installed version of a package under node_modules, or undefined. */
export function installedVersion(pkg) {
  try {
    return JSON.parse(readFileSync(join(MODULES, pkg, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/** A free TCP port on 127.0.0.1 (listen on 0, read it, close: a tiny race nobody else here runs). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The environment a gateway gets: ours without anything that would reconfigure it behind our back. */
function cleanEnv(extra = {}) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^(MCPOOL_|MCP_PROXY_)/.test(key)) env[key] = value;
  return { ...env, ...extra };
}

const shQuote = (s) => `'${String(s).replaceAll("'", `'\\''`)}'`;

/**
 * The gateways. `endpoints` are the paths measured through one (the daemon has two);
 * `prepare()` writes what it needs in `dir` and returns how to start it: `{ args, env, cwd,
 * headers }` (args after `process.execPath`; headers for every client request).
 */
export const GATEWAYS = [
  {
    id: 'daemon',
    label: 'mcpool daemon',
    pkg: undefined,
    endpoints: [
      { id: 'daemon-server', label: 'mcpool daemon /mcp/everything', path: '/mcp/everything', transport: 'http', tool: 'echo' },
      { id: 'daemon-all', label: 'mcpool daemon /mcp (aggregated)', path: '/mcp', transport: 'http', tool: 'everything__echo' },
      { id: 'daemon-all-modern', label: 'mcpool daemon /mcp (aggregated), SDK v2 client at 2026-07-28', path: '/mcp', transport: 'modern', tool: 'everything__echo' },
    ],
    async prepare({ mark, port, dir, token, hanging = false }) {
      // The marker goes in the config file's name: `serve` (commander) refuses unknown arguments.
      const config = join(dir, `mcpool${mark}.json`);
      const servers = { everything: { command: process.execPath, args: [EVERYTHING, 'stdio', `${mark}-child`] } };
      // `hanging`: a second server that never answers `initialize`, for "whatever the other servers are doing".
      if (hanging) servers.hanging = { command: process.execPath, args: [HANGING, `${mark}-hanging`] };
      writeFileSync(
        config,
        JSON.stringify({
          mcpServers: servers,
          daemon: { host: LOOPBACK, port, watchConfig: false },
        }),
      );
      return {
        args: [join(ROOT, 'apps/daemon/bin/mcpool.js'), 'serve', `--config=${config}`],
        env: cleanEnv({ MCPOOL_TOKEN: token, MCPOOL_STATE_DIR: join(dir, 'state') }),
        cwd: dir,
        headers: { authorization: `Bearer ${token}` },
      };
    },
  },
  {
    id: 'mcp-hub',
    label: 'mcp-hub',
    pkg: 'mcp-hub',
    version: '4.2.1',
    // Its /mcp is legacy SSE only (GET /mcp + POST /messages); tools are `<server>__<tool>`.
    endpoints: [{ id: 'mcp-hub', label: 'mcp-hub 4.2.1 /mcp (SSE)', path: '/mcp', transport: 'sse', tool: 'everything__echo' }],
    async prepare({ mark, port, dir }) {
      // mcp-hub has no host option (`listen(port)`: every interface): the loopback shim forces it.
      // It downloads a server catalogue at start unless its cache is fresh: seed the cache (one
      // placeholder entry, fetched "now") in a private XDG tree, so it never goes to the network.
      const home = join(dir, 'home');
      const data = join(home, 'data');
      mkdirSync(join(data, 'mcp-hub', 'cache'), { recursive: true });
      writeFileSync(
        join(data, 'mcp-hub', 'cache', 'registry.json'),
        JSON.stringify({ registry: { version: 'bench', generatedAt: 0, totalServers: 1, servers: [{ id: 'bench-placeholder', name: 'placeholder' }] }, lastFetchedAt: Date.now(), serverDocumentation: {} }),
      );
      const config = join(dir, 'mcp-hub.json');
      writeFileSync(config, JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio', `${mark}-child`] } } }));
      return {
        args: [`--import=${pathToFileURL(LOOPBACK_SHIM)}`, join(MODULES, 'mcp-hub/dist/cli.js'), '--port', String(port), '--config', config, mark],
        env: cleanEnv({ HOME: home, XDG_DATA_HOME: data, XDG_STATE_HOME: join(home, 'state'), XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache') }),
        cwd: dir,
        headers: {},
      };
    },
  },
  {
    id: 'supergateway',
    label: 'supergateway',
    pkg: 'supergateway',
    version: '4.0.0',
    endpoints: [{ id: 'supergateway', label: 'supergateway 4.0.0 --stateful', path: '/mcp', transport: 'http', tool: 'echo' }],
    async prepare({ mark, port, dir }) {
      // No host option (`app.listen(port)`): the loopback shim forces it. `--stdio` is run through
      // a shell (`sh -c`), so the command is one quoted string; one child per session.
      const command = [process.execPath, EVERYTHING, 'stdio', `${mark}-child`].map(shQuote).join(' ');
      return {
        args: [`--import=${pathToFileURL(LOOPBACK_SHIM)}`, join(MODULES, 'supergateway/dist/index.js'), '--stdio', command, '--outputTransport', 'streamableHttp', '--stateful', '--port', String(port), mark],
        env: cleanEnv(),
        cwd: dir,
        headers: {},
      };
    },
  },
  {
    id: 'mcp-proxy',
    label: 'mcp-proxy',
    pkg: 'mcp-proxy',
    version: '6.7.19',
    endpoints: [{ id: 'mcp-proxy', label: 'mcp-proxy 6.7.19 (one shared child)', path: '/mcp', transport: 'http', tool: 'echo' }],
    async prepare({ mark, port, dir }) {
      // punkpeye's `mcp-proxy` (npm): `--host` defaults to `::`; we pass 127.0.0.1 and preload
      // the shim as well. `--server stream`: Streamable HTTP only (no legacy /sse listener).
      // The marker is the server's last argument, so it is in the proxy's command line too.
      return {
        args: [
          `--import=${pathToFileURL(LOOPBACK_SHIM)}`,
          join(MODULES, 'mcp-proxy/dist/bin/mcp-proxy.mjs'),
          '--host',
          LOOPBACK,
          '--port',
          String(port),
          '--server',
          'stream',
          '--gracefulShutdownTimeout',
          '2000',
          '--',
          process.execPath,
          EVERYTHING,
          'stdio',
          `${mark}-child`,
        ],
        env: cleanEnv(),
        cwd: dir,
        headers: {},
      };
    },
  },
  {
    // Not a peer: the floor of an HTTP gateway (lib/httpFloorServer.mjs), never in the targets.
    id: 'http-floor',
    label: 'bare SDK Streamable HTTP server',
    reference: true,
    pkg: undefined,
    endpoints: [{ id: 'http-floor', label: 'reference: bare SDK HTTP server, echo in-process', path: '/mcp', transport: 'http', tool: 'echo' }],
    async prepare({ mark, port, dir }) {
      return {
        args: [`--import=${pathToFileURL(LOOPBACK_SHIM)}`, HTTP_FLOOR, String(port), mark],
        env: cleanEnv(),
        cwd: dir,
        headers: {},
      };
    },
  },
];

/** Why a gateway cannot run at all (missing package, wrong version is only a note), or undefined. */
export function missingReason(gateway) {
  if (!existsSync(EVERYTHING)) return '@modelcontextprotocol/server-everything is not installed (npm install)';
  if (gateway.id === 'daemon') return existsSync(join(ROOT, 'apps/daemon/dist/cli.js')) ? undefined : 'apps/daemon is not built (npx tsc -b)';
  if (gateway.pkg === undefined) return undefined;
  const version = installedVersion(gateway.pkg);
  if (version === undefined) return `${gateway.pkg} is not installed (npm install: it is a root devDependency)`;
  return undefined;
}

/**
 * Starts one gateway: `process.execPath` (+ `nodeArgs`, e.g. `--cpu-prof`) + its bin, output
 * captured (the last 8 KB and the byte count, so its logging volume is known). Never throws for
 * a peer that dies: `exit` says so.
 */
export async function startGateway(gateway, { mark, token, nodeArgs = [], hanging = false }) {
  const dir = mkdtempSync(join(tmpdir(), `mcpool-bench-${gateway.id}-`));
  let port;
  let spec;
  try {
    port = await freePort();
    spec = await gateway.prepare({ mark, port, dir, token, hanging });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const child = spawn(process.execPath, [...nodeArgs, ...spec.args], { cwd: spec.cwd, env: spec.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const handle = { gateway, mark, port, dir, spec, child, pid: child.pid, tail: '', outputBytes: 0, exit: undefined, startedAt: performance.now() };
  const collect = (chunk) => {
    handle.outputBytes += chunk.length;
    handle.tail = (handle.tail + chunk.toString('utf8')).slice(-8000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  handle.exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      handle.exit = { code, signal };
      resolve(handle.exit);
    }),
  );
  child.once('error', (error) => {
    handle.exit ??= { code: null, signal: null, error: error.message };
  });
  return handle;
}

/** What a gateway's output says went wrong: its first error line, else its last lines. */
export function outputTail(handle, lines = 2) {
  const all = handle.tail
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const error = all.find((l) => /^\w*Error\b/.test(l)) ?? all.find((l) => /\b\w*Error\b|refusing|EADDRINUSE|EACCES/.test(l) && !/^at /.test(l));
  return (error ?? all.slice(-lines).join(' | ')).slice(0, 300);
}

/**
 * `fetch` for the SDK's HTTP client transports, which pass one long-lived AbortSignal to every
 * request. undici adds an abort listener to it per request and removes it only when that
 * request is garbage-collected, and warns (MaxListenersExceededWarning, one line per request)
 * past 1,500: thousands of lines at concurrency 16. Same requests, the limit lifted, no warning.
 */
const unlimited = new WeakSet();
function fetchWithoutListenerWarning(url, init) {
  const signal = init?.signal;
  if (signal && !unlimited.has(signal)) {
    setMaxListeners(0, signal);
    unlimited.add(signal);
  }
  return fetch(url, init);
}

/** An MCP client session to `url`: Streamable HTTP or legacy SSE. Ready = connected and tools listed. */
export async function connectHttp(url, { transport: kind, headers = {} }) {
  const options = { requestInit: { headers }, fetch: fetchWithoutListenerWarning };
  if (kind === 'modern') {
    // A stateless 2026-07-28 client (SDK v2, pinned): server/discover, then per-request _meta, no session.
    const client = new ClientV2({ name: 'mcpool-bench-gateway-modern', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const transport = new StreamableHTTPClientTransportV2(new URL(url), options);
    try {
      await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
      const { tools } = await client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
      return { client, transport, tools: tools.map((t) => t.name), modern: true };
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
  }
  const transport = kind === 'sse' ? new SSEClientTransport(new URL(url), options) : new StreamableHTTPClientTransport(new URL(url), options);
  const client = new Client({ name: 'mcpool-bench-gateway', version: '0.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
    const { tools } = await client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
    return { client, transport, tools: tools.map((t) => t.name) };
  } catch (error) {
    await closeSession({ client, transport });
    throw error;
  }
}

/** A direct stdio client on its own server-everything child (the floor). */
export async function connectStdio(mark) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio', mark], stderr: 'ignore' });
  const client = new Client({ name: 'mcpool-bench-direct', version: '0.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
    const { tools } = await client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
    return { client, transport, tools: tools.map((t) => t.name) };
  } catch (error) {
    await closeSession({ client, transport });
    throw error;
  }
}

/**
 * Ends a session the way a well-behaved client does: DELETE for Streamable HTTP (supergateway
 * would keep the session's child for 30 minutes otherwise), then close. Never throws.
 */
export async function closeSession(session) {
  if (!session) return;
  const { client, transport } = session;
  if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) await transport.terminateSession().catch(() => undefined);
  await client.close().catch(() => undefined);
}

/** `call()` for one session: the echo tool, with a deadline; a tool error counts as a failure. */
export function echoCall(session, tool) {
  return async () => {
    const result = session.modern
      ? await session.client.callTool({ name: tool, arguments: ECHO_MESSAGE }, { timeout: CALL_TIMEOUT_MS })
      : await session.client.callTool({ name: tool, arguments: ECHO_MESSAGE }, undefined, { timeout: CALL_TIMEOUT_MS });
    if (result.isError) throw new Error(`the tool answered with an error: ${JSON.stringify(result.content).slice(0, 200)}`);
  };
}

/**
 * Waits until `url` serves a session whose tools include `tool` (a gateway may listen before
 * its server is up: mcp-hub does). Returns that session; throws when the gateway exits or time runs out.
 */
export async function waitReady(handle, endpoint, timeoutMs) {
  const url = `http://${LOOPBACK}:${handle.port}${endpoint.path}`;
  const deadline = performance.now() + timeoutMs;
  let last = 'no answer yet';
  while (performance.now() < deadline) {
    if (handle.exit) throw new Error(`exited (code ${handle.exit.code}${handle.exit.signal ? `, signal ${handle.exit.signal}` : ''}${handle.exit.error ? `, ${handle.exit.error}` : ''}): ${outputTail(handle)}`);
    try {
      const session = await connectHttp(url, { transport: endpoint.transport, headers: handle.spec.headers });
      if (session.tools.includes(endpoint.tool)) return { session, url };
      last = `tool ${endpoint.tool} not listed (tools: ${session.tools.slice(0, 5).join(', ') || 'none'})`;
      await closeSession(session);
    } catch (error) {
      last = String(error?.message ?? error).split('\n')[0].slice(0, 200);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`not ready after ${Math.round(timeoutMs / 1000)} s: ${last}; output: ${outputTail(handle)}`);
}

/**
 * Stops a gateway by pid: SIGTERM, wait until nothing carrying its marker lives (its children
 * included), then SIGKILL whatever does past `graceMs`. Removes its temporary directory.
 * Returns the pids that needed SIGKILL.
 */
export async function stopGateway(handle, graceMs = 5000) {
  if (!handle.exit) handle.child.kill('SIGTERM');
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline && (!handle.exit || pidsWithMarker(handle.mark).length > 0)) await new Promise((resolve) => setTimeout(resolve, 50));
  const killed = pidsWithMarker(handle.mark);
  for (const pid of killed) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  if (!handle.exit) await Promise.race([handle.exited, new Promise((resolve) => setTimeout(resolve, 1000))]);
  rmSync(handle.dir, { recursive: true, force: true });
  return killed;
}

// --- Sockets, CPU ----------------------------------------------------------------------------------

/**
 * Listening TCP sockets of `pids`: from `ss` (lib/procs.mjs), or, where `ss` is missing, from
 * /proc/net/tcp{,6} matched to the pids' socket inodes. `loopback` false = a problem.
 */
export function listeningOf(pids) {
  const viaSs = listeningSockets(pids);
  if (viaSs.checked) return { ...viaSs, via: 'ss' };
  try {
    const inodes = new Set();
    for (const pid of pids) {
      let fds = [];
      try {
        fds = readdirSync(`/proc/${pid}/fd`);
      } catch {
        continue;
      }
      for (const fd of fds) {
        try {
          const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
          if (match) inodes.add(match[1]);
        } catch {
          // closed meanwhile
        }
      }
    }
    const sockets = [];
    for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
      let text = '';
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        continue;
      }
      for (const line of text.split('\n').slice(1)) {
        const cols = line.trim().split(/\s+/);
        if (cols.length < 10 || cols[3] !== '0A' || !inodes.has(cols[9])) continue; // 0A = LISTEN
        const [hex, portHex] = cols[1].split(':');
        const port = Number.parseInt(portHex, 16);
        let local;
        let loopback;
        if (hex.length === 8) {
          const bytes = hex.match(/../g).map((b) => Number.parseInt(b, 16)).reverse();
          local = `${bytes.join('.')}:${port}`;
          loopback = bytes[0] === 127;
        } else {
          local = `[${hex}]:${port}`;
          loopback = hex === '00000000000000000000000001000000' || /^0000000000000000FFFF00000100007F$/i.test(hex);
        }
        sockets.push({ local, loopback });
      }
    }
    return { checked: true, via: '/proc/net', sockets };
  } catch {
    return { checked: false, sockets: [] };
  }
}

let clockTicks;
/** utime + stime of `pids` in µs, from /proc/<pid>/stat (clock-tick resolution, usually 10 ms). */
export function cpuUsOf(pids) {
  clockTicks ??= (() => {
    try {
      return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      return 100;
    }
  })();
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // exited
    }
  }
  return (ticks / clockTicks) * 1e6;
}

/**
 * CPU time (µs) this process's main thread has used so far, from /proc's schedstat (ns, so exact
 * for short chunks, unlike the 10 ms ticks of `stat`); NaN where the kernel does not provide it.
 * The client's JS runs on that one thread: its CPU per call bounds what the client can do.
 */
export function mainThreadCpuUs() {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return Number.NaN;
  }
}

/** The pids of `root`'s tree from one snapshot (the gateway and its server children). */
export function treePids(root, snapshot = psSnapshot()) {
  return treeRss(root, snapshot).pids;
}
