/**
 * Server configuration: turns what users already write into one normalized {@link ServerConfig}.
 *
 * Accepted inputs: the `mcpServers` map of Claude Desktop / Claude Code / Cursor / Gemini CLI /
 * Qwen Code, VS Code's `servers` map (`.vscode/mcp.json`) and `mcp.servers` (VS Code
 * `settings.json`). Files are JSONC, as VS Code reads them: comments and trailing commas are
 * fine ({@link parseConfigText}). Parsing is all-or-nothing: every problem in a document is
 * collected into one {@link ConfigError}, and no half-parsed map is ever returned. Fields we do
 * not know (real files carry `autoApprove`, `alwaysAllow`, `envFile`, ...) are dropped with a
 * warning; an unknown field one typo away from a known one (`comand`, `arg`) is an error naming
 * the field it is probably meant to be, since ignoring it would run the server without it.
 *
 * Error and warning paths use one format: JavaScript accessor syntax rooted at the document,
 * e.g. `mcpServers.github.args[1]` or `mcpServers["my server"].env.TOKEN`. Messages never echo
 * values (env values, headers and URLs carry secrets); they name types, schemes and variables.
 */
import { parse as parseJsonc, printParseErrorCode, visit as visitJsonc, type ParseError } from 'jsonc-parser';
import { z } from 'zod';
import { ErrorCode, PoolError } from './errors.js';

/** How the pool reaches a server. */
export type TransportKind = 'stdio' | 'http' | 'sse' | 'websocket';

/**
 * Who may share one server process: everyone whose config has the same
 * fingerprint (`shared`), only the sessions with the same roots (`per-workspace`: a server that
 * reads its roots gets a process per set of roots, and the pool answers its `roots/list`), only
 * the sessions of one principal (`per-principal`), or nobody (`per-session`). A server that keeps
 * conversation state in its process must not be `shared` between unrelated clients.
 */
export type SharingPolicy = 'shared' | 'per-workspace' | 'per-principal' | 'per-session';

/** Every {@link SharingPolicy}, narrowest sharing last. */
export const SHARING_POLICIES: readonly SharingPolicy[] = Object.freeze(['shared', 'per-workspace', 'per-principal', 'per-session'] as const);

/**
 * When a host starts a server: `lazy` on its first use (a server with a catalog is listed from it
 * until then), `eager` before any client asks.
 */
export type StartMode = 'lazy' | 'eager';

/** Every {@link StartMode}. */
export const START_MODES: readonly StartMode[] = Object.freeze(['lazy', 'eager'] as const);

/** OAuth settings of a remote server (Gemini CLI / Qwen Code `oauth` block). */
export interface OAuthConfig {
  enabled?: boolean;
  clientId?: string;
  clientSecret?: string;
  scopes?: string[];
  audiences?: string[];
  redirectUri?: string;
  authorizationUrl?: string;
  tokenUrl?: string;
  registrationUrl?: string;
  tokenParamName?: string;
  /**
   * mcpool: one grant serves every principal's connections (whoever ran `mcpool auth`). Without
   * it a grant is the principal's who authorized it, used for that principal's connections only.
   * @default false
   */
  shared?: boolean;
}

/**
 * One normalized server entry (what `normalizeServerConfig` returns; the transport is
 * resolved). To write a config, use {@link ServerConfigInput}. Absent fields are omitted (never
 * present as `undefined`).
 * Which fields define the shared connection and which are per-session is declared in
 * `fingerprint.ts` (`HASHED_FIELDS`, `SESSION_FIELDS`).
 */
export interface ServerConfig {
  transport: TransportKind;
  command?: string;
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
  url?: string;
  httpUrl?: string;
  headers?: Record<string, string>;
  /** Per-request timeout in milliseconds. */
  timeout?: number;
  /**
   * The longest message the server may send, in bytes (stdio). A longer one is dropped unread
   * and fails the call it answers (`MCPOOL_MESSAGE_TOO_LARGE`); the connection stays up.
   * Absent: the pool's `maxMessageBytes` (64 MiB unless the host set another).
   */
  maxMessageBytes?: number;
  oauth?: OAuthConfig;
  /**
   * Who may share the process. Absent: the pool's default. Not hashed: it is folded into the
   * pool key instead (see `fingerprint.ts`, `POOL_KEY_FIELDS`).
   */
  sharing?: SharingPolicy;
  /**
   * When a host starts the server: `lazy`, on first use (listed from its catalog until then),
   * `eager`, before any client asks. Absent: the host's default. Not hashed (see `HOST_FIELDS`).
   */
  start?: StartMode;
  /**
   * After how long without a call a host stops the server while its sessions keep listing it from
   * its catalog (0: never). Absent: the host's default for the server's era. Not hashed (see `HOST_FIELDS`).
   */
  idleStopMs?: number;
  // Per-session fields: each session applies its own; they never split a pool entry.
  includeTools?: string[];
  excludeTools?: string[];
  trust?: boolean;
  description?: string;
}

