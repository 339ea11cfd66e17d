/**
 * Remote servers behind OAuth, end to end: a real authorization server (`oidc-provider`, on
 * loopback, driven through its login and consent pages by the test) and a v2-SDK MCP server that
 * serves RFC 9728 metadata and accepts only that server's JWT access tokens (checked with `jose`).
 *
 * - A 401 is a state: `auth_required` in the status, an event, a typed error naming the command;
 *   nothing reaches the server again until it is authorized (its requests are counted).
 * - `mcpool auth` runs the code flow (PKCE, loopback redirect, dynamic registration); every
 *   session then uses the one token, and a `/mcp` session that joined while it waited gets
 *   `tools/list_changed`.
 * - Expiry: tokens are refreshed before they expire, calls go on; a refused token is refreshed
 *   once and the call goes out again.
 * - Revocation: the entry goes back to `auth_required`.
 * - No token value in any log line, status body or event.
 * - The device authorization grant, against the same servers.
 * - What `/mcp` says when it refuses for lack of authorization (legacy, modern, through the
 *   bridge, and on a step-up): the command to run, with the scope a step-up adds.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { main } from 'mcpool';
import type { HttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';
import { staticToken, startBridge } from './bridgeHarness.js';
import { ACCEPT_BOTH, connectClient, initializeBody, modernRequest, raw, responseOf } from './gatewayHelpers.js';
import type { Harness } from './helpers.js';
import { oauthStack, type OAuthStack as Stack, type OAuthStackOptions } from './oauthStack.js';

const open: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => undefined);
});

function stack(options: OAuthStackOptions = {}): Promise<Stack> {
  return oauthStack(open, options);
}

/** Requests that reached the MCP endpoint itself (metadata fetches are not requests to retry). */
function mcpRequests(mcp: HttpModernServer): number {
  return mcp.exchanges.filter((exchange) => exchange.path === '/mcp').length;
}

function bearerTokensSeen(mcp: HttpModernServer, from = 0): Set<string> {
  const tokens = new Set<string>();
  for (const exchange of mcp.exchanges.slice(from)) {
    const value = exchange.headers.authorization;
    if (exchange.path === '/mcp' && typeof value === 'string' && exchange.status === 200) tokens.add(value);
  }
  return tokens;
}

