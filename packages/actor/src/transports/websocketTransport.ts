/**
 * Our websocket client transport, for upstream servers configured with `type: 'websocket'` or a
 * ws:// / wss:// url. We own it instead of using the SDK's `WebSocketClientTransport` because that
 * one needs a global `WebSocket` (undefined on Node 20), takes a URL only (no headers, so no bearer
 * auth) and is gone from the v2 SDK; websocket is not a spec transport, so it is a custom transport
 * we define: the `ws` package, subprotocol `mcp`, one JSON-RPC
 * message per text frame, the configured headers sent on the upgrade request.
 *
 * This file knows frames and socket lifecycle only; MCP semantics live in the actor's client.
 */
import WebSocket from 'ws';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { TransportLostError, parseJsonRpcLine } from './processGroupStdioTransport.js';
import type { JsonRpcMessage, UpstreamTransport } from './upstreamTransport.js';

export interface WebSocketTransportOptions {
  /** ws:// or wss:// endpoint. */
  url: string;
  /** Sent on the HTTP upgrade request (e.g. `Authorization`). */
  headers?: Record<string, string> | undefined;
  /** Offered subprotocols; the server must pick one. `[]` offers none. @default ['mcp'] */
  protocols?: string[] | undefined;
  /** Budget of the opening handshake (TCP + TLS + upgrade), in ms. @default 30000 */
  handshakeTimeoutMs?: number | undefined;
}

/** The connection could not be opened: HTTP refusal of the upgrade, or a network error. */
export class WebSocketConnectError extends Error {
  override name = 'WebSocketConnectError';
  /** HTTP status of a refused upgrade (401, 403, 404, …). */
  readonly status: number | undefined;
  /** The HTTP status when refused, else the network error's code (ECONNREFUSED, …), as other transports report it. */
  readonly code: number | string | undefined;
  constructor(message: string, details: { status?: number | undefined; code?: string | undefined; cause?: unknown }) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.code = details.status ?? details.code;
  }
}

/** How long `close()` waits for the close handshake before destroying the socket. */
const CLOSE_GRACE_MS = 1000;
const DEFAULT_HANDSHAKE_TIMEOUT_MS = 30_000;

