/**
 * `mcpool import` as a pure plan: which servers the client files hold, how they merge into the
 * daemon's config, and — with `rewrite` — the new text of every client file, pointing each
 * imported server at the pool. Nothing here touches the disk, so a dry run and a real run
 * compute the same thing.
 *
 * Rules:
 * - A server is imported as its client wrote it: a `${VAR}` stays a `${VAR}` (the daemon
 *   interpolates it), a literal value stays literal (the daemon's config file is written 0600).
 * - Equivalent configs are imported once, under the first name they were found with: they are
 *   compared as the daemon runs them — normalized (`type: "stdio"`, `env: {}` or `args: []` are
 *   the defaults they spell), fingerprinted, with the command in its canonical spelling (see
 *   `config/commandPath.ts`) and variables as written (`${A}` and `${env:A}` are one, `${A}` and
 *   `${B}` two) — so they are one server and one process. A name already taken by a different
 *   config gets `<name>-<client>` and the clash is reported.
 * - Entries that already point at the pool, disabled ones, and ones the daemon could not run
 *   (VS Code `${input:…}` prompts, an entry the config schema refuses) are skipped, with why.
 * - Per-session fields (`includeTools`, `excludeTools`, `trust`, `description`) stay with the
 *   client's pointer entry, where they filter that client's view, and are not imported.
 * - Pointers hold no secret (see `pointers.ts`).
 */
import { applyEdits, modify, type FormattingOptions } from 'jsonc-parser';
import { stringify as stringifyToml } from 'smol-toml';
import { SESSION_FIELDS, fingerprint, normalizeServerConfig, parseServersDocument } from '@mcpool/protocol';
import { canonicalCommand, type CommandLookup } from '../config/commandPath.js';
import { VSCODE_TOKEN_INPUT, VSCODE_TOKEN_INPUT_ENTRY, inputsPath, pointerEntry, type PoolAddress } from './pointers.js';
import { parseClientDocument, type ClientId, type ReadClientFile, type ServersLocation } from './sources.js';

export type { PoolAddress } from './pointers.js';

export interface ImportedServer {
  /** The name in the daemon's config. */
  name: string;
  /** Where it came from (each client file and map it was found in). */
  from: { location: ServersLocation; name: string }[];
  /** `added`: new in the daemon's config; `same`: the config already had it; `renamed`: added under another name. */
  outcome: 'added' | 'same' | 'renamed';
  /** The original name, for `renamed`. */
  originalName?: string;
  transport: string;
}

export interface SkippedServer {
  location: ServersLocation;
  name: string;
  reason: string;
}

export interface FileChange {
  file: string;
  /** The text before (`undefined`: the file does not exist yet). */
  before: string | undefined;
  after: string;
  /** The daemon's config may hold secrets copied from the clients: it is written 0600. */
  mode?: number;
  /** The client whose file it is (absent for the daemon's config). */
  client?: ClientId;
}

export interface ImportPlan {
  imported: ImportedServer[];
  skipped: SkippedServer[];
  /** Every file the import writes: the daemon's config first, then (with `rewrite`) client files. */
  changes: FileChange[];
}

export interface PlanOptions {
  files: ReadClientFile[];
  /** The daemon's config file: its path and current text (`undefined`: it does not exist). */
  target: { file: string; text: string | undefined };
  rewrite: boolean;
  pool: PoolAddress;
  /** Where commands are looked up to compare them (the PATH the daemon would spawn with). @default this process's */
  commandLookup?: CommandLookup;
}

const FORMAT: FormattingOptions = { insertSpaces: true, tabSize: 2, eol: '\n' };
const SESSION_FIELD_SET: ReadonlySet<string> = new Set(SESSION_FIELDS);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Variables as written: `${NAME}` and `${env:NAME}` both read NAME, so they read the same marker;
 * no value of this machine's environment enters a comparison.
 */
const VARIABLES_AS_WRITTEN: Record<string, string> = new Proxy({}, {
  get: (_, name) => `\u0000env:${String(name)}\u0000`,
  has: () => true,
  getOwnPropertyDescriptor: (_, name) => ({ value: `\u0000env:${String(name)}\u0000`, configurable: true, enumerable: true, writable: false }),
});

/** Equal for two entries exactly when the daemon runs them as one server (see the header). */
function identity(entry: Record<string, unknown>, lookup: CommandLookup | undefined): string {
  try {
    const { config } = normalizeServerConfig(entry, { env: VARIABLES_AS_WRITTEN, variables: { userHome: '\u0000userHome\u0000' } });
    const canonical = canonicalCommand(config, lookup);
    return JSON.stringify([fingerprint(canonical), canonical.sharing ?? null]);
  } catch {
    // An entry the daemon would refuse as written is only equal to the same text.
    return JSON.stringify(['raw', entry]);
  }
}

