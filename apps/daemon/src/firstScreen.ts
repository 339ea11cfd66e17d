/**
 * What `mcpool serve` prints once it listens: how to point a client at it. On a terminal, the
 * whole screen (the `/mcp` URL, the header, and copy-paste setups for Claude Code, VS Code and
 * stdio-only clients, plus `mcpool ui`); otherwise (a service, a pipe) one log line, so a service
 * log does not get a banner at every start.
 *
 * The token itself is never printed, on a terminal or in a log: the screen names where it is (the
 * token file, or `$MCPOOL_TOKEN`) and gives commands that read it there, `$(cat <file>)`. No setup
 * it suggests writes a token into a client's file: Claude Code and stdio clients run the bridge
 * (it reads the token file itself); VS Code asks for the read-only MCP token (`mcpool token`) once
 * and keeps it in its secret storage.
 */
import { basename, dirname } from 'node:path';
import { BIN_PATH } from './config/paths.js';
const DEFAULT_URL = 'http://127.0.0.1:7070';

export interface FirstScreenInfo {
  /** `http://host:port` the daemon answers on. */
  url: string;
  /** Where the operator token is: its file, or `env` for `$MCPOOL_TOKEN`. */
  token: { file: string } | 'env';
  /** How this shell reaches the command (`mcpool`, `npx mcpool`, `node …/mcpool.js`). @default from process.argv */
  command?: string;
  /** The node that runs the bridge. @default process.execPath */
  node?: string;
  /** The bridge's entry file. @default {@link BIN_PATH} */
  bin?: string;
}

/** `value` as one word of a POSIX shell command line. */
export function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * How the user typed the command, for the commands the screen suggests: `mcpool` when it came
 * from `PATH`, `npx mcpool` from a project's `node_modules/.bin`, else node and the entry file.
 */
export function invokedAs(argv1: string | undefined = process.argv[1], node = process.execPath): string {
  if (argv1 !== undefined && basename(argv1) === 'mcpool') return basename(dirname(argv1)) === '.bin' ? 'npx mcpool' : 'mcpool';
  return `${shellWord(node)} ${shellWord(argv1 ?? BIN_PATH)}`;
}

/** The shell expression that stands for the token where it is kept. */
function tokenExpression(token: FirstScreenInfo['token']): string {
  return token === 'env' ? '$MCPOOL_TOKEN' : `$(cat ${shellWord(token.file)})`;
}

function where(token: FirstScreenInfo['token']): string {
  return token === 'env' ? 'the token in $MCPOOL_TOKEN' : `the token in ${token.file}`;
}

/** The full first screen (a terminal), ending with a newline. */
function uiCommand(command: string, url: string): string {
  return url === DEFAULT_URL ? `${command} ui` : `${command} ui --url ${url}`;
}

export function firstScreen(info: FirstScreenInfo): string {
  const mcp = `${info.url}/mcp`;
  const command = info.command ?? invokedAs();
  const ui = uiCommand(command, info.url);
  const header = `Authorization: Bearer ${tokenExpression(info.token)}`;
  const j = (value: unknown) => JSON.stringify(value);
  // VS Code keeps the token out of the file: `${input:…}` asks for it once and stores it encrypted.
  const vscode = [
    '{',
    `  "inputs": [{ "type": "promptString", "id": "mcpool-token", "description": "mcpool /mcp token (${command} token prints it)", "password": true }],`,
    `  "servers": { "mcpool": { "type": "http", "url": ${j(mcp)}, "headers": { "Authorization": "Bearer \${input:mcpool-token}" } } }`,
    '}',
  ].join('\n');
  const bridgeArgv = [info.node ?? process.execPath, info.bin ?? BIN_PATH, 'bridge', '--url', mcp];
  const bridge = `{ "mcpServers": { "mcpool": { "command": ${j(bridgeArgv[0])}, "args": ${j(bridgeArgv.slice(1))} } } }`;
  const indent = (text: string) => text.replace(/^/gm, '    ');
  return [
    '',
    `  mcpool is listening on ${info.url}`,
    '',
    `  MCP endpoint  ${mcp}   (one server alone: ${mcp}/<server>)`,
    `  Header        Authorization: Bearer <${where(info.token)}>`,
    `  Dashboard     ${ui}`,
    '',
    '  Claude Code (through the bridge: no token in ~/.claude.json):',
    indent(`claude mcp add mcpool -- ${bridgeArgv.map(shellWord).join(' ')}`),
    '',
    `  curl, or any client given a header: ${header}`,
    '',
    `  VS Code, in .vscode/mcp.json (it asks for a token once and keeps it in its secret storage: paste what \`${command} token\` prints, a token that cannot start commands):`,
    indent(vscode),
    '',
    `  A stdio-only client (Claude Desktop, or any mcpServers config), as its server command${info.token === 'env' ? ' (give it MCPOOL_TOKEN in its env)' : ' (the bridge reads the token file itself)'}:`,
    indent(bridge),
    '',
    `  \`${command} import --rewrite\` points the clients this machine already has at the pool.`,
    '',
    '',
  ].join('\n');
}

/** The one line a non-terminal start logs instead. */
export function firstScreenLine(info: FirstScreenInfo): string {
  const command = info.command ?? invokedAs();
  return `clients connect to ${info.url}/mcp with "Authorization: Bearer <${where(info.token)}>"; \`${uiCommand(command, info.url)}\` opens the dashboard; run \`${command} serve\` on a terminal for copy-paste setups (Claude Code, VS Code, stdio bridge), or see the README`;
}