/** One problem in a config: where, what was expected, and what was found (never the value itself). */
export interface ConfigIssue {
  path: string;
  expected: string;
  received: string;
  /**
   * Set when the problem is an environment variable that is not set (`${env:NAME}` / `${NAME}`):
   * its name. The entry is well formed; the environment it is read in lacks the variable.
   */
  unsetVariable?: string;
}

/** Something ignored on purpose (unknown field, disabled server); parsing went on. */
export interface ConfigWarning {
  path: string;
  message: string;
}

/** `data` of a {@link ConfigError}: `path`/`expected` are the first issue's; `issues` lists them all. */
export type ConfigErrorData = {
  file?: string;
  path: string;
  expected?: string;
  issues: readonly ConfigIssue[];
};

/**
 * A config is invalid (code `MCPOOL_CONFIG_INVALID`). The message names the file (when known),
 * the JSON path and what was expected; with several issues it lists one per line.
 */
export class ConfigError extends PoolError {
  override name = 'ConfigError';
  declare readonly data: ConfigErrorData;

  /** @param issues at least one issue. */
  constructor(issues: readonly ConfigIssue[], file?: string) {
    const first = issues[0] ?? { path: '', expected: 'a valid config', received: 'got an invalid one' };
    const where = file === undefined ? '' : ` in ${file}`;
    const message =
      issues.length <= 1
        ? `Invalid MCP server config${where} at ${formatIssue(first)}`
        : `Invalid MCP server config${where}, ${issues.length} problems:\n${issues.map((i) => `- ${formatIssue(i)}`).join('\n')}`;
    super(ErrorCode.CONFIG_INVALID, message, {
      data: {
        ...(file === undefined ? {} : { file }),
        path: first.path,
        expected: first.expected,
        issues,
      },
    });
  }
}

function formatIssue(issue: ConfigIssue): string {
  return `${issue.path === '' ? '(root)' : issue.path}: expected ${issue.expected}, ${issue.received}`;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Appends one key to a path: `a.b`, `a[0]`, `a["my server"]`. */
function childPath(parent: string, key: PropertyKey): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  const name = String(key);
  if (IDENTIFIER.test(name)) return parent === '' ? name : `${parent}.${name}`;
  return `${parent}[${JSON.stringify(name)}]`;
}

/**
 * Transport names as written by the various clients. `streamable-http`/`streamableHttp` are
 * spellings of Streamable HTTP; `ws` is short for websocket.
 */
const TRANSPORT_ALIASES = {
  stdio: 'stdio',
  http: 'http',
  'streamable-http': 'http',
  streamableHttp: 'http',
  sse: 'sse',
  websocket: 'websocket',
  ws: 'websocket',
} as const satisfies Record<string, TransportKind>;
type TransportName = keyof typeof TRANSPORT_ALIASES;

const TRANSPORT_EXPECTED = `a transport (${Object.keys(TRANSPORT_ALIASES).join(' | ')})`;
const transportName = z.enum(Object.keys(TRANSPORT_ALIASES) as [TransportName, ...TransportName[]]);
const stringArray = z.array(z.string());
// Numbers in `env` are rejected rather than coerced: JSON has already lost their spelling
// (`1.10` arrives as 1.1, `1e3` as 1000), so a coerced value could silently differ from the file.
const stringMap = z.record(z.string(), z.string());

const oauthSchema = z.object({
  enabled: z.boolean().optional(),
  clientId: z.string().optional(),
  clientSecret: z.string().optional(),
  scopes: stringArray.optional(),
  audiences: stringArray.optional(),
  redirectUri: z.string().optional(),
  authorizationUrl: z.string().optional(),
  tokenUrl: z.string().optional(),
  registrationUrl: z.string().optional(),
  tokenParamName: z.string().optional(),
  /** One grant for every principal (the operator's word); otherwise a grant is its principal's own. */
  shared: z.boolean().optional(),
});

/**
 * The zod schema of one raw server entry, before transport resolution and interpolation.
 * Unknown keys are stripped (callers warn about them), not rejected: real files carry extras.
 * Each field's `.describe()` text is the "expected ..." of its error messages.
 */
