/**
 * The daemon's local socket: the same app (REST, `/mcp`, the event stream) on a Unix domain socket
 * in the state directory, `<state dir>/mcpool.sock`, beside TCP. The file is 0600 in a 0700
 * directory, so only the daemon's own user can connect: a request that comes over it is the
 * operator's without a token (the file's permissions are the authentication). `Host` and
 * `Origin` are checked as on TCP, and the per-address connection cap applies to it as one address.
 *
 * - A socket file nothing accepts on (left by a daemon that was killed) is replaced. One a live
 *   daemon answers on, or a path that is not a socket, is left alone: the daemon runs on TCP only
 *   and says why.
 * - The state directory is made 0700 if it was open to others (it also holds the token file and
 *   the OAuth grants), and must belong to the daemon's user.
 * - Windows has none. A named pipe lives in one machine-wide namespace where any local user may
 *   create a pipe of that name first (pipe squatting), and Node can neither create it exclusively
 *   nor let a client check who serves it before sending: a client could hand its requests to
 *   another user's process. The socket's safety comes from the 0700 directory around it, which
 *   pipes have no equivalent of. There the daemon is reached over TCP with its token.
 * - `close()` stops accepting at once; the file is removed once its connections are gone (only
 *   while it is still this daemon's, the same inode).
 */
import { chmod, lstat, mkdir, stat, unlink } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { localSocketPath, socketAnswers } from '@mcpool/client/node';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { limitConnectionsPerAddress, serverTimeouts } from './security.js';

/** `sun_path` holds 108 bytes on Linux (104 on macOS), its terminating NUL included. */
const MAX_SOCKET_PATH_BYTES = 103;

/** The connections accepted on a local socket (a request is told by its socket). */
const localConnections = new WeakSet<Socket>();

/** True when `request` came over the daemon's local socket. */
export function cameOverLocalSocket(request: IncomingMessage): boolean {
  return localConnections.has(request.socket);
}

export interface LocalSocket {
  readonly path: string;
  readonly server: Server;
  /** Stops accepting; resolves once every connection is closed and the file is gone. */
  close(): Promise<void>;
}

export interface LocalSocketSettings {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnectionsPerAddress: number;
}

/**
 * Serves `app` on `<stateDir>/mcpool.sock` as well. Resolves with the socket, or undefined when
 * there is none (Windows, a path too long, another daemon on it, a directory not the user's):
 * the reason is logged, and TCP serves alone.
 */
export async function listenLocalSocket(app: FastifyInstance, stateDir: string, settings: LocalSocketSettings, logger: Logger): Promise<LocalSocket | undefined> {
  const path = localSocketPath(stateDir);
  if (path === undefined) {
    logger.debug('no local socket on Windows (a named pipe cannot be kept from other users): TCP and the token only');
    return undefined;
  }
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
    logger.warn({ path }, `no local socket: its path is longer than a Unix socket path may be (${MAX_SOCKET_PATH_BYTES} bytes); set a shorter MCPOOL_STATE_DIR to have one`);
    return undefined;
  }
  try {
    if (!(await privateDirectory(stateDir, logger)) || !(await pathIsFree(path, logger))) return undefined;
  } catch (error) {
    logger.warn({ path, err: error }, `no local socket: ${(error as Error).message}`);
    return undefined;
  }

  const server = createServer(serverTimeouts(settings), (request, response) => app.routing(request, response));
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
  server.on('connection', (socket: Socket) => localConnections.add(socket));
  limitConnectionsPerAddress(server, settings.maxConnectionsPerAddress, logger);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Created with the process umask's mode; the 0700 directory keeps others out meanwhile.
    await chmod(path, 0o600);
  } catch (error) {
    server.close();
    logger.warn({ path, err: error }, `no local socket: cannot listen on ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    return undefined;
  }
  const { ino } = await stat(path);
  let closing: Promise<void> | undefined;
  return {
    path,
    server,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        // Node removes the file as the server closes; a copy left over is removed only if it is still ours.
        const left = await stat(path).catch(() => undefined);
        if (left?.ino === ino) await unlink(path).catch(() => undefined);
      })()),
  };
}

/** The state directory exists, is the daemon user's and is 0700 (tightened, with a warning, if it was open). */
async function privateDirectory(dir: string, logger: Logger): Promise<boolean> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const info = await stat(dir);
  if (process.getuid !== undefined && info.uid !== process.getuid()) {
    logger.warn({ dir, owner: info.uid }, `no local socket: the state directory ${dir} belongs to another user`);
    return false;
  }
  if ((info.mode & 0o077) !== 0) {
    await chmod(dir, 0o700);
    logger.warn({ dir, mode: (info.mode & 0o777).toString(8) }, `the state directory ${dir} was open to other users; its mode is now 0700 (it holds the token, the OAuth grants and the local socket)`);
  }
  return true;
}

/** True when nothing is at `path` (a stale socket, nothing accepts on, is removed first). */
async function pathIsFree(path: string, logger: Logger): Promise<boolean> {
  const existing = await lstat(path).catch(() => undefined);
  if (existing === undefined) return true;
  if (!existing.isSocket()) {
    logger.warn({ path }, `no local socket: ${path} exists and is not a socket; it is left alone`);
    return false;
  }
  if (await socketAnswers(path)) {
    logger.warn({ path }, `no local socket: another daemon answers on ${path} (same state directory); it is left to it`);
    return false;
  }
  await unlink(path);
  logger.info({ path }, `removed a stale local socket (${path}): its daemon did not stop cleanly`);
  return true;
}
