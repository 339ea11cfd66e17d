/**
 * Three replicas of the daemon behind the deploy files' HAProxy and nginx (round-robin, no
 * stickiness), all real processes on 127.0.0.1, started once for the file:
 * - modern requests are served wherever they land, and every replica serves some;
 * - an SDK v1 client's legacy session works through round-robin: its sealed id names its owner,
 *   and the other replicas forward its requests (and its streams) there;
 * - keys rotate without dropping sessions: the replicas run mid-rotation (one still seals with
 *   the old key, two with the new one; all open both), and sessions sealed with either key are
 *   opened and forwarded by every replica;
 * - an input-required continuation minted on one replica completes when its retry lands on
 *   another (the state names its replica, sealed; the others forward the retry there);
 * - a SIGTERM'd replica drains without failing the call in flight;
 * - kill -9 the owner of a session: 404, and a new session works;
 * - kill -9 the replica holding a continuation: its retry elsewhere is `CONTINUATION_LOST`.
 * No replica is restarted: the last two cases leave theirs down, and the balancers route around it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { McpoolClient } from '@mcpool/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { fixtureConfig, marker, pidFromResult } from '../../../../test/helpers/processes.js';
import type { Service } from '../../../../test/helpers/services.js';
import { modernRequest, responseOf, type RawResponse } from '../gatewayHelpers.js';
import { SessionSeal } from '../../src/cluster/sessionSeal.js';
import { newKey, startHaproxy, startNginx, startTeam, type Replica, type Team } from './replicas.js';

const mark = marker('cluster');
/** Two users, each with a client token of their own. */
const USERS = ['ada', 'bob'] as const;
const userTokens: Record<string, string> = Object.fromEntries(USERS.map((id) => [id, `${id}-${randomUUID()}`]));
const oldKey = newKey();
const nextKey = newKey();
let team: Team;
let haproxy: Service & { url: string };
let nginx: Service & { url: string };

beforeAll(async () => {
  // Mid-rotation, as a rolling restart leaves it: r1 still seals with the old key, r2 and r3 seal with the new one.
  const keys = [`${oldKey},${nextKey}`, `${nextKey},${oldKey}`, `${nextKey},${oldKey}`];
  const servers = {
    echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }),
    mine: fixtureConfig('echo.mjs', mark, { sharing: 'per-principal' }),
    conf: fixtureConfig('conformance.mjs', mark, { sharing: 'shared' }),
  };
  const clients = USERS.map((id) => ({ id, tokenEnv: `TEAM_${id.toUpperCase()}`, rights: ['write'] }));
  const env = Object.fromEntries(USERS.map((id) => [`TEAM_${id.toUpperCase()}`, userTokens[id]!]));
  team = await startTeam(3, servers, { daemon: { drainTimeoutMs: 60_000, clients }, marks: [mark], keys, env });
  [haproxy, nginx] = await Promise.all([startHaproxy(team), startNginx(team)]);
}, 240_000);

afterAll(async () => {
  await haproxy?.stop();
  await nginx?.stop();
  await team?.close();
});

/** Who answered one request: the replica that served it, and the one that relayed it to that owner, if any. */
interface Answered {
  replica: string;
  forwardedBy: string | undefined;
}

/** An SDK v1 client's legacy session through `base`; who answered each of its requests is recorded. */
async function legacyClient(base: string, answered: Answered[] = []): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'cluster-test', version: '1.0.0' });
  const fetchRecording: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const replica = response.headers.get('x-mcpool-replica');
    if (replica !== null) answered.push({ replica, forwardedBy: response.headers.get('x-mcpool-forwarded-by') ?? undefined });
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

const ids = (replicas: Replica[]): Set<string> => new Set(replicas.map((replica) => replica.id));

/** The replica that owns the session whose requests were `answered` (every answer names it). */
function ownerOf(answered: Answered[]): Replica {
  expect(new Set(answered.map((answer) => answer.replica)).size).toBe(1);
  return team.replicas.find((replica) => replica.id === answered[0]!.replica)!;
}

/** Restarts stopped replicas until `count` run: a retried test may find fewer than its first run left. */
async function keepRunning(count: number): Promise<void> {
  for (const replica of team.replicas) if (!replica.running() && team.replicas.filter((r) => r.running()).length < count) await replica.restart();
}

/** A legacy session through HAProxy, and the replica that owns it, once at least `running` replicas run. */
async function ownedSession(running: number): Promise<{ client: Client; owner: Replica }> {
  await keepRunning(running);
  const answered: Answered[] = [];
  const { client } = await legacyClient(haproxy.url, answered);
  return { client, owner: ownerOf(answered) };
}

