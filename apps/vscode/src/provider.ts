/**
 * The pool's servers as VS Code MCP server definitions: one HTTP definition per server, on the
 * daemon's `/mcp/<server>` endpoint.
 *
 * - The definitions carry no secret: VS Code keeps what `provideMcpServerDefinitions` returns in
 *   its storage (to show the servers before the extension activates), so the token is added in
 *   `resolveMcpServerDefinition`, which runs when VS Code starts the server, and lives in memory.
 *   The window's session label goes there too.
 * - `version` is the hash of the server's tools: it changes when they do, and only then.
 * - Where the editor honours the proposed `mcpToolDefinitions` API, each definition also carries
 *   the server's metadata (tools, instructions, capabilities, server info), so the editor lists
 *   its tools without connecting and connects on the first call. Elsewhere VS Code ignores the
 *   field: a plain definition, started by the user or by chat.
 */
import * as vscode from 'vscode';
import { SESSION_LABEL_HEADER } from 'mcpool/local';
import type { PoolModel, PooledServer } from './poolModel.js';

/** `McpToolAvailability.Initial` of the proposal: the tool exists as soon as the server starts. */
const AVAILABLE_INITIALLY = 0;

type DefinitionClass = new (label: string, uri: vscode.Uri, headers?: Record<string, string>, version?: string, metadata?: unknown) => vscode.McpHttpServerDefinition;

/** The proposal's class where this VS Code has it (it reads `metadata` only where the proposal is enabled). */
function definitionClass(): DefinitionClass {
  try {
    const proposed = (vscode as unknown as { McpHttpServerDefinition2?: DefinitionClass }).McpHttpServerDefinition2;
    if (typeof proposed === 'function') return proposed;
  } catch {
    // an editor that guards the name: the stable class
  }
  return vscode.McpHttpServerDefinition;
}

export function serverUri(baseUrl: string, name: string): vscode.Uri {
  return vscode.Uri.parse(`${baseUrl}/mcp/${encodeURIComponent(name)}`);
}

export class PoolDefinitionProvider implements vscode.McpServerDefinitionProvider<vscode.McpHttpServerDefinition>, vscode.Disposable {
  readonly #model: PoolModel;
  readonly #label: string;
  readonly #changed = new vscode.EventEmitter<void>();
  readonly #offChange: () => void;
  readonly #onProvided: (count: number) => void;
  readonly onDidChangeMcpServerDefinitions = this.#changed.event;

  /**
   * @param label this window's session label (`Mcpool-Session-Label`)
   * @param onProvided told each time definitions are handed to VS Code, with how many
   */
  constructor(model: PoolModel, label: string, onProvided: (count: number) => void) {
    this.#model = model;
    this.#label = label;
    this.#onProvided = onProvided;
    this.#offChange = model.onChange(() => this.#changed.fire());
  }

  async provideMcpServerDefinitions(): Promise<vscode.McpHttpServerDefinition[]> {
    await this.#model.ready();
    const { baseUrl, servers } = this.#model.view;
    const definitions = baseUrl === undefined ? [] : servers.map((server) => this.#definition(baseUrl, server));
    this.#onProvided(definitions.length);
    return definitions;
  }

  async resolveMcpServerDefinition(definition: vscode.McpHttpServerDefinition): Promise<vscode.McpHttpServerDefinition | undefined> {
    // Starting a server is when a daemon that went away is started again.
    let link = await this.#model.ensureLinked(true);
    if (link !== undefined && !(await link.client.health().then(() => true, () => false))) link = await this.#model.reconnect(true);
    if (link === undefined) {
      void vscode.window.showErrorMessage(`mcpool: cannot start ${definition.label}: ${this.#model.view.error ?? 'no daemon'}`);
      return undefined;
    }
    definition.uri = serverUri(link.baseUrl, definition.label);
    definition.headers = { ...definition.headers, authorization: `Bearer ${link.token}`, [SESSION_LABEL_HEADER]: this.#label };
    return definition;
  }

  #definition(baseUrl: string, server: PooledServer): vscode.McpHttpServerDefinition {
    const Definition = definitionClass();
    const metadata =
      server.metadata === undefined
        ? undefined
        : {
            tools: server.metadata.tools.map((definition) => ({ definition, availability: AVAILABLE_INITIALLY })),
            ...(server.metadata.instructions === undefined ? {} : { instructions: server.metadata.instructions }),
            ...(server.metadata.capabilities === undefined ? {} : { capabilities: server.metadata.capabilities }),
            ...(server.metadata.serverInfo === undefined ? {} : { serverInfo: server.metadata.serverInfo }),
          };
    return new Definition(server.name, serverUri(baseUrl, server.name), {}, server.version, metadata);
  }

  dispose(): void {
    this.#offChange();
    this.#changed.dispose();
  }
}
