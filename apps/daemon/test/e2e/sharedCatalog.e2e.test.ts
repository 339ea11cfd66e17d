/**
 * The catalog in the shared store: replicas of `mcpool serve` (real processes, each with its own
 * empty state directory) on one real `redis-server`. The first learns its lazy servers (started
 * once each, their records set in Redis); the next two, started after, list those servers' tools
 * to a modern caller and to a legacy session from the records they read from Redis, with none of
 * them started, as the catalog files they have none of would have let a restarted daemon do.
 * On a machine without `redis-server` the case skips, and its name says why.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { absent, startRedis, type Service } from '../../../../test/helpers/services.js';
import { FIXTURES, killMarked, marker } from '../../../../test/helpers/processes.js';
import { connectClient, modernRequest, responseOf } from '../gatewayHelpers.js';
import { startDaemon, type DaemonProcess } from './gatewayHelpers.js';

const mark = marker('shared-catalog');
const noRedis = absent('redis-server');
const daemons: DaemonProcess[] = [];
let redis: (Service & { url: string }) | undefined;

afterAll(async () => {
  await Promise.all(daemons.map((d) => d.stop()));
  for (const d of daemons) d.cleanup();
  await redis?.stop();
  killMarked(mark);
}, 120_000);

const doc = {
  mcpServers: {
    echo: { command: process.execPath, args: [`${FIXTURES}echo.mjs`, mark], sharing: 'shared' },
    tools: { command: process.execPath, args: [`${FIXTURES}envTools.mjs`, mark], env: { FIXTURE_TOOLS: 'alpha,beta' }, sharing: 'shared' },
  },
  daemon: { port: 0, watchConfig: false, start: 'lazy', store: { kind: 'redis', keyPrefix: 'team:' } },
};

/** The servers whose entries this daemon process started, by its log. */
const started = (d: DaemonProcess): string[] => [...new Set(d.lines.filter((line) => line.msg === 'entry ready').map((line) => String(line.server)))].sort();

describe('the catalog in the shared store', () => {
  it.skipIf(noRedis !== undefined)(`replicas started after one learned its lazy servers list them from Redis without starting them${noRedis === undefined ? '' : ` (skipped: ${noRedis})`}`, { timeout: 240_000 }, async () => {
    redis = await startRedis();
    const env = { MCPOOL_REDIS_URL: redis.url };
    const first = await startDaemon(doc, env);
    daemons.push(first);
    // No record anywhere yet: the first replica starts each server once to learn it, and keeps the records in Redis.
    const reader = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await reader.connect();
      await vi.waitFor(async () => expect(await reader.keys('team:catalog:*')).toHaveLength(2), { timeout: 60_000, interval: 100 });
    } finally {
      reader.disconnect();
    }
    await vi.waitFor(() => expect(started(first)).toEqual(['echo', 'tools']), { timeout: 60_000, interval: 100 });

    const others = await Promise.all([startDaemon(doc, env), startDaemon(doc, env)]);
    daemons.push(...others);
    for (const d of others) {
      // Listed, never started: each replica's own state directory had no catalog.
      expect(started(d)).toEqual([]);
      // Started: the catalog was read before any server was warmed.
      expect(d.lines.find((line) => line.msg === 'catalog read from the shared store')).toMatchObject({ records: 2 });
      const modernNames = (responseOf(await modernRequest({ base: d.url, token: d.token }, 'tools/list')).result as { tools: { name: string }[] }).tools.map((tool) => tool.name);
      expect(modernNames).toEqual(expect.arrayContaining(['echo__echo', 'tools__alpha', 'tools__beta']));
      const { client } = await connectClient(`${d.url}/mcp`, d.token);
      try {
        expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['echo__echo', 'tools__alpha', 'tools__beta']));
      } finally {
        await client.close();
      }
      // Listed, never started: each replica's own state directory had no catalog.
      expect(started(d)).toEqual([]);
    }
  });
});
