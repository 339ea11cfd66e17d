/**
 * The extension in a real VS Code: code-server (VS Code 1.139) with the built `.vsix` installed,
 * windows in headless Chromium, against a real daemon with two fixture servers on 127.0.0.1. No
 * folder has an `mcp.json`.
 *
 * 1. Two windows on two folders show the pool's servers, and VS Code lists their tools
 *    (`vscode.lm.tools`) from the metadata the extension provides, before anything starts: the
 *    daemon has no session of VS Code.
 * 2. A tool called from the editor (`vscode.lm.invokeTool`, through a test-only extension) — VS
 *    Code asks "Run echo", the test says Yes — starts its server on the call, and the answer comes
 *    from the pool.
 * 3. Each window starts the servers it has not yet from "MCP: List Servers": the daemon shows four
 *    sessions whose client info names VS Code (two per window, told apart by their labels), and
 *    exactly one process runs per server (a process set per window would be two each); each
 *    window's `pid` call names the same process.
 * 4. Closing a window ends its sessions in the daemon at once (not after the idle TTL).
 * 5. A window killed outright (its extension host SIGKILLed: no deactivation) leaves its sessions;
 *    the next window that activates ends them.
 * Screenshots of each step go to `test-results/vscode-e2e/`.
 *
 * code-server enables every API proposal for every extension (its `isProposedApiEnabled` answers
 * true), so the metadata path is what runs here; a desktop VS Code without
 * `--enable-proposed-api` ignores the metadata and starts a server from "MCP: List Servers" or for
 * chat, as step 3 does. Without code-server (a developer machine) the test skips and says how to
 * install it.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { WorkspaceSession } from '@mcpool/client';
import { launchChromium } from '../../../daemon/test/e2e/chromium.js';
import { startDaemonProcess, type DaemonProcess } from '../../../daemon/test/e2e/daemonProcess.js';
import { fixtureConfig, marker, pidsWithMarker } from '../../../../test/helpers/processes.js';
import { INSTALL_HINT, codeServerSetup, extensionLogs, packageExtension, startCodeServer, type CodeServer } from './codeServer.js';

const setup = codeServerSetup();
const VSIX = fileURLToPath(new URL('../../dist/mcpool-vscode.vsix', import.meta.url));
const PROBE = fileURLToPath(new URL('./probe', import.meta.url));
const SHOTS = fileURLToPath(new URL('../../../../test-results/vscode-e2e/', import.meta.url));
const EXTENSION_ID = 'mcpool.mcpool-vscode';

const markEcho = marker('vscode-e2e-echo');
const markEcho2 = marker('vscode-e2e-echo2');

let dir: string;
let daemon: DaemonProcess;
let codeServer: CodeServer | undefined;
let browser: Browser;
const probeDir = (): string => join(dir, 'probe');

async function sessions(): Promise<WorkspaceSession[]> {
  const response = await fetch(`${daemon.url}/workspace/sessions`, { headers: daemon.auth });
  return ((await response.json()) as { sessions: WorkspaceSession[] }).sessions;
}

/** `/mcp` sessions VS Code opened (its client info), by label. */
async function vscodeSessions(): Promise<WorkspaceSession[]> {
  return (await sessions()).filter((session) => session.kind === 'mcp' && session.era === 'legacy' && session.client?.name === 'code-server');
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

/**
 * Runs a command from the command palette. The page is brought to the front first (a background
 * tab's workbench may not lay out its palette), and opening the palette is tried a few times: on
 * a loaded machine a key can land while the previous picker is still closing.
 */
async function command(page: Page, title: string): Promise<void> {
  await page.bringToFront();
  const input = page.locator('.quick-input-widget input');
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    try {
      await input.waitFor({ state: 'visible', timeout: 15_000 });
      await input.fill(`>${title}`, { timeout: 15_000 });
      break;
    } catch (error) {
      if (attempt === 4) throw error;
    }
  }
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor();
  await page.keyboard.press('Enter');
}

async function openWindow(folder: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(120_000);
  await page.goto(`${codeServer!.url}/?folder=${encodeURIComponent(folder)}`, { timeout: 240_000, waitUntil: 'domcontentloaded' });
  // The extension's status bar item: it activated, found the daemon and read the pool.
  await page.locator('.statusbar-item', { hasText: 'sessions' }).first().waitFor({ timeout: 240_000 });
  return page;
}

/** What the probe extension of the window on `folder` wrote for `what`, once it has. */
async function probeResult(folder: string, what: string): Promise<Record<string, unknown>> {
  const file = join(probeDir(), `${folder}-${what}.json`);
  return vi.waitFor(
    () => {
      if (!existsSync(file)) throw new Error(`no ${file} yet`);
      return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    },
    { timeout: 120_000, interval: 200 },
  );
}

