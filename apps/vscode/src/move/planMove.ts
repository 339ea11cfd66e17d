/**
 * Moving one workspace's own MCP servers (its `.vscode/mcp.json`) into the pool, with the logic
 * of `mcpool import` (`mcpool/import`): the servers are merged into the daemon's config as the
 * command merges them — identical ones once, a clashing name renamed, `${workspaceFolder}`
 * replaced by the folder, entries the daemon cannot run (`${input:…}`) left where they are — and
 * then taken out of `.vscode/mcp.json`, because this window now gets them from the pool (the
 * command's `--rewrite` would leave pointers to the pool instead; neither writes the token
 * anywhere). Every file is backed up: `mcpool import --undo` and the
 * extension's undo put both back byte for byte.
 */
import { homedir } from 'node:os';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { applyEdits, modify } from 'jsonc-parser';
import { planImport, readClientFiles, type FileChange } from 'mcpool/import';

export interface MoveOptions {
  /** The workspace folder whose `.vscode/mcp.json` is moved. */
  folder: string;
  /** The daemon's config file, which receives the servers. */
  configFile: string;
  /** The daemon's address: entries already pointing at it are left alone. */
  baseUrl: string;
  env: Record<string, string | undefined>;
  /** @default $HOME, else os.homedir() */
  home?: string;
}

export interface MovePlan {
  /** The daemon's config (when servers are added) and `.vscode/mcp.json` without the moved entries. */
  changes: FileChange[];
  /** Each moved entry: its name in `mcp.json`, and in the pool. */
  moved: { name: string; poolName: string }[];
  skipped: { name: string; reason: string }[];
  /** Pool servers that belong to this folder (their config named `${workspaceFolder}`). */
  bindings: Record<string, string>;
  /** `.vscode/mcp.json` could not be read. */
  problems: string[];
}

const FORMAT = { insertSpaces: true, tabSize: 2, eol: '\n' } as const;

function mentions(value: unknown, needle: string): boolean {
  if (typeof value === 'string') return value.includes(needle);
  if (Array.isArray(value)) return value.some((item) => mentions(item, needle));
  if (typeof value === 'object' && value !== null) return Object.values(value).some((item) => mentions(item, needle));
  return false;
}

export async function planMove(options: MoveOptions): Promise<MovePlan> {
  const folder = resolve(options.folder);
  const own = join(folder, '.vscode', 'mcp.json');
  const { files: found, problems } = await readClientFiles({
    home: options.home ?? options.env.HOME ?? homedir(),
    env: options.env,
    platform: process.platform,
    project: folder,
    clients: ['vscode'],
  });
  const files = found.filter((file) => file.source.file === own);
  const targetText = await readFile(options.configFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  const plan = planImport({
    files,
    target: { file: options.configFile, text: targetText },
    rewrite: false,
    pool: { baseUrl: options.baseUrl, bridgeCommand: ['mcpool'], bridgeArgs: [] },
    commandLookup: { path: options.env.PATH },
  });

  const moved: MovePlan['moved'] = [];
  const bindings: Record<string, string> = {};
  const changes = [...plan.changes];
  for (const file of files) {
    let text = file.text;
    for (const server of plan.imported) {
      for (const from of server.from) {
        if (from.location.source !== file.source) continue;
        text = applyEdits(text, modify(text, [...from.location.at, from.name], undefined, { formattingOptions: FORMAT }));
        moved.push({ name: from.name, poolName: server.name });
        if (mentions(from.location.servers[from.name], '${workspaceFolder')) bindings[server.name] = folder;
      }
    }
    if (text !== file.text) changes.push({ file: file.source.file, before: file.text, after: text });
  }
  return {
    changes,
    moved,
    skipped: plan.skipped.filter((skip) => skip.location.source.file === own).map((skip) => ({ name: skip.name, reason: skip.reason })),
    bindings,
    problems: problems.filter((problem) => problem.source.file === own).map((problem) => problem.message),
  };
}
