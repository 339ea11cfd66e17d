/**
 * `McpoolClient` over an injected fetch: headers, bodies, the error mapping, `ready()` on 503,
 * and the event stream's reconnect with Last-Event-ID (real streams, no network).
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode, McpoolClient, McpoolHttpError, McpoolRequestError, isRestartEntries, type DaemonEvent } from '@mcpool/client';
import { ErrorCode as ProtocolErrorCode } from '@mcpool/protocol';

interface Call {
  url: string;
  init: RequestInit;
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

function fakeFetch(answer: (call: Call, index: number) => Response | Promise<Response>): { fetch: typeof fetch; calls: Call[] } {
  const calls: Call[] = [];
  const impl = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const call = { url: input instanceof Request ? input.url : String(input), init };
    calls.push(call);
    return answer(call, calls.length - 1);
  };
  return { fetch: impl, calls };
}

function header(call: Call, name: string): string | undefined {
  return (call.init.headers as Record<string, string>)[name];
}

describe('McpoolClient requests', () => {
  it('sends the bearer token and JSON, and trims a trailing slash of the base URL', async () => {
    const { fetch, calls } = fakeFetch(() => json(201, { id: 's1', clientId: 'operator', createdAt: 'now', servers: [] }));
    const client = new McpoolClient({ baseUrl: 'http://127.0.0.1:9/', token: 't0k3n', fetch });
    const session = await client.createSession({ servers: ['echo'] });
    expect(session.id).toBe('s1');
    expect(calls[0]!.url).toBe('http://127.0.0.1:9/sessions');
    expect(calls[0]!.init.method).toBe('POST');
    expect(header(calls[0]!, 'authorization')).toBe('Bearer t0k3n');
    expect(header(calls[0]!, 'content-type')).toBe('application/json');
    expect(JSON.parse(calls[0]!.init.body as string)).toEqual({ servers: ['echo'] });
  });

  it('encodes path segments and the entryIndex query; sends no body (nor content-type) without one', async () => {
    const { fetch, calls } = fakeFetch(() => json(200, { entries: [{ entryIndex: 1, restarted: true, durationMs: 3 }] }));
    const client = new McpoolClient({ token: 't', fetch });
    const response = await client.restartServer('a b/c', { entryIndex: 1 });
    expect(calls[0]!.url).toBe('http://127.0.0.1:7070/workspace/mcp/a%20b%2Fc/restart?entryIndex=1');
    expect(calls[0]!.init.body).toBeUndefined();
    expect(header(calls[0]!, 'content-type')).toBeUndefined();
    expect(isRestartEntries(response)).toBe(true);
    expect(isRestartEntries({ restarted: true, durationMs: 1 })).toBe(false);
  });

  it('reads a server’s stderr tail and asks for a dashboard sign-in code', async () => {
    const { fetch, calls } = fakeFetch((call) => (call.url.endsWith('/ui/login-code') ? json(200, { code: 'c0de', expiresInMs: 120_000 }) : json(200, { server: 'a b', entries: [{ entryIndex: 0, lines: ['hi'] }] })));
    const client = new McpoolClient({ token: 't', fetch });
    expect(await client.serverStderr('a b', { lines: 20 })).toEqual({ server: 'a b', entries: [{ entryIndex: 0, lines: ['hi'] }] });
    expect(calls[0]!.url).toBe('http://127.0.0.1:7070/workspace/mcp/a%20b/stderr?lines=20');
    expect(calls[0]!.init.method).toBe('GET');
    expect(await client.dashboardCode()).toEqual({ code: 'c0de', expiresInMs: 120_000 });
    expect(calls[1]!.url).toBe('http://127.0.0.1:7070/ui/login-code');
    expect(calls[1]!.init.method).toBe('POST');
  });

  it('turns an error answer into McpoolHttpError with the daemon’s code', async () => {
    const { fetch } = fakeFetch(() => json(404, { statusCode: 404, code: 'MCPOOL_NOT_FOUND', error: 'Not Found', message: 'no session "x"' }));
    const error = await new McpoolClient({ token: 't', fetch }).deleteSession('x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpoolHttpError);
    expect(error).toMatchObject({ statusCode: 404, code: 'MCPOOL_NOT_FOUND', error: 'Not Found', message: 'no session "x"' });
  });

  it('copes with an error body that is not the daemon’s', async () => {
    const { fetch } = fakeFetch(() => new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' }));
    const error = await new McpoolClient({ token: 't', fetch }).health().catch((e: unknown) => e);
    expect(error).toMatchObject({ statusCode: 502, code: 'MCPOOL_HTTP_ERROR' });
  });

  it('reports an unreachable daemon, a timeout and an abort as McpoolRequestError', async () => {
    const refused = fakeFetch(() => Promise.reject(new TypeError('fetch failed')));
    await expect(new McpoolClient({ token: 't', fetch: refused.fetch }).health()).rejects.toMatchObject({ name: 'McpoolRequestError', code: 'MCPOOL_UNREACHABLE' });

    const hanging = fakeFetch(
      (call) =>
        new Promise<Response>((_resolve, reject) => {
          call.init.signal!.addEventListener('abort', () => reject(call.init.signal!.reason as Error));
        }),
    );
    await expect(new McpoolClient({ token: 't', fetch: hanging.fetch, timeoutMs: 20 }).health()).rejects.toMatchObject({ code: 'MCPOOL_REQUEST_TIMEOUT' });
    const controller = new AbortController();
    const pending = new McpoolClient({ token: 't', fetch: hanging.fetch }).health({ signal: controller.signal });
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpoolRequestError);
    expect(error).toMatchObject({ code: 'MCPOOL_REQUEST_ABORTED' });
  });

  it('its codes are the one table’s: the answer that is not JSON is MCPOOL_BAD_RESPONSE, an McpoolRequestError', async () => {
    expect(ErrorCode).toBe(ProtocolErrorCode);
    const { fetch } = fakeFetch(() => new Response('not json', { status: 200, headers: { 'content-type': 'application/json' } }));
    const error = await new McpoolClient({ token: 't', fetch }).health().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpoolRequestError);
    expect(error).toMatchObject({ code: ErrorCode.BAD_RESPONSE });
    for (const code of [ErrorCode.UNREACHABLE, ErrorCode.REQUEST_TIMEOUT, ErrorCode.REQUEST_ABORTED, ErrorCode.BAD_RESPONSE, ErrorCode.HTTP_ERROR]) expect(Object.values(ProtocolErrorCode)).toContain(code);
  });

  it('ready() resolves on 503 with the readiness body', async () => {
    const { fetch } = fakeFetch(() => json(503, { statusCode: 503, code: 'MCPOOL_NOT_READY', error: 'Service Unavailable', message: '1/2', ready: false, servers: { total: 2, ready: 1, failed: 0 } }));
    const ready = await new McpoolClient({ token: 't', fetch }).ready();
    expect(ready).toMatchObject({ ready: false, servers: { total: 2, ready: 1, failed: 0 } });
  });

  it('validates its options eagerly', () => {
    expect(() => new McpoolClient({ token: '' })).toThrow(/options.token/);
    expect(() => new McpoolClient({ token: 't', baseUrl: 'not a url' })).toThrow(/options.baseUrl/);
    expect(() => new McpoolClient({ token: 't', timeoutMs: 0 })).toThrow(/options.timeoutMs/);
  });
});

/** A response whose body is the given SSE text, then closes (or stays open when `hold`). */
function sse(text: string, hold?: AbortSignal): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      if (hold === undefined) controller.close();
      else hold.addEventListener('abort', () => controller.error(new Error('aborted')));
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