export const serverConfigSchema = z.object({
  type: transportName.optional().describe(TRANSPORT_EXPECTED),
  transport: transportName.optional().describe(TRANSPORT_EXPECTED),
  command: z.string().min(1).optional().describe('a non-empty command string'),
  args: stringArray.optional().describe('an array of strings'),
  cwd: z.string().optional().describe('a directory path string'),
  env: stringMap.optional().describe('an object of string values (quote numbers: "PORT": "8080")'),
  url: z.string().optional().describe('a URL string'),
  httpUrl: z.string().optional().describe('a URL string'),
  headers: stringMap.optional().describe('an object of string header values'),
  timeout: z.number().int().positive().optional().describe('a positive integer number of milliseconds'),
  maxMessageBytes: z.number().int().min(1024).optional().describe('a whole number of bytes, at least 1024'),
  oauth: oauthSchema
    .nullable()
    .optional()
    .describe('an OAuth object (enabled/shared: booleans, scopes/audiences: string arrays, other fields: strings)'),
  sharing: z
    .enum(SHARING_POLICIES as [SharingPolicy, ...SharingPolicy[]])
    .optional()
    .describe(`a sharing policy (${SHARING_POLICIES.join(' | ')})`),
  start: z.enum(START_MODES as [StartMode, ...StartMode[]]).optional().describe(`a start mode (${START_MODES.join(' | ')})`),
  idleStopMs: z.number().int().min(0).optional().describe('a whole number of milliseconds (0: never)'),
  includeTools: stringArray.optional().describe('an array of tool names'),
  excludeTools: stringArray.optional().describe('an array of tool names'),
  trust: z.boolean().optional().describe('true or false'),
  description: z.string().optional().describe('a string'),
  disabled: z.boolean().optional().describe('true or false'),
});

type RawEntry = z.infer<typeof serverConfigSchema>;

/** How configs spell a transport: a {@link TransportKind}, or another client's name for one. */
export type TransportSpelling = TransportKind | 'streamable-http' | 'streamableHttp' | 'ws';

/**
 * A server entry as users write it: a Claude/Cursor/Gemini `mcpServers` entry or a VS Code
 * `servers` entry, every field optional (`type`/`transport` is inferred from `command` or `url`).
 * This is what `McpTransportPool.acquire` takes; `normalizeServerConfig` turns it into a
 * {@link ServerConfig}.
 *
 * @example
 * ```ts
 * const memory: ServerConfigInput = { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] };
 * ```
 */
export interface ServerConfigInput {
  /** `stdio`, `http` (also `streamable-http`, `streamableHttp`), `sse`, `websocket` (also `ws`). @default inferred: `command` → stdio, `url` → http (ws:// → websocket) */
  type?: TransportSpelling | undefined;
  /** The same as `type` (some clients write this). */
  transport?: TransportSpelling | undefined;
  command?: string | undefined;
  args?: string[] | undefined;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  url?: string | undefined;
  httpUrl?: string | undefined;
  headers?: Record<string, string> | undefined;
  /** Per-request timeout in milliseconds. */
  timeout?: number | undefined;
  /** The longest message this stdio server may send, in bytes (at least 1024). @default the pool's `maxMessageBytes` */
  maxMessageBytes?: number | undefined;
  oauth?: OAuthConfig | null | undefined;
  sharing?: SharingPolicy | undefined;
  /** `lazy`: a host starts the server on first use; `eager`: before any client asks. @default the host's */
  start?: StartMode | undefined;
  /** After how long without a call a host stops the server (0: never). @default the host's */
  idleStopMs?: number | undefined;
  includeTools?: string[] | undefined;
  excludeTools?: string[] | undefined;
  trust?: boolean | undefined;
  description?: string | undefined;
  /** Skip this entry (a document's `disabled` servers are left out with a warning). */
  disabled?: boolean | undefined;
}

// The input type and the schema describe one shape: the compiler checks they agree, both ways.
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const inputMatchesSchema: [Mutual<ServerConfigInput, z.input<typeof serverConfigSchema>>, Mutual<keyof ServerConfigInput, keyof z.input<typeof serverConfigSchema>>] = [true, true];
void inputMatchesSchema;

/** Every raw field {@link serverConfigSchema} knows, read from its shape. */
export const KNOWN_CONFIG_FIELDS: readonly string[] = Object.freeze(Object.keys(serverConfigSchema.shape));
const KNOWN_OAUTH_FIELDS: readonly string[] = Object.freeze(Object.keys(oauthSchema.shape));

/** Fields that only make sense for one side; on the other they are dropped with a warning. */
const STDIO_ONLY_FIELDS = ['args', 'cwd', 'env', 'maxMessageBytes'] as const;
const REMOTE_ONLY_FIELDS = ['headers', 'oauth'] as const;

