/**
 * Moving a workspace's own `.vscode/mcp.json` servers into the pool with the `mcpool import`
 * logic, against a real daemon: the servers it can run go to the daemon's config and out of the
 * workspace file (its comments and what stays kept), `${input:…}` ones stay; a `${workspaceFolder}`
 * server is keyed to its folder — the same server of a second folder is another pool server,
 * another process, shown only in that folder's windows; no token lands in any file; undo puts
 * both files back byte for byte.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { applyChanges, undoLastImport } from 'mcpool/import';
import { startDaemonProcess, type DaemonProcess } from '../../daemon/test/e2e/daemonProcess.js';
import { FIXTURES, fixtureConfig, marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { planMove } from '../src/move/planMove.js';
import { readBindings, visibleIn, writeBindings } from '../src/workspaceBindings.js';

const mark = marker('vscode-move');
let daemon: DaemonProcess;
let stateDir: string;
let configFile: string;

/** A folder whose `.vscode/mcp.json` is `text`. */
function workspace(name: string, text: string): string {
  const folder = join(daemon.dir, name);
  mkdirSync(join(folder, '.vscode'), { recursive: true });
  writeFileSync(join(folder, '.vscode', 'mcp.json'), text);
  return folder;
}

const MCP_JSON = `{
  // this project's servers
  "servers": {
    "notes": { "type": "stdio", "command": ${JSON.stringify(process.execPath)}, "args": [${JSON.stringify(`${FIXTURES}echo.mjs`)}, ${JSON.stringify(mark)}, "--root=\${workspaceFolder}"] },
    "plain": { "command": ${JSON.stringify(process.execPath)}, "args": [${JSON.stringify(`${FIXTURES}echo.mjs`)}, ${JSON.stringify(mark)}, "--plain"] },
    "asks": { "command": "tool", "env": { "KEY": "\${input:key}" } },
  },
  "inputs": [{ "id": "key", "type": "promptString", "description": "key" }],
}
`;

async function reload(): Promise<string[]> {
  const response = await fetch(`${daemon.url}/workspace/mcp/reload-all`, { method: 'POST', headers: daemon.auth });
  expect(response.status).toBe(200);
  const status = (await (await fetch(`${daemon.url}/workspace/mcp`, { headers: daemon.auth })).json()) as { servers: { name: string; configured: boolean }[] };
  // A removed server's entry may still drain: only the configured ones count.
  return status.servers.filter((server) => server.configured).map((server) => server.name);
}

beforeAll(async () => {
  daemon = await startDaemonProcess('vscode-move', mark, { echo: fixtureConfig('echo.mjs', mark) });
  stateDir = join(daemon.dir, 'state');
  configFile = join(daemon.dir, 'mcpool.json');
}, 120_000);

afterAll(async () => {
  await daemon?.stop();
});

describe("moving a workspace's servers into the pool", () => {
  it('moves what the daemon can run, keys ${workspaceFolder} servers to their folder, writes no token, and undoes byte for byte', async () => {
    const alpha = workspace('alpha', MCP_JSON);
    const beta = workspace('beta', MCP_JSON);
    const configBefore = readFileSync(configFile, 'utf8');

    // 1. alpha: notes and plain move, asks stays (VS Code alone can prompt for its input).
    const plan = await planMove({ folder: alpha, configFile, baseUrl: daemon.url, env: { HOME: daemon.dir } });
    expect(plan.moved).toEqual([
      { name: 'notes', poolName: 'notes' },
      { name: 'plain', poolName: 'plain' },
    ]);
    expect(plan.skipped).toEqual([{ name: 'asks', reason: expect.stringContaining('${input:') }]);
    expect(plan.bindings).toEqual({ notes: alpha });
    await applyChanges(stateDir, plan.changes);
    await writeBindings(stateDir, plan.bindings, ['echo', 'notes', 'plain']);
    const rest = readFileSync(join(alpha, '.vscode', 'mcp.json'), 'utf8');
    expect(rest).toContain('// this project');
    expect(rest).toContain('"asks"');
    expect(rest).not.toContain('"notes"');
    expect(rest).not.toContain('"plain"');
    const config = readFileSync(configFile, 'utf8');
    expect(config).toContain(`--root=${alpha}`);
    expect(config).not.toContain('${workspaceFolder}');

    // 2. beta: its notes names another folder, so it is another server (a name of its own);
    // plain is the same server as alpha's and is not added twice.
    const second = await planMove({ folder: beta, configFile, baseUrl: daemon.url, env: { HOME: daemon.dir } });
    expect(second.moved).toEqual([
      { name: 'notes', poolName: 'notes-vscode' },
      { name: 'plain', poolName: 'plain' },
    ]);
    expect(second.bindings).toEqual({ 'notes-vscode': beta });
    await applyChanges(stateDir, second.changes);
    await writeBindings(stateDir, second.bindings, ['echo', 'notes', 'plain', 'notes-vscode']);

    // 3. The daemon runs them: one process per workspace for notes, one for plain and echo.
    const names = await reload();
    expect(names.sort()).toEqual(['echo', 'notes', 'notes-vscode', 'plain']);
    const bindings = await readBindings(stateDir);
    expect(visibleIn(names, bindings, [alpha]).sort()).toEqual(['echo', 'notes', 'plain']);
    expect(visibleIn(names, bindings, [beta]).sort()).toEqual(['echo', 'notes-vscode', 'plain']);
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toHaveLength(4), { timeout: 60_000, interval: 100 });
    for (const file of [configFile, join(alpha, '.vscode', 'mcp.json'), join(beta, '.vscode', 'mcp.json')]) expect(readFileSync(file, 'utf8')).not.toContain(daemon.token);

    // 4. Undo puts back the last move (beta's), byte for byte; then the first.
    await undoLastImport(stateDir);
    expect(readFileSync(join(beta, '.vscode', 'mcp.json'), 'utf8')).toBe(MCP_JSON);
    await undoLastImport(stateDir);
    expect(readFileSync(join(alpha, '.vscode', 'mcp.json'), 'utf8')).toBe(MCP_JSON);
    expect(readFileSync(configFile, 'utf8')).toBe(configBefore);
    expect((await reload()).sort()).toEqual(['echo']);
  });

  it('moves nothing from a folder without servers of its own, and reports an unreadable file', async () => {
    const empty = join(daemon.dir, 'empty');
    mkdirSync(empty, { recursive: true });
    expect(await planMove({ folder: empty, configFile, baseUrl: daemon.url, env: { HOME: daemon.dir } })).toEqual({ changes: [], moved: [], skipped: [], bindings: {}, problems: [] });
    const broken = workspace('broken', '{ "servers": { "x": ');
    const plan = await planMove({ folder: broken, configFile, baseUrl: daemon.url, env: { HOME: daemon.dir } });
    expect(plan.moved).toEqual([]);
    expect(plan.problems).toEqual([expect.stringMatching(/not valid JSON/)]);
  });
});
