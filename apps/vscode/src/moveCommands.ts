/**
 * Moving a workspace's own `.vscode/mcp.json` servers into the pool, from the editor: the offer
 * when a window opens such a folder, the move itself (the `mcpool import` logic in `dist/move.js`,
 * loaded only now), and its undo. After either, the daemon reloads its config and every window
 * sees the servers change through the event stream.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { parse as parseJsonc } from 'jsonc-parser';
import { userConfigFile } from 'mcpool/local';
import type { PoolModel } from './poolModel.js';
import { writeBindings } from './workspaceBindings.js';

type MoveModule = typeof import('./move/moveEntry.js');

export interface MoveContext {
  model: PoolModel;
  log: vscode.LogOutputChannel;
  extensionPath: string;
}

function loadMove(extensionPath: string): MoveModule {
  // A second bundle beside this one, required only when a user moves servers.
  return module.require(join(extensionPath, 'dist', 'move.js')) as MoveModule;
}

/** Where moved servers go: the `mcpool.config` setting, `$MCPOOL_CONFIG`, else the user config — as `mcpool import`. */
function targetConfig(): string {
  const setting = vscode.workspace.getConfiguration('mcpool').get<string>('config');
  return setting || process.env.MCPOOL_CONFIG || userConfigFile({ env: process.env });
}

/** The names of the servers a folder's `.vscode/mcp.json` defines (none when it has no such file). */
export function ownServers(folder: string): string[] {
  try {
    const doc = parseJsonc(readFileSync(join(folder, '.vscode', 'mcp.json'), 'utf8'), [], { allowTrailingComma: true }) as { servers?: unknown };
    return typeof doc?.servers === 'object' && doc.servers !== null ? Object.keys(doc.servers) : [];
  } catch {
    return [];
  }
}

async function pickFolder(): Promise<vscode.WorkspaceFolder | undefined> {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((folder) => folder.uri.scheme === 'file' && ownServers(folder.uri.fsPath).length > 0);
  if (folders.length <= 1) return folders[0];
  return vscode.window.showWorkspaceFolderPick({ placeHolder: 'mcpool: move the servers of which folder?' });
}

export async function moveServers(context: MoveContext, folder?: vscode.WorkspaceFolder): Promise<void> {
  const target = folder ?? (await pickFolder());
  if (target === undefined) return void vscode.window.showInformationMessage('mcpool: no workspace folder here has servers in .vscode/mcp.json');
  const link = await context.model.ensureLinked(true);
  if (link === undefined) return void vscode.window.showErrorMessage(`mcpool: no daemon to move servers into (${context.model.view.error ?? 'not running'})`);
  const move = loadMove(context.extensionPath);
  const configFile = targetConfig();
  const plan = await move.planMove({ folder: target.uri.fsPath, configFile, baseUrl: link.baseUrl, env: process.env });
  for (const problem of plan.problems) context.log.warn(`.vscode/mcp.json: ${problem}`);
  for (const skip of plan.skipped) context.log.info(`left in .vscode/mcp.json: ${skip.name}: ${skip.reason}`);
  if (plan.moved.length === 0) {
    const why = plan.skipped.map((skip) => `${skip.name}: ${skip.reason}`).join('; ') || plan.problems.join('; ') || 'no server to move';
    return void vscode.window.showInformationMessage(`mcpool: nothing to move (${why})`);
  }
  const names = plan.moved.map((entry) => (entry.name === entry.poolName ? entry.name : `${entry.name} (as ${entry.poolName})`)).join(', ');
  const answer = await vscode.window.showInformationMessage(
    `Move ${names} into the pool? They are added to ${configFile} and taken out of ${target.name}/.vscode/mcp.json, so every window shares one process each. Backups are kept: "mcpool: Undo the Last Move" puts both files back.`,
    { modal: true },
    'Move',
  );
  if (answer !== 'Move') return;
  await move.applyChanges(link.stateDir, plan.changes);
  const known = (context.model.view.status?.servers ?? []).map((server) => server.name);
  await writeBindings(link.stateDir, plan.bindings, [...known, ...plan.moved.map((entry) => entry.poolName)]);
  const reloaded = await link.client.reloadAll();
  context.log.info(`moved ${names} from ${target.uri.fsPath} into ${configFile}; the daemon reloaded ${reloaded.source ?? 'its built-in config'}`);
  if (reloaded.source !== configFile) {
    void vscode.window.showWarningMessage(`mcpool: the servers went to ${configFile}, but the running daemon reads ${reloaded.source ?? 'its built-in config'}: set mcpool.config to the file it reads, or restart it on this one.`);
  } else {
    void vscode.window.showInformationMessage(`mcpool: moved ${names} into the pool.`);
  }
  await context.model.refresh('all');
}

export async function undoMove(context: MoveContext): Promise<void> {
  const link = await context.model.ensureLinked(false);
  const stateDir = link?.stateDir;
  if (stateDir === undefined) return void vscode.window.showErrorMessage('mcpool: no daemon (its state directory holds the backups)');
  const result = await loadMove(context.extensionPath).undoLastImport(stateDir);
  if (result.backup === undefined) return void vscode.window.showInformationMessage('mcpool: nothing to undo');
  await link!.client.reloadAll().catch((error: Error) => context.log.warn(`reload after undo: ${error.message}`));
  const left = result.changedSince.length > 0 ? ` Left as they are (changed since): ${result.changedSince.join(', ')}.` : '';
  void vscode.window.showInformationMessage(`mcpool: put back ${[...result.restored, ...result.removed].join(', ')}.${left}`);
  await context.model.refresh('all');
}

/**
 * When a window opens a folder whose `.vscode/mcp.json` runs servers of its own, offers once to
 * move them into the pool ("Don't ask again" is remembered per folder).
 */
export async function offerMove(context: MoveContext, state: vscode.Memento): Promise<void> {
  if (!vscode.workspace.getConfiguration('mcpool').get<boolean>('offerMove', true)) return;
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    if (folder.uri.scheme !== 'file') continue;
    const servers = ownServers(folder.uri.fsPath);
    const key = `mcpool.moveDeclined:${folder.uri.fsPath}`;
    if (servers.length === 0 || state.get<boolean>(key)) continue;
    const answer = await vscode.window.showInformationMessage(
      `${folder.name}/.vscode/mcp.json starts ${servers.length} MCP server(s) in this window only (${servers.join(', ')}). Move them into the pool, so every window shares one process each?`,
      'Move into the pool',
      "Don't ask again",
    );
    if (answer === 'Move into the pool') await moveServers(context, folder);
    else if (answer === "Don't ask again") await state.update(key, true);
  }
}