/** The entry as the daemon's config gets it: per-session fields and VS Code's `envFile` hint out. */
function daemonEntry(entry: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(entry).filter(([key]) => !SESSION_FIELD_SET.has(key)));
}

/** A Codex `[mcp_servers.x]` table in the shape every other client writes. */
function fromCodex(entry: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['command', 'args', 'env', 'cwd', 'url'] as const) if (entry[key] !== undefined) out[key] = entry[key];
  return out;
}

function containsText(value: unknown, needle: string): boolean {
  if (typeof value === 'string') return value.includes(needle);
  if (Array.isArray(value)) return value.some((item) => containsText(item, needle));
  if (isRecord(value)) return Object.values(value).some((item) => containsText(item, needle));
  return false;
}

function replaceText(value: unknown, from: string, to: string): unknown {
  if (typeof value === 'string') return value.split(from).join(to);
  if (Array.isArray(value)) return value.map((item) => replaceText(item, from, to));
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replaceText(item, from, to)]));
  return value;
}

/** Whether an entry is one of ours: the pool's `/mcp` URL, or a `bridge` of this command. */
function pointsAtPool(entry: Record<string, unknown>, pool: PoolAddress): boolean {
  for (const key of ['url', 'httpUrl', 'serverUrl']) {
    const value = entry[key];
    if (typeof value === 'string' && (value === `${pool.baseUrl}/mcp` || value.startsWith(`${pool.baseUrl}/mcp/`))) return true;
  }
  const args = Array.isArray(entry.args) ? entry.args : [];
  const command = typeof entry.command === 'string' ? entry.command : '';
  return args.includes('bridge') && (command === 'mcpool' || command.endsWith('/mcpool') || args.some((arg) => typeof arg === 'string' && /mcpool(\.js)?$/.test(arg)));
}

/** Why the daemon could not run this entry, or `undefined` when it can. */
function unusable(name: string, entry: Record<string, unknown>): string | undefined {
  if (containsText(entry, '${input:')) return 'uses ${input:…}, a value only VS Code can prompt for; give it a ${env:…} variable instead';
  if (containsText(entry, '${workspaceFolder')) return 'uses ${workspaceFolder} outside a workspace file';
  try {
    // Any variable counts as set: whether it is set is the daemon's business when it loads.
    parseServersDocument({ mcpServers: { [name]: entry } }, { env: VARIABLES_AS_WRITTEN });
    return undefined;
  } catch (error) {
    const message = (error as Error).message.split('\n').slice(1).join('; ').trim() || (error as Error).message;
    return `the daemon's config would refuse it: ${message}`;
  }
}

function transportOf(entry: Record<string, unknown>): string {
  if (typeof entry.type === 'string') return entry.type;
  if (typeof entry.transport === 'string') return entry.transport;
  if (entry.command !== undefined) return 'stdio';
  return 'http';
}

/** Where the daemon's config keeps its servers (VS Code shape if the file already uses it). */
function targetServersPath(doc: unknown): (string | number)[] {
  if (isRecord(doc) && isRecord(doc.servers) && doc.mcpServers === undefined) return ['servers'];
  return ['mcpServers'];
}

function setJsonc(text: string, path: (string | number)[], value: unknown): string {
  return applyEdits(text, modify(text, path, value, { formattingOptions: FORMAT }));
}

/** The original's fields a pointer keeps: the per-session ones filter the client's own view. */
function keptFields(original: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(original).filter(([key]) => SESSION_FIELD_SET.has(key) || key === 'disabled'));
}

/** `text` with the VS Code input the pointers name added to its `inputs` array at `at`, unless one of that id is there. */
function withTokenInput(text: string, doc: unknown, at: (string | number)[]): string {
  let inputs: unknown = doc;
  for (const key of at) inputs = isRecord(inputs) ? inputs[key] : undefined;
  if (!Array.isArray(inputs)) return setJsonc(text, at, [{ ...VSCODE_TOKEN_INPUT_ENTRY }]);
  if (inputs.some((input) => isRecord(input) && input.id === VSCODE_TOKEN_INPUT)) return text;
  // Index -1 appends to the array.
  return setJsonc(text, [...at, -1], { ...VSCODE_TOKEN_INPUT_ENTRY });
}