async function status(h: Harness): Promise<{ name: string; status: string; errorKind?: string; entrySummary: { status: string }[] }> {
  const body = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<{ servers: { name: string; status: string; errorKind?: string; entrySummary: { status: string }[] }[] }>();
  return body.servers.find((server) => server.name === 'remote')!;
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Starts the code flow over the REST route and approves it at the authorization server. */
async function authorize(s: Stack): Promise<void> {
  const started = await s.h.request({ method: 'POST', url: '/workspace/mcp/remote/auth', payload: {} });
  expect(started.statusCode).toBe(200);
  const { authorizationUrl } = started.json<{ authorizationUrl: string }>();
  const done = await s.as.approve(authorizationUrl);
  expect(done).toMatchObject({ status: 200 });
  await serverReady(s.h);
}

/**
 * Until the daemon counts the server ready again after its authorization: an eager server's warm
 * hold is back on it, a lazy one (the default) has been started once to learn its catalog.
 */
async function serverReady(h: Harness, ms?: number): Promise<void> {
  await until('the server to be ready', async () => (await h.request({ method: 'GET', url: '/readyz' })).json<{ servers: { ready: number } }>().servers.ready === 1, ms);
}

/** `mcpool auth remote` through the CLI: the authorization URL it printed, and its exit code when it ends. */
async function authCommand(s: Stack): Promise<{ url: URL; out: string[]; err: string[]; done: Promise<number> }> {
  const out: string[] = [];
  const err: string[] = [];
  const done = main(['node', 'mcpool', 'auth', 'remote', '--no-open', '--timeout', '120', '--url', s.base], {
    stdout: (text) => out.push(text),
    stderr: (text) => err.push(text),
    env: { MCPOOL_TOKEN: s.h.token, MCPOOL_STATE_DIR: join(s.h.dir, 'state') },
    cwd: s.h.dir,
  });
  await until('the authorization URL', () => out.some((line) => line.includes('http://')));
  return { url: new URL(/(http:\/\/\S+\/auth\?\S+)/.exec(out.join('\n'))![1]!), out, err, done };
}

async function createSession(h: Harness): Promise<string> {
  const created = await h.request({ method: 'POST', url: '/sessions', payload: { servers: ['remote'] } });
  expect(created.statusCode).toBe(201);
  return created.json<{ id: string }>().id;
}

function echo(h: Harness, session: string, text: string): Promise<{ statusCode: number; json: () => unknown }> {
  return h.request({ method: 'POST', url: `/sessions/${session}/tools/call`, payload: { server: 'remote', name: 'echo', arguments: { text } } });
}

/** The grant file the daemon keeps (there is one server, so one file). */
function storedGrant(h: Harness): { file: string; grant: { accessToken: string; refreshToken?: string; client: { client_id: string } } } {
  const dir = join(h.dir, 'state', 'oauth');
  const [name] = readdirSync(dir).filter((file) => file.endsWith('.json'));
  const file = join(dir, name!);
  return { file, grant: JSON.parse(readFileSync(file, 'utf8')) as { accessToken: string; refreshToken?: string; client: { client_id: string } } };
}

describe('a server that answers 401', () => {
  it('is auth_required (status, events, typed error naming the command) and gets no request until it is authorized', async () => {
    const s = await stack();
    const remote = await status(s.h);
    expect(remote).toMatchObject({ status: 'auth_required', errorKind: 'auth_required' });
    expect(remote.entrySummary.map((entry) => entry.status)).toEqual(['auth_required']);
    expect(s.events).toContainEqual({ type: 'auth_required', serverName: 'remote', command: 'mcpool auth remote' });
    expect(s.h.daemon.pool.getSnapshot().servers.remote?.status).toBe('auth_required');

    const seen = mcpRequests(s.mcp);
    expect(seen).toBeGreaterThan(0);
    // Sessions come and call: each gets the typed error, none reaches the server.
    for (let i = 0; i < 10; i++) {
      const session = await createSession(s.h);
      const call = await echo(s.h, session, 'hi');
      expect(call.statusCode).toBe(503);
      expect(call.json()).toMatchObject({ code: 'MCPOOL_AUTH_REQUIRED', message: expect.stringContaining('mcpool auth remote') });
    }
    const session = (await s.h.request({ method: 'POST', url: '/sessions', payload: { servers: ['remote'] } })).json<{ servers: { name: string; error?: { code: string } }[] }>();
    expect(session.servers[0]?.error?.code).toBe('MCPOOL_AUTH_REQUIRED');
    await sleep(2000);
    expect(mcpRequests(s.mcp)).toBe(seen);
    // Restarting does not poke it either: there is nothing to restart.
    await s.h.request({ method: 'POST', url: '/workspace/mcp/remote/restart' });
    expect(mcpRequests(s.mcp)).toBeLessThanOrEqual(seen + 2);
  });
});

describe('authorization', () => {
  it('`mcpool auth` completes the code flow; every session shares the one token; a waiting /mcp session gets list_changed', async () => {
    const s = await stack({ listen: true });
    // A /mcp session that joined while the server waited.
    const { client } = await connectClient(`${s.base}/mcp`, s.h.token);
    open.push(() => client.close());
    let listChanged = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      listChanged += 1;
    });
    expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain('remote__echo');
    const waiting = await createSession(s.h);

    const { url: parsed, out, done: cli } = await authCommand(s);
    const url = parsed.href;
    expect(parsed.searchParams.get('code_challenge_method')).toBe('S256');
    expect(parsed.searchParams.get('resource')).toBe(s.mcp.url);
    // The challenge's scope, and `offline_access` because the authorization server lists it (a refresh token for a daemon).
    expect(parsed.searchParams.get('scope')).toBe('mcp:tools offline_access');
    expect(parsed.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(await s.as.approve(url)).toMatchObject({ status: 200, body: expect.stringContaining('authorized') });
    expect(await cli).toBe(0);
    expect(out.join('\n')).toContain('remote: authorized');
    expect(s.events).toContainEqual({ type: 'auth_completed', serverName: 'remote' });

    // The session that waited and new ones all call through; one token for all of them.
    const from = s.mcp.exchanges.length;
    await until('the waiting session to have the server', async () => (await echo(s.h, waiting, 'w')).statusCode === 200);
    const a = await createSession(s.h);
    const b = await createSession(s.h);
    expect((await echo(s.h, a, 'a')).json()).toMatchObject({ result: { content: [{ text: 'a' }] } });
    expect((await echo(s.h, b, 'b')).json()).toMatchObject({ result: { content: [{ text: 'b' }] } });
    await until('list_changed on the waiting /mcp session', () => listChanged > 0);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('remote__echo');
    expect(bearerTokensSeen(s.mcp, from).size).toBe(1);
    expect(s.as.tokenRequests.authorization_code).toBe(1);

    // The grant is on disk, readable by its owner only.
    const { file } = storedGrant(s.h);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(s.h.dir, 'state', 'oauth')).mode & 0o777).toBe(0o700);
    // The /mcp client's own daemon token never went upstream.
    for (const exchange of s.mcp.exchanges) expect(String(exchange.headers.authorization ?? '')).not.toContain(s.h.token);
  });

  it('an injected server never inherits the grant of a configured one, even with its URL', async () => {
    const s = await stack();
    await authorize(s);
    const injected = await s.h.request({ method: 'POST', url: '/sessions', payload: { servers: ['remote'], mcpServers: { mine: { type: 'http', url: s.mcp.url } } } });
    expect(injected.statusCode).toBe(201);
    const servers = injected.json<{ id: string; servers: { name: string; status: string; error?: { code: string } }[] }>();
    // The configured server runs on the grant; the same URL injected gets no token and waits for its own authorization.
    expect(servers.servers.find((server) => server.name === 'remote')?.status).not.toBe('failed');
    expect(servers.servers.find((server) => server.name === 'mine')?.error?.code).toBe('MCPOOL_AUTH_REQUIRED');
    expect((await echo(s.h, servers.id, 'configured')).statusCode).toBe(200);
  });

  describe('a grant is the principal’s who authorized', () => {
    const ALICE = `alice-${randomUUID()}`;
    const BOB = `bob-${randomUUID()}`;
    const tenants = { clients: [{ id: 'alice', tokenEnv: 'OA_ALICE', rights: ['write'] }, { id: 'bob', tokenEnv: 'OA_BOB', rights: ['write'] }], env: { OA_ALICE: ALICE, OA_BOB: BOB } };
    const sessionOf = async (s: Stack, token: string): Promise<string> => (await s.h.request({ method: 'POST', url: '/sessions', token, payload: { servers: ['remote'] } })).json<{ id: string }>().id;
    const call = (s: Stack, token: string, session: string) => s.h.request({ method: 'POST', url: `/sessions/${session}/tools/call`, token, payload: { server: 'remote', name: 'echo', arguments: { text: 'hi' } } });

    /** Alice runs the code flow for herself (the REST route with her token) and her session calls through. */
    async function aliceAuthorizes(s: Stack): Promise<void> {
      const started = await s.h.request({ method: 'POST', url: '/workspace/mcp/remote/auth', token: ALICE, payload: {} });
      expect(started.statusCode).toBe(200);
      expect(await s.as.approve(started.json<{ authorizationUrl: string }>().authorizationUrl)).toMatchObject({ status: 200 });
      await until('alice’s session to call through', async () => (await call(s, ALICE, await sessionOf(s, ALICE))).statusCode === 200);
    }

    it('bob and the operator get no token from alice’s grant: their connections wait for their own authorization', async () => {
      const s = await stack({ ...tenants });
      await aliceAuthorizes(s);
      const seen = bearerTokensSeen(s.mcp).size;
      for (const token of [BOB, s.h.token]) {
        const refused = await call(s, token, await sessionOf(s, token));
        expect(refused.statusCode).toBe(503);
        expect(refused.json()).toMatchObject({ code: 'MCPOOL_AUTH_REQUIRED' });
      }
      // Alice still calls through, and nobody else's request carried her token.
      expect((await call(s, ALICE, await sessionOf(s, ALICE))).statusCode).toBe(200);
      expect(bearerTokensSeen(s.mcp).size).toBe(seen);
    });

    it('with `oauth.shared: true` in the config, alice’s grant serves bob and the operator too', async () => {
      const s = await stack({ ...tenants, remote: { oauth: { shared: true } } });
      await aliceAuthorizes(s);
      for (const token of [BOB, s.h.token]) {
        const session = await sessionOf(s, token);
        await until('the session to call through on the shared grant', async () => (await call(s, token, session)).statusCode === 200);
      }
      expect(bearerTokensSeen(s.mcp).size).toBe(1);
    });
  });

  it('refreshes before expiry (calls go on), refreshes once on a refused token and sends the call again', async () => {
    const s = await stack({ accessTokenTtlS: 6 });
    await authorize(s);
    const session = await createSession(s.h);
    const from = s.mcp.exchanges.length;
    // Calls over more than two token lifetimes: every one succeeds.
    const deadline = Date.now() + 14_000;
    for (let i = 0; Date.now() < deadline && i < 400; i++) {
      const call = await echo(s.h, session, `n${i}`);
      expect(call.statusCode, JSON.stringify(call.json())).toBe(200);
      await sleep(250);
    }
    expect(s.as.tokenRequests.refresh_token ?? 0).toBeGreaterThanOrEqual(2);
    expect(bearerTokensSeen(s.mcp, from).size).toBeGreaterThanOrEqual(3);

    // The resource server stops accepting the current token (as after an introspection): the
    // call is refused, the token refreshed, the call sent again, and it succeeds.
    const before = s.as.tokenRequests.refresh_token ?? 0;
    const { grant } = storedGrant(s.h);
    s.as.deny(grant.accessToken);
    const call = await echo(s.h, session, 'after deny');
    expect(call.statusCode, JSON.stringify(call.json())).toBe(200);
    expect(s.as.tokenRequests.refresh_token).toBe(before + 1);
    // The rotated refresh token replaced the old one.
    expect(storedGrant(s.h).grant.refreshToken).not.toBe(grant.refreshToken);
  });

  it('revocation makes the server auth_required again; no token appears in any log, status or event', async () => {
    const s = await stack();
    await authorize(s);
    const session = await createSession(s.h);
    expect((await echo(s.h, session, 'before')).statusCode).toBe(200);
    const { grant } = storedGrant(s.h);
    expect(await s.as.revoke(grant.refreshToken!, grant.client.client_id)).toBe(200);
    s.as.deny(grant.accessToken);

    const call = await echo(s.h, session, 'after');
    expect(call.statusCode).toBe(503);
    expect(call.json()).toMatchObject({ code: 'MCPOOL_AUTH_REQUIRED' });
    await until('auth_required', async () => (await status(s.h)).status === 'auth_required');
    expect(s.events.filter((event) => event.type === 'auth_required')).toHaveLength(2);
    const seen = mcpRequests(s.mcp);
    expect((await echo(s.h, await createSession(s.h), 'again')).json()).toMatchObject({ code: 'MCPOOL_AUTH_REQUIRED' });
    expect(mcpRequests(s.mcp)).toBe(seen);

    // The canary: neither token reaches a log line, a status body or an event.
    const statusBody = (await s.h.request({ method: 'GET', url: '/workspace/mcp' })).body;
    const sessions = (await s.h.request({ method: 'GET', url: '/sessions' })).body;
    for (const secret of [grant.accessToken, grant.refreshToken!]) {
      expect(s.h.logs.join('\n')).not.toContain(secret);
      expect(statusBody).not.toContain(secret);
      expect(sessions).not.toContain(secret);
      expect(s.eventText.join('\n')).not.toContain(secret);
    }
    expect(s.h.logs.some((line) => line.includes('authorized'))).toBe(true);
  });

  it('the device authorization grant, against the same servers', async () => {
    const s = await stack();
    const started = await s.h.request({ method: 'POST', url: '/workspace/mcp/remote/auth', payload: { device: true } });
    expect(started.statusCode, started.body).toBe(200);
    const device = started.json<{ flow: string; userCode: string; verificationUri: string }>();
    expect(device).toMatchObject({ flow: 'device_code', verificationUri: `${s.as.issuer}/device` });
    expect(await s.as.approveDevice(device.userCode)).toMatchObject({ status: 200, body: expect.stringContaining('Success') });
    await serverReady(s.h, 60_000);
    const session = await createSession(s.h);
    expect((await echo(s.h, session, 'device')).json()).toMatchObject({ result: { content: [{ text: 'device' }] } });
    expect(s.as.tokenRequests['urn:ietf:params:oauth:grant-type:device_code']).toBe(1);
  });
});

