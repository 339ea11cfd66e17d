/**
 * A window's picture of the pool, outside VS Code, against a real daemon process: the servers
 * with their tools read over `/mcp/<server>`, a `version` that is the same in every window and
 * changes only when the tools do, and the daemon's event stream driving it — a restart re-reads
 * a server but changes nothing, a reload that adds a server or changes one's tools does; a
 * server that cannot start is shown with its error; losing the daemon is a state the status bar
 * shows, and the model links again by itself.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { writeFileSync } from 'node:fs';
import { startDaemonProcess, type DaemonProcess } from '../../daemon/test/e2e/daemonProcess.js';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { linkDaemon, type DaemonLink } from '../src/daemonLink.js';
import { effectOf } from '../src/eventEffects.js';
import { PoolModel, type Schedule } from '../src/poolModel.js';
import { LiveMetadata } from '../src/serverMetadata.js';
import { statusSummary } from '../src/statusSummary.js';
import { toolsVersion } from '../src/toolsVersion.js';

const mark = marker('vscode-model');
/** A server whose command does not exist: it never starts. */
const BROKEN = '/nonexistent/mcpool-test-no-such-server';
let daemon: DaemonProcess;
const quiet = { info: () => undefined, error: () => undefined };
const models: PoolModel[] = [];

function link(): Promise<DaemonLink> {
  return linkDaemon({ env: { MCPOOL_URL: daemon.url, MCPOOL_STATE_DIR: join(daemon.dir, 'state') }, logger: quiet });
}

/** A model as a window makes it; `reads` counts the metadata reads of each server. */
function model(options: { schedule?: Schedule; reads?: Map<string, number> } = {}): PoolModel {
  const created = new PoolModel({
    link: () => link(),
    metadata: (linked) => {
      const live = new LiveMetadata({ baseUrl: linked.baseUrl, token: linked.token, rest: linked.client, client: { name: 'model-test', version: '1' } });
      return {
        read: (server, signal) => {
          options.reads?.set(server, (options.reads.get(server) ?? 0) + 1);
          return live.read(server, signal);
        },
        forget: (servers) => live.forget(servers),
      };
    },
    visible: async (names) => names,
    log: () => undefined,
    ...(options.schedule ? { schedule: options.schedule } : {}),
  });
  models.push(created);
  return created;
}

/** Rewrites the daemon's config and has it reload. */
async function reconfigure(servers: Record<string, unknown>): Promise<void> {
  writeFileSync(join(daemon.dir, 'mcpool.json'), JSON.stringify({ mcpServers: servers, daemon: { port: 0, watchConfig: false } }));
  const response = await fetch(`${daemon.url}/workspace/mcp/reload-all`, { method: 'POST', headers: daemon.auth });
  expect(response.status).toBe(200);
}

beforeAll(async () => {
  daemon = await startDaemonProcess('vscode-model', mark, { echo: fixtureConfig('echo.mjs', mark), broken: { command: BROKEN } });
}, 120_000);

afterAll(async () => {
  for (const created of models) created.close();
  await daemon?.stop();
});

