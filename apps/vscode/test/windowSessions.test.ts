/**
 * A window's daemon sessions, found by their label and ended when it closes — against a real
 * daemon, with MCP clients that connect as VS Code does (its client info, the definition's
 * headers on every request). Also the label as the daemon keeps it: shown with the session beside
 * the client info, bounded, and dropped when it is not printable.
 */
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SESSION_LABEL_HEADER, SESSION_LABEL_MAX } from 'mcpool/local';
import { startDaemonProcess, type DaemonProcess } from '../../daemon/test/e2e/daemonProcess.js';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { linkDaemon, type DaemonLink } from '../src/daemonLink.js';
import { endOrphanedSessions, endWindowSessions, windowLabel } from '../src/windowSessions.js';

const mark = marker('vscode-sessions');
let daemon: DaemonProcess;
let link: DaemonLink;
const clients: Client[] = [];

/** An MCP session on `/mcp/<server>` opened as a VS Code window opens one. */
async function open(server: string, label: string | undefined): Promise<Client> {
  const headers: Record<string, string> = { authorization: `Bearer ${daemon.token}`, ...(label === undefined ? {} : { [SESSION_LABEL_HEADER]: label }) };
  const client = new Client({ name: 'Visual Studio Code', version: '1.139.1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${daemon.url}/mcp/${server}`), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

beforeAll(async () => {
  daemon = await startDaemonProcess('vscode-sessions', mark, { echo: fixtureConfig('echo.mjs', mark), echo2: fixtureConfig('echo.mjs', mark) });
  link = await linkDaemon({ env: { MCPOOL_URL: daemon.url, MCPOOL_STATE_DIR: join(daemon.dir, 'state') }, logger: { info: () => undefined, error: () => undefined } });
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await daemon?.stop();
});

describe("a window's sessions", () => {
  it('are shown with their label and client info, and a closing window ends exactly its own', async () => {
    const mine = windowLabel();
    const other = windowLabel();
    await open('echo', mine);
    await open('echo2', mine);
    await open('echo', other);
    await open('echo2', undefined);
    const listed = await link.client.listWorkspaceSessions();
    const legacy = listed.filter((session) => session.era === 'legacy');
    expect(legacy.filter((session) => session.label === mine).map((session) => session.scope).sort()).toEqual(['echo', 'echo2']);
    expect(legacy.every((session) => session.client?.name === 'Visual Studio Code' && session.client.version === '1.139.1')).toBe(true);

    expect(await endWindowSessions(link.client, mine)).toBe(2);
    const left = (await link.client.listWorkspaceSessions()).filter((session) => session.era === 'legacy');
    expect(left.map((session) => session.label).sort()).toEqual([other, undefined].sort());
    // Ending them again finds nothing: the daemon released them, it does not hold them for the TTL.
    expect(await endWindowSessions(link.client, mine)).toBe(0);
  });

  it("ends the sessions of windows whose extension host is gone, and leaves a live one's", async () => {
    const gone = spawnSync(process.execPath, ['-e', '0']).pid;
    const dead = windowLabel(gone);
    const alive = windowLabel(process.pid);
    await open('echo', dead);
    await open('echo', alive);
    await open('echo', 'someone-else/123');
    expect(await endOrphanedSessions(link.client)).toBe(1);
    const labels = (await link.client.listWorkspaceSessions()).map((session) => session.label);
    expect(labels).not.toContain(dead);
    expect(labels).toEqual(expect.arrayContaining([alive, 'someone-else/123']));
  });

  it('keeps a label bounded and printable', async () => {
    await open('echo', `${'x'.repeat(SESSION_LABEL_MAX)}-cut-here`);
    await open('echo', 'b\u00e4d-label');
    const labels = (await link.client.listWorkspaceSessions()).map((session) => session.label ?? '');
    expect(labels).toContain('x'.repeat(SESSION_LABEL_MAX));
    // Matched whole: other tests' labels carry random UUIDs, whose hex may spell "bad".
    expect(labels.some((label) => label.includes('cut-here') || /^b.?d-label$/u.test(label))).toBe(false);
  });
});
