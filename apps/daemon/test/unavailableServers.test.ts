/**
 * A server that cannot start is one server's problem: an unset variable, a bad field, a missing
 * command make that server unavailable (status, event stream, `/mcp/<server>`), while the daemon
 * serves the rest through `/mcp` in both eras; a reload applies per server, and one that fixes a
 * server makes it join the open sessions with `list_changed`. Real daemon, real fixture servers,
 * SDK clients and raw modern requests over a socket.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { DaemonEventPayload } from '@mcpool/client';
import { FIXTURES, fixtureConfig, marker, pidsWithMarker, textOf } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient, modernRequest, openListen, raw, responseOf, ACCEPT_BOTH, initializeBody, type OpenStream } from './gatewayHelpers.js';

const UNSET = 'MOVEIN_TEST_TOKEN_NEVER_SET';

let h: Harness | undefined;
const closers: (() => unknown)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await Promise.resolve(close()).catch(() => undefined);
  await h?.close();
  h = undefined;
});

async function listening(doc: unknown, marks: string[]): Promise<{ h: Harness; base: string }> {
  h = await harness(doc, { marks });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  return { h, base: `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}` };
}

/** Every event the daemon published so far (its replay buffer). */
const eventsOf = (h: Harness): DaemonEventPayload[] => h.daemon.events.since(`${h.daemon.events.epoch}-0`).events.map((event) => event.payload);

const toolNames = (result: unknown): string[] => ((result as { tools: { name: string }[] }).tools ?? []).map((tool) => tool.name).sort();

describe('an unset variable makes one server unavailable, never the daemon', () => {
  it('the two working servers serve both eras through /mcp; a reload that sets the value makes it join with list_changed', { timeout: 120_000 }, async () => {
    const [one, two, gh] = [marker('unavail-one'), marker('unavail-two'), marker('unavail-gh')];
    const ghEntry = (token: string) => fixtureConfig('echo.mjs', gh, { sharing: 'shared', env: { GITHUB_PERSONAL_ACCESS_TOKEN: token } });
    const doc = (token: string) => ({
      mcpServers: { one: fixtureConfig('echo.mjs', one, { sharing: 'shared' }), two: fixtureConfig('echo.mjs', two, { sharing: 'shared' }), gh: ghEntry(token) },
      daemon: { heartbeatMs: 200 },
    });
    const { h, base } = await listening(doc(`\${env:${UNSET}}`), [one, two, gh]);

    // 1. The daemon started; the server is unavailable with its typed reason, and nothing of it runs.
    const status = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<{ ready: boolean; servers: { name: string; status: string; configured: boolean; lastError?: { code: string; message: string } }[] }>();
    expect(status.ready).toBe(true);
    expect(status.servers.map((s) => s.name)).toEqual(['gh', 'one', 'two']);
    expect(status.servers[0]!.status).toBe('unavailable');
    expect(status.servers[0]).toMatchObject({ configured: true, lastError: { code: 'MCPOOL_CONFIG_VARIABLE_UNSET', message: `environment variable ${UNSET} is not set (mcpServers.gh.env.GITHUB_PERSONAL_ACCESS_TOKEN needs it)` } });
    expect(pidsWithMarker(gh)).toEqual([]);
    expect((await h.request({ method: 'GET', url: '/readyz' })).json()).toEqual({ ready: true, servers: { total: 2, ready: 2, failed: 0, unavailable: 1 } });
    const started = eventsOf(h);
    expect(started).toContainEqual({ type: 'server_unavailable', serverName: 'gh', code: 'MCPOOL_CONFIG_VARIABLE_UNSET', message: expect.stringContaining(UNSET), keptRunning: false });

    // 2. /mcp lists the two that run, in both eras; /mcp/gh says why it is not there.
    const { client } = await connectClient(`${base}/mcp`, h.token);
    closers.push(() => client.close());
    const changed: unknown[] = [];
    client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) => void changed.push(notification));
    const legacyBefore = toolNames(await client.listTools());
    expect(legacyBefore.some((name) => name.startsWith('one__'))).toBe(true);
    expect(legacyBefore.some((name) => name.startsWith('two__'))).toBe(true);
    expect(legacyBefore.some((name) => name.startsWith('gh__'))).toBe(false);
    // Servers start on first use: a call of each runs it.
    for (const server of ['one', 'two']) expect(textOf(await client.callTool({ name: `${server}__echo`, arguments: { text: server } }))).toBe(server);
    const running = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<{ servers: { name: string; status: string }[] }>();
    expect(running.servers.map((s) => [s.name, s.status])).toEqual([['gh', 'unavailable'], ['one', 'active'], ['two', 'active']]);
    const target = { base, token: h.token };
    const listen: OpenStream = openListen(target, { toolsListChanged: true });
    closers.push(() => listen.close());
    expect(await listen.status).toBe(200);
    const modernBefore = toolNames(responseOf(await modernRequest(target, 'tools/list')).result);
    expect(modernBefore).toEqual(legacyBefore);
    const scoped = await raw(base, { path: '/mcp/gh', headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json', accept: ACCEPT_BOTH }, body: initializeBody() });
    expect(scoped.status).toBe(503);
    expect(JSON.parse(scoped.body)).toMatchObject({ error: { data: { code: 'MCPOOL_SERVER_UNAVAILABLE', reason: 'MCPOOL_CONFIG_VARIABLE_UNSET' }, message: expect.stringContaining(UNSET) } });

    // 3. A reload whose file gives the value: gh is added, and both eras are told their lists changed.
    h.writeConfig(doc('ghp_dummy_value_0123456789'));
    const reload = await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    expect(reload.statusCode).toBe(200);
    expect(reload.json()).toMatchObject({ added: ['gh'], rejected: [] });
    await listen.waitFor((messages) => messages.some((m) => m.method === 'notifications/tools/list_changed'), 'a modern tools list_changed');
    await expect.poll(() => changed.length, { timeout: 30_000 }).toBeGreaterThan(0);
    const legacyAfter = toolNames(await client.listTools());
    expect(legacyAfter.filter((name) => name.startsWith('gh__'))).toEqual(legacyBefore.filter((name) => name.startsWith('one__')).map((name) => name.replace('one__', 'gh__')));
    expect(toolNames(responseOf(await modernRequest(target, 'tools/list')).result)).toEqual(legacyAfter);
    expect(textOf(await client.callTool({ name: 'gh__echo', arguments: { text: 'gh' } }))).toBe('gh');
    expect(pidsWithMarker(gh)).toHaveLength(1);
  });
});

