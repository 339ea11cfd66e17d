/**
 * "Never log or return an env value, header or token": canary secrets go into the config's env
 * and headers, the tokens, a session's injected server and malformed bodies; after driving every
 * route (successes and failures) at debug level, no canary appears in any response, header,
 * event or log line.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { SessionInfo } from '@mcpool/client';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

const canary = (label: string): string => `canary-${label}-${randomUUID()}`;
const CANARIES = {
  env: canary('env'),
  header: canary('header'),
  client: canary('client'),
  injectedEnv: canary('injected-env'),
  injectedHeader: canary('injected-header'),
  body: canary('body'),
  reload: canary('reload'),
};
const mark = marker('canary');
const doc = {
  mcpServers: {
    echo: { ...fixtureConfig('echo.mjs', mark), env: { CANARY_ENV: CANARIES.env } },
    // Nothing listens there: it fails to start, and its error must not carry the header.
    remote: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${CANARIES.header}` } },
  },
  daemon: { clients: [{ id: 'ci', tokenEnv: 'CI_TOKEN', rights: ['read', 'write'] }] },
};

let h: Harness;
afterAll(async () => {
  await h?.close();
});

describe('secrets never leave the daemon', () => {
  it('keeps every canary out of responses, events and logs', async () => {
    h = await harness(doc, { env: { CI_TOKEN: CANARIES.client }, logLevel: 'debug', marks: [mark] });
    const outputs: string[] = [];
    h.daemon.events.subscribe((event) => outputs.push(JSON.stringify(event)));
    const send = async (options: Parameters<Harness['request']>[0]): Promise<void> => {
      const response = await h.request(options);
      outputs.push(response.body, JSON.stringify(response.headers));
    };
    const as = { token: CANARIES.client };

    await send({ method: 'GET', url: '/workspace/mcp', ...as });
    const created = await h.request({
      method: 'POST',
      url: '/sessions',
      ...as,
      payload: {
        mcpServers: {
          mine: { ...fixtureConfig('echo.mjs', mark), env: { TOKEN: CANARIES.injectedEnv } },
          api: { httpUrl: 'http://127.0.0.1:9/mcp', headers: { 'X-Api-Key': CANARIES.injectedHeader } },
        },
      },
    });
    outputs.push(created.body);
    const session = created.json<SessionInfo>();
    expect(session.servers.map((s) => [s.name, s.status])).toEqual([
      ['api', 'failed'],
      ['echo', 'connected'],
      ['mine', 'connected'],
      ['remote', 'failed'],
    ]);
    await send({ method: 'GET', url: '/sessions', ...as });
    await send({ method: 'GET', url: `/sessions/${session.id}`, ...as });
    // A tool that echoes an env value: the answer is scrubbed too.
    const env = await h.request({ method: 'POST', url: `/sessions/${session.id}/tools/call`, ...as, payload: { server: 'mine', name: 'env', arguments: { name: 'TOKEN' } } });
    outputs.push(env.body);
    expect(env.json<{ result: { content: { text: string }[] } }>().result.content[0]!.text).toBe('[redacted]');
    await send({ method: 'POST', url: `/sessions/${session.id}/tools/call`, ...as, payload: { server: 'echo', name: 'env', arguments: { name: 'CANARY_ENV' } } });
    await send({ method: 'POST', url: `/sessions/${session.id}/tools/call`, ...as, payload: { server: 'remote', name: 'x' } });
    await send({ method: 'POST', url: '/workspace/mcp/echo/restart', ...as });
    // Malformed input holding secrets.
    await send({ method: 'POST', url: '/sessions', ...as, headers: { 'content-type': 'application/json' }, payload: `{"mcpServers": {"x": {"env": {"K": "${CANARIES.body}"}}},}` });
    await send({ method: 'POST', url: '/sessions', ...as, payload: { mcpServers: { x: { command: 'node', env: { K: CANARIES.body, N: 5 } } } } });
    await send({ method: 'POST', url: '/sessions', ...as, payload: { label: CANARIES.body, unknown: CANARIES.body } });
    // Wrong tokens.
    await send({ method: 'GET', url: '/workspace/mcp', token: `${CANARIES.client}x` });
    await send({ method: 'GET', url: '/workspace/mcp', token: null, headers: { authorization: `Basic ${CANARIES.client}` } });
    // A reload that fails, and one that works.
    h.writeConfig({ ...doc, mcpServers: { ...doc.mcpServers, bad: { command: 7, env: { X: CANARIES.reload } } } });
    await send({ method: 'POST', url: '/workspace/mcp/reload-all', ...as });
    h.writeConfig({ ...doc, mcpServers: { echo: { ...doc.mcpServers.echo, env: { CANARY_ENV: CANARIES.reload } } } });
    await send({ method: 'POST', url: '/workspace/mcp/reload-all', ...as });
    await send({ method: 'GET', url: '/workspace/mcp', ...as });
    await send({ method: 'GET', url: '/metrics', ...as });
    await send({ method: 'GET', url: '/openapi.json', ...as });
    await send({ method: 'DELETE', url: `/sessions/${session.id}`, ...as });
    // Logged objects with secret-bearing keys are censored by path as well.
    h.daemon.pool.getSnapshot();
    await h.daemon.shutdown('test');

    const logs = h.logs.join('\n');
    expect(h.logs.length).toBeGreaterThan(20);
    expect(logs).toContain('session injects a server');
    const everything = `${outputs.join('\n')}\n${logs}`;
    for (const [name, value] of Object.entries(CANARIES)) expect(everything.includes(value), `canary ${name}`).toBe(false);
    // The label of a rejected body is not a secret the daemon knew, yet it was not echoed either.
    expect(outputs.join('\n')).not.toContain(CANARIES.body);
  });
});
