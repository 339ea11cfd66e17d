/**
 * Who may share the process of a server whose config says no `sharing`, decided from evidence
 * about where the server keeps its state, strongest first:
 *
 * 1. **Its protocol era.** A 2026-07-28 ("modern") server keeps no conversation state in its
 *    process (its spec: "a STDIO process is not a conversation or session"): `shared`.
 * 2. **What the server is**, for servers people run most (read from the package its command
 *    runs: `npx -y <pkg>`, `uvx <pkg>`, `pnpm dlx <pkg>`, `…/node_modules/<pkg>/…`):
 *    - its state is on disk or remote, none in the process → `shared`. server-memory reads and
 *      writes its graph file on every call, so separate processes on one file lose each other's
 *      writes, and one process is the safe choice; server-filesystem given its directories works
 *      on those files; the git, fetch, time and github servers answer each call from the
 *      repository, the network, the clock or GitHub;
 *    - it keeps one conversation's state in the process → `per-session` (sequential-thinking's
 *      thought history);
 *    - it drives a program whose state is the user's (a browser with its pages) → `per-principal`.
 * 3. **Its tools' annotations**, once its first start listed them: when every tool declares
 *    `readOnlyHint: true` (the MCP spec: the tool "does not modify its environment"), no call
 *    changes what the server holds, so one process serves everyone: `shared`. Annotations say
 *    nothing the other way: server-memory marks its tools `readOnlyHint: false` though all its
 *    state is in its file.
 * 4. **Nothing known**: `per-principal`. Sharing by mistake shows one client's state to another;
 *    not sharing costs a process per client.
 *
 * An explicit `sharing` in the config always wins.
 */
import type { SharingDefaultInfo } from '@mcpool/core';
import type { ServerConfig, SharingPolicy, ToolInfo } from '@mcpool/protocol';

/** A default policy and why it was picked (shown in `GET /workspace/mcp`). */
export interface SharingDecision {
  policy: SharingPolicy;
  reason: string;
}

interface KnownServer {
  policy: SharingPolicy;
  reason: string;
  /** Only when the command line satisfies this (its arguments after the package). */
  when?: (rest: readonly string[]) => boolean;
}

const ON_DISK = 'its state is on disk or remote, none in its process';

/** Servers whose behaviour is known, by package name (npm, or PyPI for `uvx`). */
const KNOWN_SERVERS: Readonly<Record<string, KnownServer>> = {
  '@modelcontextprotocol/server-memory': { policy: 'shared', reason: 'server-memory keeps its graph in its file and reads it on every call' },
  '@modelcontextprotocol/server-filesystem': {
    policy: 'shared',
    reason: 'server-filesystem works on the files of the directories it is given',
    // Without directories it works on the roots of its client, which differ per client.
    when: (rest) => rest.some((arg) => !arg.startsWith('-')),
  },
  '@modelcontextprotocol/server-github': { policy: 'shared', reason: `server-github: ${ON_DISK} (GitHub)` },
  '@modelcontextprotocol/server-gitlab': { policy: 'shared', reason: `server-gitlab: ${ON_DISK} (GitLab)` },
  '@modelcontextprotocol/server-brave-search': { policy: 'shared', reason: 'server-brave-search answers each call from the search API' },
  'mcp-server-fetch': { policy: 'shared', reason: 'mcp-server-fetch answers each call from the network' },
  'mcp-server-time': { policy: 'shared', reason: 'mcp-server-time answers each call from the clock' },
  'mcp-server-git': { policy: 'shared', reason: `mcp-server-git: ${ON_DISK} (the repository)` },
  '@modelcontextprotocol/server-sequential-thinking': { policy: 'per-session', reason: 'server-sequential-thinking keeps one conversation’s thought history in its process' },
  '@playwright/mcp': { policy: 'per-principal', reason: '@playwright/mcp drives one browser, whose pages are its user’s' },
  '@modelcontextprotocol/server-puppeteer': { policy: 'per-principal', reason: 'server-puppeteer drives one browser, whose pages are its user’s' },
};

/** Commands that run a package named by their first argument that is not an option. */
const PACKAGE_RUNNERS = /^(npx|bunx|pnpx|uvx)$/;

/** A package spec without its version: `@scope/name@1.2` → `@scope/name`, `name==1.0` → `name`. */
function packageName(spec: string): string {
  const at = spec.indexOf('@', spec.startsWith('@') ? 1 : 0);
  const bare = at === -1 ? spec : spec.slice(0, at);
  return bare.split(/==|>=|<=|~=/)[0]!;
}

/** The package a stdio config runs, and the arguments after it; undefined when it is not one of the forms above. */
export function packageOf(config: ServerConfig): { name: string; rest: string[] } | undefined {
  if (config.transport !== 'stdio' || config.command === undefined) return undefined;
  const command = config.command.slice(config.command.lastIndexOf('/') + 1);
  const args = config.args ?? [];
  let from = -1;
  if (PACKAGE_RUNNERS.test(command)) from = 0;
  else if (/^(pnpm|yarn)$/.test(command) && args[0] === 'dlx') from = 1;
  if (from >= 0) {
    for (let i = from; i < args.length; i++) {
      const arg = args[i]!;
      // `-p <pkg>` / `--package <pkg>` name it explicitly; other options take no value.
      if ((arg === '-p' || arg === '--package') && args[i + 1] !== undefined) return { name: packageName(args[i + 1]!), rest: args.slice(i + 2) };
      if (!arg.startsWith('-')) return { name: packageName(arg), rest: args.slice(i + 1) };
    }
    return undefined;
  }
  // `node …/node_modules/<pkg>/dist/index.js …`: an installed package run by path.
  for (let i = 0; i < args.length; i++) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(args[i]!);
    if (match) return { name: match[1]!, rest: args.slice(i + 1) };
  }
  return undefined;
}

/** Whether every tool of a server declares itself read-only (and there is at least one). */
export function allToolsReadOnly(tools: readonly ToolInfo[]): boolean {
  return tools.length > 0 && tools.every((tool) => (tool.annotations as { readOnlyHint?: unknown } | undefined)?.readOnlyHint === true);
}

/**
 * The daemon's default policy for a config without `sharing` (see the header).
 *
 * @param readOnly what its tools' annotations said at a start of this config, when one listed them.
 */
export function decideSharing(info: Pick<SharingDefaultInfo, 'fingerprintEra'> & { config?: ServerConfig | undefined }, readOnly?: boolean): SharingDecision {
  if (info.fingerprintEra === 'modern') return { policy: 'shared', reason: 'it speaks the 2026-07-28 protocol, whose servers keep no session in their process' };
  const found = info.config === undefined ? undefined : packageOf(info.config);
  const known = found === undefined ? undefined : KNOWN_SERVERS[found.name];
  if (known !== undefined && (known.when === undefined || known.when(found!.rest))) return { policy: known.policy, reason: known.reason };
  if (readOnly === true) return { policy: 'shared', reason: 'every one of its tools declares readOnlyHint: no call changes what it holds' };
  return { policy: 'per-principal', reason: 'nothing says its process holds no client’s state: each client gets its own' };
}
