/**
 * `mcpool import` against a fake HOME that holds each client's config in its real format
 * (JSONC with comments and trailing commas, TOML for Codex), run through the real command line.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseJsonc } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import { BIN_PATH as MCPOOL_BIN, loadConfig, main, operatorMcpToken } from 'mcpool';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { marker, pidsWithMarker } from '../../../test/helpers/processes.js';
import { connectClient } from './gatewayHelpers.js';
import { harness, type Harness } from './helpers.js';

const ECHO = fileURLToPath(new URL('../../../test/fixtures/servers/echo.mjs', import.meta.url));
const TOKEN = 'import-test-token-0123456789abcdef';

interface Run {
  code: number;
  out: string;
  err: string;
}

let home: string;
let project: string;
let env: Record<string, string>;

async function run(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['node', 'mcpool', 'import', ...args], { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: { ...env, ...extraEnv }, cwd: project });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

function write(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

/** Every file under a folder with its bytes' hash, to prove a run changed nothing (or undid everything). */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else out[path.slice(root.length)] = createHash('sha256').update(readFileSync(path)).digest('hex');
    }
  };
  walk(root);
  return out;
}

/** The files under `root` (relative paths) whose bytes contain `needle`: a grep of the whole tree. */
function filesContaining(root: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (readFileSync(path).includes(needle)) found.push(path.slice(root.length + 1));
    }
  };
  walk(root);
  return found.sort();
}

/** The value at `path` inside a parsed document. */
function dig(doc: unknown, ...path: string[]): unknown {
  let value = doc;
  for (const key of path) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return value;
}

const echoEntry = (marker: string) => ({ command: process.execPath, args: [ECHO, `--marker=${marker}`] });
const daemonConfigPath = () => join(home, '.config', 'mcpool', 'config.json');

function seedClients(): void {
  const echo = JSON.stringify(echoEntry('same'));
  write(join(home, '.config', 'Claude', 'claude_desktop_config.json'), `{\n  "mcpServers": {\n    "echo": ${echo},\n    "memory": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] }\n  }\n}\n`);
  // Claude Code: the same echo (imported once), a user-scope server with a secret as ${VAR}, and a project's local server.
  write(
    join(home, '.claude.json'),
    JSON.stringify(
      {
        numStartups: 3,
        mcpServers: { echo: echoEntry('same'), github: { type: 'http', url: 'https://api.example.test/mcp', headers: { Authorization: 'Bearer ${GITHUB_TOKEN}' } } },
        projects: { [project]: { mcpServers: { local: { command: 'node', args: ['local.js'] } } } },
      },
      null,
      2,
    ),
  );
  // Cursor: a different server under a name Claude Desktop already uses → renamed.
  write(join(home, '.cursor', 'mcp.json'), `{\n  // my servers\n  "mcpServers": {\n    "memory": { "command": "npx", "args": ["-y", "other-memory"], },\n  },\n}\n`);
  // VS Code user mcp.json (JSONC): one that needs a VS Code prompt (skipped), one disabled.
  write(
    join(home, '.config', 'Code', 'User', 'mcp.json'),
    `// VS Code user MCP servers\n{\n  "inputs": [{ "id": "tok", "type": "promptString", "password": true }],\n  "servers": {\n    "prompted": { "type": "stdio", "command": "srv", "env": { "TOKEN": "\${input:tok}" } },\n    "off": { "command": "x", "disabled": true },\n  },\n}\n`,
  );
  // VS Code workspace file: ${workspaceFolder} is the project.
  write(join(project, '.vscode', 'mcp.json'), `{\n  "servers": {\n    "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "\${workspaceFolder}"] }\n  }\n}\n`);
  write(join(home, '.gemini', 'settings.json'), `{\n  "theme": "dark",\n  "mcpServers": { "weather": { "httpUrl": "https://weather.example.test/mcp", "trust": true, "timeout": 5000 } }\n}\n`);
  write(join(home, '.codex', 'config.toml'), `model = "o4"\n\n[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs-mcp"]\nenv = { API_KEY = "\${DOCS_KEY}" }\n`);
}

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'mcpool-import-'));
  project = join(home, 'work', 'proj');
  mkdirSync(project, { recursive: true });
  const state = join(home, '.local', 'state', 'mcpool');
  mkdirSync(state, { recursive: true });
  writeFileSync(join(state, 'token'), `${TOKEN}\n`, { mode: 0o600 });
  env = { HOME: home, PATH: process.env.PATH ?? '' };
  seedClients();
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