interface Findings {
  issues: ConfigIssue[];
  warnings: ConfigWarning[];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Zod error map producing the "got ..." half of a {@link ConfigIssue}, without echoing values. */
const describeReceived: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      return issue.expected === 'int' && typeof issue.input === 'number'
        ? 'got a non-integer number'
        : `got ${kindOf(issue.input)}`;
    case 'too_small':
      // Only `timeout`, `maxMessageBytes` (numbers, not secrets) and `command` (the empty string) have a minimum.
      return typeof issue.input === 'number' ? `got ${issue.input}` : 'got an empty string';
    case 'invalid_value':
      // Only transport names and sharing policies are enums; they are not secrets.
      return `got ${JSON.stringify(issue.input)}`;
    default:
      return undefined;
  }
};

function issueFromZod(issue: z.core.$ZodIssue, base: string): ConfigIssue {
  const field = issue.path[0];
  const schema = field === undefined ? undefined : (serverConfigSchema.shape as Record<PropertyKey, z.ZodType>)[field];
  return {
    path: issue.path.reduce<string>(childPath, base),
    expected: schema?.description ?? 'a valid value',
    received: issue.message,
  };
}

/**
 * Values of the variables VS Code predefines, as far as they mean something outside VS Code.
 * `${workspaceFolder}` and `${userHome}` are errors when unknown here, never left as written.
 */
export interface ConfigVariables {
  /** `${workspaceFolder}`: the workspace a `.vscode/mcp.json` belongs to. @default unknown (an error where used) */
  workspaceFolder?: string;
  /** `${userHome}`. @default `HOME` (else `USERPROFILE`) of the variables in use */
  userHome?: string;
}

const VARIABLE = /\$\{([^${}]*)\}/g;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** VS Code's variables that only VS Code can resolve (it prompts, runs a command, reads its settings). */
const VSCODE_ONLY = /^(input|command|config):(.*)$/s;

function basename(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, '');
  return trimmed.slice(Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\')) + 1);
}

/**
 * Replaces, in `value`, VS Code's variables `${workspaceFolder}`, `${workspaceFolderBasename}`,
 * `${userHome}`, `${pathSeparator}` and `${/}`, and the environment variables `${env:VAR}` and
 * `${VAR}` (from `env`; an empty string is a value). VS Code's `${input:id}`, `${command:id}` and
 * `${config:name}` are errors naming them (VS Code prompts or runs something; mcpool cannot).
 * Any other `${...}` is left as written (a shell in `args` may want it); replacements are not
 * scanned again. There is no escape syntax.
 *
 * @param path JSON path of `value`, used in the error.
 * @throws ConfigError naming each variable that cannot be resolved, and `path`.
 */
export function interpolate(value: string, env: Record<string, string | undefined>, path: string, variables: ConfigVariables = {}): string {
  const issues: ConfigIssue[] = [];
  // hasOwn: a plain-object env must not resolve `${constructor}` from its prototype.
  const envValue = (name: string): string | undefined => (Object.hasOwn(env, name) ? env[name] : undefined);
  const known = (name: string, resolved: string | undefined, what: string): string | undefined => {
    if (resolved === undefined) issues.push({ path, expected: `\${${name}} to be known (${what})`, received: 'got none' });
    return resolved;
  };
  const result = value.replace(VARIABLE, (match, body: string) => {
    let resolved: string | undefined;
    const vscodeOnly = VSCODE_ONLY.exec(body);
    if (vscodeOnly) {
      const hint = vscodeOnly[1] === 'input' ? 'VS Code asks the user for inputs' : `VS Code resolves ${vscodeOnly[1]}: variables itself`;
      issues.push({ path, expected: `a value mcpool can resolve (${hint}; write the value, or use \${env:NAME})`, received: `got \${${body}}` });
      return match;
    }
    if (body === 'workspaceFolder') resolved = known(body, variables.workspaceFolder, 'the folder holding .vscode, or the config file’s folder');
    else if (body === 'workspaceFolderBasename') resolved = known(body, variables.workspaceFolder === undefined ? undefined : basename(variables.workspaceFolder), 'the last part of the workspace folder');
    else if (body === 'userHome') resolved = known(body, variables.userHome ?? envValue('HOME') ?? envValue('USERPROFILE'), 'the user’s home folder');
    else if (body === 'pathSeparator' || body === '/') resolved = process.platform === 'win32' ? '\\' : '/';
    else {
      const name = body.startsWith('env:') ? body.slice(4) : body;
      if (!ENV_NAME.test(name)) return match;
      resolved = envValue(name);
      if (resolved === undefined) issues.push({ path, expected: `environment variable ${name} to be set`, received: 'got unset', unsetVariable: name });
    }
    return resolved ?? match;
  });
  if (issues.length > 0) throw new ConfigError(issues);
  return result;
}

