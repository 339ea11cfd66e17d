/**
 * Sharing defaults that fit real configs: per-client tokens do not multiply the processes of a
 * server that holds no client's state. The rule (`sharingDefaults.ts`) on its own, then real
 * daemons: the README's `clients` example with the real server-memory from npm (one process for
 * the operator, `ide` and `cli`), a server whose tools all declare `readOnlyHint` (shared once its
 * first start listed them), and the warm hold following whoever uses a per-client server.
 */
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { WorkspaceMcpStatus } from '@mcpool/client';
import { normalizeServerConfig, type ServerConfigInput } from '@mcpool/protocol';
import { daemonDefaultSharing, decideSharing } from 'mcpool';
import { fixtureConfig, marker, pidFromResult, pidsWithMarker } from '../../../test/helpers/processes.js';
import { startHttpModernServer, type HttpModernServer } from '../../../test/fixtures/servers/httpModernServer.mjs';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';

/** The real server-memory from npm (a devDependency; it has a bin, no main to resolve). */
const MEMORY = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-memory/package.json')), 'dist', 'index.js');
const IDE = `ide-${randomUUID()}`;
const CLI = `cli-${randomUUID()}`;
const CLIENTS = [
  { id: 'ide', tokenEnv: 'SD_IDE_TOKEN', rights: ['read', 'write'] },
  { id: 'cli', tokenEnv: 'SD_CLI_TOKEN', rights: ['read', 'write'] },
];

const policy = (input: ServerConfigInput, era?: 'legacy' | 'modern', readOnly?: boolean) => decideSharing({ config: normalizeServerConfig(input).config, fingerprintEra: era }, readOnly).policy;

