/**
 * Connections are admitted per principal once a request on them authenticates; until then they
 * wait in a small pool of unauthenticated connections. Every local client shares the loopback
 * address, so a cap per address is a cap on the whole machine: 256 idle sockets without a token
 * left a legitimate client 1 answer in 119. Instead:
 * - a new connection always gets in; when the unauthenticated pool is full, its oldest member is
 *   closed to make room (a client with a token sends its request at once and leaves the pool, an
 *   idle socket only ages). Node's headers timeout still ends an unauthenticated socket that sends
 *   nothing, so the pool is short-lived too;
 * - a connection whose request authenticates counts against its principal, who may hold
 *   `perClient` of them (a request past it gets 429 and its connection is closed); the operator
 *   and `admin` clients hold no share;
 * - the per-address cap still holds for other addresses than loopback (a remote host's sockets).
 * Its maps shrink as connections close: nothing is kept for a closed socket or an idle principal.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

export interface ConnectionAdmissionOptions {
  /** Unauthenticated connections at most, all addresses together; the oldest goes for a new one. */
  maxUnauthenticated: number;
  /** Authenticated connections at most per principal (not for those who hold no share). */
  perClient: number;
  /** Whether a principal holds no share (the operator, `admin` clients); read at each admission. */
  holdsNoShare: (principal: string) => boolean;
  logger: Pick<Logger, 'warn' | 'info'>;
}

export class ConnectionAdmission {
  readonly #options: ConnectionAdmissionOptions;
  /** Unauthenticated connections, oldest first. */
  readonly #pending = new Set<Socket>();
  /** The principal each admitted connection counts against. */
  readonly #owners = new WeakMap<Socket, string>();
  readonly #byPrincipal = new Map<string, number>();
  #evictions = 0;

  constructor(server: Server, options: ConnectionAdmissionOptions) {
    this.#options = options;
    server.on('connection', (socket: Socket) => this.#arrived(socket));
  }

  /** Unauthenticated connections open now. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Connections closed to make room in the unauthenticated pool so far. */
  get evictions(): number {
    return this.#evictions;
  }

  /**
   * A request on `socket` authenticated as `principal`: the connection leaves the unauthenticated
   * pool and counts against that principal. False when the principal already holds its share (the
   * caller answers 429 and closes it). A connection counts once, for its first principal.
   */
  admit(socket: Socket, principal: string): boolean {
    if (this.#owners.has(socket) || socket.destroyed) return true;
    const held = this.#byPrincipal.get(principal) ?? 0;
    if (held >= this.#options.perClient && !this.#options.holdsNoShare(principal)) {
      this.#options.logger.info({ client: principal, held, max: this.#options.perClient }, 'connection refused: the client holds its share of connections (daemon.maxConnectionsPerClient)');
      return false;
    }
    this.#pending.delete(socket);
    this.#owners.set(socket, principal);
    this.#byPrincipal.set(principal, held + 1);
    return true;
  }

  #arrived(socket: Socket): void {
    if (this.#pending.size >= this.#options.maxUnauthenticated) {
      const oldest = this.#pending.values().next().value!;
      this.#pending.delete(oldest);
      if (this.#evictions++ === 0) this.#options.logger.warn({ max: this.#options.maxUnauthenticated }, 'the pool of unauthenticated connections is full: its oldest are closed to admit new ones (daemon.maxUnauthenticatedConnections)');
      oldest.destroy();
    }
    this.#pending.add(socket);
    socket.once('close', () => {
      this.#pending.delete(socket);
      const owner = this.#owners.get(socket);
      if (owner === undefined) return;
      const left = (this.#byPrincipal.get(owner) ?? 1) - 1;
      if (left > 0) this.#byPrincipal.set(owner, left);
      else this.#byPrincipal.delete(owner);
    });
  }
}
