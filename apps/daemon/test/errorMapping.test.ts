/**
 * The daemon answers every error from the one code table of `@mcpool/protocol`: REST bodies take
 * their status from `HTTP_STATUS`, `/mcp` and the bridge their JSON-RPC code from `JSON_RPC_CODE`.
 * Checked per code on the mapping functions, then on a real daemon (fastify app on 127.0.0.1:0,
 * a real fixture server): REST error bodies, and `/mcp` answering a tool hidden by the server
 * config exactly like an unknown one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, HTTP_STATUS, JSON_RPC_CODE, JsonRpcCode, PoolError } from '@mcpool/protocol';
import type { ErrorBody, SessionInfo } from '@mcpool/client';
import { classifyError, errorBody } from '../src/http/errors.js';
import { BridgeErrorCode, errorResponse, toRpcError } from '@mcpool/gateway';
import { fixtureConfig, marker, textOf } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';

const codes = Object.values(ErrorCode);

describe('every code, through each surface’s mapping', () => {
  for (const code of codes) {
    it(`${code}: REST status ${HTTP_STATUS[code]}, JSON-RPC ${JSON_RPC_CODE[code]}`, () => {
      const body = errorBody(code, 'm');
      expect(body).toMatchObject({ statusCode: HTTP_STATUS[code], code, message: 'm' });
      expect(body.error.length).toBeGreaterThan(0);
      expect(classifyError(new PoolError(code, 'm'))).toEqual({ code, message: 'm', internal: HTTP_STATUS[code] >= 500 });
      const rpc = toRpcError(new PoolError(code, 'm'), 'tool x__y', { kind: 'tool', name: 'x__y' });
      expect(rpc.code).toBe(JSON_RPC_CODE[code]);
    });
  }

  it('an upstream error with its own code keeps it; one without falls back to the table', () => {
    const own = toRpcError(new PoolError(ErrorCode.UPSTREAM_ERROR, 'MCP error -32602: MCP error -32602: bad', { data: { mcpCode: -32602, mcpData: { a: 1 } } }), 'tool x');
    expect([own.code, own.message, own.data]).toEqual([-32602, 'bad', { a: 1 }]);
    expect(toRpcError(new PoolError(ErrorCode.UPSTREAM_ERROR, 'no code'), 'tool x').code).toBe(JsonRpcCode.INTERNAL_ERROR);
    // So does a downstream client's refusal of a server request.
    expect(toRpcError(new PoolError(ErrorCode.DOWNSTREAM_ERROR, 'declined', { data: { mcpCode: -1 } }), 'sampling').code).toBe(-1);
  });

  it('what is not a PoolError is our bug: MCPOOL_INTERNAL, 500 / -32603, its message kept out', () => {
    expect(classifyError(new Error('secret detail'))).toEqual({ code: ErrorCode.INTERNAL, message: 'internal error (see the daemon log)', internal: true });
    const rpc = toRpcError(new Error('secret detail'), 'tool x');
    expect([rpc.code, rpc.data]).toEqual([-32603, { code: ErrorCode.INTERNAL }]);
    expect(rpc.message).not.toContain('secret');
  });

  it('a hidden tool or prompt answers exactly as an unknown one, saying nothing of the filter', () => {
    const tool = toRpcError(new PoolError(ErrorCode.TOOL_NOT_ALLOWED, "tool 'add' of echo is not allowed for this session", { data: { serverName: 'echo', tool: 'add' } }), 'tool echo__add', { kind: 'tool', name: 'echo__add' });
    expect([tool.code, tool.message, tool.data]).toEqual([-32602, 'Unknown tool: echo__add', undefined]);
    const prompt = toRpcError(new PoolError(ErrorCode.TOOL_NOT_ALLOWED, 'x', { data: { serverName: 'echo', prompt: 'greet' } }), 'prompt greet');
    expect([prompt.code, prompt.message]).toEqual([-32602, 'Unknown prompt: greet']);
  });

  it('the bridge’s own errors take their JSON-RPC code from the table', () => {
    for (const code of Object.values(BridgeErrorCode)) {
      expect(errorResponse(7, { code, message: 'm' })).toEqual({ jsonrpc: '2.0', id: 7, error: { code: JSON_RPC_CODE[code], message: 'm', data: { code } } });
    }
    expect((errorResponse(1, { code: BridgeErrorCode.HTTP_ERROR, message: 'm', rpcCode: -32602, httpStatus: 400 }).error as { code: number }).code).toBe(-32602);
  });
});

const mark = marker('errmap');
let h: Harness;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {
        echo: fixtureConfig('echo.mjs', mark),
        // The same server, with a tool and a prompt hidden by its config (a session field: same process).
        hidden: fixtureConfig('echo.mjs', mark, { excludeTools: ['add', 'greet'] }),
      },
      daemon: { bodyLimitBytes: 4096 },
    },
    { marks: [mark] },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await h?.close();
});

describe('a real daemon’s REST error bodies', () => {
  it('status and body follow HTTP_STATUS for each kind of refusal', async () => {
    const { id } = (await h.request({ method: 'POST', url: '/sessions', payload: {} })).json<SessionInfo>();
    const answers = [
      await h.request({ method: 'GET', url: '/no/such/route' }),
      await h.request({ method: 'GET', url: '/workspace/mcp', token: null }),
      await h.request({ method: 'GET', url: '/healthz', headers: { host: 'evil.example.com' } }),
      await h.request({ method: 'POST', url: '/sessions', headers: { 'content-type': 'text/plain' }, payload: 'x' }),
      await h.request({ method: 'POST', url: '/sessions', headers: { 'content-type': 'application/json' }, payload: '{nope' }),
      await h.request({ method: 'POST', url: '/sessions', payload: { mcpServers: { x: { comand: 'node' } } } }),
      await h.request({ method: 'POST', url: '/sessions', payload: { pad: 'x'.repeat(8000) } }),
      await h.request({ method: 'DELETE', url: '/sessions/no-such-session' }),
      await h.request({ method: 'POST', url: `/sessions/${id}/tools/call`, payload: { server: 'hidden', name: 'add', arguments: { a: 1, b: 2 } } }),
    ];
    const seen = answers.map((answer) => {
      const body = answer.json<ErrorBody>();
      expect(body.statusCode).toBe(answer.statusCode);
      expect(HTTP_STATUS[body.code as ErrorCode], body.code).toBe(answer.statusCode);
      return body.code;
    });
    expect(seen).toEqual([
      ErrorCode.NOT_FOUND,
      ErrorCode.UNAUTHORIZED,
      ErrorCode.FORBIDDEN,
      ErrorCode.UNSUPPORTED_MEDIA_TYPE,
      ErrorCode.BAD_REQUEST,
      ErrorCode.CONFIG_INVALID,
      ErrorCode.PAYLOAD_TOO_LARGE,
      ErrorCode.NOT_FOUND,
      ErrorCode.TOOL_NOT_ALLOWED,
    ]);
  });
});

describe('/mcp: unknown and hidden look the same', () => {
  it('a tool or prompt hidden by the server config answers -32602 like an unknown one, naming only what was asked', async () => {
    const { client } = await connectClient(`${base}/mcp`, h.token);
    clients.push(client);
    // The tool exists and works where it is not hidden.
    expect(textOf(await client.callTool({ name: 'echo__add', arguments: { a: 1, b: 2 } }))).toBe('3');
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain('hidden__echo');
    expect(names).not.toContain('hidden__add');

    const failure = async (run: () => Promise<unknown>): Promise<{ code: number; message: string; data: unknown }> => {
      const error = await run().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(McpError);
      const { code, message, data } = error as McpError;
      return { code, message, data };
    };
    const hiddenTool = await failure(() => client.callTool({ name: 'hidden__add', arguments: { a: 1, b: 2 } }));
    const unknownTool = await failure(() => client.callTool({ name: 'hidden__nosuch', arguments: {} }));
    const unknownServer = await failure(() => client.callTool({ name: `nosuch${randomUUID().slice(0, 4)}__add`, arguments: {} }));
    for (const [answer, name] of [[hiddenTool, 'hidden__add'], [unknownTool, 'hidden__nosuch']] as const) {
      expect(answer).toEqual({ code: -32602, message: `MCP error -32602: Unknown tool: ${name}`, data: undefined });
    }
    expect(unknownServer.code).toBe(-32602);
    expect(JSON.stringify(hiddenTool)).not.toMatch(/allowed|exclude|hidden by|filter/i);

    const hiddenPrompt = await failure(() => client.getPrompt({ name: 'hidden__greet', arguments: { name: 'x' } }));
    const unknownPrompt = await failure(() => client.getPrompt({ name: 'hidden__nosuch', arguments: {} }));
    expect(hiddenPrompt).toEqual({ code: -32602, message: 'MCP error -32602: Unknown prompt: hidden__greet', data: undefined });
    expect(unknownPrompt).toEqual({ code: -32602, message: 'MCP error -32602: Unknown prompt: hidden__nosuch', data: undefined });
  });
});