/** The names of the tools `vscode.lm.tools` lists in the window on `folder` now. */
async function toolNames(page: Page, folder: string): Promise<string[]> {
  rmSync(join(probeDir(), `${folder}-tools.json`), { force: true });
  await command(page, 'mcpool probe: List Tools');
  return ((await probeResult(folder, 'tools')).tools as { name: string }[]).map((tool) => tool.name);
}

/** A tool call made through the probe (`vscode.lm.invokeTool`), confirmed in VS Code's dialog. */
async function callTool(page: Page, folder: string, probe: 'Echo' | 'Pid', onDialog?: () => Promise<void>): Promise<string> {
  const what = `call_${probe.toLowerCase()}`;
  rmSync(join(probeDir(), `${folder}-${what}.json`), { force: true });
  await command(page, `mcpool probe: Call ${probe}`);
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 120_000 });
  expect(await dialog.innerText()).toMatch(/Run (echo|pid)/);
  await onDialog?.();
  await dialog.getByRole('button', { name: 'Yes' }).click();
  const result = await probeResult(folder, what);
  expect(result.error, JSON.stringify(result)).toBeUndefined();
  return (result.parts as string[]).join('');
}

/** Starts code-server with the built extension and the probe. */
async function startVsCode(): Promise<CodeServer> {
  const probe = await packageExtension(PROBE, join(dir, 'probe.vsix'));
  return startCodeServer({
    setup: setup!,
    dir: join(dir, 'code-server'),
    extensions: [VSIX, probe],
    proposedApi: [EXTENSION_ID],
    env: { MCPOOL_URL: daemon.url, MCPOOL_STATE_DIR: join(daemon.dir, 'state'), MCPOOL_PROBE_DIR: probeDir() },
  });
}

/** The row of server `name` in "MCP: List Servers" (its label runs into its state: `echoStopped`, `echo2Running`). */
const serverRow = (name: string): RegExp => new RegExp(`^${name}(?!\\d)`);

/**
 * "MCP: List Servers", the server, "Start Server" — by typing into each picker and Enter, the way a
 * keyboard user does (rows of a list that is still filling are a moving target for clicks).
 * Retried whole: a key that lands while a picker closes is lost on a loaded machine. Done when
 * the daemon has one more session of VS Code.
 */
