/**
 * The first screen of the real `mcpool serve` process. On a terminal (a pseudo-terminal from
 * util-linux `script`), once listening it prints how to connect: the `/mcp` URL, the header, and
 * setups for Claude Code, VS Code and a stdio client through the bridge, plus `mcpool ui`. Not on
 * a terminal (a service, a pipe), it logs one JSON line instead: no banner in a service log. The
 * token itself appears in neither: only where it is and commands that read it there.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shellWord } from 'mcpool';

const BIN = fileURLToPath(new URL('../../bin/mcpool.js', import.meta.url));
const SCRIPT = '/usr/bin/script';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

interface Started {
  child: ChildProcess;
  output: () => string;
  tokenFile: string;
  exited: Promise<number | null>;
}

/** `mcpool serve` on a config with no server, on port 0, its state in a fresh directory; `tty` runs it under `script`. */
function serve(tty: boolean): Started {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-first-'));
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify({ mcpServers: {}, daemon: { port: 0, watchConfig: false } }));
  const env = { PATH: process.env.PATH, HOME: dir, SHELL: '/bin/sh', XDG_STATE_HOME: join(dir, 'xdg-state'), MCPOOL_STATE_DIR: join(dir, 'state') };
  const argv = [process.execPath, BIN, 'serve', '--config', configPath];
  const child = tty
    ? spawn(SCRIPT, ['-qfec', argv.map(shellWord).join(' '), '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return { child, output: () => text.replaceAll('\r', ''), tokenFile: join(dir, 'state', 'token'), exited };
}

const waitFor = <T>(read: () => T | undefined, what: string): Promise<T> =>
  vi.waitFor(
    () => {
      const value = read();
      if (value === undefined) throw new Error(`no ${what} yet`);
      return value;
    },
    { timeout: 60_000, interval: 50 },
  );

/** Stops the daemon through its API (the way `mcpool stop` does), so `script` ends with it. */
async function shutdown(url: string, token: string, started: Started): Promise<void> {
  const response = await fetch(`${url}/workspace/shutdown`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
  expect(response.status).toBe(202);
  expect(await started.exited).toBe(0);
}

describe.skipIf(!existsSync(SCRIPT))('the first screen of mcpool serve', () => {
  it('on a terminal: the /mcp URL, the header and copy-paste setups, never the token', { timeout: 120_000 }, async () => {
    const started = serve(true);
    const screen = await waitFor(() => {
      const text = started.output();
      return text.includes('import --rewrite') ? text : undefined;
    }, 'first screen');
    const url = /mcpool is listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(screen)![1]!;
    const token = readFileSync(started.tokenFile, 'utf8').trim();
    const mcp = `${url}/mcp`;
    const readToken = `$(cat ${started.tokenFile})`;

    expect(screen).toContain(`MCP endpoint  ${mcp}`);
    expect(screen).toContain(`Authorization: Bearer <the token in ${started.tokenFile}>`);
    // Claude Code runs the bridge: nothing it writes into ~/.claude.json holds the token.
    expect(screen).toContain(`claude mcp add mcpool -- ${process.execPath} ${BIN} bridge --url ${mcp}`);
    expect(screen).toContain(`curl, or any client given a header: Authorization: Bearer ${readToken}`);
    expect(screen).toMatch(/paste what `.*token` prints/);
    // The VS Code snippet is valid JSON that reads the token from a prompt, not from the file.
    const vscode = JSON.parse(/(\{\n\s+"inputs"[\s\S]*?\n\s+\})\n/.exec(screen)![1]!) as { servers: { mcpool: { type: string; url: string; headers: Record<string, string> } } };
    expect(vscode.servers.mcpool).toEqual({ type: 'http', url: mcp, headers: { Authorization: 'Bearer ${input:mcpool-token}' } });
    const bridge = JSON.parse(/(\{ "mcpServers": .*\})\n/.exec(screen)![1]!) as { mcpServers: { mcpool: { command: string; args: string[] } } };
    expect(bridge.mcpServers.mcpool).toEqual({ command: process.execPath, args: [BIN, 'bridge', '--url', mcp] });
    expect(screen).toMatch(new RegExp(`ui --url ${url.replaceAll('.', '\\.')}\\n`));
    expect(screen).not.toContain(token);

    await shutdown(url, token, started);
    expect(started.output()).not.toContain(token);
  });

  it('not on a terminal: one JSON log line pointing at the dashboard, no banner, never the token', { timeout: 120_000 }, async () => {
    const started = serve(false);
    const lines = () => started.output().split('\n').filter((line) => line.length > 0);
    const line = await waitFor(() => lines().map((l) => JSON.parse(l) as { msg: string; mcp?: string }).find((l) => l.msg.startsWith('clients connect to')), 'next-steps line');
    const url = line.mcp!.replace(/\/mcp$/, '');
    expect(line.msg).toContain(`Authorization: Bearer <the token in ${started.tokenFile}>`);
    expect(line.msg).toContain(`ui --url ${url}\``);
    const token = readFileSync(started.tokenFile, 'utf8').trim();
    await shutdown(url, token, started);
    // Every line of stdout is a JSON log line: the banner went nowhere.
    for (const text of lines()) expect(() => JSON.parse(text) as unknown, text).not.toThrow();
    expect(started.output()).not.toContain('claude mcp add');
    expect(started.output()).not.toContain(token);
  });
});