describe('step-up authorization (a 403 for a scope the token lacks)', () => {
  it('fails that call with the command to run while the token serves on; the next authorization asks for the union; a scope never granted is not asked again', async () => {
    const s = await stack({ listen: true, resourceScope: 'mcp:tools mcp:write', requireScopes: { progress: 'mcp:write', slow: 'mcp:admin' } });
    await authorize(s);
    const session = await createSession(s.h);
    const call = (name: string, args: Record<string, unknown>): Promise<{ statusCode: number; json: () => unknown }> =>
      s.h.request({ method: 'POST', url: `/sessions/${session}/tools/call`, payload: { server: 'remote', name, arguments: args } });
    expect((await echo(s.h, session, 'before')).statusCode).toBe(200);

    const refused = await call('progress', { steps: 0 });
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'MCPOOL_AUTH_REQUIRED', message: expect.stringContaining('run `mcpool auth remote`') });
    // Nothing is gated: the server stays active and its other tools answer on the same token.
    expect((await status(s.h)).status).toBe('active');
    expect((await echo(s.h, session, 'still')).json()).toMatchObject({ result: { content: [{ text: 'still' }] } });
    expect(s.events.filter((event) => event.type === 'auth_required')).toHaveLength(1);

    // The step-up asks for what was asked before and the challenged scope.
    const stepUp = await authCommand(s);
    expect(stepUp.url.searchParams.get('scope')).toBe('mcp:tools offline_access mcp:write');
    expect(await s.as.approve(stepUp.url.href)).toMatchObject({ status: 200 });
    expect(await stepUp.done).toBe(0);
    // The live connection took the new token: the same session's call goes through.
    await until('the call with the new scope', async () => (await call('progress', { steps: 0 })).statusCode === 200);
    expect((await call('progress', { steps: 0 })).json()).toMatchObject({ result: { content: [{ text: 'done 0' }] } });

    // A scope the authorization server never grants: asked for once; refused again, it is final.
    expect((await call('slow', { ms: 0 })).json()).toMatchObject({ code: 'MCPOOL_AUTH_REQUIRED' });
    const admin = await authCommand(s);
    expect(admin.url.searchParams.get('scope')).toBe('mcp:tools offline_access mcp:write mcp:admin');
    await s.as.approve(admin.url.href);
    expect(await admin.done).toBe(0);
    const final = await call('slow', { ms: 0 });
    expect(final.json()).toMatchObject({ code: 'MCPOOL_AUTH_FAILED', message: expect.stringContaining('lack of mcp:admin, which the authorization server did not grant when asked (it says: slow needs mcp:admin)') });
    expect((await call('slow', { ms: 0 })).json()).toMatchObject({ code: 'MCPOOL_AUTH_FAILED' });
    expect((await status(s.h)).status).toBe('active');
    expect(s.as.tokenRequests.authorization_code).toBe(3);
  });

  it('a refused authorization answer ends `mcpool auth` at once with the reason (auth_failed), and nothing is authorized', async () => {
    const s = await stack({ listen: true });
    const started = await authCommand(s);
    // A callback the authorization server did not send (its state is not the flow's).
    const callback = new URL(started.url.searchParams.get('redirect_uri')!);
    callback.search = new URLSearchParams({ code: 'forged', state: 'not-the-flows', iss: s.as.issuer }).toString();
    expect((await fetch(callback)).status).toBe(400);
    expect(await started.done).toBe(1);
    expect(started.err.join('\n')).toMatch(/remote: the authorization failed: .*state/);
    expect(s.events).toContainEqual({ type: 'auth_failed', serverName: 'remote', message: expect.stringContaining('state') });
    expect((await status(s.h)).status).toBe('auth_required');
    expect(s.as.tokenRequests.authorization_code ?? 0).toBe(0);
  });
});