async function startServer(page: Page, name: string): Promise<void> {
  const before = (await vscodeSessions()).length;
  const input = page.locator('.quick-input-widget input');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  for (let attempt = 1; ; attempt++) {
    try {
      await command(page, 'MCP: List Servers');
      await rows.filter({ hasText: serverRow(name) }).first().waitFor({ timeout: 30_000 });
      await input.fill(name, { timeout: 15_000 });
      await rows.first().filter({ hasText: serverRow(name) }).waitFor({ timeout: 15_000 });
      await page.keyboard.press('Enter');
      await rows.filter({ hasText: 'Start Server' }).first().waitFor({ timeout: 30_000 });
      await input.fill('Start Server', { timeout: 15_000 });
      await rows.first().filter({ hasText: 'Start Server' }).waitFor({ timeout: 15_000 });
      await page.keyboard.press('Enter');
      await vi.waitFor(async () => expect((await vscodeSessions()).length).toBeGreaterThan(before), { timeout: 60_000, interval: 250 });
      return;
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
}

describe.skipIf(setup === undefined)(`VS Code windows share the pool (${setup === undefined ? `skipped: no code-server — ${INSTALL_HINT}` : 'code-server'})`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcpool-vscode-e2e-'));
    mkdirSync(probeDir(), { recursive: true });
    for (const folder of ['alpha', 'beta', 'gamma']) mkdirSync(join(dir, folder));
    expect(existsSync(VSIX), `${VSIX} (npm run build builds it)`).toBe(true);
    // Eager: both servers run before any window uses them, so "one process per server" holds for
    // echo2 too, which no window calls (a lazy server would start only on its first call).
    daemon = await startDaemonProcess('vscode-e2e', markEcho, { echo: fixtureConfig('echo.mjs', markEcho, { start: 'eager' }), echo2: fixtureConfig('echo.mjs', markEcho2, { start: 'eager' }) });
    browser = await launchChromium();
  }, 600_000);

  afterEach(async (context) => {
    // A failed run leaves a picture of every window for CI.
    if (context.task.result?.state !== 'fail' || browser === undefined) return;
    for (const [index, page] of browser.contexts().flatMap((each) => each.pages()).entries()) await shot(page, `99-failed-window-${index}`).catch(() => undefined);
  });

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await codeServer?.stop();
    await daemon?.stop();
    for (const mark of [markEcho, markEcho2]) expect(pidsWithMarker(mark)).toEqual([]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  // No retry: a second attempt would find the first one's windows and sessions.
  it('two windows, two folders, no mcp.json: one process per server, tools before any start, a call from the editor, sessions ended', { timeout: 900_000, retry: 0 }, async () => {
    codeServer = await startVsCode();

    // 1. Both windows show the pool's servers and know their tools; nothing has started.
    const [alpha, beta] = await Promise.all([openWindow(join(dir, 'alpha')), openWindow(join(dir, 'beta'))]);
    await shot(alpha, '01-alpha-opened');
    await shot(beta, '02-beta-opened');
    await command(alpha, 'MCP: List Servers');
    const rows = alpha.locator('.quick-input-list .monaco-list-row');
    await rows.filter({ hasText: serverRow('echo2') }).first().waitFor();
    expect(await rows.allInnerTexts()).toEqual(expect.arrayContaining([expect.stringMatching(serverRow('echo')), expect.stringMatching(serverRow('echo2'))]));
    await shot(alpha, '03-alpha-list-servers');
    await alpha.keyboard.press('Escape');
    for (const [page, folder] of [[alpha, 'alpha'], [beta, 'beta']] as const) {
      // VS Code registers the tools a moment after it received the definitions: ask until it has.
      await vi.waitFor(
        async () => {
          const names = await toolNames(page, folder);
          expect(names.filter((name) => name.startsWith('mcp_')).length, names.join(', ')).toBeGreaterThanOrEqual(14);
        },
        { timeout: 180_000, interval: 2000 },
      );
    }
    expect(await vscodeSessions()).toEqual([]);

    // 2. A call from the editor starts its server and is answered by the pool.
    expect(await callTool(alpha, 'alpha', 'Echo', () => shot(alpha, '04-alpha-confirm-tool'))).toBe('hello through the pool');
    expect((await vscodeSessions()).map((session) => session.scope)).toEqual(['echo']);

    // 3. Each window starts the rest: four sessions, two processes; both windows reach one process.
    await startServer(alpha, 'echo2');
    for (const name of ['echo', 'echo2']) await startServer(beta, name);
    const opened = await vscodeSessions();
    expect(opened).toHaveLength(4);
    const byLabel = new Map<string, string[]>();
    for (const session of opened) byLabel.set(session.label!, [...(byLabel.get(session.label!) ?? []), session.scope!]);
    expect([...byLabel.values()].map((scopes) => scopes.sort())).toEqual([
      ['echo', 'echo2'],
      ['echo', 'echo2'],
    ]);
    expect(opened.every((session) => session.client!.version.length > 0)).toBe(true);
    expect(pidsWithMarker(markEcho)).toHaveLength(1);
    expect(pidsWithMarker(markEcho2)).toHaveLength(1);
    const pids = [JSON.parse(await callTool(alpha, 'alpha', 'Pid')) as { pid: number }, JSON.parse(await callTool(beta, 'beta', 'Pid')) as { pid: number }].map((answer) => answer.pid);
    expect(pids[0]).toBe(pids[1]);
    expect([...pidsWithMarker(markEcho), ...pidsWithMarker(markEcho2)]).toContain(pids[0]);
    await command(beta, 'MCP: List Servers');
    await beta.locator('.quick-input-list .monaco-list-row', { hasText: /Running/ }).first().waitFor();
    await shot(beta, '05-beta-servers-running');
    await beta.keyboard.press('Escape');

    // 4. Closing a window ends its sessions; the other window's stay.
    await alpha.close();
    await vi.waitFor(
      async () => {
        const left = await vscodeSessions();
        expect(left.length).toBe(2);
        expect(new Set(left.map((session) => session.label)).size).toBe(1);
      },
      { timeout: 120_000, interval: 500 },
    );
    const betaLabel = (await vscodeSessions())[0]!.label!;
    expect([...byLabel.keys()]).toContain(betaLabel);
    await shot(beta, '06-beta-after-alpha-closed');

    // 5. beta's extension host dies without deactivating: its sessions stay until a window ends them.
    const betaHost = Number(/^vscode\/(\d+)\//.exec(betaLabel)![1]);
    // Killed before its window closes: a closing window may let the host deactivate first.
    process.kill(betaHost, 'SIGKILL');
    await beta.close();
    expect((await vscodeSessions()).map((session) => session.label)).toEqual([betaLabel, betaLabel]);
    const gamma = await openWindow(join(dir, 'gamma'));
    await vi.waitFor(async () => expect(await vscodeSessions()).toEqual([]), { timeout: 120_000, interval: 500 });
    await shot(gamma, '07-gamma-after-orphans-ended');
    await gamma.close();
    report(codeServer);
  });
});

/** Prints what the extension measured in each window (activation → definitions provided) and keeps its logs. */
function report(server: CodeServer): void {
  const lines = extensionLogs(server.userDataDir, 'mcpool.log');
  const provided = lines.filter((line) => line.includes('definitions provided'));
  console.log(`vscode-e2e: ${provided.join('\n')}`);
  expect(provided.length).toBeGreaterThanOrEqual(1);
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(join(SHOTS, `extension-log-${server.pid}.txt`), `${lines.join('\n')}\n`);
}
