/**
 * The SDK's Streamable HTTP and legacy HTTP+SSE client transports behind the actor's
 * {@link UpstreamTransport} contract, for remote servers until mcpool's own HTTP transports
 * replace them. Imported lazily (only a remote config loads the SDK into an actor thread).
 * An HTTP refusal becomes an {@link UpstreamHttpError} carrying the status and body.
 */
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { UpstreamHttpError, type JsonRpcMessage, type ProtocolEra, type UpstreamTransport } from './upstreamTransport.js';

type SdkTransport = Transport & { setProtocolVersion?: (version: string) => void; terminateSession?: () => Promise<void>; sessionId?: string | undefined };

class SdkTransportAdapter implements UpstreamTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly #inner: SdkTransport;

  constructor(inner: SdkTransport) {
    this.#inner = inner;
    inner.onmessage = (message) => this.onmessage?.(message as JsonRpcMessage);
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  async send(message: JsonRpcMessage): Promise<void> {
    try {
      await this.#inner.send(message as JSONRPCMessage);
    } catch (error) {
      if (error instanceof StreamableHTTPError && typeof error.code === 'number' && error.code >= 400) {
        // The SDK puts the body after this prefix.
        const body = error.message.replace(/^Streamable HTTP error: Error POSTing to endpoint: /, '');
        throw new UpstreamHttpError(error.message, error.code, body.slice(0, 4096));
      }
      throw error;
    }
  }

  setProtocol(_era: ProtocolEra, protocolVersion: string): void {
    this.#inner.setProtocolVersion?.(protocolVersion);
  }

  async close(): Promise<void> {
    // DELETE the remote session so single-session servers accept the next initialize.
    if (this.#inner.sessionId !== undefined) await this.#inner.terminateSession?.().catch(() => undefined);
    await this.#inner.close().catch(() => undefined);
  }
}

export async function sdkHttpTransport(url: URL, headers: Record<string, string> | undefined): Promise<UpstreamTransport> {
  return new SdkTransportAdapter(new StreamableHTTPClientTransport(url, { requestInit: headers ? { headers } : {} }));
}

export async function sdkSseTransport(url: URL, headers: Record<string, string> | undefined): Promise<UpstreamTransport> {
  return new SdkTransportAdapter(
    new SSEClientTransport(url, { requestInit: headers ? { headers } : {}, eventSourceInit: headers ? { fetch: withHeaders(headers) } : {} }),
  );
}

function withHeaders(headers: Record<string, string>): typeof fetch {
  return (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [key, value] of Object.entries(headers)) merged.set(key, value);
    return fetch(input, { ...init, headers: merged });
  };
}