const frame = (id: string, type: string, extra = ''): string => `id: ${id}\nevent: ${type}\ndata: {"type":"${type}","at":"2026-01-01T00:00:00.000Z"${extra}}\n\n`;

describe('McpoolClient.events', () => {
  it('yields typed events and reconnects with Last-Event-ID after the stream drops', async () => {
    const { fetch, calls } = fakeFetch((call, index) => {
      if (index === 0) return sse(`retry: 1\n: connected\n\n${frame('e-1', 'session_created', ',"sessionId":"s1","clientId":"operator"')}${frame('e-2', 'session_closed', ',"sessionId":"s1"')}`);
      return sse(frame('e-3', 'shutdown'), call.init.signal!);
    });
    const controller = new AbortController();
    const stream = new McpoolClient({ token: 't', fetch }).events({ signal: controller.signal });
    const seen: DaemonEvent[] = [];
    for await (const event of stream) {
      seen.push(event);
      if (seen.length === 3) controller.abort();
    }
    expect(seen.map((e) => [e.id, e.data.type])).toEqual([
      ['e-1', 'session_created'],
      ['e-2', 'session_closed'],
      ['e-3', 'shutdown'],
    ]);
    expect(seen[0]!.at).toBe('2026-01-01T00:00:00.000Z');
    expect(seen[0]!.data).toEqual({ type: 'session_created', sessionId: 's1', clientId: 'operator' });
    expect(header(calls[0]!, 'last-event-id')).toBeUndefined();
    expect(header(calls[1]!, 'last-event-id')).toBe('e-2');
    expect(header(calls[1]!, 'accept')).toBe('text/event-stream');
    expect(stream.lastEventId).toBe('e-3');
  });

  it('starts from a given lastEventId, and retries a 5xx answer', async () => {
    const { fetch, calls } = fakeFetch((call, index) =>
      index === 0 ? json(503, { statusCode: 503, code: 'MCPOOL_SHUTTING_DOWN', error: 'Service Unavailable', message: 'bye' }) : sse(frame('e-9', 'shutdown'), call.init.signal!),
    );
    const stream = new McpoolClient({ token: 't', fetch }).events({ lastEventId: 'e-8', retryMs: 1 });
    for await (const event of stream) {
      expect(event.id).toBe('e-9');
      stream.close();
    }
    expect(calls.map((call) => header(call, 'last-event-id'))).toEqual(['e-8', 'e-8']);
  });

  it('ends with the error on a 4xx answer, without retrying', async () => {
    const { fetch, calls } = fakeFetch(() => json(401, { statusCode: 401, code: 'MCPOOL_UNAUTHORIZED', error: 'Unauthorized', message: 'no' }));
    const iterate = async (): Promise<void> => {
      for await (const _event of new McpoolClient({ token: 't', fetch }).events({ retryMs: 1 })) {
        // nothing arrives
      }
    };
    await expect(iterate()).rejects.toMatchObject({ name: 'McpoolHttpError', code: 'MCPOOL_UNAUTHORIZED' });
    expect(calls).toHaveLength(1);
  });

  it('gives up after maxRetries failed connections in a row', async () => {
    const { fetch, calls } = fakeFetch(() => Promise.reject(new TypeError('fetch failed')));
    const iterate = async (): Promise<void> => {
      for await (const _event of new McpoolClient({ token: 't', fetch }).events({ retryMs: 1, maxRetries: 2 })) {
        // nothing arrives
      }
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'MCPOOL_UNREACHABLE' });
    expect(calls).toHaveLength(3);
  });

  it('does not reconnect when reconnect is false: the iteration just ends', async () => {
    const { fetch, calls } = fakeFetch(() => sse(frame('e-1', 'shutdown')));
    const seen: string[] = [];
    for await (const event of new McpoolClient({ token: 't', fetch }).events({ reconnect: false })) seen.push(event.data.type);
    expect(seen).toEqual(['shutdown']);
    expect(calls).toHaveLength(1);
  });
});
