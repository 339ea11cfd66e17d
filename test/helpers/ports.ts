/**
 * A port on 127.0.0.1 nothing listens on right now, for a daemon that must be started on a known
 * port (its address is read from its config, not from its log). Another process could take it
 * between this probe and the daemon's listen: the daemon then fails with EADDRINUSE, loudly.
 */
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
