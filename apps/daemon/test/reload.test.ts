/**
 * Reload: a changed fingerprint gets a new entry for new acquires while the old one
 * keeps its sessions, and drains when they leave; an invalid file changes nothing (409);
 * live settings (client tokens) apply at once, others are reported as needing a restart.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DaemonEventPayload, ReloadResult, SessionInfo, WorkspaceMcpStatus } from '@mcpool/client';
import { fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

// These tests are about what a reload does to running servers and the warm hold: the servers start
// with the daemon and are held (`start: "eager"`; the default starts them on first use).
const EAGER = { start: 'eager' } as const;

const echoWith = (mark: string, flavour: string, extra: Record<string, unknown> = {}) => ({ ...fixtureConfig('echo.mjs', mark), env: { FLAVOUR: flavour }, ...extra });

async function status(): Promise<WorkspaceMcpStatus> {
  return (await h!.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
}

function entriesOf(s: WorkspaceMcpStatus, name: string): { entryIndex: number; refs: number; status: string }[] {
  return (s.servers.find((server) => server.name === name)?.entrySummary ?? []).map(({ entryIndex, refs, status }) => ({ entryIndex, refs, status }));
}

describe('POST /workspace/mcp/reload-all', () => {
  it('gives a changed server a new entry; the old one keeps its session, then drains when it leaves', async () => {
    const mark = marker('reload');
    h = await harness({ mcpServers: { echo: echoWith(mark, 'one') }, daemon: { ...EAGER, drainDelayMs: 100 } }, { marks: [mark] });
    const events: DaemonEventPayload[] = [];
    h.daemon.events.subscribe((event) => events.push(event.payload));
    // 1. An old session holds entry 0.
    const old = (await h.request({ method: 'POST', url: '/sessions', payload: {} })).json<SessionInfo>();
    expect(entriesOf(await status(), 'echo')).toEqual([{ entryIndex: 0, refs: 2, status: 'active' }]);

    // 2. The config changes an env value: a new fingerprint.
    h.writeConfig({ mcpServers: { echo: echoWith(mark, 'two') }, daemon: { ...EAGER, drainDelayMs: 100 } });
    const reload = await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    expect(reload.statusCode).toBe(200);
    expect(reload.json<ReloadResult>()).toEqual({ source: h.configPath, added: [], removed: [], changed: ['echo'], unchanged: [], needsRestart: [], rejected: [] });

    // 3. Old and new coexist: the old session on entry 0, the warm hold (and new sessions) on entry 1.
    expect(entriesOf(await status(), 'echo')).toEqual([
      { entryIndex: 0, refs: 1, status: 'active' },
      { entryIndex: 1, refs: 1, status: 'active' },
    ]);
    const fresh = (await h.request({ method: 'POST', url: '/sessions', payload: {} })).json<SessionInfo>();
    expect(fresh.servers[0]!.entryIndex).toBe(1);
    const flavour = await h.request({ method: 'POST', url: `/sessions/${fresh.id}/tools/call`, payload: { server: 'echo', name: 'env', arguments: { name: 'FLAVOUR' } } });
    expect(flavour.json<{ result: { content: { text: string }[] } }>().result.content[0]!.text).toBe('two');
    expect(pidsWithMarker(mark)).toHaveLength(2);

    // 4. The old session leaves: entry 0 drains and goes; only the new entry remains.
    await h.request({ method: 'DELETE', url: `/sessions/${old.id}` });
    await vi.waitFor(async () => expect(entriesOf(await status(), 'echo')).toEqual([{ entryIndex: 1, refs: 2, status: 'active' }]), { timeout: 15_000, interval: 50 });
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toHaveLength(1), { timeout: 15_000, interval: 50 });
    await vi.waitFor(() => expect(events).toContainEqual(expect.objectContaining({ type: 'entry_status', serverName: 'echo', entryIndex: 0, status: 'gone' })), { timeout: 15_000, interval: 20 });
    expect(events).toContainEqual({ type: 'config_reloaded', trigger: 'api', added: [], removed: [], changed: ['echo'] });
  });

  it('adds and removes servers; a per-session field alone changes no fingerprint', async () => {
    const mark = marker('reload-add');
    h = await harness({ mcpServers: { echo: echoWith(mark, 'one') }, daemon: { ...EAGER, drainDelayMs: 50 } }, { marks: [mark] });
    h.writeConfig({ mcpServers: { echo: echoWith(mark, 'one', { excludeTools: ['add'] }), prompts: fixtureConfig('promptsOnly.mjs', mark) }, daemon: { ...EAGER, drainDelayMs: 50 } });
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).json()).toMatchObject({ added: ['prompts'], changed: [], unchanged: ['echo'] });
    expect(entriesOf(await status(), 'prompts')).toEqual([{ entryIndex: 0, refs: 1, status: 'active' }]);
    // New sessions see the new per-session fields on the same entry.
    const session = (await h.request({ method: 'POST', url: '/sessions', payload: {} })).json<SessionInfo>();
    expect(session.servers.find((s) => s.name === 'echo')!.tools).not.toContain('add');

    h.writeConfig({ mcpServers: { echo: echoWith(mark, 'one') }, daemon: { ...EAGER, drainDelayMs: 50 } });
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).json()).toMatchObject({ removed: ['prompts'] });
    // The session still holds prompts: it stays, no longer configured, until the session leaves.
    const prompts = (await status()).servers.find((s) => s.name === 'prompts')!;
    expect(prompts).toMatchObject({ configured: false, entrySummary: [{ entryIndex: 0, refs: 1, status: 'active', sharing: 'per-principal' }] });
    await h.request({ method: 'DELETE', url: `/sessions/${session.id}` });
    await vi.waitFor(async () => expect((await status()).servers.map((s) => s.name)).toEqual(['echo']), { timeout: 15_000, interval: 50 });
  });

  it('409 for a file that cannot be read as a whole: nothing applied, the error names the file and path, an event says so', async () => {
    const mark = marker('reload-bad');
    h = await harness({ mcpServers: { echo: echoWith(mark, 'one') }, daemon: EAGER }, { marks: [mark] });
    const events: DaemonEventPayload[] = [];
    h.daemon.events.subscribe((event) => events.push(event.payload));
    const before = await status();
    // A bad daemon setting refuses the file; its bad server entry is named in the same error.
    h.writeConfig({ mcpServers: { echo: { command: 5, env: { SECRET: 'value-that-must-not-leak' } } }, daemon: { port: 'seventy' } });
    const response = await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    expect(response.statusCode).toBe(409);
    const body = response.json<{ code: string; message: string }>();
    expect(body.code).toBe('MCPOOL_CONFIG_REJECTED');
    expect(body.message).toContain(h.configPath);
    expect(body.message).toContain('daemon.port');
    expect(body.message).toContain('mcpServers.echo.command');
    expect(body.message).not.toContain('value-that-must-not-leak');
    expect(await status()).toEqual(before);
    expect(events).toContainEqual(expect.objectContaining({ type: 'config_rejected', trigger: 'api' }));
    h.writeConfig('{ not json');
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).statusCode).toBe(409);
    // A bad entry alone is that server's problem: the running one keeps its config, nothing leaks.
    h.writeConfig({ mcpServers: { echo: { command: 5, env: { SECRET: 'value-that-must-not-leak' } } }, daemon: EAGER });
    const partial = await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    expect(partial.statusCode).toBe(200);
    expect(partial.body).not.toContain('value-that-must-not-leak');
    expect(partial.json<ReloadResult>().rejected).toEqual([{ name: 'echo', code: 'MCPOOL_CONFIG_INVALID', message: expect.stringContaining('mcpServers.echo.command') as unknown, keptRunning: true }]);
  });

  it('applies client tokens at once and reports daemon settings that need a restart', async () => {
    const mark = marker('reload-settings');
    const doc = { mcpServers: { echo: echoWith(mark, 'one') }, daemon: { port: 7070 } };
    h = await harness(doc, { env: { NEW_CLIENT_TOKEN: 'new-client-token-0123' }, marks: [mark] });
    expect((await h.request({ method: 'GET', url: '/workspace/mcp', token: 'new-client-token-0123' })).statusCode).toBe(401);
    h.writeConfig({ ...doc, daemon: { port: 7071, clients: [{ id: 'new', tokenEnv: 'NEW_CLIENT_TOKEN', rights: ['read'] }] } });
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).json()).toMatchObject({ unchanged: ['echo'], needsRestart: ['port'] });
    expect((await h.request({ method: 'GET', url: '/workspace/mcp', token: 'new-client-token-0123' })).statusCode).toBe(200);
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all', token: 'new-client-token-0123' })).statusCode).toBe(403);
    expect(h.daemon.settings.port).toBe(7070);
  });
});
