/**
 * The mcpool extension: every VS Code window uses the one mcpool daemon of its user instead of
 * starting its own MCP servers. On activation it registers the pool's servers as MCP server
 * definitions, finds the daemon (starting it once when none answers), and follows its event
 * stream; a status bar item shows the pool, commands restart servers, show logs and move a
 * workspace's own servers into the pool. On deactivation (the window closes) it ends the daemon
 * sessions this window opened, so the daemon does not hold them until their idle TTL.
 */
import * as vscode from 'vscode';
import { registerCommands } from './commands.js';
import { linkDaemon } from './daemonLink.js';
import { offerMove } from './moveCommands.js';
import { PoolModel } from './poolModel.js';
import { PoolDefinitionProvider } from './provider.js';
import { LiveMetadata } from './serverMetadata.js';
import { createStatusBar } from './statusBar.js';
import { endOrphanedSessions, endWindowSessions, windowLabel } from './windowSessions.js';
import { readBindings, visibleIn } from './workspaceBindings.js';

/** What deactivation needs: the model (for its link) and this window's session label. */
let active: { model: PoolModel; label: string; log: vscode.LogOutputChannel } | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const activatedAt = performance.now();
  const log = vscode.window.createOutputChannel('mcpool', { log: true });
  const label = windowLabel();
  const version = (context.extension.packageJSON as { version?: string }).version ?? '0.0.0';
  const settings = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('mcpool');
  const model = new PoolModel({
    link: (start) =>
      linkDaemon({
        env: process.env,
        url: settings().get<string>('url', ''),
        config: settings().get<string>('config', ''),
        command: start ? settings().get<string[]>('command', ['mcpool']) : [],
        logger: {
          info: (_fields, message) => log.info(message),
          error: (_fields, message) => log.error(message),
        },
      }),
    metadata: (link) => new LiveMetadata({ baseUrl: link.baseUrl, token: link.token, rest: link.client, client: { name: 'mcpool-vscode', version } }),
    visible: async (names, link) => visibleIn(names, await readBindings(link.stateDir), (vscode.workspace.workspaceFolders ?? []).filter((folder) => folder.uri.scheme === 'file').map((folder) => folder.uri.fsPath)),
    log: (level, message) => log[level](message),
  });
  active = { model, label, log };

  let firstProvided = true;
  const provider = new PoolDefinitionProvider(model, label, (count) => {
    if (!firstProvided) return;
    firstProvided = false;
    // Activation to the first definitions VS Code received (the extension host's heap is shared
    // with every other extension: test/bench/vscodeActivation.mjs measures this one's own).
    log.info(`definitions provided: ${count} server(s), ${Math.round(performance.now() - activatedAt)} ms after activation`);
  });
  context.subscriptions.push(
    log,
    vscode.lm.registerMcpServerDefinitionProvider('mcpool', provider),
    provider,
    createStatusBar(model),
    ...registerCommands({ model, log, extensionPath: context.extensionPath }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void model.refresh([])),
    // Another daemon address or config: link again (without starting one; a server start does).
    vscode.workspace.onDidChangeConfiguration((change) => {
      if (change.affectsConfiguration('mcpool.url') || change.affectsConfiguration('mcpool.config')) void model.reconnect(false);
    }),
    { dispose: () => model.close() },
  );
  model.start();
  void model.ready().then(async () => {
    const link = model.view.link;
    if (link === undefined) return;
    log.info(`daemon at ${link.baseUrl}${link.startedPid === undefined ? '' : ` (started by this window, pid ${link.startedPid})`}; this window's sessions are labelled ${label}`);
    const orphans = await endOrphanedSessions(link.client).catch(() => 0);
    if (orphans > 0) log.info(`ended ${orphans} session(s) of windows that are gone`);
    await offerMove({ model, log, extensionPath: context.extensionPath }, context.workspaceState);
  });
}

/** Ends this window's daemon sessions; bounded, since VS Code gives deactivation little time. */
export async function deactivate(): Promise<void> {
  const current = active;
  active = undefined;
  const link = current?.model.view.link;
  if (current === undefined || link === undefined) return;
  try {
    const ended = await endWindowSessions(link.client, current.label, AbortSignal.timeout(3000));
    current.log.info(`ended ${ended} session(s) of this window`);
  } catch (error) {
    current.log.warn(`could not end this window's sessions: ${(error as Error).message}`);
  }
}