/** Phrases for jsonc-parser's error codes; none quotes the text (it may hold secrets). */
const SYNTAX_PROBLEMS: Readonly<Record<string, string>> = {
  InvalidSymbol: 'an unexpected character',
  InvalidNumberFormat: 'a malformed number',
  PropertyNameExpected: 'no property name where one was expected',
  ValueExpected: 'no value where one was expected',
  ColonExpected: 'no ":" after a property name',
  CommaExpected: 'no "," between two items',
  CloseBraceExpected: 'an object that is not closed with "}"',
  CloseBracketExpected: 'an array that is not closed with "]"',
  EndOfFileExpected: 'more text after the end of the document',
  InvalidCommentToken: 'a malformed comment',
  UnexpectedEndOfComment: 'a comment that is not closed',
  UnexpectedEndOfString: 'a string that is not closed',
  UnexpectedEndOfNumber: 'a number cut short',
  InvalidUnicode: 'a malformed \\u escape',
  InvalidEscapeCharacter: 'a malformed escape',
  InvalidCharacter: 'a control character inside a string',
};

/**
 * Reads the text of a config file as JSONC, as VS Code does: `//` and `/* *\/` comments and
 * trailing commas are accepted. A syntax error names the file, line and column (1-based) and
 * what is wrong there, never the text around it.
 *
 * @throws ConfigError (path `(root)`) for a syntax error or an empty file.
 */
export function parseConfigText(text: string, file?: string): unknown {
  const errors: ParseError[] = [];
  const doc: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false });
  const first = errors[0];
  if (first === undefined) {
    // The parser assigns keys, so a "__proto__" key would set the object's prototype and vanish:
    // a server (or an env variable) named so would be dropped without a word. It is refused instead.
    const protoKeys: ConfigIssue[] = [];
    visitJsonc(text, {
      onObjectProperty: (property, _offset, _length, _line, _column, pathOf) => {
        if (property === '__proto__') protoKeys.push({ path: [...pathOf(), property].reduce<string>((parent, key) => childPath(parent, key), ''), expected: 'a name that is not an Object property name', received: 'got "__proto__"' });
      },
    }, { allowTrailingComma: true, disallowComments: false });
    if (protoKeys.length > 0) throw new ConfigError(protoKeys, file);
    return doc;
  }
  const { line, column } = lineAndColumn(text, first.offset);
  const what = SYNTAX_PROBLEMS[printParseErrorCode(first.error)];
  const problem = text.trim() === '' ? 'got an empty file' : `got invalid JSON at line ${line}, column ${column}${what === undefined ? '' : `: ${what}`}`;
  throw new ConfigError([{ path: '', expected: 'a JSON document (comments and trailing commas are fine)', received: problem }], file);
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lines = before.split(/\r\n|\r|\n/);
  return { line: lines.length, column: lines.at(-1)!.length + 1 };
}

