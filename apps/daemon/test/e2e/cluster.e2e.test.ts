/**
 * Three replicas of the daemon behind the deploy files' HAProxy and nginx (round-robin, no
 * stickiness), all real processes on 127.0.0.1, started once for the file:
 * - modern requests are served wherever they land, and every replica serves some;
 * - an SDK v1 client's legacy session works through round-robin: its sealed id names its owner,
 *   and the other replicas forward its requests (and its streams) there;
 * - a session sealed with an older key still opens on replicas that put a new key first;
 * - a SIGTERM'd replica drains without failing the call in flight;
 * - kill -9 the owner of a session: 404, and a new session works.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { fixtureConfig, marker, pidFromResult } from '../../../../test/helpers/processes.js';
import type { Service } from '../../../../test/helpers/services.js';
import { modernRequest } from '../gatewayHelpers.js';
import { newKey, startHaproxy, startNginx, startTeam, type Team } from './replicas.js';

const mark = marker('cluster');
let team: Team;
let haproxy: Service & { url: string };
let nginx: Service & { url: string };

beforeAll(async () => {
  team = await startTeam(3, { echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }) }, { daemon: { drainTimeoutMs: 60_000 }, marks: [mark] });
  [haproxy, nginx] = await Promise.all([startHaproxy(team), startNginx(team)]);
}, 240_000);

afterAll(async () => {
  await haproxy?.stop();
  await nginx?.stop();
  await team?.close();
});

/** An SDK v1 client's legacy session through `base`; the replica named by each answer is recorded. */
async function legacyClient(base: string, served: string[] = []): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'cluster-test', version: '1.0.0' });
  const fetchRecording: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const replica = response.headers.get('x-mcpool-replica');
    if (replica !== null) served.push(replica);
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${team.token}` } }, fetch: fetchRecording });
  await client.connect(transport);
  return { client, transport };
}

async function modernCalls(base: string, count: number): Promise<string[]> {
  const served: string[] = [];
  for (let i = 0; i < count; i++) {
    const answer = await modernRequest({ base, token: team.token }, 'tools/call', { name: 'echo__echo', arguments: { text: `call ${i}` } });
    expect(answer.status, answer.body).toBe(200);
    expect(answer.body).toContain(`call ${i}`);
    served.push(String(answer.headers['x-mcpool-replica']));
  }
  return served;
}

describe('replicas behind a round-robin balancer', { timeout: 240_000 }, () => {
  for (const which of ['haproxy', 'nginx'] as const) {
    it(`${which}: 30 modern calls all succeed, and every replica serves some`, async () => {
      const served = await modernCalls(which === 'haproxy' ? haproxy.url : nginx.url, 30);
      expect(new Set(served)).toEqual(new Set(team.replicas.map((replica) => replica.id)));
    });

    it(`${which}: an SDK v1 client's legacy session makes 20 calls through round-robin`, async () => {
      const served: string[] = [];
      const { client, transport } = await legacyClient(which === 'haproxy' ? haproxy.url : nginx.url, served);
      try {
        expect(transport.sessionId).toMatch(/^mcs1\./);
        for (let i = 0; i < 20; i++) expect(await client.callTool({ name: 'echo__echo', arguments: { text: `legacy ${i}` } })).toMatchObject({ content: [{ text: `legacy ${i}` }] });
        // Forwarded or not, every answer comes from the session's owner.
        expect(new Set(served).size).toBe(1);
      } finally {
        await client.close();
      }
    });
  }

  it('a session sealed with an older key opens on replicas that put a new key first', async () => {
    const served: string[] = [];
    const { client } = await legacyClient(haproxy.url, served);
    const owner = served[0]!;
    try {
      // The others rotate: a new key first, the old one still there to open.
      const others = team.replicas.filter((replica) => replica.id !== owner);
      for (const replica of others) {
        await replica.stop();
        await replica.restart(`${newKey()},${team.keys}`);
      }
      for (let i = 0; i < 12; i++) expect(await client.callTool({ name: 'echo__echo', arguments: { text: `rotated ${i}` } })).toMatchObject({ content: [{ text: `rotated ${i}` }] });
    } finally {
      await client.close();
      // Back to one key everywhere, for the tests after this one.
      for (const replica of team.replicas.filter((r) => r.id !== owner)) {
        await replica.stop();
        await replica.restart();
      }
    }
  });

  it('a SIGTERM’d replica drains: the call in flight finishes, then it stops', async () => {
    const served: string[] = [];
    const { client } = await legacyClient(haproxy.url, served);
    const owner = team.replicas.find((replica) => replica.id === served[0])!;
    try {
      // The first progress notification says the call is under way on the owner.
      let progressed!: () => void;
      const underway = new Promise<void>((resolve) => (progressed = resolve));
      const call = client.callTool({ name: 'echo__slow', arguments: { ms: 4000, steps: 4 } }, undefined, { onprogress: () => progressed(), timeout: 120_000 });
      await underway;
      const stopped = owner.stop();
      const result = await call;
      expect(result.isError).toBeUndefined();
      expect(await stopped).toBe(0);
      expect(owner.out()).toContain('draining');
    } finally {
      await client.close().catch(() => undefined);
      await owner.restart();
    }
  });

  it('kill -9 the owner of a session: its next request is 404, and a new session works', async () => {
    const served: string[] = [];
    const { client } = await legacyClient(haproxy.url, served);
    const owner = team.replicas.find((replica) => replica.id === served[0])!;
    try {
      expect(pidFromResult(await client.callTool({ name: 'echo__pid' }))).toBeGreaterThan(0);
      await owner.kill();
      const failure = await client.callTool({ name: 'echo__pid' }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(String(failure)).toMatch(/404|Session not found/);
      const fresh = await legacyClient(haproxy.url);
      expect(pidFromResult(await fresh.client.callTool({ name: 'echo__pid' }))).toBeGreaterThan(0);
      await fresh.client.close();
    } finally {
      await client.close().catch(() => undefined);
      await owner.restart();
    }
  });
});
