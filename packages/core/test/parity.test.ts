/**
 * Parity with the reference client: the same sequences through the pool and through the SDK v2
 * `Client` (`versionNegotiation: 'auto'`, so it probes the era as the pool does) against the same
 * real servers, each side on its own process (stdio) or connection (Streamable HTTP, one server
 * both talk to): tool, prompt and resource lists, results (unknown fields kept), JSON-RPC errors,
 * progress (HTTP), and the era each side settled on.
 *
 * Known, intended differences (not compared):
 * - a modern result's `resultType: "complete"` reaches the pool's caller as the server sent it;
 *   the SDK client consumes the field. The pool passes results through unchanged, so that an
 *   `input_required` result and its `requestState` reach the caller intact.
 * - the pool answers lists from its snapshot (no `ttlMs`/`cacheScope` envelope of a list result).
 * - the pool declares sampling, elicitation and roots to a legacy server (its sessions may answer
 *   them), and some servers list more tools then (server-everything: get-roots-list,
 *   trigger-elicitation-request, trigger-sampling-request); the reference client here declares
 *   the same capabilities so the lists are comparable.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { PooledConnection } from '@mcpool/core';
import { FIXTURES } from '../../../test/helpers/processes.js';
import { usePools } from '../../../test/helpers/pools.js';
import { startHttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';
import { startHttpLegacyServer } from '../../../test/fixtures/servers/httpLegacyServer.mjs';

const { newPool, newMark } = usePools({ drainDelayMs: 30_000 });
const require = createRequire(import.meta.url);
const EVERYTHING = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js');

const clients: Client[] = [];
const httpServers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  await Promise.all(httpServers.splice(0).map((server) => server.close()));
});

interface Target {
  label: string;
  args: (mark: string) => string[];
  era: 'legacy' | 'modern';
  call: { name: string; arguments: Record<string, unknown> };
}

const TARGETS: Target[] = [
  { label: 'server-everything (legacy)', args: (mark) => [EVERYTHING, 'stdio', mark], era: 'legacy', call: { name: 'echo', arguments: { message: 'parity' } } },
  { label: 'v1 echo fixture (legacy)', args: (mark) => [FIXTURES + 'echo.mjs', mark], era: 'legacy', call: { name: 'echo', arguments: { text: 'parity' } } },
  { label: 'v2 dual-era fixture', args: (mark) => [FIXTURES + 'v2EraServer.mjs', mark], era: 'modern', call: { name: 'echo', arguments: { text: 'parity' } } },
  { label: 'v2 modern-only fixture', args: (mark) => [FIXTURES + 'v2EraServer.mjs', mark, '--modern-only'], era: 'modern', call: { name: 'echo', arguments: { text: 'parity' } } },
];

async function reference(to: string[] | URL): Promise<Client> {
  const client = new Client(
    { name: 'parity-reference', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' }, capabilities: { sampling: {}, elicitation: {}, roots: {} } },
  );
  clients.push(client);
  await client.connect(to instanceof URL ? new StreamableHTTPClientTransport(to) : new StdioClientTransport({ command: process.execPath, args: to, stderr: 'ignore' }));
  return client;
}

/** Lists, one call's result and an unknown tool's error: the same on both sides. */
async function expectSameSurface(view: PooledConnection, client: Client, call: Target['call']): Promise<void> {
  const tools = (await client.listTools()).tools as unknown as Record<string, unknown>[];
  expect(view.tools.map((tool) => tool.name)).toEqual(tools.map((tool) => tool.name));
  expect(view.tools.map((tool) => tool.inputSchema)).toEqual(tools.map((tool) => tool.inputSchema));
  const caps = client.getServerCapabilities() ?? {};
  if (caps.prompts) expect(strip(view.prompts as never)).toEqual(strip((await client.listPrompts()).prompts as never));
  if (caps.resources) expect(strip(view.resources as never)).toEqual(strip((await client.listResources()).resources as never));

  // The same call: the same result, every field the server sent.
  const ours = await view.callTool(call.name, call.arguments);
  const theirs = (await client.callTool(call)) as Record<string, unknown>;
  expect(body(ours)).toEqual(body(theirs));

  // The same unknown tool: the same JSON-RPC error code (or both an error result).
  expect(await codeOf(view.callTool('no_such_tool', {}))).toBe(await codeOf(client.callTool({ name: 'no_such_tool', arguments: {} })));
}

