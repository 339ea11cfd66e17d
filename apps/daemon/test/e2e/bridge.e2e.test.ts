/**
 * End to end: `mcpool bridge` as a real process (compiled `bin/mcpool.js`) between an SDK
 * `Client` on stdio and a real Streamable HTTP MCP server on 127.0.0.1 (the test server of
 * `bridgeServer.ts`, restartable on its port). Checks what only the process can show: stdout
 * purity with debug logging on, the exit on stdin EOF and on SIGTERM (with the DELETE), the
 * default bounded retries, and the exit code of bad usage. No sleeps: waits are on events or
 * bounded `vi.waitFor`.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startTestServer, type TestServer } from '../bridgeServer.js';
import { BIN, initialize, spawnBridge, type BridgeProcess } from './bridgeProcess.js';

let dir: string;
let tokenFile: string;
let server: TestServer;
const started: BridgeProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mcpool-bridge-e2e-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeEach(async () => {
  server = await startTestServer();
  tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${server.token}\n`, { mode: 0o600 });
});
afterEach(async () => {
  // Only the bridges this file started, by pid.
  for (const bridge of started.splice(0)) if (bridge.child.exitCode === null && bridge.child.signalCode === null) bridge.child.kill('SIGKILL');
  await server.close();
});

const env = (): Record<string, string> => ({ HOME: dir, MCPOOL_STATE_DIR: join(dir, 'state') });
const text = (result: unknown): string => (result as { content: { text: string }[] }).content[0]!.text;

function bridge(args: string[]): BridgeProcess {
  const process = spawnBridge(args, env());
  started.push(process);
  return process;
}

describe('mcpool bridge (real process)', () => {
  it('keeps an SDK stdio client working across a server restart: the second call succeeds after exactly one re-init', async () => {
    const stderr: string[] = [];
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'bridge', '--url', server.url, '--token-file', tokenFile, '--log-level', 'info'], env: env(), stderr: 'pipe' });
    transport.stderr!.on('data', (chunk: Buffer) => stderr.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    await client.connect(transport);
    try {
      expect(text(await client.callTool({ name: 'echo', arguments: { text: 'before' } }))).toBe('before');
      // 1. The server restarts on its port, forgetting its sessions.
      await server.stop();
      await server.start();
      // 2. The next call works; the bridge re-initialized once, with the client's own params.
      expect(text(await client.callTool({ name: 'echo', arguments: { text: 'after' } }))).toBe('after');
      expect(server.initializeParams).toHaveLength(2);
      expect(server.initializeParams[1]).toEqual(server.initializeParams[0]);
      expect(stderr.filter((line) => line.includes('re-initialized: a new daemon session'))).toHaveLength(1);
      // 3. Every line the client read was JSON-RPC (the SDK reports anything else through onerror).
      expect(errors).toEqual([]);
    } finally {
      await client.close();
    }
    expect(server.seen.filter((seen) => seen.method === 'DELETE')).toHaveLength(1);
    expect(server.sessions()).toEqual([]);
  });

  it('stdout carries only JSON-RPC lines, with debug logging on (and a re-init under way)', async () => {
    const b = bridge(['--url', server.url, '--token-file', tokenFile, '--log-level', 'debug']);
    b.send(initialize(1));
    await b.waitForMessage((m) => m.id === 1);
    b.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    b.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    b.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
    await b.waitForMessage((m) => m.id === 3);
    await server.forgetSessions();
    b.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: { text: 'pure' } } });
    const answer = await b.waitForMessage((m) => m.id === 4);
    expect(answer.result).toMatchObject({ content: [{ type: 'text', text: 'pure' }] });
    b.child.stdin!.end();
    expect((await b.exited).code).toBe(0);
    expect(b.stdout.length).toBeGreaterThanOrEqual(5);
    for (const line of b.stdout) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    // The logs went to stderr, debug lines included.
    expect(b.logged('client → daemon').length).toBeGreaterThan(0);
    expect(b.logged('re-initialized')).toHaveLength(1);
  });

  it('stdin EOF: DELETEs its session and exits 0 promptly (its DELETE is bounded to 400 ms)', async () => {
    const b = bridge(['--url', server.url, '--token-file', tokenFile]);
    b.send(initialize());
    await b.waitForMessage((m) => m.id === 'init');
    b.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    b.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } });
    await b.waitForMessage((m) => m.id === 'call');
    expect(server.sessions()).toHaveLength(1);
    const closedAt = Date.now();
    b.child.stdin!.end();
    const exit = await b.exited;
    expect(exit.code).toBe(0);
    // Under the 5 s a wait on the daemon would take (a keep-alive, a request timeout), and generous for a loaded machine.
    expect(exit.at - closedAt).toBeLessThanOrEqual(3000);
    expect(server.seen.filter((seen) => seen.method === 'DELETE').map((seen) => seen.status)).toEqual([200]);
    expect(server.sessions()).toEqual([]);
  });

  it('SIGTERM: DELETEs its session and exits 0 promptly (its DELETE is bounded to 400 ms)', async () => {
    const b = bridge(['--url', server.url, '--token-file', tokenFile]);
    b.send(initialize());
    await b.waitForMessage((m) => m.id === 'init');
    const signalledAt = Date.now();
    b.child.kill('SIGTERM');
    const exit = await b.exited;
    expect(exit.code).toBe(0);
    expect(exit.at - signalledAt).toBeLessThanOrEqual(3000);
    expect(server.seen.filter((seen) => seen.method === 'DELETE')).toHaveLength(1);
    expect(server.sessions()).toEqual([]);
  });

  it('no server: the default bounded retries end in a JSON-RPC error, not a hang', async () => {
    await server.stop();
    const b = bridge(['--url', server.url, '--token-file', tokenFile]);
    const sentAt = Date.now();
    b.send(initialize());
    const answer = await b.waitForMessage((m) => m.id === 'init');
    expect(answer.error).toMatchObject({ code: -32000, data: { code: 'MCPOOL_BRIDGE_UNREACHABLE' } });
    // 100 + 200 + 400 + 800 + 1600 ms of backoff plus the attempts, and the bridge's own start
    // (seconds on a loaded machine): bounded, where a hang would be the call timeout or never.
    expect(Date.now() - sentAt).toBeLessThan(30_000);
    b.child.stdin!.end();
    expect((await b.exited).code).toBe(0);
  });

  it('bad usage exits 2 with a message on stderr and nothing on stdout', async () => {
    const b = bridge(['--url', 'ftp://127.0.0.1/mcp', '--token-file', tokenFile]);
    const exit = await b.exited;
    expect(exit.code).toBe(2);
    expect(b.stdout).toEqual([]);
    expect(b.stderr.join('\n')).toMatch(/--url: expected an http\(s\) URL/);
    const missing = bridge(['--url', server.url, '--token-file', join(dir, 'no-such-token')]);
    expect((await missing.exited).code).toBe(2);
    expect(missing.stderr.join('\n')).toMatch(/--token-file: cannot read a token/);
  });
});
