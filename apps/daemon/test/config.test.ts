/**
 * Config discovery order, the daemon section (strict, every problem reported with its path, no
 * value echoed), env overrides and flags, the built-in default.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@mcpool/protocol';
import { DEFAULT_SETTINGS, DEMO_SERVER_PATH, canonicalCommand, defaultStateDir, discoverConfig, loadConfig, resolveSettings, userConfigFile } from 'mcpool';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-config-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('discoverConfig', () => {
  it('takes --config, then MCPOOL_CONFIG, then ./.mcp.json, then the user config file, then the built-in default', () => {
    const home = tempDir();
    const cwd = tempDir();
    const flag = join(cwd, 'flag.json');
    const fromEnv = join(cwd, 'env.json');
    for (const file of [flag, fromEnv, join(cwd, '.mcp.json')]) writeFileSync(file, '{}');
    const user = userConfigFile({ env: {}, home, platform: 'linux' });
    mkdirSync(join(home, '.config', 'mcpool'), { recursive: true });
    writeFileSync(user, '{}');
    const env = { MCPOOL_CONFIG: fromEnv };
    expect(discoverConfig({ flag: 'flag.json', env, cwd, home })).toEqual({ kind: 'file', path: flag, origin: 'flag' });
    expect(discoverConfig({ env, cwd, home })).toEqual({ kind: 'file', path: fromEnv, origin: 'env' });
    expect(discoverConfig({ env: {}, cwd, home })).toEqual({ kind: 'file', path: join(cwd, '.mcp.json'), origin: 'cwd' });
    rmSync(join(cwd, '.mcp.json'));
    expect(discoverConfig({ env: {}, cwd, home })).toEqual({ kind: 'file', path: user, origin: 'user' });
    rmSync(user);
    expect(discoverConfig({ env: {}, cwd, home })).toEqual({ kind: 'builtin', searched: [join(cwd, '.mcp.json'), user] });
  });

  it('refuses an explicitly named file that does not exist, naming it', () => {
    const cwd = tempDir();
    const error = configError(() => discoverConfig({ flag: 'nope.json', env: {}, cwd }));
    expect(error.message).toContain(join(cwd, 'nope.json'));
    expect(error.message).toContain('--config');
    expect(configError(() => discoverConfig({ env: { MCPOOL_CONFIG: 'gone.json' }, cwd })).message).toContain('MCPOOL_CONFIG');
  });

  it('puts the user config and the state dir under XDG directories, or home', () => {
    expect(userConfigFile({ env: { XDG_CONFIG_HOME: '/x' }, home: '/h', platform: 'linux' })).toBe('/x/mcpool/config.json');
    expect(userConfigFile({ env: {}, home: '/h', platform: 'darwin' })).toBe('/h/.config/mcpool/config.json');
    expect(defaultStateDir({ env: {}, home: '/h', platform: 'linux' })).toBe('/h/.local/state/mcpool');
    expect(defaultStateDir({ env: { XDG_STATE_HOME: '/s' }, home: '/h' })).toBe('/s/mcpool');
    expect(defaultStateDir({ env: { MCPOOL_STATE_DIR: '/m', XDG_STATE_HOME: '/s' } })).toBe('/m');
  });
});

describe('the daemon section', () => {
  it('defaults to loopback, port 7070, and keeps servers warm', () => {
    expect(resolveSettings({ mcpServers: {} }, {})).toEqual(DEFAULT_SETTINGS);
    expect(DEFAULT_SETTINGS.host).toBe('127.0.0.1');
  });

  it('takes the file, then MCPOOL_* variables, then flags', () => {
    const doc = { daemon: { port: 8000, host: 'localhost', budget: { mode: 'enforce' }, drainDelayMs: 5 } };
    const env = { MCPOOL_PORT: '9000', MCPOOL_BUDGET: '7', MCPOOL_POOLED_TRANSPORTS: 'stdio, http', MCPOOL_ALLOWED_ORIGINS: 'http://localhost:3000' };
    const settings = resolveSettings(doc, env, { host: '127.0.0.1' });
    expect(settings).toMatchObject({ port: 9000, host: '127.0.0.1', budget: { clientBudget: 7, mode: 'enforce' }, drainDelayMs: 5, pooledTransports: ['stdio', 'http'], allowedOrigins: ['http://localhost:3000'] });
    expect(resolveSettings(doc, env, { port: 0 }).port).toBe(0);
  });

  it('reports every problem with its JSON path, unknown keys included, and never echoes a value', () => {
    const doc = { daemon: { port: 'seventy', budget: { clientBudget: 0, mood: 1 }, clients: [{ id: 'ide', tokenEnv: 'not a name', rights: ['root'] }], portt: 1, allowedOrigins: ['secret-origin-value/path'] } };
    const error = configError(() => resolveSettings(doc, {}, {}, '/etc/mcpool.json'));
    const paths = error.data.issues.map((issue) => issue.path);
    expect(paths).toEqual(expect.arrayContaining(['daemon.port', 'daemon.budget.clientBudget', 'daemon.budget', 'daemon.clients[0].tokenEnv', 'daemon.clients[0].rights[0]', 'daemon']));
    expect(error.message).toContain('/etc/mcpool.json');
    expect(error.message).toContain('"portt"');
    expect(error.message).not.toContain('seventy');
    expect(error.message).not.toContain('not a name');
  });

  it('takes the actor heartbeat and the parallel spawn bound, field by field, and refuses values the pool could not run with', () => {
    const settings = resolveSettings({ daemon: { actorHeartbeat: { misses: 6 }, maxParallelSpawns: 2 } }, {});
    expect(settings.actorHeartbeat).toEqual({ intervalMs: 500, timeoutMs: 5000, misses: 6 });
    expect(settings.maxParallelSpawns).toBe(2);
    expect(resolveSettings({}, { MCPOOL_MAX_PARALLEL_SPAWNS: '8' }).maxParallelSpawns).toBe(8);
    const error = configError(() => resolveSettings({ daemon: { actorHeartbeat: { intervalMs: 0, misses: 1.5, every: 3 }, maxParallelSpawns: 0 } }, {}));
    expect(error.data.issues.map((issue) => issue.path)).toEqual(
      expect.arrayContaining(['daemon.actorHeartbeat.intervalMs', 'daemon.actorHeartbeat.misses', 'daemon.actorHeartbeat', 'daemon.maxParallelSpawns']),
    );
  });

  it('starts servers on first use unless daemon.start (or a server’s own start) says eager, and refuses another mode', () => {
    expect(DEFAULT_SETTINGS.start).toBe('lazy');
    expect(resolveSettings({}, {}).start).toBe('lazy');
    expect(resolveSettings({ daemon: { start: 'eager' } }, {}).start).toBe('eager');
    expect(configError(() => resolveSettings({ daemon: { start: 'sometimes' } }, {})).data.issues.map((issue) => issue.path)).toEqual(['daemon.start']);
  });

  it('names the variable of a bad override, never its value', () => {
    const error = configError(() => resolveSettings({}, { MCPOOL_PORT: 'eighty', MCPOOL_BUDGET_MODE: 'strict' }));
    expect(error.data.issues.map((issue) => issue.path).sort()).toEqual(['env.MCPOOL_BUDGET_MODE', 'env.MCPOOL_PORT']);
    expect(error.message).not.toContain('eighty');
  });

  it('refuses duplicate client ids, the reserved id operator, and origins that are not origins', () => {
    const clients = [
      { id: 'a', tokenEnv: 'A', rights: ['read'] },
      { id: 'a', tokenEnv: 'B', rights: ['read'] },
      { id: 'operator', tokenEnv: 'C', rights: ['write'] },
    ];
    const error = configError(() => resolveSettings({ daemon: { clients, allowedOrigins: ['http://x.test/path'] } }, {}));
    expect(error.data.issues.map((issue) => issue.path)).toEqual(['daemon.clients[1].id', 'daemon.clients[2].id', 'daemon.allowedOrigins[0]']);
  });
});

describe('loadConfig', () => {
  it('loads servers and settings from a file, with ${VAR} interpolation from the environment', async () => {
    const dir = tempDir();
    const path = join(dir, 'c.json');
    writeFileSync(path, JSON.stringify({ mcpServers: { echo: { command: 'node', args: ['${ARG}'] } }, daemon: { port: 1234 } }));
    const config = await loadConfig({ kind: 'file', path, origin: 'flag' }, { ARG: 'x.mjs' });
    expect(config.servers.echo).toEqual({ transport: 'stdio', command: 'node', args: ['x.mjs'] });
    expect(config.settings.port).toBe(1234);
    expect(config.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('collects problems in the servers and the daemon section into one error naming the file', async () => {
    const dir = tempDir();
    const path = join(dir, 'c.json');
    writeFileSync(path, JSON.stringify({ mcpServers: { bad: { args: [] } }, daemon: { port: -1 } }));
    const error = await loadConfig({ kind: 'file', path, origin: 'flag' }, {}).then(() => undefined, (e: unknown) => e);
    if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
    expect(error.message).toContain(path);
    expect(error.data.issues.map((issue) => issue.path)).toEqual(['daemon.port', 'mcpServers.bad']);
  });

  it('says where invalid JSON breaks without quoting the file', async () => {
    const dir = tempDir();
    const path = join(dir, 'c.json');
    writeFileSync(path, '{\n  "mcpServers": {\n    "x": { "env": { "TOKEN": "sekret-value-123" } ,, }\n}');
    const error = await loadConfig({ kind: 'file', path, origin: 'flag' }, {}).then(() => undefined, (e: unknown) => e);
    if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
    expect(error.message).toMatch(/invalid JSON at line 3, column \d+/);
    expect(error.message).not.toContain('sekret');
  });

  it('reports an unreadable file', async () => {
    const error = await loadConfig({ kind: 'file', path: '/nonexistent/mcpool.json', origin: 'flag' }, {}).then(() => undefined, (e: unknown) => e);
    if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
    expect(error.message).toContain('ENOENT');
  });

  it('has a built-in default: the bundled demo server run by this node', async () => {
    const config = await loadConfig({ kind: 'builtin', searched: [] }, {});
    // This node, by the name PATH finds it under when that is the same file.
    expect(config.servers.demo).toMatchObject(canonicalCommand({ transport: 'stdio', command: process.execPath, args: [DEMO_SERVER_PATH] }));
    expect(config.settings).toEqual(DEFAULT_SETTINGS);
  });
});

/** A `.vscode/mcp.json` as VS Code writes and users edit it: comments, trailing commas, inputs, variables. */
const VSCODE_MCP_JSON = `// VS Code allows comments in mcp.json
{
  "inputs": [
    // asked once, stored by VS Code
    { "type": "promptString", "id": "api-key", "description": "API key", "password": true },
  ],
  "servers": {
    /* a local server, run from the workspace */
    "memory": {
      "type": "stdio",
      "command": "node",
      "args": ["\${workspaceFolder}/tools/memory.mjs", "--cache", "\${userHome}\${/}.cache",],
      "env": { "MEMORY_FILE_PATH": "\${workspaceFolder}/.memory.json", "TOKEN": "\${env:MY_TOKEN}" },
      "envFile": "\${workspaceFolder}/.env", // VS Code only: ignored with a warning
    },
    "remote-everything": { "type": "http", "url": "https://mcp.example.com/mcp", },
  },
}
`;

