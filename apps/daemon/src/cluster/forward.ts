/**
 * Forwarding a request to the replica that owns its session: the request goes on as it came
 * (method, path, headers — the client's own credential, which the owner checks again — and the
 * body, streamed, never parsed here), and the owner's answer comes back the same way, a stream
 * included (GET, or a POST answered with SSE), until either side ends it; both carry
 * `x-mcpool-forwarded-by` naming the replica that relayed them. A keep-alive agent
 * keeps the connections to peers open, so a forwarded call costs one local hop, not a handshake.
 * An owner that cannot be reached (gone, or not answering the connection) is a session that no
 * longer exists: 404, so the client opens a new one.
 */
import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { FORWARDED_BY } from './cluster.js';

/** Hop-by-hop headers (RFC 9110 §7.6.1): they belong to one connection, never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);

export interface ForwarderOptions {
  /** This replica's id (the forwarded request says who sent it). */
  replicaId: string;
  /** The answer when the owner cannot be reached: the caller writes its 404. */
  ownerGone: (res: ServerResponse) => void;
  /** How long connecting to the owner may take. @default 5000 */
  connectTimeoutMs?: number;
}

export class Forwarder {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 1000 });
  readonly #options: ForwarderOptions;

  constructor(options: ForwarderOptions) {
    this.#options = options;
  }

  /**
   * Sends `req` on to `base` and writes the owner's answer on `res`. Resolves when the answer is over.
   * @param sent.body the request's body as it came, when it was read already (a route that needed it)
   * @param sent.ownerGone the answer when the owner cannot be reached, instead of the forwarder's
   */
  forward(req: IncomingMessage, res: ServerResponse, base: string, sent: { body?: string; ownerGone?: (res: ServerResponse) => void } = {}): Promise<void> {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    headers[FORWARDED_BY] = this.#options.replicaId;
    if (sent.body !== undefined) headers['content-length'] = String(Buffer.byteLength(sent.body));
    const ownerGone = sent.ownerGone ?? this.#options.ownerGone;
    return new Promise<void>((resolve) => {
      let answered = false;
      const outgoing = httpRequest(`${base}${req.url ?? '/'}`, { method: req.method, headers, agent: this.#agent });
      const connectTimer = setTimeout(() => outgoing.destroy(new Error('connect timeout')), this.#options.connectTimeoutMs ?? 5000);
      connectTimer.unref();
      outgoing.once('socket', (socket) => {
        if (!socket.connecting) clearTimeout(connectTimer);
        else socket.once('connect', () => clearTimeout(connectTimer));
      });
      outgoing.once('response', (answer: IncomingMessage) => {
        answered = true;
        clearTimeout(connectTimer);
        const back: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
        // The answer names its owner (its own header) and, in the same header as the request, the replica that relayed it.
        back[FORWARDED_BY] = this.#options.replicaId;
        res.writeHead(answer.statusCode ?? 502, back);
        res.flushHeaders();
        answer.pipe(res);
        answer.once('end', () => resolve());
        answer.once('error', () => res.destroy());
        answer.once('close', () => resolve());
      });
      outgoing.once('error', () => {
        clearTimeout(connectTimer);
        if (!answered && !res.headersSent) ownerGone(res);
        else res.destroy();
        resolve();
      });
      // The client went away: so does the forwarded request (and the stream it holds on the owner).
      res.once('close', () => {
        if (!res.writableFinished) outgoing.destroy();
      });
      if (sent.body === undefined) req.pipe(outgoing);
      else outgoing.end(sent.body);
    });
  }

  /** Closes the idle connections to peers. */
  close(): void {
    this.#agent.destroy();
  }
}
