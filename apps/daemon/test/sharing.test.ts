/**
 * The daemon's sharing defaults with real fixture servers, real HTTP and real tokens: a server
 * whose config sets no `sharing`, whose era is not known to be modern and which is nothing the
 * daemon knows to keep no client's state (see sharingDefaults.test.ts) is shared per client
 * (the token's client id), over REST sessions and `/mcp` sessions alike; an explicit policy wins.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { SessionInfo, ToolCallResponse, WorkspaceMcpStatus } from '@mcpool/client';
import { daemonDefaultSharing, diffServers } from 'mcpool';
import { fixtureConfig, marker, pidFromResult, pidsWithMarker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';

const legacyMark = marker('sharing-legacy');
const sharedMark = marker('sharing-shared');
const ALICE = `alice-${randomUUID()}`;
const BOB = `bob-${randomUUID()}`;

let h: Harness;
let base: string;
const clients: Client[] = [];

async function session(token: string): Promise<string> {
  const response = await h.request({ method: 'POST', url: '/sessions', token, payload: { servers: ['thinking', 'open'] } });
  expect(response.statusCode).toBe(201);
  const info = response.json<SessionInfo>();
  expect(info.servers.map((server) => server.status)).toEqual(['connected', 'connected']);
  return info.id;
}

async function restPid(token: string, id: string, server: string): Promise<number> {
  const response = await h.request({ method: 'POST', url: `/sessions/${id}/tools/call`, token, payload: { server, name: 'pid' } });
  expect(response.statusCode).toBe(200);
  return pidFromResult(response.json<ToolCallResponse>().result);
}

async function mcpPid(token: string, tool: string): Promise<number> {
  const { client } = await connectClient(`${base}/mcp`, token);
  clients.push(client);
  return pidFromResult((await client.callTool({ name: tool })));
}

async function status(): Promise<WorkspaceMcpStatus> {
  return (await h.request({ method: 'GET', url: '/workspace/mcp' })).json<WorkspaceMcpStatus>();
}

beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {
        // No `sharing`, and no era known: the daemon treats it as legacy.
        thinking: fixtureConfig('echo.mjs', legacyMark),
        open: fixtureConfig('echo.mjs', sharedMark, { sharing: 'shared' }),
      },
      daemon: {
        keepWarm: false,
        clients: [
          { id: 'alice', tokenEnv: 'SH_ALICE', rights: ['write'] },
          { id: 'bob', tokenEnv: 'SH_BOB', rights: ['write'] },
        ],
      },
    },
    // Not started: the warm-up would start each server once more, for the operator.
    { env: { SH_ALICE: ALICE, SH_BOB: BOB }, marks: [legacyMark, sharedMark], start: false },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await h?.close();
});

describe('daemon sharing defaults', { timeout: 120_000 }, () => {
  it('picks shared for a modern-era server and per-principal for a legacy or unknown one', () => {
    const config = { transport: 'stdio' as const, command: 'srv' };
    expect(daemonDefaultSharing({ serverName: 'x', fingerprintEra: 'modern', config })).toBe('shared');
    expect(daemonDefaultSharing({ serverName: 'x', fingerprintEra: 'legacy', config })).toBe('per-principal');
    expect(daemonDefaultSharing({ serverName: 'x', fingerprintEra: undefined, config })).toBe('per-principal');
  });

  it('a reload that changes only sharing reports the server as changed', () => {
    const before = { memory: { transport: 'stdio' as const, command: 'srv' } };
    expect(diffServers(before, { memory: { ...before.memory, sharing: 'per-session' } })).toMatchObject({ changed: ['memory'], unchanged: [] });
    expect(diffServers(before, { memory: { ...before.memory, description: 'x' } })).toMatchObject({ changed: [], unchanged: ['memory'] });
  });

  it('two clients get two processes of a legacy server; the sessions of one client, REST or /mcp, share one', async () => {
    const alice1 = await session(ALICE);
    const alice2 = await session(ALICE);
    const bob = await session(BOB);

    const alicePid = await restPid(ALICE, alice1, 'thinking');
    expect(await restPid(ALICE, alice2, 'thinking')).toBe(alicePid);
    const bobPid = await restPid(BOB, bob, 'thinking');
    expect(bobPid).not.toBe(alicePid);
    // The /mcp gateway keys by the same client id.
    expect(await mcpPid(ALICE, 'thinking__pid')).toBe(alicePid);
    expect(await mcpPid(BOB, 'thinking__pid')).toBe(bobPid);
    expect(pidsWithMarker(legacyMark).sort()).toEqual([alicePid, bobPid].sort());

    // The explicitly shared server: one process for everyone.
    const openPid = await restPid(ALICE, alice1, 'open');
    expect(await restPid(BOB, bob, 'open')).toBe(openPid);
    expect(await mcpPid(BOB, 'open__pid')).toBe(openPid);
    expect(pidsWithMarker(sharedMark)).toEqual([openPid]);
  });

  it('status shows each entry with its policy and an opaque owner, and the budget counts them all', async () => {
    const s = await status();
    const thinking = s.servers.find((server) => server.name === 'thinking')!;
    expect(thinking.entryCount).toBe(2);
    // A REST session holds every server it names; a /mcp session only those it used (servers
    // start on first use). alice: two REST sessions and one /mcp session that called thinking;
    // bob: one REST session and two /mcp sessions, one of which called thinking.
    expect(thinking.entrySummary.map(({ refs, sharing }) => ({ refs, sharing }))).toEqual([
      { refs: 3, sharing: 'per-principal' },
      { refs: 2, sharing: 'per-principal' },
    ]);
    const labels = thinking.entrySummary.map((entry) => entry.ownerLabel);
    expect(labels.every((label) => /^[0-9a-f]{12}$/.test(label ?? ''))).toBe(true);
    expect(new Set(labels).size).toBe(2);
    // open: the three REST sessions and bob's /mcp session that called it.
    expect(s.servers.find((server) => server.name === 'open')!.entrySummary).toEqual([{ entryIndex: 0, refs: 4, status: 'active', sharing: 'shared', era: 'legacy' }]);
    expect(s.budget).toMatchObject({ liveCount: 3, bySharing: { shared: 1, 'per-principal': 2, 'per-session': 0 } });

    const shown = JSON.stringify(s);
    for (const secret of [ALICE, BOB, 'alice', 'bob']) expect(shown).not.toContain(secret);
  });
});
