/**
 * Runs `mcpool bridge` as a real process (`node bin/mcpool.js bridge …`) with raw pipes: lines in,
 * every stdout line and stderr log line kept, the exit awaited as an event.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';

export const BIN = fileURLToPath(new URL('../../bin/mcpool.js', import.meta.url));

export interface BridgeProcess {
  child: ChildProcess;
  stdout: string[];
  /** stderr lines (JSON log lines, or text for usage errors). */
  stderr: string[];
  /** Resolves at exit with the code and when it happened. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  send(message: unknown): void;
  messages(): Record<string, unknown>[];
  waitForMessage(match: (message: Record<string, unknown>) => boolean, timeout?: number): Promise<Record<string, unknown>>;
  /** Parsed stderr log lines whose `msg` includes `text`. */
  logged(text: string): Record<string, unknown>[];
}

function lines(stream: NodeJS.ReadableStream, into: string[]): void {
  let pending = '';
  stream.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop()!;
    into.push(...parts.filter((line) => line.length > 0));
  });
}

export function spawnBridge(args: readonly string[], env: Record<string, string | undefined>): BridgeProcess {
  const child = spawn(process.execPath, [BIN, 'bridge', ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  const stderr: string[] = [];
  lines(child.stdout, stdout);
  lines(child.stderr, stderr);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
  const messages = (): Record<string, unknown>[] => stdout.map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    child,
    stdout,
    stderr,
    exited,
    send: (message) => child.stdin.write(`${JSON.stringify(message)}\n`),
    messages,
    waitForMessage: (match, timeout = 20_000) =>
      vi.waitFor(
        () => {
          const found = messages().find(match);
          if (!found) throw new Error('no such message yet');
          return found;
        },
        { timeout, interval: 10 },
      ),
    logged: (text) =>
      stderr
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as Record<string, unknown>];
          } catch {
            return [];
          }
        })
        .filter((line) => String(line.msg).includes(text)),
  };
}

export const initialize = (id: string | number = 'init'): Record<string, unknown> => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-e2e', version: '1.0.0' } },
});
