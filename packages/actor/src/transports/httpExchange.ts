/**
 * One HTTP request and its answer, as the HTTP transports need it: a status, header lookup and a
 * body read chunk by chunk (SSE bodies stay open for as long as the server streams). Two ways to
 * carry it:
 *
 * - `nodeHttpExchange` (the default): `node:http` / `node:https` with one keep-alive agent per
 *   transport, destroyed by `close()`, so a closed transport leaves no socket behind. It is the
 *   default because it is what keeps an actor thread small: in a worker thread the first global
 *   `fetch` loads Node's bundled undici and costs about 6–12 MB of RSS, `node:http` about 1–2 MB
 *   (measured with 50 requests per worker, see docs/decisions.md).
 * - `fetchExchange`: a caller-supplied `fetch` (tests, proxies, custom TLS). Its idle keep-alive
 *   sockets belong to that fetch's dispatcher and close on its schedule, not ours.
 *
 * Redirects are never followed on either path: configured headers (credentials) must not reach
 * another origin, so a 3xx is an answer like any other non-2xx.
 */
import type { Agent as HttpAgent, IncomingMessage, RequestOptions } from 'node:http';
import { UpstreamNetworkError } from './upstreamTransport.js';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: URL;
  headers: Record<string, string>;
  body?: string | undefined;
  signal: AbortSignal;
}

export interface HttpAnswer {
  status: number;
  /** A response header (case-insensitive); repeated headers are joined with `, `. */
  header(name: string): string | undefined;
  /** The body as it arrives. Iterating it after the request's signal aborted throws. */
  body: AsyncIterable<Uint8Array>;
  /** Drop the body unread and free the connection for reuse (or close it). */
  discard(): void;
}

export interface HttpExchange {
  /** Resolves when the response head has arrived; rejects on a network failure or an abort. */
  request(request: HttpRequest): Promise<HttpAnswer>;
  /** Closes every connection this exchange opened. */
  close(): void;
}

/** A network failure: the request never got an HTTP answer. `cause` is the underlying error. */
export function networkError(request: HttpRequest, cause: unknown): UpstreamNetworkError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? (cause as { cause?: NodeJS.ErrnoException } | undefined)?.cause?.code;
  const detail = typeof code === 'string' ? code : cause instanceof Error ? cause.message : String(cause);
  return new UpstreamNetworkError(`${request.method} ${displayUrl(request.url)} failed: ${detail}`, { cause });
}

/** The url without userinfo, query or fragment: safe for messages and logs. */
/** What both HTTP transports keep of their options: the checked URL, how to name it, its headers. */
export interface RemoteTarget {
  url: URL;
  /** The URL without credentials or query, for messages. */
  display: string;
  /** The configured headers, names lower-cased (HTTP names are case-insensitive). */
  headers: Record<string, string>;
}

/** @throws TypeError unless `url` is an http: or https: URL object. */
export function remoteTarget(url: unknown, headers: Record<string, string> | undefined): RemoteTarget {
  if (!(url instanceof URL)) throw new TypeError('options.url must be a URL');
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('options.url must be an http: or https: URL');
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) lower[name.toLowerCase()] = value;
  return { url, display: displayUrl(url), headers: lower };
}

export function displayUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** `node:http` (or `node:https` for an https: url) with a keep-alive agent of its own. */
export async function nodeHttpExchange(url: URL): Promise<HttpExchange> {
  // node:https pulls in TLS; load it only for upstreams that need it.
  const module = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const agent: HttpAgent = new module.Agent({ keepAlive: true });
  const requestFn = module.request as (url: URL, options: RequestOptions, callback: (res: IncomingMessage) => void) => import('node:http').ClientRequest;
  let closed = false;
  return {
    request(request) {
      return new Promise<HttpAnswer>((resolve, reject) => {
        if (closed) {
          reject(networkError(request, new Error('the transport is closed')));
          return;
        }
        if (request.signal.aborted) {
          reject(request.signal.reason as Error);
          return;
        }
        const headers: Record<string, string> = { ...request.headers };
        if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
        let response: IncomingMessage | undefined;
        // The signal is handled here, not passed to http.request: aborting there after the body
        // has ended destroys a socket already back in the agent's pool, with nobody listening
        // for its 'error'.
        const onAbort = (): void => {
          if (response?.complete) return;
          req.destroy(request.signal.reason instanceof Error ? request.signal.reason : new Error('aborted'));
        };
        const req = requestFn(request.url, { method: request.method, headers, agent }, (res) => {
          response = res;
          resolve({
            status: res.statusCode ?? 0,
            header(name) {
              const value = res.headers[name.toLowerCase()];
              return Array.isArray(value) ? value.join(', ') : value;
            },
            body: res,
            discard() {
              // Reading to the end returns the socket to the agent; a long body is not worth it.
              if (!res.complete) res.destroy();
            },
          });
        });
        request.signal.addEventListener('abort', onAbort, { once: true });
        req.once('close', () => request.signal.removeEventListener('abort', onAbort));
        // `on`, not `once`: a second 'error' without a listener would throw. After the response
        // head, errors also surface through the body's iterator.
        req.on('error', (error) => {
          reject(request.signal.aborted ? (request.signal.reason as Error) : networkError(request, error));
        });
        req.end(request.body);
      });
    },
    close() {
      closed = true;
      agent.destroy();
    },
  };
}

/** A caller-supplied `fetch`, with `requestInit` merged under what the transport sets. */
export function fetchExchange(fetchFn: typeof fetch, requestInit: RequestInit | undefined): HttpExchange {
  return {
    async request(request) {
      let response: Response;
      try {
        response = await fetchFn(request.url, {
          ...requestInit,
          method: request.method,
          headers: { ...headersOf(requestInit?.headers), ...request.headers },
          body: request.body ?? null,
          signal: request.signal,
          redirect: 'manual',
        });
      } catch (error) {
        throw request.signal.aborted ? request.signal.reason : networkError(request, error);
      }
      const body = response.body;
      return {
        status: response.status,
        header: (name) => response.headers.get(name) ?? undefined,
        body: body ?? emptyBody(),
        discard() {
          body?.cancel().catch(() => {});
        },
      };
    },
    close() {
      // The dispatcher belongs to whoever supplied `fetch`.
    },
  };
}

function headersOf(init: RequestInit["headers"]): Record<string, string> {
  if (init === undefined) return {};
  return Object.fromEntries(new Headers(init).entries());
}

async function* emptyBody(): AsyncIterable<Uint8Array> {}
