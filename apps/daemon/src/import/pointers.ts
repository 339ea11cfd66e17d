/**
 * The entries `mcpool import --rewrite` writes into client files: each sends one client to one
 * pooled server, and none holds a secret, so a project file stays safe to commit and a user file
 * holds nothing that can start a process. Per client:
 *
 * - **VS Code** (`mcp.json`, user and workspace, and `settings.json`): Streamable HTTP to
 *   `/mcp/<server>` with `Authorization: Bearer ${input:mcpool-token}`, and a `promptString`
 *   input with `password: true`: VS Code asks once and keeps the answer in its secret storage.
 *   The answer is the operator's MCP token (`mcpool token`), which has the read right only.
 * - **every other client** (Claude Code, Cursor, Windsurf, Gemini CLI, Claude Desktop, Codex):
 *   `mcpool bridge --autostart --url …/mcp/<server>` as a stdio server. The bridge reads the
 *   daemon's token from its 0600 file itself and starts the daemon when none answers. Those
 *   clients expand `${VAR}` in headers at best from the environment they were launched with,
 *   which a desktop app started from a dock does not share with the shell, and Claude Code's
 *   header expansion has open bugs (anthropics/claude-code#6204, #51581).
 */
import type { ClientFile } from './sources.js';

/** The id of the VS Code input the pointers' header names. */
export const VSCODE_TOKEN_INPUT = 'mcpool-token';

/** How the rewritten entries reach the daemon. */
export interface PoolAddress {
  /** `http://host:port` of the daemon. */
  baseUrl: string;
  /** The command a stdio client runs: `[executable, ...args]` before `bridge`. */
  bridgeCommand: [string, ...string[]];
  /**
   * Arguments the bridge needs besides the URL: `--config FILE` when the imported servers are
   * in a config the daemon would not find by itself (so an autostarted daemon runs them).
   */
  bridgeArgs: string[];
}

/** Whether a client file's pointers use VS Code's input prompt (else the bridge). */
function usesInputPrompt(source: ClientFile): boolean {
  return source.client === 'vscode';
}

/** The entry that sends the client of `source` to the pooled server `poolName`; `kept` are the original's per-session fields. */
export function pointerEntry(source: ClientFile, poolName: string, kept: Record<string, unknown>, pool: PoolAddress): Record<string, unknown> {
  const url = `${pool.baseUrl}/mcp/${encodeURIComponent(poolName)}`;
  if (usesInputPrompt(source)) return { type: 'http', url, headers: { Authorization: `Bearer \${input:${VSCODE_TOKEN_INPUT}}` }, ...kept };
  const [command, ...args] = pool.bridgeCommand;
  return { command, args: [...args, 'bridge', '--autostart', ...pool.bridgeArgs, '--url', url], ...kept };
}

/** The VS Code input the pointers name, as VS Code's `inputs` array holds it. */
export const VSCODE_TOKEN_INPUT_ENTRY = Object.freeze({
  type: 'promptString',
  id: VSCODE_TOKEN_INPUT,
  description: 'mcpool /mcp token: paste what `mcpool token` prints (VS Code keeps it in its secret storage)',
  password: true,
});

/**
 * Where the `inputs` array sits in a file whose pointers need one (beside the servers map:
 * top level in `mcp.json`, `mcp.inputs` in `settings.json`), or undefined when they need none.
 */
export function inputsPath(source: ClientFile): (string | number)[] | undefined {
  if (!usesInputPrompt(source)) return undefined;
  return source.file.endsWith('settings.json') ? ['mcp', 'inputs'] : ['inputs'];
}
