/**
 * Fair shares between tenants of one daemon: no client can take what the others, and the operator,
 * need. Real daemons, real servers, principals that are client tokens.
 * - Live servers: one client opening 64 `/mcp` sessions on an unpooled http server starts at most
 *   its share (`maxActorsPerClient`, 16) of `maxActors` (64); a new principal and the operator are
 *   still served, with their own entries.
 * - `/mcp` sessions: four tokens at their shares leave the operator its headroom of the daemon-wide
 *   cap (an eighth).
 * - Dashboard sign-ins: a read token minting codes and sessions evicts only its own, never the
 *   operator's.
 * - Connections: 256 idle sockets without a token (reopened as they close) leave a client with a
 *   token answered every time; past its share of connections a client gets 429.
 */
import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, HTTP_STATUS } from '@mcpool/protocol';
import { startHttpModernServer, type HttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { ACCEPT_BOTH, connectClient, initializeBody, messagesOf, openRawSession, raw } from './gatewayHelpers.js';

const mark = marker('shares');
const clients: Client[] = [];

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
});

describe('live servers: a share of maxActors per client, headroom for the operator', () => {
  const ALICE = `alice-${randomUUID()}`;
  const BOB = `bob-${randomUUID()}`;
  let h: Harness;
  let base: string;
  let remote: HttpModernServer;

  beforeAll(async () => {
    remote = await startHttpModernServer();
    h = await harness(
      {
        mcpServers: {
          // http is not pooled: every /mcp session that uses it gets an entry (a thread) of its own.
          remote: { type: 'http', url: remote.url },
          echo: fixtureConfig('echo.mjs', mark, { sharing: 'per-principal' }),
        },
        daemon: {
          clients: [
            { id: 'alice', tokenEnv: 'SH_ALICE', rights: ['write'] },
            { id: 'bob', tokenEnv: 'SH_BOB', rights: ['write'] },
          ],
          // Not what is tested here: room for alice's 64 sessions.
          mcpMaxSessionsPerClient: 100,
        },
      },
      { env: { SH_ALICE: ALICE, SH_BOB: BOB }, marks: [mark] },
    );
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await remote?.close();
  });

  it('64 unpooled sessions of one client start its 16; a new principal and the operator still get every server', async () => {
    const settings = h.daemon.settings;
    expect([settings.maxActors, settings.maxActorsPerClient]).toEqual([64, 16]);
    // 1. alice opens 64 sessions on the unpooled server, one after the other, and calls it in each
    //    (servers start on first use: the call starts the session's entry): her 16 start, the
    //    others' calls are refused with her share named. Her count is read from the refusals: the
    //    pool's entry total also moves with the entry the daemon started to learn the server.
    const answers: string[] = [];
    const refusals: string[] = [];
    for (let i = 0; i < 64; i++) {
      const id = await openRawSession(base, '/mcp/remote', ALICE);
      const call = await raw(base, {
        path: '/mcp/remote',
        headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': id, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION },
        body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'started' } } },
      });
      const [answer] = messagesOf(call) as { result?: unknown; error?: { message: string; data?: { code?: string } } }[];
      if (answer?.result !== undefined) answers.push('ok');
      else {
        answers.push(String(answer?.error?.data?.code));
        refusals.push(String(answer?.error?.message));
      }
    }
    expect(answers.filter((answer) => answer === 'ok'), answers.join(' ')).toHaveLength(16);
    expect(answers.filter((answer) => answer === ErrorCode.CLIENT_LIMIT_REACHED)).toHaveLength(48);
    expect(new Set(refusals)).toEqual(new Set([expect.stringContaining('alice already has 16 live servers started for it, its share of the actor threads (16)')]));

    // 2. bob, a principal new to the daemon, gets his own echo entry and a remote entry: every tool, and calls answer.
    for (const token of [BOB, h.token]) {
      const { client } = await connectClient(`${base}/mcp`, token);
      clients.push(client);
      // A server not ready within the join wait joins later (list_changed): poll the list.
      await expect.poll(async () => (await client.listTools()).tools.map((tool) => tool.name), { timeout: 60_000, interval: 250 }).toEqual(expect.arrayContaining(['echo__echo', 'remote__echo']));
      expect(await client.callTool({ name: 'echo__echo', arguments: { text: 'served' } })).toMatchObject({ content: [{ type: 'text', text: 'served' }] });
      expect(await client.callTool({ name: 'remote__echo', arguments: { text: 'served' } })).toMatchObject({ content: [{ type: 'text', text: 'served' }] });
    }
  }, 240_000);
});

