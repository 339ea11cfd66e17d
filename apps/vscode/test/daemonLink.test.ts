/**
 * Finding the daemon from a window, outside VS Code: with a running daemon (its address from
 * `MCPOOL_URL`, its token from the state directory); starting it when none answers, with the
 * real `mcpool` command; and each way it fails, with its typed code — no token on this machine,
 * a command that does not exist, no daemon and no command.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ErrorCode } from '@mcpool/protocol/errorCodes';
import { BIN } from '../../daemon/test/e2e/bridgeProcess.js';
import { fixtureConfig, isAlive, killMarked, marker } from '../../../test/helpers/processes.js';
import { daemonEnvironment, linkDaemon } from '../src/daemonLink.js';
import { freePort } from '../../../test/helpers/ports.js';

const mark = marker('vscode-link');
const dir = mkdtempSync(join(tmpdir(), 'mcpool-vscode-link-'));
const quiet = { info: () => undefined, error: () => undefined };
const started: number[] = [];

afterAll(() => {
  for (const pid of started.filter(isAlive)) process.kill(pid, 'SIGKILL');
  killMarked(mark);
  rmSync(dir, { recursive: true, force: true });
});


describe('linking a window to the daemon', () => {
  it('starts the daemon with the mcpool command when none answers, then reads its token', async () => {
    const stateDir = join(dir, 'state');
    const port = await freePort();
    const config = join(dir, 'pool.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: { port, watchConfig: false } }));
    const env = { PATH: process.env.PATH, HOME: dir, MCPOOL_STATE_DIR: stateDir, VSCODE_IPC_HOOK: '/tmp/editor.sock' };
    const link = await linkDaemon({ env, config, command: [process.execPath, BIN], logger: quiet, startTimeoutMs: 90_000 });
    started.push(link.startedPid!);
    expect(link).toMatchObject({ baseUrl: `http://127.0.0.1:${port}`, stateDir, startedPid: expect.any(Number) });
    expect(link.token.length).toBeGreaterThanOrEqual(16);
    expect((await link.client.getWorkspaceMcp()).servers.map((server) => server.name)).toEqual(['echo']);
    // The daemon outlives the editor: none of the editor's plumbing is in its environment.
    expect(daemonEnvironment(env)).not.toHaveProperty('VSCODE_IPC_HOOK');

    // A second window finds it running and starts nothing.
    const again = await linkDaemon({ env, config, command: [process.execPath, BIN], logger: quiet });
    expect(again.startedPid).toBeUndefined();
    expect(again.token).toBe(link.token);

    const stop = await fetch(`${link.baseUrl}/workspace/shutdown`, { method: 'POST', headers: { authorization: `Bearer ${link.token}` } });
    expect(stop.status).toBe(202);
    await vi.waitFor(() => expect(isAlive(link.startedPid!)).toBe(false), { timeout: 30_000, interval: 50 });
  }, 180_000);

  it('says MCPOOL_NO_TOKEN when no daemon has ever written a token and none is set', async () => {
    const empty = join(dir, 'empty-state');
    mkdirSync(empty, { recursive: true });
    await expect(linkDaemon({ env: { MCPOOL_URL: `http://127.0.0.1:${await freePort()}`, MCPOOL_STATE_DIR: empty }, logger: quiet })).rejects.toMatchObject({ code: ErrorCode.NO_TOKEN, message: expect.stringContaining(join(empty, 'token')) });
  });

  it('says MCPOOL_DAEMON_START_FAILED, naming the command, when the mcpool command does not exist', async () => {
    const port = await freePort();
    await expect(
      linkDaemon({ env: { MCPOOL_URL: `http://127.0.0.1:${port}`, MCPOOL_STATE_DIR: join(dir, 'state-missing') }, command: [join(dir, 'no-such-mcpool')], logger: quiet }),
    ).rejects.toMatchObject({ code: ErrorCode.DAEMON_START_FAILED, message: expect.stringContaining('no-such-mcpool') });
  });

  it('says MCPOOL_UNREACHABLE when no daemon answers and it may not start one', async () => {
    const port = await freePort();
    const state = join(dir, 'state-token-only');
    mkdirSync(state, { recursive: true });
    writeFileSync(join(state, 'token'), 'a-token-that-is-long-enough\n');
    await expect(linkDaemon({ env: { MCPOOL_URL: `http://127.0.0.1:${port}`, MCPOOL_STATE_DIR: state }, logger: quiet })).rejects.toMatchObject({ code: ErrorCode.UNREACHABLE });
  });
});