export class WebSocketTransport implements UpstreamTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JsonRpcMessage) => void;

  readonly #options: WebSocketTransportOptions;
  /** The url without userinfo, query or fragment: safe for messages and logs. */
  readonly #displayUrl: string;
  #socket: WebSocket | undefined;
  #opened = false;
  #closeRequested = false;
  #closing: Promise<void> | undefined;
  #closeNotified = false;
  #closeInfo: { code: number; reason: string } | undefined;
  #socketClosed: Promise<void> | undefined;

  constructor(options: WebSocketTransportOptions) {
    this.#options = options;
    this.#displayUrl = displayUrl(options.url);
  }

  /** The endpoint without credentials, query or fragment. */
  get url(): string {
    return this.#displayUrl;
  }

  /** Close code and reason once the socket has closed (1006: no close frame, i.e. the connection dropped). */
  get closeInfo(): { code: number; reason: string } | undefined {
    return this.#closeInfo;
  }

  async start(): Promise<void> {
    if (this.#socket !== undefined || this.#closeRequested) {
      throw new Error('WebSocketTransport already started or closed');
    }
    const { url, headers, protocols = ['mcp'], handshakeTimeoutMs = DEFAULT_HANDSHAKE_TIMEOUT_MS } = this.#options;
    let socket: WebSocket;
    try {
      socket = new WebSocket(url, protocols, {
        headers: headers ?? {},
        handshakeTimeout: handshakeTimeoutMs,
        // Credentials in `headers` must not follow a redirect to another host.
        followRedirects: false,
        // Each message in its own macrotask: the SDK runs notification handlers a microtask late
        // but settles responses at once, so a progress notification arriving in the same TCP chunk
        // as its response would otherwise find its handler gone.
        allowSynchronousEvents: false,
      });
    } catch (error) {
      // Invalid URL or scheme: thrown synchronously by ws.
      this.#notifyClose();
      throw new WebSocketConnectError(`websocket ${this.#displayUrl}: ${(error as Error).message}`, { cause: error });
    }
    this.#socket = socket;
    this.#socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));

    let refusedStatus: { status: number; statusText: string } | undefined;
    socket.on('unexpected-response', (_request: ClientRequest, response: IncomingMessage) => {
      refusedStatus = { status: response.statusCode ?? 0, statusText: response.statusMessage ?? '' };
      // With a listener, ws leaves aborting the request to us; terminate() aborts it and ends in
      // 'error' + 'close'.
      socket.terminate();
    });

    socket.on('message', (data, isBinary) => this.#onFrame(data, isBinary));
    socket.on('close', (code, reason) => {
      this.#closeInfo = { code, reason: reason.toString('utf8') };
      if (this.#opened && !this.#closeRequested) {
        const detail = code === 1006 ? 'the connection dropped without a close frame' : `close code ${code}${reason.length > 0 ? `: ${reason.toString('utf8')}` : ''}`;
        this.onerror?.(new TransportLostError(`websocket ${this.#displayUrl} closed by the server (${detail})`));
      }
      this.#notifyClose();
    });

    await new Promise<void>((resolve, reject) => {
      const onOpen = (): void => {
        socket.off('error', onStartError);
        socket.on('error', (error) => this.onerror?.(error));
        this.#opened = true;
        resolve();
      };
      const onStartError = (error: Error): void => {
        socket.off('open', onOpen);
        // Errors after this one (there should be none) still reach onerror.
        socket.on('error', (later) => this.onerror?.(later));
        reject(this.#startError(error, refusedStatus));
      };
      socket.once('open', onOpen);
      socket.once('error', onStartError);
    });
  }

  #startError(error: Error, refused: { status: number; statusText: string } | undefined): Error {
    if (refused !== undefined) {
      const text = refused.statusText ? ` ${refused.statusText}` : '';
      return new WebSocketConnectError(`websocket upgrade to ${this.#displayUrl} refused with HTTP ${refused.status}${text}`, {
        status: refused.status,
        cause: error,
      });
    }
    if (this.#closeRequested) {
      return new WebSocketConnectError(`websocket ${this.#displayUrl}: closed before the connection was established`, { cause: error });
    }
    // ECONNREFUSED, ENOTFOUND, a TLS failure, "Opening handshake has timed out", "Server sent no subprotocol", …
    const code = (error as NodeJS.ErrnoException).code;
    return new WebSocketConnectError(`websocket connection to ${this.#displayUrl} failed: ${error.message}`, {
      code: typeof code === 'string' ? code : undefined,
      cause: error,
    });
  }

  #onFrame(data: WebSocket.RawData, isBinary: boolean): void {
    if (isBinary) {
      this.onerror?.(new Error('websocket: ignored a binary frame (MCP messages are text frames)'));
      return;
    }
    const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data)).toString('utf8');
    let message: JsonRpcMessage;
    try {
      message = parseJsonRpcLine(text);
    } catch (error) {
      // Not JSON, or not JSON-RPC: report it and go on with the next frame, as the SDK's transports do.
      const reason = error instanceof SyntaxError ? 'not JSON' : 'not a JSON-RPC message';
      this.onerror?.(new Error(`websocket: skipped a frame that is ${reason}: ${truncate(text, 200)}`, { cause: error }));
      return;
    }
    this.onmessage?.(message);
  }

  async send(message: JsonRpcMessage): Promise<void> {
    const socket = this.#socket;
    if (socket === undefined || !this.#opened) throw new TransportLostError(`websocket ${this.#displayUrl} is not connected`);
    if (this.#closeRequested || socket.readyState !== WebSocket.OPEN) {
      throw new TransportLostError(`websocket ${this.#displayUrl} is closed`);
    }
    const frame = JSON.stringify(message);
    await new Promise<void>((resolve, reject) => {
      socket.send(frame, (error) => {
        if (error) reject(new TransportLostError(`writing to websocket ${this.#displayUrl} failed: ${error.message}`, error));
        else resolve();
      });
    });
  }

  /**
   * Sends a close frame and resolves once the socket has closed; destroys it if the server has
   * not completed the close handshake within 1 s. Idempotent; `onclose` fires once.
   */
  close(): Promise<void> {
    this.#closeRequested = true;
    this.#closing ??= this.#shutdown().finally(() => this.#notifyClose());
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    const socket = this.#socket;
    if (socket === undefined || socket.readyState === WebSocket.CLOSED) return;
    if (socket.readyState === WebSocket.CONNECTING) {
      // Aborts the handshake; start() rejects.
      socket.terminate();
    } else if (socket.readyState === WebSocket.OPEN) {
      socket.close(1000);
    }
    let timer: NodeJS.Timeout | undefined;
    const closedInTime = await Promise.race([
      this.#socketClosed!.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_GRACE_MS))),
    ]);
    clearTimeout(timer);
    if (closedInTime) return;
    socket.terminate();
    await this.#socketClosed;
  }

  #notifyClose(): void {
    if (this.#closeNotified) return;
    // Reported once, to the SDK's Protocol, which rejects its pending requests on it.
    this.#closeNotified = true;
    this.onclose?.();
  }
}

function displayUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '(invalid url)';
  }
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