export function planImport(options: PlanOptions): ImportPlan {
  const { pool } = options;
  const targetDoc: unknown = options.target.text === undefined ? {} : parseClientDocument({ client: 'claude-code', file: options.target.file, format: 'jsonc', scope: 'user' }, options.target.text);
  const serversPath = targetServersPath(targetDoc);
  let existing: Record<string, unknown> = {};
  let cursor: unknown = targetDoc;
  for (const key of serversPath) cursor = isRecord(cursor) ? cursor[key] : undefined;
  if (isRecord(cursor)) existing = cursor;

  // identity → the daemon-side name; name → identity, for the servers already there and those added.
  const byIdentity = new Map<string, ImportedServer>();
  const takenNames = new Map<string, string>();
  for (const [name, entry] of Object.entries(existing)) if (isRecord(entry)) takenNames.set(name, identity(daemonEntry(entry), options.commandLookup));
  const imported: ImportedServer[] = [];
  const skipped: SkippedServer[] = [];
  const additions: [string, Record<string, unknown>][] = [];
  // (file, location index, name) → the pooled name its pointer names.
  const pointers = new Map<ServersLocation, Map<string, string>>();

  for (const file of options.files) {
    for (const location of file.locations) {
      for (const [name, raw] of Object.entries(location.servers)) {
        if (!isRecord(raw)) {
          skipped.push({ location, name, reason: 'not an object' });
          continue;
        }
        let entry = file.source.client === 'codex' ? fromCodex(raw) : raw;
        if (entry.disabled === true || entry.enabled === false) {
          skipped.push({ location, name, reason: 'disabled' });
          continue;
        }
        if (pointsAtPool(entry, pool)) {
          skipped.push({ location, name, reason: 'already points at the pool' });
          continue;
        }
        const project = file.source.project ?? location.label;
        if (project !== undefined) entry = replaceText(entry, '${workspaceFolder}', project) as Record<string, unknown>;
        const why = unusable(name, daemonEntry(entry));
        if (why !== undefined) {
          skipped.push({ location, name, reason: why });
          continue;
        }
        const id = identity(daemonEntry(entry), options.commandLookup);
        let server = byIdentity.get(id);
        if (server === undefined) {
          const sameName = takenNames.get(name);
          if (sameName === id) {
            server = { name, from: [], outcome: 'same', transport: transportOf(entry) };
          } else {
            let poolName = name;
            if (sameName !== undefined) {
              poolName = `${name}-${file.source.client}`;
              for (let n = 2; takenNames.has(poolName) && takenNames.get(poolName) !== id; n++) poolName = `${name}-${file.source.client}-${n}`;
            }
            server = { name: poolName, from: [], outcome: poolName === name ? 'added' : 'renamed', transport: transportOf(entry), ...(poolName === name ? {} : { originalName: name }) };
            if (takenNames.get(poolName) === id) server.outcome = 'same';
            else additions.push([poolName, daemonEntry(entry)]);
            takenNames.set(poolName, id);
          }
          byIdentity.set(id, server);
          imported.push(server);
        }
        server.from.push({ location, name });
        let names = pointers.get(location);
        if (names === undefined) pointers.set(location, (names = new Map<string, string>()));
        names.set(name, server.name);
      }
    }
  }

  const changes: FileChange[] = [];
  if (additions.length > 0) {
    let text = options.target.text ?? '{}\n';
    for (const [name, entry] of additions) text = setJsonc(text, [...serversPath, name], entry);
    changes.push({ file: options.target.file, before: options.target.text, after: text.endsWith('\n') ? text : `${text}\n`, mode: 0o600 });
  }

  if (options.rewrite) {
    for (const file of options.files) {
      let text = file.text;
      let changed = false;
      if (file.source.format === 'toml') {
        const doc = parseClientDocument(file.source, text) as Record<string, unknown>;
        const tables = doc.mcp_servers as Record<string, unknown>;
        for (const location of file.locations) {
          for (const [name, poolName] of pointers.get(location) ?? new Map<string, string>()) {
            tables[name] = pointerEntry(file.source, poolName, keptFields(location.servers[name] as Record<string, unknown>), pool);
            changed = true;
          }
        }
        if (changed) text = stringifyToml(doc);
      } else {
        for (const location of file.locations) {
          for (const [name, poolName] of pointers.get(location) ?? new Map<string, string>()) {
            text = setJsonc(text, [...location.at, name], pointerEntry(file.source, poolName, keptFields(location.servers[name] as Record<string, unknown>), pool));
            changed = true;
          }
        }
        const inputs = inputsPath(file.source);
        if (changed && inputs !== undefined) text = withTokenInput(text, parseClientDocument(file.source, text), inputs);
      }
      if (changed && text !== file.text) changes.push({ file: file.source.file, before: file.text, after: text, client: file.source.client });
    }
  }
  return { imported, skipped, changes };
}
