/**
 * The extension's commands: open the dashboard signed in (the one-time code `mcpool ui` uses),
 * restart a server, show logs (this extension's, the daemon's file, a server's stderr), move the
 * workspace's own servers into the pool and undo it, and reconnect.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { isRestartEntries } from '@mcpool/client';
import { DAEMON_LOG_FILE } from 'mcpool/local';
import type { PoolModel } from './poolModel.js';
import { moveServers, undoMove } from './moveCommands.js';

export interface CommandContext {
  model: PoolModel;
  log: vscode.LogOutputChannel;
  extensionPath: string;
}

async function openDashboard({ model }: CommandContext): Promise<void> {
  const link = await model.ensureLinked(false);
  if (link === undefined) {
    void vscode.window.showWarningMessage(`mcpool: no daemon to show (${model.view.error ?? 'not running'})`);
    return;
  }
  const { code } = await link.client.dashboardCode();
  const local = vscode.Uri.parse(`${link.baseUrl}/?code=${encodeURIComponent(code)}`);
  await vscode.env.openExternal(await vscode.env.asExternalUri(local));
}

async function restartServer({ model, log }: CommandContext): Promise<void> {
  const link = await model.ensureLinked(false);
  if (link === undefined) return void vscode.window.showWarningMessage('mcpool: no daemon');
  const name = await vscode.window.showQuickPick(
    model.view.servers.map((server) => ({ label: server.name, description: server.status })),
    { title: 'mcpool: restart which server?' },
  );
  if (name === undefined) return;
  const result = await link.client.restartServer(name.label);
  const entries = isRestartEntries(result) ? result.entries : [{ restarted: result.restarted, durationMs: result.durationMs, reason: result.reason }];
  const done = entries.every((entry) => entry.restarted);
  const text = done ? `${name.label} restarted in ${Math.max(...entries.map((entry) => entry.durationMs))} ms` : `${name.label} not restarted (${entries.map((entry) => entry.reason ?? 'skipped').join(', ')})`;
  log.info(text);
  void (done ? vscode.window.showInformationMessage(`mcpool: ${text}`) : vscode.window.showWarningMessage(`mcpool: ${text}`));
}

async function showLogs({ model, log }: CommandContext, stderr: vscode.OutputChannel): Promise<void> {
  const link = model.view.link;
  const daemonLog = link === undefined ? undefined : join(link.stateDir, DAEMON_LOG_FILE);
  const items: (vscode.QuickPickItem & { action: () => Promise<void> })[] = [
    { label: 'mcpool extension', description: 'what this window did', action: async () => log.show() },
    ...(daemonLog !== undefined && existsSync(daemonLog)
      ? [{ label: 'daemon log', description: daemonLog, action: async () => void (await vscode.window.showTextDocument(vscode.Uri.file(daemonLog))) }]
      : []),
    ...model.view.servers.map((server) => ({
      label: `${server.name} stderr`,
      description: server.status,
      action: async () => {
        const tail = await link!.client.serverStderr(server.name, { lines: 100 });
        stderr.clear();
        for (const entry of tail.entries) {
          stderr.appendLine(`--- ${server.name}#${entry.entryIndex} ---`);
          for (const line of entry.lines) stderr.appendLine(line);
        }
        if (tail.entries.length === 0) stderr.appendLine(`${server.name} has no live process`);
        stderr.show();
      },
    })),
  ];
  const picked = await vscode.window.showQuickPick(items, { title: 'mcpool: which log?' });
  await picked?.action();
}

/** Registers every command; each reports its failure instead of throwing into VS Code. */
export function registerCommands(context: CommandContext): vscode.Disposable[] {
  const stderr = vscode.window.createOutputChannel('mcpool server stderr');
  const guarded =
    (name: string, run: () => Promise<void>) =>
    async (): Promise<void> => {
      try {
        await run();
      } catch (error) {
        context.log.error(`${name}: ${(error as Error).message}`);
        void vscode.window.showErrorMessage(`mcpool: ${(error as Error).message}`);
      }
    };
  return [
    stderr,
    vscode.commands.registerCommand('mcpool.openDashboard', guarded('open the dashboard', () => openDashboard(context))),
    vscode.commands.registerCommand('mcpool.restartServer', guarded('restart', () => restartServer(context))),
    vscode.commands.registerCommand('mcpool.showLogs', guarded('logs', () => showLogs(context, stderr))),
    vscode.commands.registerCommand('mcpool.moveServers', guarded('move', () => moveServers(context))),
    vscode.commands.registerCommand('mcpool.undoMove', guarded('undo', () => undoMove(context))),
    vscode.commands.registerCommand(
      'mcpool.reconnect',
      guarded('reconnect', async () => {
        const link = await context.model.reconnect(true);
        if (link === undefined) void vscode.window.showWarningMessage(`mcpool: ${context.model.view.error ?? 'no daemon'}`);
      }),
    ),
  ];
}
