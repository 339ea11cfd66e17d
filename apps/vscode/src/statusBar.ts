/**
 * The status bar item: the pool's figures ({@link statusSummary}), kept current from the model
 * (which follows the daemon's events) and by a slow poll for what no event announces (sessions
 * opening); a click opens the dashboard.
 */
import * as vscode from 'vscode';
import type { PoolModel } from './poolModel.js';
import { statusSummary } from './statusSummary.js';

/** Sessions open and close without an event: their count is read again this often. */
const POLL_MS = 15_000;

export function createStatusBar(model: PoolModel): vscode.Disposable {
  const item = vscode.window.createStatusBarItem('mcpool.status', vscode.StatusBarAlignment.Right, 100);
  item.name = 'mcpool';
  item.command = 'mcpool.openDashboard';
  const render = (): void => {
    const summary = statusSummary(model.view);
    item.text = summary.text;
    item.tooltip = summary.tooltip;
    item.backgroundColor = summary.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  };
  const off = model.onStatus(render);
  render();
  item.show();
  const poll = setInterval(() => {
    if (model.view.link !== undefined) void model.refresh([]);
  }, POLL_MS);
  return new vscode.Disposable(() => {
    clearInterval(poll);
    off();
    item.dispose();
  });
}