describe('the default policy', () => {
  it('follows the era, what the server is, and its tools’ annotations; nothing known is per-client', () => {
    const memory = { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] };
    expect(policy(memory)).toBe('shared');
    expect(policy({ command: '/usr/local/bin/npx', args: ['--yes', '@modelcontextprotocol/server-memory@2026.8.31'] })).toBe('shared');
    expect(policy({ command: 'node', args: ['/home/me/node_modules/@modelcontextprotocol/server-memory/dist/index.js'] })).toBe('shared');
    expect(policy({ command: 'pnpm', args: ['dlx', '@modelcontextprotocol/server-github'] })).toBe('shared');
    expect(policy({ command: 'uvx', args: ['mcp-server-fetch'] })).toBe('shared');
    // Given its directories it works on those files; without, on each client's roots.
    expect(policy({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv/docs'] })).toBe('shared');
    expect(policy({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem'] })).toBe('per-principal');
    expect(policy({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-sequential-thinking'] })).toBe('per-session');
    expect(policy({ command: 'npx', args: ['@playwright/mcp@latest'] })).toBe('per-principal');
    expect(policy({ command: 'my-server' })).toBe('per-principal');
    expect(policy({ command: 'my-server' }, 'modern')).toBe('shared');
    expect(policy({ command: 'my-server' }, 'legacy', true)).toBe('shared');
    expect(policy({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-sequential-thinking'] }, 'legacy', true)).toBe('per-session');
    expect(daemonDefaultSharing({ serverName: 'memory', fingerprintEra: 'legacy', config: normalizeServerConfig(memory).config })).toBe('shared');
  });
});

let h: Harness | undefined;
let remote: HttpModernServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  await h?.close();
  h = undefined;
  await remote?.close();
  remote = undefined;
});

async function daemonWith(servers: Record<string, unknown>, marks: string[], daemon: Record<string, unknown> = {}): Promise<{ h: Harness; base: string }> {
  h = await harness({ mcpServers: servers, daemon: { clients: CLIENTS, ...daemon } }, { env: { SD_IDE_TOKEN: IDE, SD_CLI_TOKEN: CLI }, marks });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  return { h, base: `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}` };
}

async function client(base: string, token: string): Promise<Client> {
  const { client: connected } = await connectClient(`${base}/mcp`, token);
  clients.push(connected);
  return connected;
}

const status = async (harnessed: Harness): Promise<WorkspaceMcpStatus> => (await harnessed.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();

describe('per-client tokens and a server that holds no client’s state', () => {
  it('the README’s clients example: the operator’s first start, ide and cli use one server-memory process', { timeout: 180_000 }, async () => {
    const mark = marker('sharing-memory');
    const memoryFile = join(tmpdir(), `mcpool-memory-${randomUUID()}.json`);
    const { h: daemon, base } = await daemonWith({ memory: { command: process.execPath, args: [MEMORY, mark], env: { MEMORY_FILE_PATH: memoryFile } } }, [mark]);
    const ide = await client(base, IDE);
    const cli = await client(base, CLI);
    await ide.callTool({ name: 'memory__create_entities', arguments: { entities: [{ name: 'pool', entityType: 'project', observations: ['one process'] }] } });
    const graph = await cli.callTool({ name: 'memory__read_graph', arguments: {} });
    expect(JSON.stringify(graph.content)).toContain('one process');
    expect(pidsWithMarker(mark)).toHaveLength(1);
    const memory = (await status(daemon)).servers.find((server) => server.name === 'memory')!;
    // The daemon's one start to learn its catalog, then ide's and cli's sessions: one entry, held by the two.
    expect(memory.entrySummary).toEqual([expect.objectContaining({ sharing: 'shared', refs: 2 })]);
    expect(memory.sharing).toEqual({ policy: 'shared', reason: 'server-memory keeps its graph in its file and reads it on every call' });
  });

  it('a server whose tools all declare readOnlyHint is shared once its first start listed them: the warm hold moves to the shared entry', { timeout: 180_000 }, async () => {
    const mark = marker('sharing-readonly');
    // About the warm hold: it holds servers that start with the daemon (`start: "eager"`).
    const { h: daemon, base } = await daemonWith({ docs: fixtureConfig('readOnlyTools.mjs', mark) }, [mark], { start: 'eager', drainDelayMs: 200 });
    // The first start (the warm hold's, as nothing was known) was per-client; once its tools were listed, the hold moved.
    await expect.poll(async () => (await status(daemon)).servers[0]!.entrySummary.map((entry) => entry.sharing), { timeout: 60_000 }).toEqual(['shared']);
    const pids = await Promise.all([IDE, CLI, daemon.token].map(async (token) => pidFromResult(await (await client(base, token)).callTool({ name: 'docs__pid', arguments: {} }))));
    expect(new Set(pids).size).toBe(1);
    expect(pidsWithMarker(mark)).toEqual([pids[0]]);
    expect((await status(daemon)).servers[0]!.sharing).toEqual({ policy: 'shared', reason: 'every one of its tools declares readOnlyHint: no call changes what it holds' });
  });
});

describe('the warm hold of a per-client server', () => {
  it('keeps one entry for whoever uses it: it moves from the operator’s to ide’s, stays when ide leaves, then moves to cli’s', { timeout: 180_000 }, async () => {
    const mark = marker('sharing-follow');
    // About the warm hold: it holds servers that start with the daemon (`start: "eager"`).
    const { h: daemon, base } = await daemonWith({ notes: fixtureConfig('echo.mjs', mark) }, [mark], { start: 'eager', drainDelayMs: 200 });
    const entries = async () => (await status(daemon)).servers[0]!.entrySummary;
    expect(await entries()).toEqual([expect.objectContaining({ sharing: 'per-principal', refs: 1 })]);
    const operatorPid = pidsWithMarker(mark)[0]!;

    // 1. ide uses it: its own entry; the operator's, used by nobody, drains.
    const { client: ide, transport: ideTransport } = await connectClient(`${base}/mcp`, IDE);
    clients.push(ide);
    const idePid = pidFromResult(await ide.callTool({ name: 'notes__pid', arguments: {} }));
    expect(idePid).not.toBe(operatorPid);
    await expect.poll(() => pidsWithMarker(mark), { timeout: 60_000 }).toEqual([idePid]);
    expect(await entries()).toEqual([expect.objectContaining({ refs: 2 })]);

    // 2. ide leaves (DELETE, then close): its entry stays warm (the hold keeps it), nothing else starts.
    await ideTransport.terminateSession();
    await ide.close();
    await expect.poll(async () => (await entries()).map((entry) => entry.refs), { timeout: 60_000 }).toEqual([1]);
    expect(pidsWithMarker(mark)).toEqual([idePid]);

    // 3. cli uses it: its entry; ide's, held by nobody but the hold, drains.
    const cli = await client(base, CLI);
    const cliPid = pidFromResult(await cli.callTool({ name: 'notes__pid', arguments: {} }));
    await expect.poll(() => pidsWithMarker(mark), { timeout: 60_000 }).toEqual([cliPid]);
  });

  it('stays on its one entry of a server the pool does not pool (http), though its default policy says shared', { timeout: 180_000 }, async () => {
    // A 2026-07-28 server's default is shared; an http one is not pooled, so its entry is
    // per-session whatever the policy: moving the hold to "a shared entry" would open another
    // per-session one, again and again.
    remote = await startHttpModernServer();
    // About the warm hold: it holds servers that start with the daemon (`start: "eager"`).
    const { h: daemon } = await daemonWith({ remote: { type: 'http', url: remote.url } }, [], { start: 'eager' });
    const before = (await status(daemon)).servers[0]!.entrySummary;
    expect(before).toEqual([expect.objectContaining({ sharing: 'per-session', refs: 1 })]);
    // A reload runs after every move of the hold its warm start queued.
    expect((await daemon.request({ method: 'POST', url: '/workspace/mcp/reload-all' })).statusCode).toBe(200);
    expect(remote.exchanges.filter((exchange) => (exchange.body as { method?: string } | undefined)?.method === 'server/discover')).toHaveLength(1);
    expect((await status(daemon)).servers[0]!.entrySummary).toEqual(before);
  });
});