/** Edit distance (insert, delete, substitute, swap two neighbours), case-insensitive. */
function typoDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  const d: number[][] = Array.from({ length: x.length + 1 }, (_, i) => Array.from({ length: y.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[x.length]![y.length]!;
}

/**
 * The known field `key` is probably a typo of: one edit away (two for names longer than four
 * letters). Farther names are other clients' fields (`envFile`, `dev`, `autoApprove`), not typos.
 */
function nearestField(key: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = typoDistance(key, name);
    if (best === undefined || distance < best.distance) best = { name, distance };
  }
  const limit = key.length <= 4 ? 1 : 2;
  return best !== undefined && best.distance <= limit ? best.name : undefined;
}

/**
 * Decides the transport. An explicit `type`/`transport` wins; otherwise `command` means stdio,
 * `httpUrl` Streamable HTTP, a ws(s):// `url` websocket and any other `url` Streamable HTTP.
 * Gemini CLI reads a bare `url` as legacy SSE: the pool serves that by falling back from
 * Streamable HTTP to SSE itself, so one inference covers Gemini and Cursor alike.
 */
function resolveTransport(entry: RawEntry, path: string, found: Findings): TransportKind | undefined {
  const push = (at: string, expected: string, received: string): void => {
    found.issues.push({ path: at, expected, received });
  };
  const fromType = entry.type === undefined ? undefined : TRANSPORT_ALIASES[entry.type];
  const fromTransport = entry.transport === undefined ? undefined : TRANSPORT_ALIASES[entry.transport];
  if (fromType !== undefined && fromTransport !== undefined && fromType !== fromTransport) {
    push(childPath(path, 'transport'), `the same transport as type (${fromType})`, `got ${JSON.stringify(entry.transport)}`);
  }
  if (entry.url !== undefined && entry.httpUrl !== undefined) {
    push(path, 'only one of url and httpUrl', 'got both');
  }
  const remoteField = entry.httpUrl !== undefined ? 'httpUrl' : entry.url !== undefined ? 'url' : undefined;
  if (entry.command !== undefined && remoteField !== undefined) {
    push(path, 'either command (stdio) or url/httpUrl (remote) but not both', `got command and ${remoteField}`);
    return undefined;
  }

  const inferred =
    entry.command !== undefined
      ? 'stdio'
      : entry.httpUrl !== undefined
        ? 'http'
        : entry.url !== undefined
          ? /^wss?:\/\//i.test(entry.url) ? 'websocket' : 'http'
          : undefined;
  const transport = fromType ?? fromTransport ?? inferred;
  if (transport === undefined) {
    push(path, 'command (stdio) or url/httpUrl (remote)', 'got neither');
    return undefined;
  }
  if (transport === 'stdio' && entry.command === undefined) {
    push(childPath(path, 'command'), 'a command, since transport is stdio', remoteField ? `got ${remoteField} instead` : 'got none');
  }
  if (transport !== 'stdio' && remoteField === undefined) {
    push(childPath(path, 'url'), `a URL, since transport is ${transport}`, entry.command ? 'got command instead' : 'got none');
  }
  if (entry.httpUrl !== undefined && transport !== 'http') {
    push(childPath(path, 'httpUrl'), `url, since httpUrl means Streamable HTTP and transport is ${transport}`, 'got httpUrl');
  }
  return transport;
}

function checkUrl(value: string, transport: TransportKind, path: string, found: Findings): void {
  const websocket = transport === 'websocket';
  const expected = websocket ? 'a ws:// or wss:// URL' : 'an http:// or https:// URL';
  let protocol: string;
  try {
    protocol = new URL(value).protocol;
  } catch {
    found.issues.push({ path, expected, received: 'got an unparsable URL' });
    return;
  }
  const allowed = websocket ? ['ws:', 'wss:'] : ['http:', 'https:'];
  if (!allowed.includes(protocol)) found.issues.push({ path, expected, received: `got scheme "${protocol}"` });
}

/**
 * Unknown fields: a likely typo of a known one is an issue naming that field (`typos: 'error'`,
 * for server entries) or a warning saying it; any other unknown field is a warning.
 */
function checkUnknown(raw: Record<string, unknown>, known: readonly string[], path: string, found: Findings, typos: 'error' | 'warning'): void {
  for (const key of Object.keys(raw)) {
    if (known.includes(key)) continue;
    const nearest = nearestField(key, known);
    if (nearest !== undefined && typos === 'error') {
      found.issues.push({ path: childPath(path, key), expected: `a known field (did you mean "${nearest}"?)`, received: `got unknown field "${key}"` });
    } else {
      const hint = nearest === undefined ? '' : ` (did you mean "${nearest}"?)`;
      found.warnings.push({ path: childPath(path, key), message: `unknown field "${key}" ignored${hint}` });
    }
  }
}

/** Drops `undefined` values so absent fields are really absent. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** Validates and normalizes one entry into `found`; returns undefined when it has issues. */
function normalizeEntry(
  raw: unknown,
  env: Record<string, string | undefined>,
  path: string,
  found: Findings,
  variables: ConfigVariables = {},
): ServerConfig | undefined {
  if (!isPlainObject(raw)) {
    found.issues.push({ path, expected: 'an object describing one server', received: `got ${kindOf(raw)}` });
    return undefined;
  }
  // Typos first: `"comand"` explains the "no command" that follows from it.
  checkUnknown(raw, KNOWN_CONFIG_FIELDS, path, found, 'error');
  if (isPlainObject(raw.oauth)) checkUnknown(raw.oauth, KNOWN_OAUTH_FIELDS, childPath(path, 'oauth'), found, 'warning');
  const parsed = serverConfigSchema.safeParse(raw, { error: describeReceived });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) found.issues.push(issueFromZod(issue, path));
    return undefined;
  }
  const entry = parsed.data;

  const before = found.issues.length;
  const text = (value: string, at: string): string => {
    try {
      return interpolate(value, env, at, variables);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      found.issues.push(...error.data.issues);
      return value;
    }
  };
  const textAt = (field: 'command' | 'cwd' | 'url' | 'httpUrl'): string | undefined => {
    const value = entry[field];
    return value === undefined ? undefined : text(value, childPath(path, field));
  };
  const mapAt = (field: 'env' | 'headers'): Record<string, string> | undefined => {
    const map = entry[field];
    const at = childPath(path, field);
    return map && Object.fromEntries(Object.entries(map).map(([k, v]) => [k, text(v, childPath(at, k))]));
  };

  // URLs first: the transport of a `${VAR}` URL is inferred from its interpolated scheme.
  const url = textAt('url');
  const httpUrl = textAt('httpUrl');
  const urlsInterpolated = found.issues.length === before;
  const transport = resolveTransport({ ...entry, url, httpUrl }, path, found);
  if (transport !== undefined && urlsInterpolated) {
    if (url !== undefined) checkUrl(url, transport, childPath(path, 'url'), found);
    if (httpUrl !== undefined) checkUrl(httpUrl, transport, childPath(path, 'httpUrl'), found);
  }

  // Dropping a field that does not apply keeps it from splitting the pool (it would be hashed)
  // and keeps an unset `${VAR}` inside it from failing the whole file.
  const ignored: readonly string[] =
    transport === undefined ? [] : transport === 'stdio' ? REMOTE_ONLY_FIELDS : STDIO_ONLY_FIELDS;
  const keep = (field: keyof RawEntry): boolean => {
    if (!ignored.includes(field) || entry[field] == null) return true;
    found.warnings.push({ path: childPath(path, field), message: `${field} does not apply to transport ${transport}; ignored` });
    return false;
  };

  // Everything is interpolated even when the transport is unresolved, so one pass reports all issues.
  const fields = {
    command: textAt('command'),
    args: keep('args') ? entry.args?.map((arg, i) => text(arg, childPath(childPath(path, 'args'), i))) : undefined,
    cwd: keep('cwd') ? textAt('cwd') : undefined,
    env: keep('env') ? mapAt('env') : undefined,
    url,
    httpUrl,
    headers: keep('headers') ? mapAt('headers') : undefined,
    timeout: entry.timeout,
    maxMessageBytes: keep('maxMessageBytes') ? entry.maxMessageBytes : undefined,
    oauth: keep('oauth') ? (entry.oauth ?? undefined) : undefined,
    sharing: entry.sharing,
    start: entry.start,
    idleStopMs: entry.idleStopMs,
    includeTools: entry.includeTools,
    excludeTools: entry.excludeTools,
    trust: entry.trust,
    description: entry.description,
  };
  if (transport === undefined || found.issues.length > before) return undefined;
  return compact({ transport, ...fields });
}