describe('mcpool import', () => {
  it('lists what it found and merges it into the daemon config: identical configs once, clashes renamed, secrets kept as variables', async () => {
    const result = await run([]);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/claude-desktop ~\/\.config\/Claude\/claude_desktop_config\.json: echo, memory/);
    expect(result.out).toMatch(/codex ~\/\.codex\/config\.toml: docs/);
    expect(result.out).toMatch(/skipped\s+prompted .*\$\{input:/);
    expect(result.out).toMatch(/skipped\s+off .*disabled/);
    expect(result.out).toMatch(/renamed\s+memory → memory-cursor/);

    const merged = JSON.parse(readFileSync(daemonConfigPath(), 'utf8')) as { mcpServers: Record<string, Record<string, unknown>> };
    expect(Object.keys(merged.mcpServers).sort()).toEqual(['docs', 'echo', 'fs', 'github', 'local', 'memory', 'memory-cursor', 'weather']);
    expect(merged.mcpServers.github!.headers).toEqual({ Authorization: 'Bearer ${GITHUB_TOKEN}' });
    expect(merged.mcpServers.docs).toEqual({ command: 'npx', args: ['-y', 'docs-mcp'], env: { API_KEY: '${DOCS_KEY}' } });
    expect(merged.mcpServers.fs!.args).toEqual(['-y', '@modelcontextprotocol/server-filesystem', project]);
    // A per-session field stays with the client; the hashed `timeout` comes along.
    expect(merged.mcpServers.weather).toEqual({ httpUrl: 'https://weather.example.test/mcp', timeout: 5000 });
    expect(statSync(daemonConfigPath()).mode & 0o777).toBe(0o600);
    // The daemon's own loader takes the result as it is.
    const loaded = await loadConfig({ kind: 'file', path: daemonConfigPath(), origin: 'flag' }, { GITHUB_TOKEN: 'g', DOCS_KEY: 'd' });
    expect(Object.keys(loaded.servers)).toHaveLength(8);
    // Nothing in a client file changed without --rewrite.
    expect(readFileSync(join(home, '.cursor', 'mcp.json'), 'utf8')).toContain('// my servers');
    // Run again: everything is already there, nothing to write.
    const again = await run([]);
    expect(again.out).toMatch(/nothing to write/);
    expect(again.out).not.toMatch(/^added/m);
  });

  it('--dry-run prints a diff of every file it would touch, holding no token, and writes nothing', async () => {
    const before = tree(home);
    const result = await run(['--rewrite', '--dry-run']);
    expect(result.code).toBe(0);
    expect(tree(home)).toEqual(before);
    expect(result.out).toContain('--- ~/.config/mcpool/config.json');
    expect(result.out).toContain('+++ ~/.cursor/mcp.json');
    expect(result.out).toContain('+++ ~/.codex/config.toml');
    expect(result.out).toContain('+++ ~/work/proj/.vscode/mcp.json');
    expect(result.out).not.toContain(TOKEN);
    expect(result.out).not.toContain(operatorMcpToken(TOKEN));
    expect(result.out).toMatch(/dry run: 7 file\(s\) would change/);
  });

  it('--rewrite points every client at the pool, keeps comments, writes no token anywhere, and --undo leaves every file byte-identical', async () => {
    const before = tree(home);
    const result = await run(['--rewrite']);
    expect(result.code).toBe(0);
    expect(result.out).toContain('VS Code asks once for the mcpool token: paste what `mcpool token` prints');

    // Clients that run stdio servers get the bridge: it reads the token file itself, and starts the daemon when none answers.
    const bridgeTo = (server: string) => ['bridge', '--autostart', '--url', `http://127.0.0.1:7070/mcp/${server}`];
    const cursor = readFileSync(join(home, '.cursor', 'mcp.json'), 'utf8');
    expect(cursor).toContain('// my servers');
    const cursorMemory = (parseJsonc(cursor) as { mcpServers: Record<string, { command: string; args: string[] }> }).mcpServers.memory!;
    expect(cursorMemory.args.slice(-4)).toEqual(bridgeTo('memory-cursor'));
    expect([cursorMemory.command, ...cursorMemory.args.slice(0, -4)]).toEqual([process.execPath, MCPOOL_BIN]);
    const claudeCode: unknown = JSON.parse(readFileSync(join(home, '.claude.json'), 'utf8'));
    expect(dig(claudeCode, 'numStartups')).toBe(3);
    expect((dig(claudeCode, 'mcpServers', 'echo', 'args') as string[]).slice(-4)).toEqual(bridgeTo('echo'));
    expect((dig(claudeCode, 'projects', project, 'mcpServers', 'local', 'args') as string[]).slice(-4)).toEqual(bridgeTo('local'));
    const gemini: unknown = JSON.parse(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8'));
    expect(dig(gemini, 'theme')).toBe('dark');
    expect(dig(gemini, 'mcpServers', 'weather')).toEqual({ command: process.execPath, args: [MCPOOL_BIN, ...bridgeTo('weather')], trust: true });
    const desktop: unknown = JSON.parse(readFileSync(join(home, '.config', 'Claude', 'claude_desktop_config.json'), 'utf8'));
    expect((dig(desktop, 'mcpServers', 'memory', 'args') as string[]).slice(-4)).toEqual(bridgeTo('memory'));
    const codex: unknown = parseToml(readFileSync(join(home, '.codex', 'config.toml'), 'utf8'));
    expect(dig(codex, 'model')).toBe('o4');
    expect((dig(codex, 'mcp_servers', 'docs', 'args') as string[]).slice(-4)).toEqual(bridgeTo('docs'));
    // VS Code (a project file people commit): the /mcp URL, the token asked once and kept in VS Code's secret storage.
    const vscode = parseJsonc(readFileSync(join(project, '.vscode', 'mcp.json'), 'utf8')) as { inputs: Record<string, unknown>[]; servers: Record<string, unknown> };
    expect(vscode.servers.fs).toEqual({ type: 'http', url: 'http://127.0.0.1:7070/mcp/fs', headers: { Authorization: 'Bearer ${input:mcpool-token}' } });
    expect(vscode.inputs).toEqual([expect.objectContaining({ type: 'promptString', id: 'mcpool-token', password: true })]);
    // No file the import wrote (or backed up) holds the operator token or the MCP token: only the daemon's own token file does.
    for (const secret of [TOKEN, operatorMcpToken(TOKEN)]) {
      expect(filesContaining(home, secret)).toEqual([join('.local', 'state', 'mcpool', 'token')].filter(() => secret === TOKEN));
    }
    // The skipped ones are left exactly as they were.
    expect(readFileSync(join(home, '.config', 'Code', 'User', 'mcp.json'), 'utf8')).toContain('${input:tok}');

    // A second run sees pointers, not servers: nothing is imported twice.
    const again = await run(['--rewrite']);
    expect(again.out).toMatch(/nothing to write/);
    expect(again.out).toMatch(/skipped\s+echo .*already points at the pool/);

    const undo = await run(['--undo']);
    expect(undo.code).toBe(0);
    expect(undo.out).toMatch(/removed\s+~\/\.config\/mcpool\/config\.json/);
    const after = tree(home);
    // Only the backup folder (now marked undone) is new.
    for (const path of Object.keys(after)) if (path.includes('import-backups')) delete after[path];
    expect(after).toEqual(before);
    expect(existsSync(daemonConfigPath())).toBe(false);
    expect((await run(['--undo'])).code).toBe(1);
  });

  it('--undo leaves a file edited since the import alone, and says so', async () => {
    await run(['--rewrite']);
    const cursorFile = join(home, '.cursor', 'mcp.json');
    writeFileSync(cursorFile, readFileSync(cursorFile, 'utf8').replace('// my servers', '// edited by hand'));
    const undo = await run(['--undo']);
    expect(undo.code).toBe(1);
    expect(undo.err).toMatch(/left\s+~\/\.cursor\/mcp\.json: changed since the import/);
    expect(readFileSync(cursorFile, 'utf8')).toContain('// edited by hand');
    expect(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8')).toContain('"weather": { "httpUrl": "https://weather.example.test/mcp"');
  });

  it('a client file that does not parse is reported with its line, and the rest still imports', async () => {
    write(join(home, '.codeium', 'windsurf', 'mcp_config.json'), '{\n  "mcpServers": {\n    "x": { "command": }\n  }\n}\n');
    const result = await run(['--from', 'windsurf,codex']);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/windsurf ~\/\.codeium\/windsurf\/mcp_config\.json: not valid JSON: .* at line 3/);
    expect(result.out).toMatch(/added\s+docs/);
    expect((await run(['--from', 'nope'])).code).toBe(2);
  });
});

/** What spawning `node` finds on this PATH: the absolute spelling that is the same file as the bare name. */
function nodeOnPath(): string {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const candidate = join(dir || '.', 'node');
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  throw new Error('no node on PATH');
}

describe('mcpool import: where the clients are pointed', () => {
  it('by default at the host and port of the config imported into; --port and --url say otherwise', async () => {
    write(daemonConfigPath(), JSON.stringify({ mcpServers: {}, daemon: { port: 17070 } }));
    const pointedAt = async (args: string[]): Promise<string> => {
      const result = await run(['--from', 'cursor', '--rewrite', '--dry-run', ...args]);
      expect(result.code, result.err).toBe(0);
      return /"--url",[\s+]*"([^"]+)"/.exec(result.out)![1]!;
    };
    expect(await pointedAt([])).toBe('http://127.0.0.1:17070/mcp/memory');
    expect(await pointedAt(['--port', '18181'])).toBe('http://127.0.0.1:18181/mcp/memory');
    expect(await pointedAt(['--url', 'http://localhost:19191/mcp'])).toBe('http://localhost:19191/mcp/memory');
    expect((await run(['--rewrite', '--port', '1', '--url', 'http://localhost:2'])).code).toBe(2);
    expect((await run(['--rewrite', '--url', 'ftp://x'])).code).toBe(2);
  });

  it('a config other than the user one is named to the bridge, so a daemon it autostarts runs the imported servers', async () => {
    const other = join(home, 'elsewhere.json');
    const result = await run(['--from', 'cursor', '--rewrite', '--config', other]);
    expect(result.code).toBe(0);
    const cursor = parseJsonc(readFileSync(join(home, '.cursor', 'mcp.json'), 'utf8')) as { mcpServers: { memory: { args: string[] } } };
    expect(cursor.mcpServers.memory.args).toEqual([MCPOOL_BIN, 'bridge', '--autostart', '--config', other, '--url', 'http://127.0.0.1:7070/mcp/memory']);
  });
});

