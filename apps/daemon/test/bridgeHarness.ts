/**
 * Runs a {@link Bridge} in process between two pipes, with an SDK `Client` on the stdio side
 * (a tiny transport over the pipes) and every line the bridge writes kept, so each test can
 * check stdout purity (B-1) and count what the client saw.
 */
import { PassThrough } from 'node:stream';
import { vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createLogger, SecretRedactor } from 'mcpool';
import { Bridge, type BridgeOptions, type TokenSource } from '@mcpool/gateway';
import { memoryDestination } from './helpers.js';

export interface BridgeRun {
  bridge: Bridge;
  /** Every line the bridge wrote to its output. */
  lines: string[];
  /** The bridge's log lines (JSON). */
  logs: string[];
  input: PassThrough;
  /** Resolves when `run()` does. */
  done: Promise<void>;
  /** Writes one raw line to the bridge. */
  send(message: unknown): void;
  /** Parsed output lines. */
  messages(): Record<string, unknown>[];
  /** Waits (bounded) until an output message matches. */
  waitForMessage(match: (message: Record<string, unknown>) => boolean, timeout?: number): Promise<Record<string, unknown>>;
  /** Log lines whose `msg` includes `text`. */
  logged(text: string): Record<string, unknown>[];
  /** An SDK client over the pipes (initialize already done). */
  connect(options?: { capabilities?: Record<string, unknown>; onSampling?: () => string }): Promise<Client>;
}

export const staticToken = (token: string | undefined): TokenSource => ({ get: async () => token, refresh: async () => token });

export function startBridge(options: Partial<BridgeOptions> & { url: string; token: TokenSource }): BridgeRun {
  const input = new PassThrough();
  const output = new PassThrough();
  const lines: string[] = [];
  const logs: string[] = [];
  const listeners = new Set<(line: string) => void>();
  let pending = '';
  output.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      for (const listener of listeners) listener(line);
    }
  });
  const logger = createLogger({ level: 'debug', destination: memoryDestination(logs), redactor: new SecretRedactor() });
  const bridge = new Bridge({ input, output, logger, retryDelaysMs: [20, 40], streamBackoff: { initialMs: 20, maxMs: 200 }, closeGraceMs: 100, ...options });
  const done = bridge.run();
  const messages = (): Record<string, unknown>[] => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  const run: BridgeRun = {
    bridge,
    lines,
    logs,
    input,
    done,
    send: (message) => input.write(`${JSON.stringify(message)}\n`),
    messages,
    waitForMessage: (match, timeout = 15_000) =>
      vi.waitFor(
        () => {
          const found = messages().find(match);
          if (!found) throw new Error('no such message yet');
          return found;
        },
        { timeout, interval: 10 },
      ),
    logged: (text) => logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => String(line.msg).includes(text)),
    async connect(connectOptions = {}) {
      const transport: Transport = {
        async start() {
          listeners.add((line) => transport.onmessage?.(JSON.parse(line) as JSONRPCMessage));
        },
        async send(message) {
          input.write(`${JSON.stringify(message)}\n`);
        },
        async close() {
          input.end();
          transport.onclose?.();
        },
      };
      const client = new Client({ name: 'bridge-test-client', version: '1.0.0' }, { capabilities: connectOptions.capabilities ?? {} });
      await client.connect(transport);
      return client;
    },
  };
  return run;
}

/** Every output line is one JSON-RPC 2.0 message (B-1, I-1). */
export function expectPureJsonRpc(lines: readonly string[]): void {
  for (const line of lines) {
    const message = JSON.parse(line) as Record<string, unknown>;
    if (message.jsonrpc !== '2.0') throw new Error(`not JSON-RPC 2.0: ${line.slice(0, 200)}`);
  }
}