describe('the pool model', () => {
  it('reads each server with its tools; every window gets the same version; a server that cannot start is shown with its error', async () => {
    // Servers start on first use: a session that uses echo makes it the one running server.
    const held = await fetch(`${daemon.url}/sessions`, { method: 'POST', headers: { ...daemon.auth, 'content-type': 'application/json' }, body: JSON.stringify({ servers: ['echo'] }) });
    expect(held.status).toBe(201);
    const first = model();
    first.start();
    await first.ready();
    const echo = first.view.servers.find((server) => server.name === 'echo')!;
    expect(echo.metadata!.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['echo', 'add', 'pid']));
    expect(echo.metadata!.serverInfo).toMatchObject({ name: 'fixture-echo' });
    expect(echo.metadata!.capabilities).toMatchObject({ tools: {} });
    expect(echo.version).toMatch(/^[0-9a-f]{16}$/);
    expect(echo.version).toBe(toolsVersion(echo.metadata!.tools));
    const broken = first.view.servers.find((server) => server.name === 'broken')!;
    // A command that does not exist: the daemon says the server cannot run at all.
    expect(broken).toMatchObject({ status: 'unavailable', version: undefined, metadata: undefined });
    expect(broken.error).toMatch(/no-such-server/);

    const second = model();
    second.start();
    await second.ready();
    expect(second.view.servers.map((server) => [server.name, server.version])).toEqual(first.view.servers.map((server) => [server.name, server.version]));
    expect(statusSummary(first.view).text).toMatch(/^\$\(server-process\) 1\/2 · \d+ sessions · 1\/50$/);
  });

  it('follows the event stream: a restart re-reads the server and changes nothing; new tools change its version', async () => {
    const reads = new Map<string, number>();
    const watched = model({ reads });
    watched.start();
    await watched.ready();
    let changes = 0;
    watched.onChange(() => (changes += 1));
    const before = watched.view.servers.find((server) => server.name === 'echo')!.version;
    const readsBefore = reads.get('echo')!;

    // 1. A restart: the stream says echo is active again; the model reads it again, finds the same tools.
    const restart = await fetch(`${daemon.url}/workspace/mcp/echo/restart`, { method: 'POST', headers: daemon.auth });
    expect(restart.status).toBe(200);
    await vi.waitFor(() => expect(reads.get('echo')).toBeGreaterThan(readsBefore), { timeout: 60_000, interval: 50 });
    await watched.refresh([]);
    expect(changes).toBe(0);
    expect(watched.view.servers.find((server) => server.name === 'echo')!.version).toBe(before);

    // 2. A reload that adds a server: the definitions change.
    await reconfigure({ echo: fixtureConfig('echo.mjs', mark), broken: { command: BROKEN }, lc: fixtureConfig('listChanged.mjs', mark) });
    await vi.waitFor(() => expect(watched.view.servers.map((server) => server.name)).toContain('lc'), { timeout: 60_000, interval: 50 });
    expect(changes).toBeGreaterThanOrEqual(1);

    // 3. A reload that gives echo other tools (another program under the same name): its version changes.
    const settled = changes;
    await reconfigure({ echo: fixtureConfig('listChanged.mjs', mark), broken: { command: BROKEN }, lc: fixtureConfig('listChanged.mjs', mark) });
    await vi.waitFor(() => expect(watched.view.servers.find((server) => server.name === 'echo')!.version).not.toBe(before), { timeout: 60_000, interval: 50 });
    expect(changes).toBeGreaterThan(settled);
    expect(watched.view.servers.find((server) => server.name === 'echo')!.metadata!.tools.map((tool) => tool.name)).toContain('add_tool');
  });

  it('maps each event to what it may change, and ignores event types it does not know', () => {
    expect(effectOf({ type: 'entry_status', serverName: 'a', entryIndex: 0, status: 'active', refs: 0 })).toEqual({ reread: ['a'], status: true });
    expect(effectOf({ type: 'entry_status', serverName: 'a', entryIndex: 0, status: 'draining', refs: 0 })).toEqual({ reread: [], status: true });
    expect(effectOf({ type: 'config_reloaded', trigger: 'api', added: ['b'], removed: ['c'], changed: ['d'] })).toEqual({ reread: ['b', 'd'], status: true, replaced: ['d'] });
    expect(effectOf({ type: 'events_lost', reason: 'buffer_overflow' })).toEqual({ reread: 'all', status: true });
    expect(effectOf({ type: 'server_restarted', serverName: 'a', entries: [] })).toEqual({ reread: ['a'], status: true });
    expect(effectOf({ type: 'something_new_in_a_later_daemon' })).toEqual({ reread: [], status: false });
  });

  it('keeps the servers when the daemon goes away, says why, and links again with a backoff', async () => {
    const armed: { run: () => void; ms: number }[] = [];
    const watched = model({ schedule: (run, ms) => (armed.push({ run, ms }), { cancel: () => undefined }) });
    watched.start();
    await watched.ready();
    const names = watched.view.servers.map((server) => server.name);
    let changes = 0;
    watched.onChange(() => (changes += 1));

    await daemon.stop();
    await vi.waitFor(() => expect(watched.view.link).toBeUndefined(), { timeout: 90_000, interval: 100 });
    expect(watched.view.error).toMatch(/daemon/);
    expect(statusSummary(watched.view)).toMatchObject({ text: '$(debug-disconnect) mcpool', warning: true });
    // The definitions VS Code has stay as they were: a window keeps its servers while the daemon restarts.
    expect(watched.view.servers.map((server) => server.name)).toEqual(names);
    expect(changes).toBe(0);
    // It links again on its own, after a backoff it was given a timer for.
    expect(armed.length).toBeGreaterThanOrEqual(1);
    armed.at(-1)!.run();
    await vi.waitFor(() => expect(armed.length).toBeGreaterThanOrEqual(2), { timeout: 30_000, interval: 50 });
    expect(armed[1]!.ms).toBeGreaterThan(armed[0]!.ms);
  }, 180_000);
});
