// A test-only extension: writes what VS Code's language-model API knows of the MCP tools, and
// the result of a tool call made through `vscode.lm.invokeTool`, to $MCPOOL_PROBE_DIR, one file
// per window (named after its first workspace folder), for the end-to-end test to read.
'use strict';
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const vscode = require('vscode');

function write(what, value) {
  const folder = vscode.workspace.workspaceFolders?.[0]?.name ?? 'none';
  writeFileSync(join(process.env.MCPOOL_PROBE_DIR, `${folder}-${what}.json`), JSON.stringify(value, null, 2));
}

async function call(suffix, input) {
  const tool = vscode.lm.tools.find((candidate) => candidate.name.endsWith(suffix));
  if (tool === undefined) return write(`call${suffix}`, { error: `no tool ending in ${suffix}`, tools: vscode.lm.tools.map((t) => t.name) });
  try {
    const result = await vscode.lm.invokeTool(tool.name, { input, toolInvocationToken: undefined }, new vscode.CancellationTokenSource().token);
    write(`call${suffix}`, { tool: tool.name, parts: result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : String(part))) });
  } catch (error) {
    write(`call${suffix}`, { tool: tool.name, error: String(error?.message ?? error) });
  }
}

exports.activate = (context) => {
  context.subscriptions.push(
    vscode.commands.registerCommand('mcpoolProbe.listTools', () => write('tools', { tools: vscode.lm.tools.map((tool) => ({ name: tool.name, description: tool.description })) })),
    vscode.commands.registerCommand('mcpoolProbe.callEcho', () => call('_echo', { text: 'hello through the pool' })),
    vscode.commands.registerCommand('mcpoolProbe.callPid', () => call('_pid', {})),
  );
};
exports.deactivate = () => undefined;
