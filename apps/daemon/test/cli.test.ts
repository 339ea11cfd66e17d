/**
 * The `mcpool` command line, run in process through `main()`: `config check`, the client
 * commands against a daemon on a socket, and the exit codes of every failure (usage, bad
 * config, no token, a failed request, an unreachable daemon, a port in use).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main, startDaemon, type RunningDaemon } from 'mcpool';
import { fixtureConfig, killMarked, marker } from '../../../test/helpers/processes.js';
import { memoryDestination } from './helpers.js';

const mark = marker('cli');
let dir: string;
let running: RunningDaemon;
let env: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-cli-'));
  // The client commands are run over servers that start with the daemon and stay held (`start:
  // "eager"`): the table's states, refs and entry numbers are then what a started daemon shows.
  writeFileSync(join(dir, 'good.json'), JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark), web: { url: 'http://127.0.0.1:9/mcp' } }, daemon: { port: 0, start: 'eager', budget: { clientBudget: 9 } } }));
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ mcpServers: { echo: { command: 'node', args: [1] } } }));
  // Not JSON: the file itself is refused (a bad server entry only makes that server unavailable).
  writeFileSync(join(dir, 'broken.json'), '{ "mcpServers": { "echo": ');
  running = await startDaemon({ configPath: join(dir, 'good.json'), env: { MCPOOL_STATE_DIR: join(dir, 'state') }, destination: memoryDestination([]) });
  await running.warmed;
  env = { MCPOOL_STATE_DIR: join(dir, 'state'), MCPOOL_URL: running.url };
});
afterAll(async () => {
  await running?.stop('test');
  rmSync(dir, { recursive: true, force: true });
  killMarked(mark);
});

async function run(args: string[], extraEnv: Record<string, string | undefined> = {}): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['node', 'mcpool', ...args], { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: { ...env, ...extraEnv }, cwd: dir, serve: { destination: memoryDestination([]) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('mcpool config check', () => {
  it('prints the servers and daemon settings of a good file, exit 0', async () => {
    const { code, out } = await run(['config', 'check', 'good.json']);
    expect(code).toBe(0);
    expect(out).toContain(`${join(dir, 'good.json')}: ok`);
    expect(out).toContain('servers: echo (stdio), web (http)');
    expect(out).toContain('daemon: 127.0.0.1:0, budget 9 (warn)');
  });

  it('prints where a bad file is wrong, exit 2', async () => {
    const broken = await run(['config', 'check', 'broken.json']);
    expect(broken.code).toBe(2);
    expect(broken.err).toContain(join(dir, 'broken.json'));
    expect(broken.err).toContain('got invalid JSON at line 1');
    expect((await run(['config', 'check', 'missing.json'])).code).toBe(2);
  });

  it('a bad server entry is that server’s problem: named with its path and code, exit 2', async () => {
    const { code, out, err } = await run(['config', 'check', 'bad.json']);
    expect(code).toBe(2);
    expect(out).toContain(`${join(dir, 'bad.json')}: 1 of 1 server(s) cannot run (serve would run the others)`);
    expect(err).toBe('unavailable: echo: MCPOOL_CONFIG_INVALID: mcpServers.echo.args[0]: expected an array of strings, got a number');
  });

  it('flags a command that does not exist, and an unset variable, beside a good server', async () => {
    writeFileSync(
      join(dir, 'ghost.json'),
      JSON.stringify({
        mcpServers: {
          good: { command: 'node', args: ['x.js'] },
          ghost: { command: 'mcp-server-does-not-exist' },
          lost: { command: '/nowhere/bin/server' },
          relative: { command: './bin/server', cwd: dir },
          gh: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-github'], env: { GITHUB_PERSONAL_ACCESS_TOKEN: '${env:CLI_TEST_UNSET_TOKEN}' } },
        },
      }),
    );
    const { code, out, err } = await run(['config', 'check', 'ghost.json'], { PATH: process.env.PATH });
    expect(code).toBe(2);
    expect(out).toContain('4 of 5 server(s) cannot run');
    expect(out).toContain('servers: good (stdio)');
    expect(err).toContain('unavailable: ghost: MCPOOL_COMMAND_NOT_FOUND: command not found: "mcp-server-does-not-exist" is not on the PATH it would be spawned with');
    expect(err).toContain('unavailable: lost: MCPOOL_COMMAND_NOT_FOUND: command not found: no executable file at /nowhere/bin/server');
    expect(err).toContain(`unavailable: relative: MCPOOL_COMMAND_NOT_FOUND: command not found: no executable file at ${join(dir, 'bin', 'server')}`);
    expect(err).toContain('unavailable: gh: MCPOOL_CONFIG_VARIABLE_UNSET: environment variable CLI_TEST_UNSET_TOKEN is not set (mcpServers.gh.env.GITHUB_PERSONAL_ACCESS_TOKEN needs it)');
  });

  it('accepts a VS Code mcp.json with comments and trailing commas; ${input:…} is named', async () => {
    writeFileSync(join(dir, 'vscode.json'), '// VS Code allows comments in mcp.json\n{\n  "servers": {\n    "fetch": { "command": "node", "args": ["mcp-server-fetch.js",], },\n  },\n}\n');
    const good = await run(['config', 'check', 'vscode.json']);
    expect(good.code).toBe(0);
    expect(good.out).toContain('servers: fetch (stdio)');
    writeFileSync(join(dir, 'inputs.json'), '{ "servers": { "m": { "command": "npx", "env": { "F": "${input:memfile}" } } } }');
    const bad = await run(['config', 'check', 'inputs.json']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('unavailable: m: MCPOOL_CONFIG_INVALID: servers.m.env.F: expected a value mcpool can resolve');
    expect(bad.err).toContain('got ${input:memfile}');
  });
});

describe('client commands', () => {
  it('status prints a table of servers, entries, refs and the budget; --json the raw answer', async () => {
    const { code, out } = await run(['status']);
    expect(code).toBe(0);
    expect(out).toMatch(/^SERVER\s+STATUS\s+STATE\s+MCP\s+ENTRIES\s+REFS\s+DETAIL$/m);
    expect(out).toMatch(/^echo\s+active\s+running · start \d+ ms\s+connected\s+1\s+1\s+#0 active refs=1 per-principal:[0-9a-f]{12}$/m);
    expect(out).toMatch(/^web\s+failed\s+-\s+disconnected\s+0\s+0\s+MCPOOL_[A-Z_]+: /m);
    expect(out).toContain('budget: 1/9 live (warn, ok) · 1 per-principal · sessions: 0 /mcp, 0 REST · ready');
    const json = JSON.parse((await run(['status', '--json'])).out) as { initialized: boolean };
    expect(json.initialized).toBe(true);
  });

  it('restart prints the outcome; --entry asks one entry', async () => {
    expect(await run(['restart', 'echo'])).toMatchObject({ code: 0, out: expect.stringMatching(/^echo: restarted in \d+ ms$/) });
    expect(await run(['restart', 'echo', '--entry', '0'])).toMatchObject({ code: 0, out: expect.stringMatching(/^echo#0: restarted in \d+ ms$/) });
  });

  it('restart of a server that fails to start exits 1 and says why', async () => {
    const failed = await run(['restart', 'web']);
    expect(failed).toMatchObject({ code: 1, out: 'web: not restarted (start_failed)', err: expect.stringMatching(/^web: MCPOOL_[A-Z_]+: /) });
    const json = await run(['restart', 'web', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out)).toMatchObject({ restarted: false, reason: 'start_failed' });
  });

  it('reload re-reads the config and says what changed; a rejected config exits 1', async () => {
    const reloaded = await run(['reload']);
    expect(reloaded).toMatchObject({ code: 0, out: `reloaded ${join(dir, 'good.json')}: added - · removed - · changed - · unchanged echo, web` });
    expect(JSON.parse((await run(['reload', '--json'])).out)).toMatchObject({ unchanged: ['echo', 'web'] });
    const good = readFileSync(join(dir, 'good.json'), 'utf8');
    writeFileSync(join(dir, 'good.json'), '{ "mcpServers": ');
    try {
      expect(await run(['reload'])).toMatchObject({ code: 1, err: expect.stringContaining('409 MCPOOL_CONFIG_REJECTED') });
    } finally {
      writeFileSync(join(dir, 'good.json'), good);
    }
  });

  it('--port names the daemon on 127.0.0.1, for every client command; with --url it is a usage error', async () => {
    for (const command of ['status', 'sessions']) {
      expect((await run([command, '--port', String(running.port)], { MCPOOL_URL: 'http://127.0.0.1:9' })).code, command).toBe(0);
      expect((await run([command, '--url', running.url], { MCPOOL_URL: 'http://127.0.0.1:9' })).code, command).toBe(0);
    }
    expect((await run(['reload', '--port', String(running.port)], { MCPOOL_URL: 'http://127.0.0.1:9' })).code).toBe(0);
    expect((await run(['status', '--port', String(running.port), '--url', running.url])).code).toBe(2);
  });

  it('sessions lists the sessions', async () => {
    expect((await run(['sessions'])).out).toBe('(no sessions)');
    const session = await running.daemon.sessions.create({ id: 'operator', rights: new Set(['read', 'write']) }, { label: 'cli' });
    const { out } = await run(['sessions']);
    expect(out).toContain(session.id);
    expect(out).toMatch(/operator\s+\S+\s+cli\s+echo#0, web \(failed\)/);
    expect(JSON.parse((await run(['sessions', '--json'])).out)).toMatchObject({ sessions: [{ id: session.id }], mcpSessions: [] });
    expect(await run(['sessions', '--close', session.id])).toMatchObject({ code: 0, out: `session ${session.id} ended` });
    expect((await run(['sessions'])).out).toBe('(no sessions)');
    expect(await run(['sessions', '--close', session.id])).toMatchObject({ code: 1, err: expect.stringContaining('404 MCPOOL_NOT_FOUND') });
  });

  it('a failed request exits 1 with the daemon’s code; a bad token too', async () => {
    expect(await run(['restart', 'nope'])).toMatchObject({ code: 1, err: 'error: 404 MCPOOL_NOT_FOUND: no server named "nope"' });
    expect(await run(['status'], { MCPOOL_TOKEN: 'wrong-token-0123456789' })).toMatchObject({ code: 1, err: expect.stringContaining('401 MCPOOL_UNAUTHORIZED') });
  });

  it('no token exits 2 saying where the token should be; an unreachable daemon exits 3', async () => {
    const noToken = await run(['status'], { MCPOOL_STATE_DIR: join(dir, 'elsewhere') });
    expect(noToken.code).toBe(2);
    expect(noToken.err).toContain(join(dir, 'elsewhere', 'token'));
    const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
    const unreachable = await run(['status'], { MCPOOL_URL: 'http://127.0.0.1:9', MCPOOL_TOKEN: token });
    expect(unreachable.code).toBe(3);
    expect(unreachable.err).toContain('cannot reach the mcpool daemon at http://127.0.0.1:9');
  });

  it('takes the daemon address from the config when no URL is given', async () => {
    const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
    writeFileSync(join(dir, 'addr.json'), JSON.stringify({ mcpServers: {}, daemon: { port: running.port } }));
    const { code, out } = await run(['status', '--config', 'addr.json'], { MCPOOL_URL: undefined, MCPOOL_TOKEN: token });
    expect(code).toBe(0);
    expect(out).toContain('echo');
  });
});

describe('usage and serve failures', () => {
  it('help exits 0; an unknown command or a bad option exits 2', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('Exit codes:');
    expect((await run(['frobnicate'])).code).toBe(2);
    expect((await run(['serve', '--port', 'eighty'])).code).toBe(2);
    expect((await run(['restart', 'echo', '--entry', '-1'])).code).toBe(2);
  });

  it('serve with a bad config exits 2; on a port in use exits 3', async () => {
    expect((await run(['serve', '--config', 'broken.json'])).code).toBe(2);
    expect((await run(['serve', '--config', 'good.json', '--port', String(running.port)])).code).toBe(3);
  });
});

describe('mcpool stop (last: it ends the shared daemon)', () => {
  it('stops the daemon through the API and waits until it is gone; a daemon already gone exits 3', async () => {
    const stopped = await run(['stop']);
    expect(stopped).toMatchObject({ code: 0, out: `the daemon at ${running.url} stopped` });
    expect(await running.stopped).toBe(0);
    expect((await run(['stop'])).code).toBe(3);
  }, 60_000);
});