describe('replicas behind a round-robin balancer', { timeout: 240_000 }, () => {
  for (const which of ['haproxy', 'nginx'] as const) {
    it(`${which}: 30 modern calls all succeed, and every replica serves some`, async () => {
      const served = await modernCalls(which === 'haproxy' ? haproxy.url : nginx.url, 30);
      expect(new Set(served)).toEqual(ids(team.replicas));
    });

    it(`${which}: an SDK v1 client's legacy session makes 20 calls through round-robin`, async () => {
      const answered: Answered[] = [];
      const { client, transport } = await legacyClient(which === 'haproxy' ? haproxy.url : nginx.url, answered);
      try {
        expect(transport.sessionId).toMatch(/^mcs1\./);
        for (let i = 0; i < 20; i++) expect(await client.callTool({ name: 'echo__echo', arguments: { text: `legacy ${i}` } })).toMatchObject({ content: [{ text: `legacy ${i}` }] });
        // Every answer comes from the session's owner, and each other replica relayed some of them.
        const owner = ownerOf(answered);
        expect(new Set(answered.flatMap((answer) => answer.forwardedBy ?? []))).toEqual(ids(team.replicas.filter((replica) => replica !== owner)));
      } finally {
        await client.close();
      }
    });
  }

  it('mid-rotation, sessions sealed with the old key and with the new one open and are forwarded on every replica', async () => {
    const sealedWith = (key: string, id: string): boolean => new SessionSeal([Buffer.from(key, 'base64')]).open(id) !== undefined;
    const clients: Client[] = [];
    try {
      // Round-robin hands the sessions out in turn: within a few, one is owned by r1 (old key) and one by r2 (new key).
      // A session opens with a multiple of three requests, so one modern call in between moves the turn on.
      const byOwner = new Map<string, { client: Client; transport: StreamableHTTPClientTransport; answered: Answered[] }>();
      for (let i = 0; i < 9 && !(byOwner.has('r1') && byOwner.has('r2')); i++) {
        const answered: Answered[] = [];
        const { client, transport } = await legacyClient(haproxy.url, answered);
        clients.push(client);
        byOwner.set(ownerOf(answered).id, { client, transport, answered });
        await modernCalls(haproxy.url, 1);
      }
      expect(sealedWith(oldKey, byOwner.get('r1')!.transport.sessionId!)).toBe(true);
      expect(sealedWith(nextKey, byOwner.get('r2')!.transport.sessionId!)).toBe(true);
      expect(sealedWith(oldKey, byOwner.get('r2')!.transport.sessionId!)).toBe(false);
      for (const owner of ['r1', 'r2']) {
        const { client, answered } = byOwner.get(owner)!;
        answered.length = 0;
        for (let i = 0; i < 9; i++) expect(await client.callTool({ name: 'echo__echo', arguments: { text: `rotated ${i}` } })).toMatchObject({ content: [{ text: `rotated ${i}` }] });
        // Every other replica opened the id (whichever key sealed it) and relayed the call to its owner.
        expect(ownerOf(answered).id).toBe(owner);
        expect(new Set(answered.flatMap((answer) => answer.forwardedBy ?? []))).toEqual(ids(team.replicas.filter((replica) => replica.id !== owner)));
      }
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });

  it('an input-required continuation minted on one replica completes when its retry lands on another', async () => {
    await keepRunning(3);
    const forwarders = new Set<string>();
    // Round-robin sends the retry to the replica after the owner; three rounds make it certain one was relayed.
    for (let round = 0; round < 3; round++) {
      const { asked, owner, params } = await askedForInput(haproxy.url);
      const retry = await modernRequest({ base: haproxy.url, token: team.token }, 'tools/call', { ...params, inputResponses: answerOf(asked, `ada-${round}`), requestState: asked.requestState });
      expect(retry.status, retry.body).toBe(200);
      expect(textOf(responseOf(retry))).toContain(`ada-${round}`);
      // The call's answer came from the replica holding it, whichever replica the retry landed on.
      expect(retry.headers['x-mcpool-replica']).toBe(owner);
      const by = retry.headers['x-mcpool-forwarded-by'];
      if (typeof by === 'string') forwarders.add(by);
    }
    expect(forwarders.size).toBeGreaterThan(0);
    expect([...forwarders].every((id) => ids(team.replicas).has(id))).toBe(true);
  });

  it('two users through the balancer: two entries of a per-principal server, one of a shared one, on every replica', async () => {
    const entriesOn = async (replica: Replica): Promise<Record<string, number>> => {
      const status = await new McpoolClient({ baseUrl: replica.url, token: team.token }).getWorkspaceMcp();
      return Object.fromEntries(status.servers.map((server) => [server.name, server.entryCount]));
    };
    // The daemon's own warm hold keeps one entry of each server, for its operator.
    const before = await Promise.all(team.replicas.map((replica) => entriesOn(replica)));
    // Each user calls each server until every replica has served that user that server (round-robin: three calls in turn).
    for (const user of USERS) {
      for (const server of ['mine', 'echo']) {
        const served = new Set<string>();
        for (let i = 0; i < 12 && served.size < team.replicas.length; i++) {
          const answer = await modernRequest({ base: haproxy.url, token: userTokens[user]! }, 'tools/call', { name: `${server}__echo`, arguments: { text: `${user} ${i}` } });
          expect(answer.status, answer.body).toBe(200);
          expect(answer.body).toContain(`${user} ${i}`);
          served.add(String(answer.headers['x-mcpool-replica']));
        }
        expect(served).toEqual(ids(team.replicas));
      }
    }
    for (const [i, replica] of team.replicas.entries()) {
      const entries = await entriesOn(replica);
      expect({ replica: replica.id, mine: entries.mine, echo: entries.echo }).toEqual({ replica: replica.id, mine: before[i]!.mine! + 2, echo: 1 });
    }
  });

  it('a SIGTERM’d replica drains: the call in flight finishes, then it stops', async () => {
    const { client, owner } = await ownedSession(3);
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
    }
  });

  it('kill -9 the owner of a session: its next request is 404, and a new session works', async () => {
    const { client, owner } = await ownedSession(2);
    try {
      expect(pidFromResult(await client.callTool({ name: 'echo__pid' }))).toBeGreaterThan(0);
      await owner.kill();
      const failure = await client.callTool({ name: 'echo__pid' }).then(
        () => undefined,
        (error: unknown) => error,
      );
      // The SDK's StreamableHTTPError carries the HTTP status as its code: 404 is what makes a client open a new session.
      expect(failure).toMatchObject({ code: 404 });
      const fresh = await legacyClient(haproxy.url);
      expect(pidFromResult(await fresh.client.callTool({ name: 'echo__pid' }))).toBeGreaterThan(0);
      await fresh.client.close();
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('kill -9 the replica holding a continuation: its retry on another replica is CONTINUATION_LOST, in-band', async () => {
    // Straight to the replicas: the balancer may not have seen the earlier cases' replicas go yet.
    await keepRunning(2);
    const [holder, other] = team.replicas.filter((replica) => replica.running());
    const { asked, owner, params } = await askedForInput(holder!.url);
    expect(owner).toBe(holder!.id);
    await holder!.kill();
    const retry = await modernRequest({ base: other!.url, token: team.token }, 'tools/call', { ...params, inputResponses: answerOf(asked, 'ada'), requestState: asked.requestState }, { id: 'lost-1' });
    expect(retry.status, retry.body).toBe(200);
    expect(responseOf(retry)).toMatchObject({ id: 'lost-1', error: { code: -32000, data: { code: 'MCPOOL_CONTINUATION_LOST' } } });
    // Started anew without the state, the call is offered input again.
    expect((await askedForInput(other!.url)).owner).toBe(other!.id);
  });
});

interface Asked {
  inputRequests: Record<string, { method: string }>;
  requestState: string;
}

let asking = 0;

/** A modern call of the legacy server's elicitation tool through `base`: it is offered input; who offered it. */
async function askedForInput(base: string): Promise<{ asked: Asked; owner: string; params: { name: string; arguments: { message: string } } }> {
  const params = { name: 'conf__test_elicitation', arguments: { message: `Who are you? ${asking++}` } };
  const first: RawResponse = await modernRequest({ base, token: team.token }, 'tools/call', params);
  expect(first.status, first.body).toBe(200);
  const asked = responseOf(first).result as Asked & { resultType: string };
  expect(asked.resultType).toBe('input_required');
  return { asked, owner: String(first.headers['x-mcpool-replica']), params };
}

/** The caller's answer to the one input request of `asked`: the user `username`. */
function answerOf(asked: Asked, username: string): Record<string, unknown> {
  const [key] = Object.keys(asked.inputRequests);
  return { [key!]: { action: 'accept', content: { username, email: `${username}@example.com` } } };
}

function textOf(message: Record<string, unknown>): string {
  return JSON.stringify(message.result ?? message.error);
}