describe('/mcp sessions and dashboard sign-ins: the operator keeps its headroom', () => {
  const TOKENS = Object.fromEntries(['A', 'B', 'C', 'D', 'VIEW'].map((name) => [`SH_${name}`, `${name.toLowerCase()}-${randomUUID()}`]));
  const writers = ['SH_A', 'SH_B', 'SH_C', 'SH_D'].map((env) => TOKENS[env]!);
  const viewer = TOKENS.SH_VIEW!;
  let h: Harness;

  beforeAll(async () => {
    h = await harness(
      {
        mcpServers: {},
        daemon: {
          clients: [
            ...['A', 'B', 'C', 'D'].map((name) => ({ id: name.toLowerCase(), tokenEnv: `SH_${name}`, rights: ['write'] })),
            { id: 'viewer', tokenEnv: 'SH_VIEW', rights: ['read'] },
          ],
          // Four shares fill the daemon-wide cap exactly: without headroom the operator is locked out.
          mcpMaxSessionsPerClient: 3,
          mcpMaxSessions: 12,
        },
      },
      { env: TOKENS },
    );
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  const init = (token: string) => h.request({ method: 'POST', url: '/mcp', token, headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH }, payload: initializeBody() });

  it('four tokens at their shares are refused before the cap; the operator is still served', async () => {
    const answers: number[] = [];
    for (const token of writers) for (let i = 0; i < 3; i++) answers.push((await init(token)).statusCode);
    // An eighth of 12 (1) is the operator's: the clients together stop at 11.
    expect(answers.filter((status) => status === 200)).toHaveLength(11);
    const refused = await init(writers[3]!);
    expect(refused.statusCode).toBe(HTTP_STATUS[ErrorCode.SESSION_CAP_REACHED]);
    expect(refused.body).toContain('the last 1 of which are kept for the operator');
    const operator = await init(h.token);
    expect(operator.statusCode).toBe(200);
  }, 60_000);

  it('a read token’s 32 codes and 64 dashboard sessions sign the operator out of nothing', async () => {
    const mint = async (token: string): Promise<string> => (await h.request({ method: 'POST', url: '/ui/login-code', token })).json<{ code: string }>().code;
    const login = async (code: string): Promise<string | undefined> => {
      const answer = await h.request({ method: 'POST', url: '/ui/login', token: null, headers: { 'content-type': 'application/json' }, payload: { code } });
      return answer.statusCode === 204 ? /mcpool_ui=([^;]+)/.exec(String(answer.headers['set-cookie']))?.[1] : undefined;
    };
    const withCookie = (cookie: string) => h.request({ method: 'GET', url: '/workspace/mcp', token: null, headers: { cookie: `mcpool_ui=${cookie}` } });

    const operatorCode = await mint(h.token);
    const signedIn = await login(await mint(h.token));
    expect(signedIn).toBeDefined();
    // The viewer mints 32 codes, then signs in 64 times.
    for (let i = 0; i < 32; i++) await mint(viewer);
    for (let i = 0; i < 64; i++) expect(await login(await mint(viewer))).toBeDefined();

    expect((await withCookie(signedIn!)).statusCode).toBe(200);
    expect(await login(operatorCode)).toBeDefined();
  }, 60_000);
});

describe('connections: admitted per principal after authentication, unauthenticated ones in a small pool', () => {
  const ALICE = `alice-${randomUUID()}`;
  let h: Harness;
  let port: number;

  beforeAll(async () => {
    h = await harness({ mcpServers: {}, daemon: { clients: [{ id: 'alice', tokenEnv: 'SH_ALICE', rights: ['read'] }], maxConnectionsPerClient: 4, keepAliveTimeoutMs: 60_000 } }, { env: { SH_ALICE: ALICE } });
    port = Number(new URL(await h.app.listen({ host: '127.0.0.1', port: 0 })).port);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  /**
   * One GET on a connection of its own, written by hand so the connection stays open afterwards
   * (kept in `held` when given, else closed): its status, or the socket error's code.
   */
  const once = (token: string, held?: Socket[]): Promise<number | string> =>
    new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let head = '';
      const timer = setTimeout(() => socket.destroy(new Error('timed out')), 30_000);
      const settle = (result: number | string): void => {
        clearTimeout(timer);
        if (held === undefined || typeof result !== 'number') socket.destroy();
        else held.push(socket);
        resolve(result);
      };
      socket.on('error', (error: NodeJS.ErrnoException) => settle(error.code ?? error.message));
      socket.on('close', () => settle('closed'));
      socket.on('data', (chunk: Buffer) => {
        head += chunk.toString('latin1');
        const status = /^HTTP\/1\.1 (\d{3})/.exec(head);
        if (status !== null) settle(Number(status[1]));
      });
      socket.write(`GET /workspace/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    });

  it('256 idle sockets without a token, reopened as they close, leave a client with a token answered every time', async () => {
    const idle = new Set<Socket>();
    let stopped = false;
    let opened = 0;
    const open = (): void => {
      if (stopped || opened >= 2000) return;
      opened += 1;
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.on('close', () => {
        idle.delete(socket);
        open();
      });
      idle.add(socket);
    };
    for (let i = 0; i < 256; i++) open();
    await expect.poll(() => [...idle].filter((socket) => socket.readyState === 'open').length, { timeout: 30_000 }).toBeGreaterThan(0);
    try {
      const answers: (number | string)[] = [];
      for (let i = 0; i < 30; i++) answers.push(await once(ALICE));
      expect(answers).toEqual(Array(30).fill(200));
    } finally {
      stopped = true;
      for (const socket of idle) socket.destroy();
    }
  }, 120_000);

  it('a client holding its share of connections gets 429 on one more; the operator holds no share', async () => {
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 4; i++) expect(await once(ALICE, held)).toBe(200);
      expect(await once(ALICE)).toBe(HTTP_STATUS[ErrorCode.CLIENT_LIMIT_REACHED]);
      expect(await once(h.token)).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
    }
    // Its connections closed, the client is admitted again.
    await expect.poll(() => once(ALICE), { timeout: 30_000 }).toBe(200);
  }, 60_000);
});
