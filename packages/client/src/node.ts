/// <reference types="node" />
/**
 * `@mcpool/client/node`: the daemon's local socket, for Node callers on the daemon's machine.
 *
 * Besides TCP, a daemon listens on a Unix domain socket in its state directory
 * (`<state dir>/mcpool.sock`, mode 0600 in a 0700 directory). Only the user who runs the daemon
 * can open it, so a request that comes over it needs no token: the file's permissions are the
 * authentication. `connectLocal()` gives a client over it when a daemon answers there, and
 * undefined otherwise (use TCP and a token then). Windows has no such socket: a named pipe's name
 * could be taken first by another local user, and Node cannot check who serves one.
 *
 * Node only (it imports `node:` modules and `undici`); the package root stays free of both.
 */
import { connect } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { McpoolClient, type McpoolClientOptions } from './client.js';

/** The socket's file name in the state directory. */
export const LOCAL_SOCKET_FILE = 'mcpool.sock';

/**
 * The base URL of requests over the socket. The name is only the `Host` a request carries: the
 * daemon checks it as for TCP, and `localhost` is always accepted.
 */
export const LOCAL_SOCKET_BASE_URL = 'http://localhost';

export interface StateDirOptions {
  env?: Record<string, string | undefined>;
  /** @default os.homedir() */
  home?: string;
  /** @default process.platform */
  platform?: NodeJS.Platform;
}

/**
 * The daemon's state directory (token file, OAuth grants, the local socket): `MCPOOL_STATE_DIR`,
 * else `$XDG_STATE_HOME/mcpool` (default `~/.local/state/mcpool`); on Windows
 * `%LOCALAPPDATA%\mcpool`.
 */
export function defaultStateDir({ env = process.env, home = homedir(), platform = process.platform }: StateDirOptions = {}): string {
  if (env.MCPOOL_STATE_DIR) return env.MCPOOL_STATE_DIR;
  if (platform === 'win32' && env.LOCALAPPDATA) return join(env.LOCALAPPDATA, 'mcpool');
  return join(env.XDG_STATE_HOME || join(home, '.local', 'state'), 'mcpool');
}

/** The local socket of the daemon whose state directory is `stateDir`; undefined on Windows (none there). */
export function localSocketPath(stateDir: string, platform: NodeJS.Platform = process.platform): string | undefined {
  return platform === 'win32' ? undefined : join(stateDir, LOCAL_SOCKET_FILE);
}

/**
 * A `fetch` whose every request goes to the Unix socket `path`, whatever the URL's host (undici,
 * one pooled connection set). `close()` ends its idle connections.
 */
export function socketFetch(path: string): typeof fetch & { close(): Promise<void> } {
  const dispatcher = new Agent({ connect: { socketPath: path } });
  const viaSocket = ((input: Parameters<typeof undiciFetch>[0], init?: Parameters<typeof undiciFetch>[1]) =>
    undiciFetch(input, { ...init, dispatcher })) as unknown as typeof fetch & { close(): Promise<void> };
  viaSocket.close = () => dispatcher.close();
  return viaSocket;
}

/** True when something accepts a connection on the socket `path` within `timeoutMs` (a daemon, not a file left by one that crashed). */
export function socketAnswers(path: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    const done = (answers: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answers);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    timer.unref();
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export interface ConnectLocalOptions extends StateDirOptions, Pick<McpoolClientOptions, 'timeoutMs'> {
  /** The daemon's state directory. @default defaultStateDir() */
  stateDir?: string;
}

/**
 * A client of the daemon over its local socket (no token), or undefined when no daemon answers
 * there (no socket, a stale one, Windows): the caller uses TCP and a token then.
 *
 * @example
 * ```ts
 * import { connectLocal } from '@mcpool/client/node';
 *
 * const client = await connectLocal();
 * if (client) console.log((await client.getWorkspaceMcp()).servers.map((s) => s.name));
 * ```
 */
export async function connectLocal(options: ConnectLocalOptions = {}): Promise<McpoolClient | undefined> {
  const path = localSocketPath(options.stateDir ?? defaultStateDir(options), options.platform);
  if (path === undefined || !(await socketAnswers(path))) return undefined;
  return new McpoolClient({ baseUrl: LOCAL_SOCKET_BASE_URL, fetch: socketFetch(path), ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) });
}