describe('what /mcp tells its caller when a server needs authorization', () => {
  const HINT = 'run `mcpool auth remote`';

  it('names `mcpool auth <server>` on legacy and modern /mcp and through the bridge, which passes only the message on', async () => {
    const s = await stack({ listen: true });
    const legacy = await raw(s.base, { path: '/mcp/remote', headers: { authorization: `Bearer ${s.h.token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: initializeBody() });
    expect(legacy.status).toBe(503);
    const refused = JSON.parse(legacy.body) as { error: { message: string; data: { code: string; serverName: string } } };
    expect(refused.error.data).toMatchObject({ code: 'MCPOOL_AUTH_REQUIRED', serverName: 'remote' });
    expect(refused.error.message).toContain(HINT);

    // A modern caller lists what is available (nothing yet); its call is refused with the command.
    const modern = responseOf(await modernRequest({ base: s.base, token: s.h.token }, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }, { path: '/mcp/remote' }));
    expect(modern.error).toMatchObject({ data: { code: 'MCPOOL_AUTH_REQUIRED' }, message: expect.stringContaining(HINT) });

    // The bridge turns the daemon's HTTP refusal into an error of its own code: the message is what reaches its client.
    const bridge = startBridge({ url: `${s.base}/mcp/remote`, token: staticToken(s.h.token) });
    open.push(() => bridge.bridge.close('test done'));
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'user', version: '1' } } });
    const answer = await bridge.waitForMessage((message) => message.id === 1);
    expect(answer.error).toMatchObject({ data: { code: 'MCPOOL_BRIDGE_HTTP_ERROR', httpStatus: 503 }, message: expect.stringContaining(HINT) });
  });

  it('a step-up refusal names the command and the scope it adds, in both eras', async () => {
    const s = await stack({ listen: true, resourceScope: 'mcp:tools mcp:write', requireScopes: { progress: 'mcp:write' } });
    await authorize(s);
    const stepUp = `${HINT} (it asks for mcp:write as well)`;
    const { client } = await connectClient(`${s.base}/mcp/remote`, s.h.token);
    open.push(() => client.close());
    expect(await client.callTool({ name: 'echo', arguments: { text: 'ok' } })).toMatchObject({ content: [{ text: 'ok' }] });
    await expect(client.callTool({ name: 'progress', arguments: { steps: 0 } })).rejects.toThrow(stepUp);

    const modern = responseOf(await modernRequest({ base: s.base, token: s.h.token }, 'tools/call', { name: 'progress', arguments: { steps: 0 } }, { path: '/mcp/remote' }));
    expect(modern.error).toMatchObject({ data: { code: 'MCPOOL_AUTH_REQUIRED', serverName: 'remote', scope: 'mcp:write' }, message: expect.stringContaining(stepUp) });
    // The REST API says the same.
    const session = await createSession(s.h);
    const rest = await s.h.request({ method: 'POST', url: `/sessions/${session}/tools/call`, payload: { server: 'remote', name: 'progress', arguments: { steps: 0 } } });
    expect(rest.json()).toMatchObject({ code: 'MCPOOL_AUTH_REQUIRED', message: expect.stringContaining(stepUp) });
  });
});
