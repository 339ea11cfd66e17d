/**
 * "Never log or return an env value, header or token": canary secrets go into the config's env
 * and headers, the tokens, a session's injected server and malformed bodies; after driving every
 * route (successes and failures) at debug level, no canary appears in any response, header,
 * event or log line. Then the same policy on every surface of the real `mcpool serve` process:
 * a server that echoes its secret in results, errors and stderr leaks it neither through `/mcp`,
 * nor through the bridge, nor REST, nor any log line (the daemon's and the actor threads').
 */
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { SessionInfo } from '@mcpool/client';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { initialize, spawnBridge, type BridgeProcess } from './e2e/bridgeProcess.js';
import { startDaemonProcess } from './e2e/daemonProcess.js';
import { ACCEPT_BOTH, openRawSession, raw } from './gatewayHelpers.js';
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
  }, 120_000);
});

describe('one secret policy on every surface of the real daemon', () => {
  it('keeps a leaking server’s secret out of /mcp, the bridge, REST, the daemon’s log and the actors’ log lines', async () => {
    const secret = canary('leaky');
    const leakMark = marker('canary-leaky');
    const env = { FIXTURE_SECRET: secret };
    // 1. The real daemon, at debug level: its stdout (daemon log) and stderr (actor threads) kept.
    const daemon = await startDaemonProcess(
      'canary',
      leakMark,
      {
        leaky: fixtureConfig('leaky.mjs', leakMark, { env }),
        broken: fixtureConfig('leaky.mjs', leakMark, { env: { ...env, FIXTURE_FAIL_AT_START: '1' } }),
      },
      { logLevel: 'debug' },
    );
    const { url, token, auth, dir } = daemon;
    let bridge: BridgeProcess | undefined;
    try {
      const answers: string[] = [];

      // 2. /mcp: the raw bytes of a call's answer, a failing call and the tool list.
      const sessionId = await openRawSession(url, '/mcp', token);
      const post = async (id: number, method: string, params: Record<string, unknown>): Promise<string> => {
        const response = await raw(url, {
          path: '/mcp',
          headers: { ...auth, 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': sessionId, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION },
          body: { jsonrpc: '2.0', id, method, params },
        });
        answers.push(response.body);
        return response.body;
      };
      const listed = await post(1, 'tools/list', {});
      expect(listed).toContain('leaky__leak');
      const called = await post(2, 'tools/call', { name: 'leaky__leak', arguments: {} });
      expect(called).toContain('[redacted]');
      expect(await post(3, 'tools/call', { name: 'leaky__leak_error', arguments: {} })).toContain('cannot do it with [redacted]');

      // 2b. /mcp for a 2026-07-28 caller (no session): the same call, its error and the list.
      const modernPost = async (id: number, method: string, params: Record<string, unknown>): Promise<string> => {
        const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'canary', version: '1.0.0' } };
        const response = await raw(url, {
          path: '/mcp',
          headers: { ...auth, 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}) },
          body: { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } },
        });
        answers.push(response.body);
        return response.body;
      };
      expect(await modernPost(11, 'tools/list', {})).toContain('leaky__leak');
      expect(await modernPost(12, 'tools/call', { name: 'leaky__leak', arguments: {} })).toContain('[redacted]');
      expect(await modernPost(13, 'tools/call', { name: 'leaky__leak_error', arguments: {} })).toContain('cannot do it with [redacted]');

      // 3. REST: the same call through a daemon session, and the status (the failed server's error).
      const session = (await (await fetch(`${url}/sessions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ servers: ['leaky'] }) })).json()) as { id: string };
      const rest = await fetch(`${url}/sessions/${session.id}/tools/call`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ server: 'leaky', name: 'leak' }) });
      answers.push(await rest.text());
      answers.push(await (await fetch(`${url}/workspace/mcp`, { headers: auth })).text());

      // 4. The bridge, as a process, in front of /mcp.
      bridge = spawnBridge(['--url', `${url}/mcp`, '--log-level', 'debug'], { MCPOOL_TOKEN: token, HOME: dir, MCPOOL_STATE_DIR: join(dir, 'state') });
      bridge.send(initialize('init'));
      await bridge.waitForMessage((message) => message.id === 'init', 30_000);
      bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      bridge.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'leaky__leak', arguments: {} } });
      const viaBridge = await bridge.waitForMessage((message) => message.id === 'call', 30_000);
      expect(JSON.stringify(viaBridge)).toContain('[redacted]');
      bridge.child.stdin!.end();
      await bridge.exited;

      // 5. Stop the daemon; everything it wrote is in.
      expect(await daemon.stop()).toBe(0);
      const logs = `${daemon.out()}\n${daemon.err()}`;
      // Positive controls: the actors' lines were captured (the server's stderr, at debug — they
      // reach the daemon's own log, through its redaction), and the broken server's one failure
      // line is there, with its stderr tail.
      expect(daemon.out()).toContain('server stderr');
      expect(daemon.out()).toContain('"stderr":"leaky: secret is [redacted]","msg":"broken#0 failed: ');
      const everything = [logs, ...answers, ...bridge.stdout, ...bridge.stderr].join('\n');
      expect(everything.split('\n').filter((line) => line.includes(secret)), 'the lines the secret leaked in').toEqual([]);
      expect(everything).toContain('[redacted]');
    } finally {
      if (bridge && bridge.child.exitCode === null) bridge.child.kill('SIGKILL');
      await daemon.stop();
    }
  }, 240_000);
});