describe('reload applies per server', () => {
  it('the valid servers of a file with bad ones are applied; a running server whose entry broke keeps running; the file as a whole is refused only when it cannot be read', { timeout: 120_000 }, async () => {
    const [echo, fresh] = [marker('reload-echo'), marker('reload-fresh')];
    const good = { echo: fixtureConfig('echo.mjs', echo, { sharing: 'shared' }) };
    // About servers that run and are held across a reload: they start with the daemon (`start: "eager"`).
    const { h } = await listening({ mcpServers: good, daemon: { start: 'eager' } }, [echo, fresh]);
    const before = pidsWithMarker(echo);
    expect(before).toHaveLength(1);

    h.writeConfig({
      daemon: { start: 'eager' },
      mcpServers: {
        // A typo in the running server: it keeps its last good config.
        echo: { ...good.echo, arg: ['x'] },
        fresh: fixtureConfig('echo.mjs', fresh, { sharing: 'shared' }),
        typo: { comand: 'node' },
        ghost: { command: 'mcp-server-does-not-exist-anywhere' },
      },
    });
    const reload = await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    expect(reload.statusCode).toBe(200);
    const result = reload.json<{ added: string[]; unchanged: string[]; rejected: { name: string; code: string; keptRunning: boolean }[] }>();
    expect(result.added).toEqual(['fresh']);
    expect(result.unchanged).toEqual([]);
    expect(result.rejected).toEqual([
      { name: 'echo', code: 'MCPOOL_CONFIG_INVALID', message: 'mcpServers.echo.arg: expected a known field (did you mean "args"?), got unknown field "arg"', keptRunning: true },
      { name: 'typo', code: 'MCPOOL_CONFIG_INVALID', message: expect.stringContaining('did you mean "command"?'), keptRunning: false },
      { name: 'ghost', code: 'MCPOOL_COMMAND_NOT_FOUND', message: expect.stringContaining('"mcp-server-does-not-exist-anywhere" is not on the PATH'), keptRunning: false },
    ]);
    expect(pidsWithMarker(fresh)).toHaveLength(1);
    expect(pidsWithMarker(echo)).toEqual(before);
    const status = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<{ servers: { name: string; status: string; configProblem?: { code: string }; lastError?: { code: string } }[] }>();
    expect(status.servers.map((s) => [s.name, s.status, s.configProblem?.code ?? s.lastError?.code ?? null])).toEqual([
      ['echo', 'active', 'MCPOOL_CONFIG_INVALID'],
      ['fresh', 'active', null],
      ['ghost', 'unavailable', 'MCPOOL_COMMAND_NOT_FOUND'],
      ['typo', 'unavailable', 'MCPOOL_CONFIG_INVALID'],
    ]);
    const events = eventsOf(h);
    expect(events).toContainEqual(expect.objectContaining({ type: 'config_reloaded', added: ['fresh'], rejected: ['echo', 'typo', 'ghost'] }));
    expect(events.filter((event) => event.type === 'server_unavailable').map((event) => [event.serverName, event.keptRunning])).toEqual([
      ['echo', true],
      ['typo', false],
      ['ghost', false],
    ]);

    // Not JSON at all: the file is refused as a whole, nothing changes.
    h.writeConfig('{ "mcpServers": ');
    const refused = await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'MCPOOL_CONFIG_REJECTED' });
    expect(pidsWithMarker(fresh)).toHaveLength(1);
  });

  it('a command installed after the daemon started is found by a restart of its server', { timeout: 120_000 }, async () => {
    const mark = marker('late-command');
    const { h } = await listening({ mcpServers: {} }, [mark]);
    const bin = join(h.dir, 'bin', 'late-server');
    h.writeConfig({ mcpServers: { late: { command: bin, args: [mark] } } });
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).json()).toMatchObject({ added: [], rejected: [{ name: 'late', code: 'MCPOOL_COMMAND_NOT_FOUND', keptRunning: false }] });
    const early = await h.request({ method: 'POST', url: '/workspace/mcp/late/restart', payload: {} });
    expect(early.statusCode).toBe(503);
    expect(early.json()).toMatchObject({ code: 'MCPOOL_SERVER_UNAVAILABLE', message: expect.stringContaining('install it') });

    mkdirSync(join(h.dir, 'bin'), { recursive: true });
    writeFileSync(bin, `#!/bin/sh\nexec "${process.execPath}" "${join(FIXTURES, 'echo.mjs')}" "$@"\n`);
    chmodSync(bin, 0o755);
    const restarted = await h.request({ method: 'POST', url: '/workspace/mcp/late/restart', payload: {} });
    expect(restarted.json()).toMatchObject({ restarted: true });
    expect((await h.request({ method: 'GET', url: '/workspace/mcp' })).json()).toMatchObject({ servers: [{ name: 'late', status: 'active' }] });
    expect(pidsWithMarker(mark)).toHaveLength(1);
  });
});
