/**
 * The real `mcpool serve` process for the gateway end-to-end tests: started on a temporary config
 * (port 0, 127.0.0.1), its JSON log lines collected, its operator token read from the state dir;
 * plus `@modelcontextprotocol/inspector-cli` run with this node from its installed files.
 */
import { vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/mcpool.js', import.meta.url));
const require = createRequire(import.meta.url);

/**
 * The inspector's CLI entry. Its bin (`build/cli.js`) only re-spawns this file with whatever
 * `node` is on PATH, so the tests run this file directly with `process.execPath`.
 */
export const INSPECTOR_CLI = join(dirname(require.resolve('@modelcontextprotocol/inspector-cli/package.json')), 'build', 'index.js');
/** The inspector reads `../package.json` for its client identity: run it from a folder whose parent has one. */
const INSPECTOR_CWD = fileURLToPath(new URL('..', import.meta.url));

export interface LogLine {
  msg: string;
  [key: string]: unknown;
}

export interface DaemonProcess {
  child: ChildProcess;
  url: string;
  token: string;
  dir: string;
  lines: LogLine[];
  /** Resolves with the first log line `match` accepts. */
  logLine(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** SIGTERM, then the exit code (SIGKILL if it does not stop in time). */
  stop(): Promise<number | null>;
  cleanup(): void;
}

/** `dir`: run in this directory (its state dir kept from a run before, as a restarted daemon's). */
export async function startDaemon(doc: unknown, env: Record<string, string> = {}, dir = mkdtempSync(join(tmpdir(), 'mcpool-gateway-e2e-'))): Promise<DaemonProcess> {
  const configPath = join(dir, 'mcpool.json');
  writeFileSync(configPath, JSON.stringify(doc, null, 2));
  // Debug: the tests read per-session lines (opened, closed), which are below info.
  const child = spawn(process.execPath, [BIN, 'serve', '--config', configPath, '--log-level', 'debug'], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, XDG_STATE_HOME: join(dir, 'xdg-state'), MCPOOL_STATE_DIR: join(dir, 'state'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const stderr: string[] = [];
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop()!;
    for (const part of parts) {
      if (part.length === 0) continue;
      try {
        lines.push(JSON.parse(part) as LogLine);
      } catch {
        lines.push({ msg: part });
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const logLine = (match: (line: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> =>
    vi.waitFor(
      () => {
        const found = lines.find(match);
        if (found === undefined) throw new Error(`not logged yet (daemon stderr: ${stderr.join('').slice(-500)})`);
        return found;
      },
      { timeout: timeoutMs, interval: 20 },
    );
  const listening = await logLine((line) => line.msg.startsWith('listening on '));
  await logLine((line) => /^\d+\/\d+ servers ready/.test(line.msg));
  const token = readFileSync(join(dir, 'state', 'token'), 'utf8').trim();
  return {
    child,
    url: listening.msg.slice('listening on '.length),
    token,
    dir,
    lines,
    logLine,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    cleanup() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `mcp-inspector-cli <url> --transport http --header "Authorization: Bearer …" <args…>`. */
export function inspector(url: string, token: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [INSPECTOR_CLI, url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, ...args], {
      cwd: INSPECTOR_CWD,
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
