import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  KNOWN_CONFIG_FIELDS,
  interpolate,
  normalizeServerConfig,
  parseConfigText,
  parseServerEntries,
  parseServersDocument,
  serverConfigSchema,
  type ServerConfig,
  type ServerConfigInput,
} from '../src/config.js';
import { ErrorCode, PoolError } from '../src/errors.js';

const env = { TOKEN: 'secret-token', HOME: '/home/me', HOST: 'api.example.com' };

/** Runs `fn`, expecting a ConfigError, and returns it. */
function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toBeInstanceOf(PoolError);
    expect((error as ConfigError).code).toBe(ErrorCode.CONFIG_INVALID);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('client formats', () => {
  it('reads Claude Desktop stdio entries', () => {
    const { servers, warnings } = parseServersDocument(
      {
        mcpServers: {
          filesystem: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'] },
          github: { command: 'docker', args: ['run', '-i', 'ghcr.io/github/github-mcp-server'], env: { GITHUB_TOKEN: 'x' } },
        },
      },
      { env },
    );
    expect(warnings).toEqual([]);
    expect(servers).toEqual({
      filesystem: { transport: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'] },
      github: {
        transport: 'stdio',
        command: 'docker',
        args: ['run', '-i', 'ghcr.io/github/github-mcp-server'],
        env: { GITHUB_TOKEN: 'x' },
      },
    });
  });

  it('reads Claude Code http and sse entries with headers', () => {
    const { servers } = parseServersDocument(
      {
        mcpServers: {
          api: { type: 'http', url: 'https://api.example.com/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
          legacy: { type: 'sse', url: 'https://api.example.com/sse' },
        },
      },
      { env },
    );
    expect(servers.api).toEqual({
      transport: 'http',
      url: 'https://api.example.com/mcp',
      headers: { Authorization: 'Bearer secret-token' },
    });
    expect(servers.legacy).toEqual({ transport: 'sse', url: 'https://api.example.com/sse' });
  });

  it('reads a Cursor url with no type as Streamable HTTP', () => {
    const { servers } = parseServersDocument({ mcpServers: { remote: { url: 'https://mcp.example.com/mcp' } } }, { env });
    expect(servers.remote).toEqual({ transport: 'http', url: 'https://mcp.example.com/mcp' });
  });

  it('reads Gemini CLI entries: httpUrl, url, cwd, timeout, trust, tool filters, oauth', () => {
    const { servers, warnings } = parseServersDocument(
      {
        mcpServers: {
          streamed: { httpUrl: 'https://mcp.example.com/mcp', timeout: 5000, oauth: { enabled: true, scopes: ['read'] } },
          // Gemini means SSE by `url`; we try Streamable HTTP and the pool falls back to SSE.
          sse: { url: 'https://mcp.example.com/sse' },
          local: {
            command: 'python',
            args: ['-m', 'server'],
            cwd: './srv',
            timeout: 30000,
            trust: true,
            includeTools: ['search', 'fetch'],
            excludeTools: ['delete'],
            description: 'local tools',
          },
        },
      },
      { env },
    );
    expect(warnings).toEqual([]);
    expect(servers.streamed).toEqual({
      transport: 'http',
      httpUrl: 'https://mcp.example.com/mcp',
      timeout: 5000,
      oauth: { enabled: true, scopes: ['read'] },
    });
    expect(servers.sse).toEqual({ transport: 'http', url: 'https://mcp.example.com/sse' });
    expect(servers.local).toEqual({
      transport: 'stdio',
      command: 'python',
      args: ['-m', 'server'],
      cwd: './srv',
      timeout: 30000,
      trust: true,
      includeTools: ['search', 'fetch'],
      excludeTools: ['delete'],
      description: 'local tools',
    });
  });

  it('reads VS Code mcp.json `servers` with type and the transport alias', () => {
    const { servers } = parseServersDocument(
      {
        inputs: [{ type: 'promptString', id: 'key' }],
        servers: {
          fetch: { type: 'stdio', command: 'uvx', args: ['mcp-server-fetch'] },
          remote: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { 'X-Key': '${env:TOKEN}' } },
          aliased: { transport: 'streamable-http', url: 'https://mcp.example.com/a' },
          camel: { type: 'streamableHttp', url: 'https://mcp.example.com/b' },
        },
      },
      { env },
    );
    expect(servers.fetch).toEqual({ transport: 'stdio', command: 'uvx', args: ['mcp-server-fetch'] });
    expect(servers.remote?.headers).toEqual({ 'X-Key': 'secret-token' });
    expect(servers.aliased?.transport).toBe('http');
    expect(servers.camel?.transport).toBe('http');
  });

  it('reads VS Code settings.json `mcp.servers`', () => {
    const { servers } = parseServersDocument(
      { 'editor.fontSize': 14, mcp: { servers: { git: { type: 'stdio', command: 'uvx', args: ['mcp-server-git'] } } } },
      { env },
    );
    expect(servers).toEqual({ git: { transport: 'stdio', command: 'uvx', args: ['mcp-server-git'] } });
  });

  it('infers websocket from a ws(s):// url and accepts `ws` as a type', () => {
    const { servers } = parseServersDocument(
      { mcpServers: { a: { url: 'wss://mcp.example.com/ws' }, b: { type: 'ws', url: 'ws://localhost:9000' } } },
      { env },
    );
    expect(servers.a?.transport).toBe('websocket');
    expect(servers.b?.transport).toBe('websocket');
  });

  it('lets an explicit type win over inference', () => {
    const { config } = normalizeServerConfig({ type: 'sse', url: 'https://x.example.com/sse' }, { env });
    expect(config.transport).toBe('sse');
  });

  it('accepts an empty server map', () => {
    expect(parseServersDocument({ mcpServers: {} }, { env })).toEqual({ servers: {}, warnings: [] });
  });
});

describe('interpolation', () => {
  it('replaces ${VAR} and ${env:VAR}', () => {
    expect(interpolate('Bearer ${TOKEN}', env, 'x')).toBe('Bearer secret-token');
    expect(interpolate('${env:HOME}/data:${HOME}', env, 'x')).toBe('/home/me/data:/home/me');
    expect(interpolate('', { EMPTY: '' }, 'x')).toBe('');
    expect(interpolate('a${EMPTY}b', { EMPTY: '' }, 'x')).toBe('ab');
  });

  it('does not rescan replacements or read the prototype', () => {
    expect(interpolate('${A}', { A: '${B}', B: 'no' }, 'x')).toBe('${B}');
    expect(() => interpolate('${constructor}', {}, 'x')).toThrow(ConfigError);
  });

  it('reports an unset variable with its name and path', () => {
    const error = configErrorOf(() => interpolate('${TOKEN} ${env:OTHER}', {}, 'mcpServers.github.env.TOKEN'));
    expect(error.message).toContain('mcpServers.github.env.TOKEN');
    expect(error.message).toContain('TOKEN');
    expect(error.message).toContain('OTHER');
    expect(error.data.issues).toHaveLength(2);
  });

  it('interpolates command, args, cwd, env values, url, httpUrl and header values', () => {
    const vars = { BIN: 'node', ARG: 'x.js', DIR: '/w', VAL: 'v', HOST: 'h.example.com' };
    const stdio = normalizeServerConfig(
      { command: '${BIN}', args: ['${env:ARG}'], cwd: '${DIR}', env: { K: '${VAL}', '${VAL}': 'keys stay' } },
      { env: vars },
    ).config;
    expect(stdio).toEqual({ transport: 'stdio', command: 'node', args: ['x.js'], cwd: '/w', env: { K: 'v', '${VAL}': 'keys stay' } });
    const remote = normalizeServerConfig({ url: 'https://${HOST}/mcp', headers: { H: '${VAL}' } }, { env: vars }).config;
    expect(remote).toEqual({ transport: 'http', url: 'https://h.example.com/mcp', headers: { H: 'v' } });
    expect(normalizeServerConfig({ httpUrl: 'https://${HOST}/mcp' }, { env: vars }).config.httpUrl).toBe('https://h.example.com/mcp');
  });

  it('infers the transport from the interpolated url', () => {
    const { config } = normalizeServerConfig({ url: '${WS}' }, { env: { WS: 'wss://x.example.com' } });
    expect(config.transport).toBe('websocket');
  });

  it('defaults to process.env', () => {
    const key = Object.keys(process.env).find((name) => /^[A-Za-z_]\w*$/.test(name) && process.env[name]);
    expect(key).toBeDefined();
    const { config } = normalizeServerConfig({ command: 'x', args: [`\${${key}}`] });
    expect(config.args).toEqual([process.env[key!]]);
  });

  it('names file and path of an unset variable in a document', () => {
    const error = configErrorOf(() =>
      parseServersDocument({ mcpServers: { 'my server': { command: 'x', env: { TOKEN: '${MISSING}' } } } }, { env, file: '/p/.mcp.json' }),
    );
    expect(error.message).toContain('/p/.mcp.json');
    expect(error.message).toContain('mcpServers["my server"].env.TOKEN');
    expect(error.message).toContain('MISSING');
    expect(error.data).toMatchObject({ file: '/p/.mcp.json', path: 'mcpServers["my server"].env.TOKEN' });
  });
});

describe('errors', () => {
  it('names file, path and expectation of a bad field', () => {
    const error = configErrorOf(() =>
      parseServersDocument({ mcpServers: { github: { command: 'x', args: ['ok', 42] } } }, { file: '/home/me/.cursor/mcp.json', env }),
    );
    expect(error.message).toBe(
      'Invalid MCP server config in /home/me/.cursor/mcp.json at mcpServers.github.args[1]: expected an array of strings, got a number',
    );
    expect(error.data).toEqual({
      file: '/home/me/.cursor/mcp.json',
      path: 'mcpServers.github.args[1]',
      expected: 'an array of strings',
      issues: [{ path: 'mcpServers.github.args[1]', expected: 'an array of strings', received: 'got a number' }],
    });
  });

  it('aggregates every problem into one error and returns nothing', () => {
    const doc = {
      mcpServers: {
        good: { command: 'ok' },
        a: { command: 'x', timeout: -5 },
        b: { url: 'ftp://files.example.com' },
      },
    };
    const error = configErrorOf(() => parseServersDocument(doc, { env, file: 'settings.json' }));
    expect(error.message).toMatch(/^Invalid MCP server config in settings\.json, 2 problems:\n/);
    expect(error.message).toContain('- mcpServers.a.timeout: expected a positive integer number of milliseconds, got -5');
    expect(error.message).toContain('- mcpServers.b.url: expected an http:// or https:// URL, got scheme "ftp:"');
    expect(error.data.issues.map((issue) => issue.path)).toEqual(['mcpServers.a.timeout', 'mcpServers.b.url']);
  });

  it('rejects numbers and booleans in env and headers rather than coercing them', () => {
    const error = configErrorOf(() =>
      parseServersDocument({ mcpServers: { s: { command: 'x', env: { PIN: 4711, ON: true } } } }, { env }),
    );
    expect(error.data.issues.map((issue) => issue.path)).toEqual(['mcpServers.s.env.PIN', 'mcpServers.s.env.ON']);
    expect(error.message).toContain('quote numbers');
    // Values are never echoed: env and headers hold secrets.
    expect(error.message).not.toContain('4711');
    const headers = configErrorOf(() => normalizeServerConfig({ url: 'https://x.example.com', headers: { 'X-Id': 7 } }));
    expect(headers.data.path).toBe('headers["X-Id"]');
  });

  it.each([
    [{ command: 'x', timeout: 0 }, 'timeout', 'got 0'],
    [{ command: 'x', timeout: 1.5 }, 'timeout', 'got a non-integer number'],
    [{ command: 'x', timeout: '30' }, 'timeout', 'got a string'],
    [{ command: 'x', maxMessageBytes: 100 }, 'maxMessageBytes', 'got 100'],
    [{ command: 'x', maxMessageBytes: 1e6 + 0.5 }, 'maxMessageBytes', 'got a non-integer number'],
    [{ command: '' }, 'command', 'got an empty string'],
    [{ command: 'x', args: 'a b' }, 'args', 'got a string'],
    [{ command: 'x', includeTools: [1] }, 'includeTools[0]', 'got a number'],
    [{ command: 'x', excludeTools: 'rm' }, 'excludeTools', 'got a string'],
    [{ command: 'x', trust: 'yes' }, 'trust', 'got a string'],
    [{ url: 'https://x.example.com', oauth: { scopes: 'read' } }, 'oauth.scopes', 'got a string'],
    [{ type: 'grpc', command: 'x' }, 'type', 'got "grpc"'],
    [{ url: 'not a url' }, 'url', 'got an unparsable URL'],
    [{ url: 'https://token@x.example.com', type: 'websocket' }, 'url', 'got scheme "https:"'],
    [{ type: 'http', url: 'ws://x.example.com' }, 'url', 'got scheme "ws:"'],
    [{ httpUrl: 'ftp://x.example.com' }, 'httpUrl', 'got scheme "ftp:"'],
    [{ command: 'x', url: 'https://x.example.com' }, '', 'got command and url'],
    [{ args: ['a'] }, '', 'got neither'],
    [{ url: 'https://a.example.com', httpUrl: 'https://b.example.com' }, '', 'got both'],
    [{ type: 'stdio', url: 'https://x.example.com' }, 'command', 'got url instead'],
    [{ type: 'http' }, 'url', 'got none'],
    [{ type: 'http', transport: 'sse', url: 'https://x.example.com' }, 'transport', 'got "sse"'],
    [{ type: 'sse', httpUrl: 'https://x.example.com' }, 'httpUrl', 'got httpUrl'],
    ['npx server', '', 'got a string'],
  ])('rejects %j at %j', (raw, path, received) => {
    const error = configErrorOf(() => normalizeServerConfig(raw, { env }));
    expect(error.data.issues[0]).toMatchObject({ path, received });
    expect(error.data.issues[0]?.expected).toBeTruthy();
  });

  it('never echoes a URL, which may carry credentials', () => {
    const error = configErrorOf(() => normalizeServerConfig({ type: 'websocket', url: 'https://user:pw@x.example.com/?key=k' }));
    expect(error.message).not.toContain('pw');
    expect(error.message).not.toContain('key=k');
  });

  it('prefixes issue paths with opts.path', () => {
    const error = configErrorOf(() => normalizeServerConfig({ command: 'x', args: [1] }, { path: 'mcpServers.s', file: 'f.json' }));
    expect(error.message).toBe('Invalid MCP server config in f.json at mcpServers.s.args[0]: expected an array of strings, got a number');
  });

  it.each([
    [null, '', 'got null'],
    [[], '', 'got an array'],
    [{ other: {} }, '', 'got none'],
    [{ mcpServers: {}, servers: {} }, '', 'got mcpServers and servers'],
    [{ mcpServers: [] }, 'mcpServers', 'got an array'],
    [{ mcpServers: { '': { command: 'x' } } }, 'mcpServers[""]', 'got a blank name'],
    [{ mcpServers: { s: 'npx server' } }, 'mcpServers.s', 'got a string'],
  ])('rejects the document %j', (doc, path, received) => {
    const error = configErrorOf(() => parseServersDocument(doc, { env }));
    expect(error.data.issues).toEqual([expect.objectContaining({ path, received })]);
  });

  it('reports the document root readably', () => {
    const error = configErrorOf(() => parseServersDocument(42));
    expect(error.message).toBe('Invalid MCP server config at (root): expected an object with one of mcpServers, servers or mcp.servers, got a number');
  });
});

describe('warnings', () => {
  it('drops unknown fields with a warning instead of failing', () => {
    const { servers, warnings } = parseServersDocument(
      {
        mcpServers: {
          fs: { command: 'npx', autoApprove: ['read'], alwaysAllow: [], envFile: '.env' },
          api: { url: 'https://x.example.com', oauth: { enabled: true, audience: 'typo' } },
        },
      },
      { env },
    );
    expect(servers.fs).toEqual({ transport: 'stdio', command: 'npx' });
    expect(servers.api?.oauth).toEqual({ enabled: true });
    expect(warnings.map((warning) => warning.path)).toEqual([
      'mcpServers.fs.autoApprove',
      'mcpServers.fs.alwaysAllow',
      'mcpServers.fs.envFile',
      'mcpServers.api.oauth.audience',
    ]);
  });

  it('skips disabled servers, unchecked, with a warning', () => {
    const { servers, warnings } = parseServersDocument(
      {
        mcpServers: {
          on: { command: 'a', disabled: false },
          off: { command: 'b', disabled: true },
          draft: { disabled: true, env: { TOKEN: '${MISSING}' } },
        },
      },
      { env },
    );
    expect(Object.keys(servers)).toEqual(['on']);
    expect(servers.on).toEqual({ transport: 'stdio', command: 'a' });
    expect(warnings).toEqual([
      { path: 'mcpServers.off', message: 'server "off" is disabled; skipped' },
      { path: 'mcpServers.draft', message: 'server "draft" is disabled; skipped' },
    ]);
  });

  it('drops fields that do not apply to the transport, without interpolating them', () => {
    const remote = normalizeServerConfig({ url: 'https://x.example.com', env: { K: '${MISSING}' }, args: ['a'], maxMessageBytes: 1 << 20 }, { env });
    expect(remote.config).toEqual({ transport: 'http', url: 'https://x.example.com' });
    expect(remote.warnings.map((warning) => warning.path)).toEqual(['args', 'env', 'maxMessageBytes']);
    const stdio = normalizeServerConfig({ command: 'x', headers: { A: 'b' }, oauth: null, maxMessageBytes: 1 << 20 }, { env });
    expect(stdio.config).toEqual({ transport: 'stdio', command: 'x', maxMessageBytes: 1 << 20 });
    expect(stdio.warnings).toEqual([{ path: 'headers', message: 'headers does not apply to transport stdio; ignored' }]);
  });

  it('refuses a server named __proto__, constructor or prototype, or holding a control character, with a typed error naming it', () => {
    for (const name of ['__proto__', 'constructor', 'prototype', 'two\nlines', 'bell\u0007']) {
      const doc = JSON.parse(`{"mcpServers":{"ok":{"command":"x"},${JSON.stringify(name)}:{"command":"x"}}}`) as unknown;
      let caught: unknown;
      try {
        parseServersDocument(doc, { env });
      } catch (error) {
        caught = error;
      }
      expect(caught, name).toBeInstanceOf(ConfigError);
      expect((caught as ConfigError).code, name).toBe(ErrorCode.CONFIG_INVALID);
      expect((caught as ConfigError).data.issues, name).toEqual([expect.objectContaining({ path: expect.stringContaining('mcpServers'), received: expect.stringContaining(JSON.stringify(name)) })]);
    }
    // Names that merely look alike are fine.
    expect(Object.keys(parseServersDocument({ mcpServers: { proto: { command: 'x' }, '__proto': { command: 'x' }, Constructor: { command: 'x' } } }, { env }).servers)).toEqual(['proto', '__proto', 'Constructor']);
  });
});

describe('schema', () => {
  it('derives KNOWN_CONFIG_FIELDS from the schema shape', () => {
    expect(KNOWN_CONFIG_FIELDS).toEqual(Object.keys(serverConfigSchema.shape));
    expect(KNOWN_CONFIG_FIELDS).toEqual(expect.arrayContaining(['type', 'transport', 'httpUrl', 'oauth', 'disabled']));
  });
});

describe('sharing', () => {
  it('reads the policy in mcpServers and VS Code servers alike, and leaves it absent when unset', () => {
    const claude = parseServersDocument(
      { mcpServers: { thinking: { command: 'npx', args: ['-y', 'srv'], sharing: 'per-principal' }, plain: { command: 'srv' } } },
      { env },
    ).servers;
    expect(claude.thinking).toEqual({ transport: 'stdio', command: 'npx', args: ['-y', 'srv'], sharing: 'per-principal' });
    expect(claude.plain).not.toHaveProperty('sharing');
    const vscode = parseServersDocument(
      { servers: { a: { type: 'stdio', command: 'srv', sharing: 'per-session' }, b: { type: 'http', url: 'https://x.example.com/mcp', sharing: 'shared' } } },
      { env },
    ).servers;
    expect(vscode.a?.sharing).toBe('per-session');
    expect(vscode.b?.sharing).toBe('shared');
  });

  it('rejects an unknown policy with its path and the policies it expected', () => {
    const error = configErrorOf(() => parseServersDocument({ servers: { memory: { command: 'srv', sharing: 'private' } } }, { file: 'mcp.json', env }));
    expect(error.message).toBe(
      'Invalid MCP server config in mcp.json at servers.memory.sharing: expected a sharing policy (shared | per-workspace | per-principal | per-session), got "private"',
    );
    expect(error.data.path).toBe('servers.memory.sharing');
    const typed = configErrorOf(() => normalizeServerConfig({ command: 'srv', sharing: true }, { path: 'mcpServers.m', env }));
    expect(typed.data.issues).toEqual([{ path: 'mcpServers.m.sharing', expected: 'a sharing policy (shared | per-workspace | per-principal | per-session)', received: 'got true' }]);
  });
});

describe('JSONC text, as VS Code writes it', () => {
  it('accepts line and block comments and trailing commas', () => {
    const text = '// VS Code allows comments in mcp.json\n{\n  /* a block\n     comment */\n  "servers": {\n    "fetch": { "command": "uvx", "args": ["mcp-server-fetch",], }, // trailing\n  },\n}\n';
    expect(parseConfigText(text)).toEqual({ servers: { fetch: { command: 'uvx', args: ['mcp-server-fetch'] } } });
  });

  it('a syntax error names file, line and column and what is wrong, never the text', () => {
    const error = configErrorOf(() => parseConfigText('{\n  "servers": {\n    "x": { "env": { "TOKEN": "sekret-value-123" } "y": 1 }\n}', '/w/.vscode/mcp.json'));
    expect(error.message).toBe('Invalid MCP server config in /w/.vscode/mcp.json at (root): expected a JSON document (comments and trailing commas are fine), got invalid JSON at line 3, column 51: no "," between two items');
    expect(error.message).not.toContain('sekret');
    expect(error.data).toMatchObject({ file: '/w/.vscode/mcp.json', path: '' });
  });

  it('counts lines across CRLF, and says an empty file is empty', () => {
    expect(configErrorOf(() => parseConfigText('{\r\n"a": 1,\r\n"b" 2\r\n}')).message).toContain('line 3, column 5: no ":" after a property name');
    expect(configErrorOf(() => parseConfigText(' \n', 'f.json')).message).toContain('got an empty file');
    expect(configErrorOf(() => parseConfigText('{ "a": "open')).message).toContain('a string that is not closed');
    expect(configErrorOf(() => parseConfigText('{} /* open')).message).toContain('a comment that is not closed');
  });
});

describe('VS Code variables', () => {
  const variables = { workspaceFolder: '/home/me/project', userHome: '/home/me' };

  it('resolves ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome}, ${pathSeparator}, ${/} and ${env:…}', () => {
    expect(interpolate('${workspaceFolder}/data', {}, 'x', variables)).toBe('/home/me/project/data');
    expect(interpolate('${workspaceFolderBasename}', {}, 'x', variables)).toBe('project');
    expect(interpolate('${userHome}${/}.cache${pathSeparator}x', {}, 'x', variables)).toBe('/home/me/.cache/x');
    expect(interpolate('${env:TOKEN}', env, 'x', variables)).toBe('secret-token');
  });

  it('${userHome} falls back to HOME of the variables in use; VS Code’s names win over an env var of the same name', () => {
    expect(interpolate('${userHome}', { HOME: '/h' }, 'x')).toBe('/h');
    expect(interpolate('${userHome}', { USERPROFILE: 'C:\\Users\\me' }, 'x')).toBe('C:\\Users\\me');
    expect(interpolate('${workspaceFolder}', { workspaceFolder: '/from-env' }, 'x', variables)).toBe('/home/me/project');
  });

  it('an unknown ${workspaceFolder} is an error naming it, never the literal', () => {
    const error = configErrorOf(() => interpolate('${workspaceFolder}/x', { workspaceFolder: '/env' }, 'servers.memory.env.WS'));
    expect(error.message).toContain('servers.memory.env.WS: expected ${workspaceFolder} to be known');
    expect(configErrorOf(() => interpolate('${userHome}', {}, 'x')).message).toContain('${userHome} to be known');
  });

  it('${input:id}, ${command:…} and ${config:…} are clear errors naming them', () => {
    const error = configErrorOf(() => interpolate('${input:memfile}', env, 'servers.memory.env.MEMORY_FILE_PATH', variables));
    expect(error.message).toBe(
      'Invalid MCP server config at servers.memory.env.MEMORY_FILE_PATH: expected a value mcpool can resolve (VS Code asks the user for inputs; write the value, or use ${env:NAME}), got ${input:memfile}',
    );
    expect(configErrorOf(() => interpolate('${command:pick}', env, 'x')).message).toContain('got ${command:pick}');
    expect(configErrorOf(() => interpolate('${config:editor.tabSize}', env, 'x')).message).toContain('got ${config:editor.tabSize}');
  });

  it('leaves other ${…} as written (a shell in args may want it)', () => {
    expect(interpolate('${HOME:-/tmp} ${a b} ${}', { HOME: '/h' }, 'x')).toBe('${HOME:-/tmp} ${a b} ${}');
  });

  it('a document passes its variables to every entry', () => {
    const { servers } = parseServersDocument({ servers: { m: { command: 'node', args: ['${workspaceFolder}/s.js'], cwd: '${userHome}' } } }, { env: {}, variables });
    expect(servers.m).toEqual({ transport: 'stdio', command: 'node', args: ['/home/me/project/s.js'], cwd: '/home/me' });
  });
});

describe('unknown server fields', () => {
  it('"comand" is an error naming the field and the one it is probably meant to be', () => {
    const error = configErrorOf(() => parseServersDocument({ mcpServers: { gh: { comand: 'npx', args: ['x'] } } }, { env, file: '/p/.mcp.json' }));
    expect(error.data.issues[0]).toEqual({ path: 'mcpServers.gh.comand', expected: 'a known field (did you mean "command"?)', received: 'got unknown field "comand"' });
    expect(error.message).toContain('mcpServers.gh.comand: expected a known field (did you mean "command"?), got unknown field "comand"');
  });

  it('"arg" is an error naming args, not only a warning', () => {
    const error = configErrorOf(() => normalizeServerConfig({ command: 'npx', arg: ['-y', 'x'] }, { env }));
    expect(error.data.issues).toEqual([{ path: 'arg', expected: 'a known field (did you mean "args"?)', received: 'got unknown field "arg"' }]);
  });

  it('typos of any field, in any case, with swapped letters', () => {
    const nearest = (field: string): string | undefined => {
      try {
        normalizeServerConfig({ command: 'x', [field]: 'v' }, { env });
        return undefined;
      } catch (error) {
        return /did you mean "(\w+)"/.exec((error as Error).message)?.[1];
      }
    };
    expect(nearest('Command')).toBe('command');
    expect(nearest('comamnd')).toBe('command');
    expect(nearest('header')).toBe('headers');
    expect(nearest('envs')).toBe('env');
    expect(nearest('includeTool')).toBe('includeTools');
    expect(nearest('timout')).toBe('timeout');
  });

  it('fields of other clients stay warnings (envFile, dev, autoApprove, gallery, version, name)', () => {
    const { warnings } = normalizeServerConfig({ command: 'x', envFile: '.env', dev: { watch: '*.js' }, autoApprove: [], gallery: true, version: '1', name: 'n' }, { env });
    expect(warnings.map((warning) => warning.path)).toEqual(['envFile', 'dev', 'autoApprove', 'gallery', 'version', 'name']);
  });

  it('an oauth typo is a warning that says the near name', () => {
    const { warnings } = normalizeServerConfig({ url: 'https://x.example.com', oauth: { audience: 'a' } }, { env });
    expect(warnings).toEqual([{ path: 'oauth.audience', message: 'unknown field "audience" ignored (did you mean "audiences"?)' }]);
  });
});

describe('parseServerEntries: one entry’s problem is that entry’s', () => {
  const doc = {
    mcpServers: {
      good: { command: 'node', args: ['a.js'] },
      gh: { command: 'npx', env: { TOKEN: '${env:GH_TOKEN}', OTHER: '${ALSO_UNSET}' } },
      typo: { comand: 'node' },
      off: { command: 'x', disabled: true },
    },
  };

  it('returns the valid servers, and each rejected one with an error holding only its own issues', () => {
    const { servers, rejected, warnings } = parseServerEntries(doc, { env: {}, file: '/p/c.json' });
    expect(servers).toEqual({ good: { transport: 'stdio', command: 'node', args: ['a.js'] } });
    expect(Object.keys(rejected)).toEqual(['gh', 'typo']);
    expect(rejected.gh!.data.issues.map((issue) => [issue.path, issue.unsetVariable])).toEqual([
      ['mcpServers.gh.env.TOKEN', 'GH_TOKEN'],
      ['mcpServers.gh.env.OTHER', 'ALSO_UNSET'],
    ]);
    expect(rejected.gh!.message).toContain('/p/c.json');
    expect(rejected.typo!.data.issues[0]).toEqual({ path: 'mcpServers.typo.comand', expected: 'a known field (did you mean "command"?)', received: 'got unknown field "comand"' });
    expect(rejected.typo!.data.issues.every((issue) => issue.path.startsWith('mcpServers.typo'))).toBe(true);
    expect(warnings).toEqual([{ path: 'mcpServers.off', message: 'server "off" is disabled; skipped' }]);
  });

  it('still refuses a document with no servers map, or a blank name, as a whole', () => {
    expect(() => parseServerEntries({ nope: {} }, { env: {} })).toThrow(ConfigError);
    const blank = configErrorOf(() => parseServerEntries({ mcpServers: { ' ': { command: 'x' }, bad: { command: 1 } } }, { env: {} }));
    // Every problem of the document is in the one error, in document order.
    expect(blank.data.issues.map((issue) => issue.path)).toEqual(['mcpServers[" "]', 'mcpServers.bad.command']);
  });

  it('parseServersDocument stays all or nothing over it', () => {
    const error = configErrorOf(() => parseServersDocument(doc, { env: {} }));
    expect(error.data.issues.map((issue) => issue.path)).toEqual(['mcpServers.gh.env.TOKEN', 'mcpServers.gh.env.OTHER', 'mcpServers.typo.comand', 'mcpServers.typo']);
  });
});

describe('ServerConfigInput: what users write', () => {
  it('types a plain config object without a transport; the normalized ServerConfig needs one', () => {
    const memory: ServerConfigInput = { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] };
    const claudeCode: ServerConfigInput = { type: 'stdio', command: 'npx', env: {} };
    const remote: ServerConfigInput = { url: 'https://mcp.example.com/mcp', headers: { 'X-Api-Key': '${env:KEY}' } };
    // @ts-expect-error the normalized form has its transport resolved
    const normalized: ServerConfig = { command: 'npx' };
    expect(normalizeServerConfig(memory).config.transport).toBe('stdio');
    expect(normalizeServerConfig(claudeCode).config.transport).toBe('stdio');
    expect(normalizeServerConfig(remote, { env: { KEY: 'k' } }).config.transport).toBe('http');
    expect(normalized.command).toBe('npx');
  });
});
