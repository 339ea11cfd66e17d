/**
 * Roots per workspace through `/mcp`: the real filesystem server from npm with no directory
 * argument (as editors run it), `sharing: "per-workspace"`, behind a real daemon, used by SDK
 * clients that declare `roots`. The gateway asks each session's client for its roots, the pool
 * answers the server's `roots/list` from its entry's roots, so each client sees its own folder and
 * not the other's; two clients with the same roots share one process; a client whose roots change
 * moves to the entry of its new roots; status says the server uses roots (learned from its requests).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { WorkspaceMcpStatus } from '@mcpool/client';
import { main } from 'mcpool';
import { marker, textOf } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';

const FILESYSTEM = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const mark = marker('roots-gateway');

let h: Harness;
let base: string;
const clients: Client[] = [];

/** A workspace folder (under the harness's directory) holding one file named after it. */
function workspace(name: string): { dir: string; uri: string } {
  const dir = join(h.dir, 'workspaces', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.txt`), name);
  return { dir, uri: pathToFileURL(dir).href };
}

/** A `/mcp` client that declares roots and answers `roots/list` with what `roots()` says then. */
async function openWith(roots: () => { uri: string }[]): Promise<Client> {
  const { client } = await connectClient(`${base}/mcp`, h.token, { capabilities: { roots: { listChanged: true } } });
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: roots() }));
  clients.push(client);
  return client;
}

async function allowed(client: Client): Promise<string> {
  return textOf((await client.callTool({ name: 'files__list_allowed_directories', arguments: {} })));
}

/** The entries sessions hold (the daemon's own start of the server, with no roots and no session, is left out). */
async function entries(): Promise<{ refs: number; sharing: string }[]> {
  const status = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
  return status.servers
    .find((server) => server.name === 'files')!
    .entrySummary.filter(({ refs }) => refs > 0)
    .map(({ refs, sharing }) => ({ refs, sharing }));
}

beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {
        // The marker rides in the process title: any other argument would be a directory.
        files: { command: process.execPath, args: [`--title=${mark}`, FILESYSTEM], sharing: 'per-workspace' },
      },
      daemon: { keepWarm: false },
    },
    { marks: [mark] },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await h?.close();
});

describe('roots per workspace through /mcp', { timeout: 120_000 }, () => {
  it('two clients with different roots each see their own files; the same roots share one process; changed roots move the session', async () => {
    const alpha = workspace('alpha');
    const beta = workspace('beta');
    let aRoots = [{ uri: alpha.uri, name: 'alpha' }];
    const a = await openWith(() => aRoots);
    const b = await openWith(() => [{ uri: beta.uri }]);

    // The server applies its roots once it has them (right after it is initialized).
    await vi.waitFor(async () => expect(await allowed(a)).toContain(alpha.dir), { timeout: 60_000, interval: 200 });
    await vi.waitFor(async () => expect(await allowed(b)).toContain(beta.dir), { timeout: 60_000, interval: 200 });
    expect(await allowed(a)).not.toContain(beta.dir);
    expect(await allowed(b)).not.toContain(alpha.dir);
    const listed = textOf((await a.callTool({ name: 'files__list_directory', arguments: { path: alpha.dir } })));
    expect(listed).toContain('alpha.txt');
    const denied = (await b.callTool({ name: 'files__list_directory', arguments: { path: alpha.dir } })) as Record<string, unknown>;
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).not.toContain('alpha.txt');

    // A third client with alpha's roots joins alpha's process.
    const c = await openWith(() => [{ uri: alpha.uri }]);
    await vi.waitFor(async () => expect(await allowed(c)).toContain(alpha.dir), { timeout: 60_000, interval: 200 });
    expect((await entries()).sort((x, y) => y.refs - x.refs)).toEqual([
      { refs: 2, sharing: 'per-workspace' },
      { refs: 1, sharing: 'per-workspace' },
    ]);

    // a's roots change: it tells the pool, and its next request runs on beta's process.
    aRoots = [{ uri: beta.uri, name: 'beta' }];
    await a.sendRootsListChanged();
    await vi.waitFor(async () => expect(await allowed(a)).toContain(beta.dir), { timeout: 60_000, interval: 200 });
    expect(await allowed(a)).not.toContain(alpha.dir);
    await vi.waitFor(async () => expect((await entries()).map((entry) => entry.refs).sort()).toEqual([1, 2]), { timeout: 30_000, interval: 100 });
    expect(await allowed(c)).toContain(alpha.dir);

    // Status shows what the pool learned from the server's own requests: it asks for roots.
    const status = (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
    expect(status.servers.find((server) => server.name === 'files')!.learned).toEqual({ usesRoots: true, makesServerRequests: true });
    const out: string[] = [];
    expect(await main(['node', 'mcpool', 'status'], { stdout: (t) => out.push(t), stderr: (t) => out.push(t), env: { MCPOOL_URL: base, MCPOOL_TOKEN: h.token }, cwd: h.dir })).toBe(0);
    expect(out.join('\n').split('\n').find((line) => line.startsWith('files'))).toMatch(/^files\s+active\s+running · start \d+ ms · uses roots\s/);
  });
});