/** A user `settings.json`: other settings around `mcp.servers`, line and block comments, trailing commas. */
const VSCODE_SETTINGS_JSON = `{
  // editor settings first
  "editor.fontSize": 14,
  "files.exclude": { "**/.git": true, },
  /*
   * MCP servers for every workspace
   */
  "mcp": {
    "servers": {
      "fetch": { "command": "uvx", "args": ["mcp-server-fetch"], },
    },
  },
  "workbench.colorTheme": "Default Dark Modern",
}
`;

describe('VS Code files (JSONC and variables)', () => {
  it('loads a .vscode/mcp.json with comments and trailing commas; ${workspaceFolder} is the folder holding .vscode', async () => {
    const workspace = tempDir();
    mkdirSync(join(workspace, '.vscode'));
    const path = join(workspace, '.vscode', 'mcp.json');
    writeFileSync(path, VSCODE_MCP_JSON);
    const config = await loadConfig({ kind: 'file', path, origin: 'cwd' }, { HOME: '/home/me', MY_TOKEN: 't-1' });
    expect(config.servers.memory).toEqual({
      transport: 'stdio',
      command: 'node',
      args: [`${workspace}/tools/memory.mjs`, '--cache', '/home/me/.cache'],
      env: { MEMORY_FILE_PATH: `${workspace}/.memory.json`, TOKEN: 't-1' },
    });
    expect(config.servers['remote-everything']).toEqual({ transport: 'http', url: 'https://mcp.example.com/mcp' });
    expect(config.warnings.map((warning) => warning.path)).toEqual(['servers.memory.envFile']);
  });

  it('a setting that no longer has an effect still loads, with a warning naming it', async () => {
    const path = join(tempDir(), 'mcpool.json');
    writeFileSync(path, JSON.stringify({ mcpServers: { a: { command: 'node' } }, daemon: { statusPollMs: 500, heartbeatMs: 2000 } }));
    const config = await loadConfig({ kind: 'file', path, origin: 'flag' }, {});
    expect(config.warnings).toEqual([{ path: 'daemon.statusPollMs', message: expect.stringContaining('no effect') as unknown }]);
    expect(config.settings.heartbeatMs).toBe(2000);
    expect(Object.hasOwn(config.settings, 'statusPollMs')).toBe(false);
  });

  it('any other file: ${workspaceFolder} is the folder it is in', async () => {
    const dir = tempDir();
    const path = join(dir, '.mcp.json');
    writeFileSync(path, '{ "mcpServers": { "a": { "command": "node", "cwd": "${workspaceFolder}", }, }, }');
    expect((await loadConfig({ kind: 'file', path, origin: 'cwd' }, {})).servers.a?.cwd).toBe(dir);
  });

  it('loads a user settings.json with comments and trailing commas (mcp.servers among other settings)', async () => {
    const path = join(tempDir(), 'settings.json');
    writeFileSync(path, VSCODE_SETTINGS_JSON);
    const config = await loadConfig({ kind: 'file', path, origin: 'flag' }, {});
    // Read whole; whether `uvx` is installed here decides only whether it can run.
    expect(config.servers.fetch ?? config.unavailable.fetch?.config).toEqual({ transport: 'stdio', command: 'uvx', args: ['mcp-server-fetch'] });
  });

  it('${input:…} makes that server unavailable, naming the input and the path', async () => {
    const path = join(tempDir(), 'mcp.json');
    writeFileSync(path, '{\n  // prompts in VS Code\n  "servers": { "memory": { "command": "npx", "env": { "MEMORY_FILE_PATH": "${input:memfile}" } } }\n}');
    const config = await loadConfig({ kind: 'file', path, origin: 'flag' }, {});
    expect(config.servers).toEqual({});
    expect(config.unavailable.memory).toEqual({ code: 'MCPOOL_CONFIG_INVALID', message: expect.stringContaining('servers.memory.env.MEMORY_FILE_PATH') as unknown });
    expect(config.unavailable.memory!.message).toContain('got ${input:memfile}');
  });

  it('a typo in a server field makes that server unavailable, naming the field and the known one', async () => {
    const path = join(tempDir(), 'mcp.json');
    writeFileSync(path, '{ "servers": { "gh": { "comand": "npx", "args": [] }, "fs": { "command": "npx", "arg": ["-y"] } } }');
    const config = await loadConfig({ kind: 'file', path, origin: 'flag' }, {});
    expect(config.unavailable.gh!.message).toContain('servers.gh.comand: expected a known field (did you mean "command"?), got unknown field "comand"');
    expect(config.unavailable.fs!.message).toContain('servers.fs.arg: expected a known field (did you mean "args"?), got unknown field "arg"');
  });

  it('a JSONC syntax error names the file, line and column', async () => {
    const path = join(tempDir(), 'mcp.json');
    writeFileSync(path, '// c\n{\n  "servers": {\n    "a": { "command": "x" }\n    "b": { "command": "y" }\n  }\n}');
    const error = (await loadConfig({ kind: 'file', path, origin: 'flag' }, {}).catch((e: unknown) => e)) as ConfigError;
    expect(error.message).toBe(`Invalid MCP server config in ${path} at (root): expected a JSON document (comments and trailing commas are fine), got invalid JSON at line 5, column 5: no "," between two items`);
  });
});