/** Throws the aggregate {@link ConfigError} if anything was found, else returns `value`. */
function settle<T>(value: T | undefined, found: Findings, file: string | undefined): T {
  if (value === undefined || found.issues.length > 0) throw new ConfigError(found.issues, file);
  return value;
}

/** Options of {@link normalizeServerConfig} and {@link parseServersDocument}. */
export interface ConfigParseOptions {
  /** Variables for `${VAR}` / `${env:VAR}` interpolation. @default process.env */
  env?: Record<string, string | undefined>;
  /** VS Code's `${workspaceFolder}` and `${userHome}`. @default none known (`userHome` from `env`) */
  variables?: ConfigVariables;
  /** File the config came from, named in errors. @default undefined (errors name no file) */
  file?: string;
}

/** Options of {@link normalizeServerConfig}. */
export interface NormalizeServerConfigOptions extends ConfigParseOptions {
  /** JSON path of the entry inside its document, prefixed to issue paths. @default '' (the root) */
  path?: string;
}

/**
 * Validates one raw server entry, resolves its transport and interpolates its strings.
 * `disabled` is accepted but only {@link parseServersDocument} acts on it.
 *
 * @throws ConfigError listing every problem in the entry.
 */
export function normalizeServerConfig(
  raw: unknown,
  opts: NormalizeServerConfigOptions = {},
): { config: ServerConfig; warnings: ConfigWarning[] } {
  const found: Findings = { issues: [], warnings: [] };
  const config = normalizeEntry(raw, opts.env ?? process.env, opts.path ?? '', found, opts.variables);
  return { config: settle(config, found, opts.file), warnings: found.warnings };
}

/** Where a document keeps its server map: Claude/Cursor/Gemini, VS Code mcp.json, VS Code settings. */
function locateServers(doc: unknown, found: Findings): { map: Record<string, unknown>; path: string } | undefined {
  const expected = 'an object with one of mcpServers, servers or mcp.servers';
  if (!isPlainObject(doc)) {
    found.issues.push({ path: '', expected, received: `got ${kindOf(doc)}` });
    return undefined;
  }
  const candidates = (
    [
      ['mcpServers', doc.mcpServers],
      ['servers', doc.servers],
      ['mcp.servers', isPlainObject(doc.mcp) ? doc.mcp.servers : undefined],
    ] as const
  ).filter(([, map]) => map !== undefined);
  const [candidate, ...others] = candidates;
  if (candidate === undefined || others.length > 0) {
    const received = candidate === undefined ? 'got none' : `got ${candidates.map(([p]) => p).join(' and ')}`;
    found.issues.push({ path: '', expected, received });
    return undefined;
  }
  const [path, map] = candidate;
  if (!isPlainObject(map)) {
    found.issues.push({ path, expected: 'an object mapping server names to server entries', received: `got ${kindOf(map)}` });
    return undefined;
  }
  return { map, path };
}

