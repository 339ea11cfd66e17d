/**
 * The server of a later revision (test/fixtures/servers/futureServer.mjs) as a direct connection
 * answers it, and a raw JSON-RPC peer on a child's stdio — no SDK that could drop what it does not
 * know — for the tests that compare what reaches a caller through mcpool with that.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { createInterface } from 'node:readline';
import { FIXTURES } from '../../../test/helpers/processes.js';

export type Message = { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { code: number; message: string } };

/** A JSON-RPC peer on a child's stdio: `request` resolves with the answer of that id; every message is kept in `seen`. */
export function peer(child: { stdin: Writable; stdout: Readable }): { seen: Message[]; request: (id: number, method: string, params: Record<string, unknown>) => Promise<Message>; notify: (method: string) => void } {
  const seen: Message[] = [];
  const waiting = new Map<number, (message: Message) => void>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line) as Message;
    seen.push(message);
    if (message.id !== undefined && message.method === undefined) waiting.get(message.id)?.(message);
  });
  const send = (message: Record<string, unknown>): boolean => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  return {
    seen,
    request: (id, method, params) =>
      new Promise<Message>((resolve) => {
        waiting.set(id, resolve);
        send({ id, method, params });
      }),
    notify: (method) => void send({ method }),
  };
}

export const INITIALIZE = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'future-test', version: '1.0.0' } };
/** A plain call, and one with params no revision mcpool knows has (SEP-3279's `requestedOutputs`, a made-up one). */
export const CALL = { name: 'future', arguments: { text: 'hi' } };
export const CALL_WITH_UNKNOWN = { ...CALL, requestedOutputs: ['table'], futureParam: { keep: [1, 'two'] } };

/** The fixture's own answers to `tools/list` and `call`, over its stdio. */
export async function direct(args: string[], call: Record<string, unknown>): Promise<{ tools: unknown[]; called: Record<string, unknown> }> {
  const child = spawn(process.execPath, [`${FIXTURES}futureServer.mjs`, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const fixture = peer(child);
  await fixture.request(0, 'initialize', INITIALIZE);
  fixture.notify('notifications/initialized');
  const tools = (await fixture.request(1, 'tools/list', {})).result!.tools as unknown[];
  const called = (await fixture.request(2, 'tools/call', call)).result!;
  child.stdin.end();
  return { tools, called };
}
