/**
 * `mcpool bridge --autostart` starts a machine-wide daemon: what the daemon does must not depend
 * on the directory its first client happened to run in. The bridge runs in a scratch directory
 * holding a `.mcp.json` and is given a relative `--config`; the daemon it starts runs in the state
 * directory (`/proc/<pid>/cwd`) with that config's absolute path, and never reads the scratch
 * `.mcp.json`. The daemon is then stopped with `mcpool stop`.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { main } from 'mcpool';
import { fixtureConfig, isAlive, killMarked, marker } from '../../../../test/helpers/processes.js';
import { BIN } from './bridgeProcess.js';
import { freePort } from '../../../../test/helpers/ports.js';

const mark = marker('autostart-cwd');
const dir = mkdtempSync(join(tmpdir(), 'mcpool-autostart-'));
afterAll(() => {
  killMarked(mark);
  rmSync(dir, { recursive: true, force: true });
});


describe.runIf(process.platform === 'linux')('--autostart', () => {
  it('runs the daemon in the state directory with the absolute path of the config it was given', async () => {
    const scratch = join(dir, 'client-cwd');
    const state = join(dir, 'state');
    mkdirSync(join(scratch, 'conf'), { recursive: true });
    const port = await freePort();
    writeFileSync(join(scratch, 'conf', 'pool.json'), JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: { port } }));
    // A project file in the client's directory: a daemon started there would pick it up.
    writeFileSync(join(scratch, '.mcp.json'), JSON.stringify({ mcpServers: { project: fixtureConfig('promptsOnly.mjs', mark) }, daemon: { port } }));
    const env = { PATH: process.env.PATH!, HOME: dir, XDG_STATE_HOME: join(dir, 'xdg-state'), XDG_CONFIG_HOME: join(dir, 'xdg-config'), MCPOOL_STATE_DIR: state };
    const stderr: string[] = [];
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'bridge', '--autostart', '--config', 'conf/pool.json'], env, cwd: scratch, stderr: 'pipe' });
    transport.stderr!.on('data', (chunk: Buffer) => stderr.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    const client = new Client({ name: 'autostart-e2e', version: '1.0.0' });
    let pid: number | undefined;
    try {
      await client.connect(transport);
      pid = stderr.map((line) => JSON.parse(line) as { msg: string; pid?: number }).find((line) => line.msg.startsWith('no daemon answered: started'))?.pid;
      expect(pid).toBeGreaterThan(0);
      expect(readlinkSync(`/proc/${pid}/cwd`)).toBe(realpathSync(state));
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      expect(argv.slice(-3)).toEqual(['--config', join(scratch, 'conf', 'pool.json'), '']);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['echo__echo']));
      expect((await client.listTools()).tools.some((tool) => tool.name.startsWith('project__'))).toBe(false);
      await client.close();

      // `mcpool stop` ends it (through the API) and waits until it is gone.
      const out: string[] = [];
      const code = await main(['node', 'mcpool', 'stop', '--port', String(port)], { stdout: (t) => out.push(t), stderr: (t) => out.push(t), env, cwd: scratch });
      expect({ code, out }).toEqual({ code: 0, out: [`the daemon at http://127.0.0.1:${port} stopped`] });
      await vi.waitFor(() => expect(isAlive(pid!)).toBe(false), { timeout: 15_000, interval: 20 });
    } finally {
      await client.close().catch(() => undefined);
      if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 180_000);
});