describe('mcpool import: equivalent configs are one server', () => {
  it('the same server spelled three ways (type: "stdio" and env: {}, a bare command and its absolute path) is imported once', async () => {
    rmSync(home, { recursive: true, force: true });
    mkdirSync(project, { recursive: true });
    const args = ['-y', '@modelcontextprotocol/server-memory'];
    const npx = join(home, 'bin', 'npx');
    write(npx, '#!/bin/sh\nexit 0\n');
    chmodSync(npx, 0o755);
    const path = `${join(home, 'bin')}:${process.env.PATH ?? ''}`;
    write(join(home, '.config', 'Claude', 'claude_desktop_config.json'), JSON.stringify({ mcpServers: { memory: { command: 'npx', args } } }));
    write(join(home, '.claude.json'), JSON.stringify({ mcpServers: { memory: { type: 'stdio', command: 'npx', args, env: {} } } }));
    write(join(home, '.cursor', 'mcp.json'), JSON.stringify({ mcpServers: { memory: { command: npx, args, headers: {} } } }));
    // A different server after all: another file of the same name is not the same command.
    write(join(home, '.codeium', 'windsurf', 'mcp_config.json'), JSON.stringify({ mcpServers: { memory: { command: '/opt/other/npx', args } } }));
    const result = await run([], { PATH: path });
    expect(result.code, result.err).toBe(0);
    expect(result.out).toMatch(/added\s+memory \(stdio, from claude-desktop, claude-code, cursor\)/);
    expect(result.out).toMatch(/renamed\s+memory → memory-windsurf/);
    const merged = JSON.parse(readFileSync(daemonConfigPath(), 'utf8')) as { mcpServers: Record<string, unknown> };
    expect(merged.mcpServers).toEqual({ memory: { command: 'npx', args }, 'memory-windsurf': { command: '/opt/other/npx', args } });
  });
});