/** What a result says, without the per-response envelope (`_meta` server info) and `resultType` (see above). */
function body(result: Record<string, unknown>): Record<string, unknown> {
  const { _meta: _ignored, resultType: _type, ...rest } = result;
  return rest;
}

function strip<T extends Record<string, unknown>>(items: T[]): Record<string, unknown>[] {
  return items.map((item) => {
    const { _meta: _ignored, ...rest } = item;
    return rest;
  });
}

async function codeOf(promise: Promise<unknown>): Promise<number | undefined> {
  try {
    const result = (await promise) as { isError?: boolean };
    return result?.isError ? 0 : undefined;
  } catch (error) {
    const e = error as { code?: unknown; data?: { mcpCode?: unknown } };
    return typeof e.data?.mcpCode === 'number' ? e.data.mcpCode : typeof e.code === 'number' ? e.code : undefined;
  }
}

describe('parity with the SDK v2 Client', () => {
  for (const target of TARGETS) {
    it(`${target.label}: same era, lists, results and errors`, async () => {
      const pool = newPool({ stateDir: false });
      const view: PooledConnection = await pool.acquire('parity', { command: process.execPath, args: target.args(newMark('parity-pool')) }, 's1');
      const client = await reference(target.args(newMark('parity-ref')));

      expect(pool.getSnapshot().servers.parity!.entrySummary[0]!.era).toBe(target.era);
      expect(client.getProtocolEra()).toBe(target.era);

      await expectSameSurface(view, client, target.call);
    }, 90_000);
  }
});

interface HttpTarget {
  label: string;
  start(): Promise<{ url: string; close(): Promise<void> }>;
  era: 'legacy' | 'modern';
}

const HTTP_TARGETS: HttpTarget[] = [
  { label: 'v2 modern-only HTTP fixture', start: () => startHttpModernServer({ legacy: 'reject' }), era: 'modern' },
  { label: 'v2 dual-era HTTP fixture', start: () => startHttpModernServer({ legacy: 'stateless' }), era: 'modern' },
  { label: 'v1 legacy HTTP fixture', start: () => startHttpLegacyServer({}), era: 'legacy' },
];

describe('parity with the SDK v2 Client over Streamable HTTP', () => {
  for (const target of HTTP_TARGETS) {
    it(`${target.label}: same era, lists, results, errors and progress`, async () => {
      const server = await target.start();
      httpServers.push(server);
      const pool = newPool({ stateDir: false });
      const view = await pool.acquire('parity', { type: 'http', url: server.url }, 's1');
      const client = await reference(new URL(server.url));

      expect(pool.getSnapshot().servers.parity!.entrySummary[0]!.era).toBe(target.era);
      expect(client.getProtocolEra()).toBe(target.era);
      await expectSameSurface(view, client, { name: 'echo', arguments: { text: 'parity over http' } });

      // Progress: the same notifications, in order, and the same final result.
      const ourProgress: unknown[] = [];
      const theirProgress: unknown[] = [];
      const ours = await view.callTool('progress', { steps: 3 }, { onProgress: ({ progress, total }) => ourProgress.push({ progress, total }) });
      const theirs = (await client.callTool({ name: 'progress', arguments: { steps: 3 } }, { onprogress: ({ progress, total }) => theirProgress.push({ progress, total }) })) as Record<string, unknown>;
      expect(ourProgress).toEqual([
        { progress: 1, total: 3 },
        { progress: 2, total: 3 },
        { progress: 3, total: 3 },
      ]);
      expect(ourProgress).toEqual(theirProgress);
      expect(body(ours)).toEqual(body(theirs));
    }, 90_000);
  }
});
