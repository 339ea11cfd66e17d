/**
 * Where the MCP clients people already use keep their server configs, and how to read them.
 * Each client file is read as its client writes it (JSONC for the JSON ones, TOML for Codex);
 * nothing here writes.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';

export type ClientId = 'claude-desktop' | 'claude-code' | 'cursor' | 'vscode' | 'windsurf' | 'gemini' | 'codex';

export const CLIENT_IDS: readonly ClientId[] = Object.freeze(['claude-desktop', 'claude-code', 'cursor', 'vscode', 'windsurf', 'gemini', 'codex']);

export type FileFormat = 'jsonc' | 'toml';

export interface ClientFile {
  client: ClientId;
  /** Absolute path. */
  file: string;
  format: FileFormat;
  scope: 'user' | 'project';
  /** The project folder a project-scope file belongs to (resolves `${workspaceFolder}`). */
  project?: string;
}

/** One servers map inside one client file. */
export interface ServersLocation {
  source: ClientFile;
  /** The path of the servers map inside the document, e.g. `['mcp', 'servers']`. */
  at: (string | number)[];
  /** For a Claude Code local-scope map: the project it belongs to. */
  label?: string;
  servers: Record<string, unknown>;
}

export interface ReadClientFile {
  source: ClientFile;
  text: string;
  locations: ServersLocation[];
}

export interface FoundProblem {
  source: ClientFile;
  message: string;
}

export interface LocateOptions {
  home: string;
  env: Record<string, string | undefined>;
  platform: NodeJS.Platform;
  /** The project folder whose project-scope files are read. */
  project: string;
  /** Only these clients. @default all */
  clients?: readonly ClientId[] | undefined;
}

/** The folder where a desktop app keeps its settings on this platform. */
function appDataDir({ home, env, platform }: LocateOptions): string {
  if (platform === 'darwin') return join(home, 'Library', 'Application Support');
  if (platform === 'win32') return env.APPDATA ?? join(home, 'AppData', 'Roaming');
  return env.XDG_CONFIG_HOME || join(home, '.config');
}

/** Every file each client may keep servers in, whether or not it exists. */
export function candidateFiles(options: LocateOptions): ClientFile[] {
  const { home, project } = options;
  const appData = appDataDir(options);
  const vscodeUser = join(appData, 'Code', 'User');
  const files: ClientFile[] = [
    { client: 'claude-desktop', file: join(appData, 'Claude', 'claude_desktop_config.json'), format: 'jsonc', scope: 'user' },
    { client: 'claude-code', file: join(home, '.claude.json'), format: 'jsonc', scope: 'user' },
    { client: 'claude-code', file: join(project, '.mcp.json'), format: 'jsonc', scope: 'project', project },
    { client: 'cursor', file: join(home, '.cursor', 'mcp.json'), format: 'jsonc', scope: 'user' },
    { client: 'cursor', file: join(project, '.cursor', 'mcp.json'), format: 'jsonc', scope: 'project', project },
    { client: 'vscode', file: join(vscodeUser, 'mcp.json'), format: 'jsonc', scope: 'user' },
    { client: 'vscode', file: join(vscodeUser, 'settings.json'), format: 'jsonc', scope: 'user' },
    { client: 'vscode', file: join(project, '.vscode', 'mcp.json'), format: 'jsonc', scope: 'project', project },
    { client: 'windsurf', file: join(home, '.codeium', 'windsurf', 'mcp_config.json'), format: 'jsonc', scope: 'user' },
    { client: 'gemini', file: join(home, '.gemini', 'settings.json'), format: 'jsonc', scope: 'user' },
    { client: 'gemini', file: join(project, '.gemini', 'settings.json'), format: 'jsonc', scope: 'project', project },
    { client: 'codex', file: join(options.env.CODEX_HOME ? resolve(options.env.CODEX_HOME) : join(home, '.codex'), 'config.toml'), format: 'toml', scope: 'user' },
  ];
  const wanted = options.clients === undefined ? undefined : new Set(options.clients);
  // The project may be the home folder: the same file must not be read twice.
  const seen = new Set<string>();
  return files.filter((file) => (wanted === undefined || wanted.has(file.client)) && !seen.has(file.file) && seen.add(file.file));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses a client file as its client does; throws an Error naming line and column. */
export function parseClientDocument(source: ClientFile, text: string): unknown {
  if (source.format === 'toml') {
    try {
      return parseToml(text);
    } catch (error) {
      throw new Error(`not valid TOML: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  const errors: ParseError[] = [];
  const doc: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: true });
  if (errors.length > 0) {
    const first = errors[0]!;
    const before = text.slice(0, first.offset);
    const line = before.split('\n').length;
    const column = first.offset - before.lastIndexOf('\n');
    throw new Error(`not valid JSON: ${printParseErrorCode(first.error)} at line ${line}, column ${column}`);
  }
  return doc ?? {};
}

/** The servers maps of one parsed client document. */
export function serversLocations(source: ClientFile, doc: unknown): ServersLocation[] {
  if (!isRecord(doc)) return [];
  const locations: ServersLocation[] = [];
  const add = (at: (string | number)[], value: unknown, label?: string): void => {
    if (isRecord(value)) locations.push({ source, at, servers: value, ...(label === undefined ? {} : { label }) });
  };
  switch (source.client) {
    case 'codex':
      add(['mcp_servers'], doc.mcp_servers);
      break;
    case 'vscode':
      if (source.file.endsWith('settings.json')) add(['mcp', 'servers'], isRecord(doc.mcp) ? doc.mcp.servers : undefined);
      else add(['servers'], doc.servers);
      break;
    case 'claude-code':
      add(['mcpServers'], doc.mcpServers);
      // ~/.claude.json also keeps each project's local-scope servers under projects[<folder>].
      if (source.scope === 'user' && isRecord(doc.projects)) {
        for (const [folder, settings] of Object.entries(doc.projects)) {
          if (isRecord(settings)) add(['projects', folder, 'mcpServers'], settings.mcpServers, folder);
        }
      }
      break;
    default:
      add(['mcpServers'], doc.mcpServers);
  }
  return locations.filter((location) => Object.keys(location.servers).length > 0);
}

/** Reads every client file that exists; unreadable or invalid ones come back as problems. */
export async function readClientFiles(options: LocateOptions): Promise<{ files: ReadClientFile[]; problems: FoundProblem[] }> {
  const files: ReadClientFile[] = [];
  const problems: FoundProblem[] = [];
  for (const source of candidateFiles(options)) {
    let text: string;
    try {
      text = await readFile(source.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') problems.push({ source, message: `cannot read: ${(error as Error).message}` });
      continue;
    }
    try {
      const locations = serversLocations(source, parseClientDocument(source, text));
      if (locations.length > 0) files.push({ source, text, locations });
    } catch (error) {
      problems.push({ source, message: (error as Error).message });
    }
  }
  return { files, problems };
}