describe('mcpool import, end to end', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('clients rewritten by import reach their server through the running daemon, holding no token: the bridge, and VS Code with `mcpool token`', { timeout: 120_000 }, async () => {
    const mark = marker('import-e2e');
    h = await harness({ mcpServers: {} }, { marks: [mark] });
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const address = h.app.server.address() as { port: number };
    const base = `http://127.0.0.1:${address.port}`;
    // One server, spelled three ways by three clients: one config entry, one process.
    const echo = { command: 'node', args: [ECHO, mark] };
    writeFileSync(join(home, '.claude.json'), JSON.stringify({ mcpServers: { echo: { type: 'stdio', ...echo, env: {} } } }, null, 2));
    write(join(home, '.cursor', 'mcp.json'), JSON.stringify({ mcpServers: { echo: { ...echo, command: nodeOnPath() } } }));
    write(join(project, '.vscode', 'mcp.json'), JSON.stringify({ servers: { echo } }));
    writeFileSync(join(home, '.local', 'state', 'mcpool', 'token'), h.token);

    const result = await run(['--from', 'claude-code,cursor,vscode', '--rewrite', '--config', h.configPath, '--url', base]);
    expect(result.code, result.err).toBe(0);
    expect((JSON.parse(readFileSync(h.configPath, 'utf8')) as { mcpServers: Record<string, unknown> }).mcpServers).toEqual({ echo: { type: 'stdio', ...echo, env: {} } });
    const reload = await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    expect(reload.json()).toMatchObject({ added: ['echo'] });
    for (const secret of [h.token, operatorMcpToken(h.token)]) {
      expect(filesContaining(home, secret)).toEqual(secret === h.token ? [join('.local', 'state', 'mcpool', 'token')] : []);
    }

    // Claude Code runs its rewritten entry as a stdio server: the bridge.
    const pointer = (JSON.parse(readFileSync(join(home, '.claude.json'), 'utf8')) as { mcpServers: { echo: { command: string; args: string[] } } }).mcpServers.echo;
    const stdio = new Client({ name: 'import-e2e', version: '1.0.0' });
    await stdio.connect(new StdioClientTransport({ command: pointer.command, args: pointer.args, env: { HOME: home, PATH: process.env.PATH ?? '' }, stderr: 'ignore' }));
    // VS Code sends its URL with the token it was given once: what `mcpool token` prints.
    const printed: string[] = [];
    const errors: string[] = [];
    expect(await main(['node', 'mcpool', 'token'], { stdout: (t) => printed.push(t), stderr: (t) => errors.push(t), env, cwd: project }), errors.join('\n')).toBe(0);
    expect(printed).toEqual([operatorMcpToken(h.token)]);
    const vscodeEntry = (parseJsonc(readFileSync(join(project, '.vscode', 'mcp.json'), 'utf8')) as { servers: { echo: { url: string; headers: { Authorization: string } } } }).servers.echo;
    const { client: http } = await connectClient(vscodeEntry.url, vscodeEntry.headers.Authorization.replace('${input:mcpool-token}', printed[0]!).replace(/^Bearer /, ''));
    try {
      for (const client of [stdio, http]) {
        expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('echo');
        expect(JSON.stringify((await client.callTool({ name: 'echo', arguments: { text: 'via the pool' } })).content)).toContain('via the pool');
      }
      expect(pidsWithMarker(mark)).toHaveLength(1);
    } finally {
      await Promise.all([stdio.close(), http.close()]);
    }
    // That token uses the pool but cannot start anything: no injected server, no restart, no reload.
    const readOnly = operatorMcpToken(h.token);
    expect((await h.request({ method: 'POST', url: '/sessions', token: readOnly, payload: { mcpServers: { evil: { command: 'touch', args: ['/tmp/x'] } } } })).statusCode).toBe(403);
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/echo/restart', token: readOnly, payload: {} })).statusCode).toBe(403);
    expect((await h.request({ method: 'POST', url: '/workspace/mcp/reload-all', token: readOnly })).statusCode).toBe(403);
  });
});
