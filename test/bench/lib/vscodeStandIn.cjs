// The part of the `vscode` module the extension's activation touches, for measuring the bundle
// outside an editor (test/bench/vscodeActivation.mjs): a registered MCP provider is asked for its
// definitions at once, as VS Code asks; everything else records nothing and does nothing. Behaviour
// is tested in a real VS Code (apps/vscode/test/e2e); this is only the room the bundle runs in.
'use strict';
const Module = require('node:module');

const noop = () => undefined;
const disposable = { dispose: noop };
const registered = [];

class EventEmitter {
  #listeners = new Set();
  event = (listener) => {
    this.#listeners.add(listener);
    return { dispose: () => this.#listeners.delete(listener) };
  };
  fire(value) {
    for (const listener of this.#listeners) listener(value);
  }
  dispose() {
    this.#listeners.clear();
  }
}

class McpHttpServerDefinition {
  constructor(label, uri, headers = {}, version, metadata) {
    Object.assign(this, { label, uri, headers, version, metadata });
  }
}

const channel = { info: noop, warn: noop, error: noop, debug: noop, trace: noop, appendLine: noop, clear: noop, show: noop, dispose: noop };
const vscode = {
  EventEmitter,
  McpHttpServerDefinition,
  McpHttpServerDefinition2: McpHttpServerDefinition,
  Disposable: class {
    constructor(dispose) {
      this.dispose = dispose;
    }
  },
  StatusBarAlignment: { Left: 1, Right: 2 },
  ThemeColor: class {
    constructor(id) {
      this.id = id;
    }
  },
  Uri: { parse: (value) => ({ toString: () => value }), file: (path) => ({ fsPath: path, toString: () => `file://${path}` }) },
  window: {
    createOutputChannel: () => channel,
    createStatusBarItem: () => ({ show: noop, hide: noop, dispose: noop }),
    showInformationMessage: async () => undefined,
    showWarningMessage: async () => undefined,
    showErrorMessage: async () => undefined,
  },
  workspace: {
    workspaceFolders: [],
    getConfiguration: () => ({ get: (_key, fallback) => fallback }),
    onDidChangeWorkspaceFolders: () => disposable,
    onDidChangeConfiguration: () => disposable,
  },
  commands: { registerCommand: () => disposable },
  env: { openExternal: async () => true, asExternalUri: async (uri) => uri },
  lm: {
    registerMcpServerDefinitionProvider: (id, provider) => {
      registered.push(provider.provideMcpServerDefinitions({ isCancellationRequested: false }));
      return disposable;
    },
  },
};

const load = Module._load;
Module._load = function (request, ...rest) {
  return request === 'vscode' ? vscode : load.call(this, request, ...rest);
};

/** The first provider's first answer. */
exports.firstDefinitions = () => registered[0];
exports.context = () => ({
  subscriptions: [],
  extension: { packageJSON: { version: '0.0.0-bench' } },
  extensionPath: __dirname,
  workspaceState: { get: () => undefined, update: async () => undefined },
});