/** The servers of a document that could be read, and the ones that could not, each with its own error. */
export interface ParsedServerEntries {
  /** The entries that are valid, normalized. */
  servers: Record<string, ServerConfig>;
  /**
   * The entries that are not, by name: each {@link ConfigError} holds that entry's issues only
   * (its paths are rooted at the document, and it names the file).
   */
  rejected: Record<string, ConfigError>;
  warnings: ConfigWarning[];
}

/**
 * Server names key maps and objects all over (routing, status, the dashboard, log lines): a name
 * that is a property of every object (`__proto__`, `constructor`, `prototype`) would be dropped or
 * would reach `Object.prototype` somewhere, and a control character would forge lines in logs and
 * terminals. Such a name is refused, never dropped silently. Undefined for a safe name.
 */
function unsafeServerName(name: string): string | undefined {
  if (name === '__proto__' || name === 'constructor' || name === 'prototype') return `got ${JSON.stringify(name)}`;
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return `got ${JSON.stringify(name)}, which holds a control character`;
  return undefined;
}

/**
 * Parses a config document server by server: `{mcpServers: {...}}`, VS Code's `{servers: {...}}`
 * or VS Code settings' `{mcp: {servers: {...}}}` (exactly one of them). An entry with a problem
 * (a bad field, an unset variable) is rejected on its own, with its own error; the others are
 * returned. Entries with `disabled: true` are skipped, unchecked, with a warning.
 *
 * @throws ConfigError only for a problem of the document itself: no servers map (or several), a
 *   map that is not an object, a blank or unsafe server name (see {@link unsafeServerName}).
 */
export function parseServerEntries(doc: unknown, opts: ConfigParseOptions = {}): ParsedServerEntries {
  const documentLevel: Findings = { issues: [], warnings: [] };
  const env = opts.env ?? process.env;
  const located = locateServers(doc, documentLevel);
  // Every issue in document order: a document that fails as a whole still reports them all.
  const all: ConfigIssue[] = [...documentLevel.issues];
  // Maps, then fromEntries: a server named "__proto__" must not become a prototype.
  const servers = new Map<string, ServerConfig>();
  const rejected = new Map<string, ConfigError>();
  const warnings: ConfigWarning[] = [];
  for (const [name, raw] of Object.entries(located?.map ?? {})) {
    const path = childPath(located?.path ?? '', name);
    const unsafe = unsafeServerName(name);
    if (name.trim() === '' || unsafe !== undefined) {
      const issue = unsafe === undefined
        ? { path, expected: 'a non-empty server name', received: 'got a blank name' }
        : { path, expected: 'a server name that is not an Object property name and holds no control character', received: unsafe };
      documentLevel.issues.push(issue);
      all.push(issue);
    } else if (isPlainObject(raw) && raw.disabled === true) {
      warnings.push({ path, message: `server "${name}" is disabled; skipped` });
    } else {
      const found: Findings = { issues: [], warnings };
      const config = normalizeEntry(raw, env, path, found, opts.variables);
      all.push(...found.issues);
      if (config !== undefined && found.issues.length === 0) servers.set(name, config);
      else rejected.set(name, new ConfigError(found.issues, opts.file));
    }
  }
  if (documentLevel.issues.length > 0) throw new ConfigError(all, opts.file);
  return { servers: Object.fromEntries(servers), rejected: Object.fromEntries(rejected), warnings: [...documentLevel.warnings, ...warnings] };
}

/**
 * Parses a whole config document, all or nothing: as {@link parseServerEntries}, but any
 * rejected entry fails the whole document.
 *
 * @throws ConfigError listing every problem in the document; no partial map is returned.
 */
export function parseServersDocument(
  doc: unknown,
  opts: ConfigParseOptions = {},
): { servers: Record<string, ServerConfig>; warnings: ConfigWarning[] } {
  const { servers, rejected, warnings } = parseServerEntries(doc, opts);
  const issues = Object.values(rejected).flatMap((error) => error.data.issues);
  if (issues.length > 0) throw new ConfigError(issues, opts.file);
  return { servers, warnings };
}
