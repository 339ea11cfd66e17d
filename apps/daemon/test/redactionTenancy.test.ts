/**
 * The redactor cannot be turned into a weapon: values one tenant injects (benign words, JSON
 * syntax, a field name) change nothing in another tenant's answers. Two real `mcpool serve`
 * processes with the same config and two client tokens: on one, alice injects a server whose env
 * holds the poison; bob's answers there (legacy `/mcp`, modern `/mcp`, REST) are compared byte for
 * byte with his answers on the clean one, while her session lives and after it ended. A server's
 * own secret is still scrubbed from its own output, and an injected secret leaves with its session.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { startDaemonProcess, type DaemonProcess } from './e2e/daemonProcess.js';
import { ACCEPT_BOTH, initializeBody, modernRequest, raw } from './gatewayHelpers.js';

const ALICE = `alice-${randomUUID()}`;
const BOB = `bob-${randomUUID()}`;
const LEAKY_SECRET = `leaky-${randomUUID()}`;
/** What alice injects: benign words, JSON syntax, a field name of every initialize answer. */
const POISON = { NODE_ENV: 'production', HOME: '/home/bob', A: '"jsonrpc":"2.0"', B: 'protocolVersion', C: '{"initialized":true,', D: 'deploy to' };
const TEXT = 'deploy to production from /home/bob/project; "jsonrpc":"2.0", protocolVersion, {"initialized":true, done';

const mark = marker('redaction-tenancy');
const servers = {
  // A short secret-named value (scrubbed as a whole word) and one too short to scrub (a warning at load).
  echo: fixtureConfig('echo.mjs', mark, { env: { SHORTPIN: '1234567', PIN: '12' } }),
  leaky: fixtureConfig('leaky.mjs', mark, { env: { FIXTURE_SECRET: LEAKY_SECRET } }),
};
const daemonSettings = {
  clients: [
    { id: 'alice', tokenEnv: 'ALICE_TOKEN', rights: ['read', 'write'] },
    { id: 'bob', tokenEnv: 'BOB_TOKEN', rights: ['read', 'write'] },
  ],
};

let clean: DaemonProcess;
let poisoned: DaemonProcess;

beforeAll(async () => {
  const options = { daemon: daemonSettings, env: { ALICE_TOKEN: ALICE, BOB_TOKEN: BOB }, logLevel: 'debug' };
  [clean, poisoned] = await Promise.all([startDaemonProcess('redaction-clean', mark, servers, options), startDaemonProcess('redaction-poisoned', mark, servers, options)]);
}, 180_000);

afterAll(async () => {
  await Promise.all([clean?.stop(), poisoned?.stop()]);
});

const json = { 'content-type': 'application/json' };

async function rest(daemon: DaemonProcess, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${daemon.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : json) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: response.status, text: await response.text() };
}

/** Bob's answers, as bytes: legacy initialize and call, modern call and list, a REST call; and the workspace status. */
async function bobSees(daemon: DaemonProcess): Promise<{ answers: Record<string, string>; workspace: string }> {
  const auth = { authorization: `Bearer ${BOB}` };
  const init = await raw(daemon.url, { path: '/mcp', headers: { ...auth, ...json, accept: ACCEPT_BOTH }, body: initializeBody('init') });
  const sessionId = init.headers['mcp-session-id'] as string;
  const headers = { ...auth, ...json, accept: ACCEPT_BOTH, 'mcp-session-id': sessionId, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
  await raw(daemon.url, { path: '/mcp', headers, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
  const legacyCall = await raw(daemon.url, { path: '/mcp', headers, body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo__echo', arguments: { text: TEXT } } } });
  const legacyLeak = await raw(daemon.url, { path: '/mcp', headers, body: { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'leaky__leak', arguments: {} } } });
  await raw(daemon.url, { method: 'DELETE', path: '/mcp', headers });
  const target = { base: daemon.url, token: BOB };
  const modernCall = await modernRequest(target, 'tools/call', { name: 'echo__echo', arguments: { text: TEXT } }, { id: 7 });
  const modernList = await modernRequest(target, 'tools/list', {}, { id: 8 });
  const session = JSON.parse((await rest(daemon, BOB, 'POST', '/sessions', { servers: ['echo', 'leaky'] })).text) as { id: string };
  const restCall = await rest(daemon, BOB, 'POST', `/sessions/${session.id}/tools/call`, { server: 'echo', name: 'echo', arguments: { text: TEXT } });
  const restLeak = await rest(daemon, BOB, 'POST', `/sessions/${session.id}/tools/call`, { server: 'leaky', name: 'leak' });
  const restShortPin = await rest(daemon, BOB, 'POST', `/sessions/${session.id}/tools/call`, { server: 'echo', name: 'env', arguments: { name: 'SHORTPIN' } });
  await rest(daemon, BOB, 'DELETE', `/sessions/${session.id}`);
  const workspace = await rest(daemon, BOB, 'GET', '/workspace/mcp');
  return {
    answers: { init: init.body, legacyCall: legacyCall.body, legacyLeak: legacyLeak.body, modernCall: modernCall.body, modernList: modernList.body, restCall: restCall.text, restLeak: restLeak.text, restShortPin: restShortPin.text },
    workspace: workspace.text,
  };
}

describe('a poisoned redactor', () => {
  it("leaves another tenant's answers byte for byte as a clean daemon's, while the injecting session lives and after it ended", async () => {
    const reference = await bobSees(clean);
    // Positive controls on the clean daemon: the text comes back whole, initialize has its version.
    expect(reference.answers.legacyCall).toContain(JSON.stringify(TEXT).slice(1, -1));
    expect(reference.answers.init).toContain('"protocolVersion"');
    for (const [name, body] of Object.entries(reference.answers)) expect(body, name).not.toContain(LEAKY_SECRET);

    // 1. Alice injects a server whose env is the poison (it cannot start; that does not matter).
    const created = await rest(poisoned, ALICE, 'POST', '/sessions', { servers: [], mcpServers: { x: { command: '/nonexistent/poison', env: POISON } } });
    expect(created.status).toBe(201);
    const aliceSession = (JSON.parse(created.text) as { id: string }).id;

    // 2. Bob, while her session lives: the same bytes as on the clean daemon.
    const during = await bobSees(poisoned);
    expect(during.answers).toEqual(reference.answers);
    expect(() => JSON.parse(during.workspace)).not.toThrow();

    // 3. After her session ended: still the same.
    expect((await rest(poisoned, ALICE, 'DELETE', `/sessions/${aliceSession}`)).status).toBe(204);
    const after = await bobSees(poisoned);
    expect(after.answers).toEqual(reference.answers);
    expect(() => JSON.parse(after.workspace)).not.toThrow();
  }, 240_000);

  it("still scrubs a server's own secret from that server's own output, on every surface", async () => {
    const { answers } = await bobSees(poisoned);
    for (const name of ['legacyLeak', 'restLeak'] as const) {
      expect(answers[name], name).toContain('[redacted]');
      expect(answers[name], name).not.toContain(LEAKY_SECRET);
    }
    // A 7-character PIN is a secret by its name, scrubbed as a whole word.
    expect(JSON.parse(answers.restShortPin!)).toMatchObject({ result: { content: [{ text: '[redacted]' }] } });
    // One too short to scrub is not skipped silently: the operator is told which, never its value.
    expect(poisoned.out()).toMatch(/"values":\["env.PIN"\].*too short to be scrubbed/);
  }, 120_000);

  it('keeps an injected secret out of the log while its session lives, and forgets it when the session ends', async () => {
    const secret = `injected-${randomUUID()}`;
    const created = await rest(poisoned, ALICE, 'POST', '/sessions', { servers: [], mcpServers: { y: { command: '/nonexistent/secret', env: { API_TOKEN: secret } } } });
    const id = (JSON.parse(created.text) as { id: string }).id;
    // A refused request's path is logged (debug): a secret in it is scrubbed while the session lives.
    await rest(poisoned, BOB, 'GET', `/sessions/${secret}-during`);
    await rest(poisoned, ALICE, 'DELETE', `/sessions/${id}`);
    await rest(poisoned, BOB, 'GET', `/sessions/${secret}-after`);
    // The line of a request is written once its answer left: wait for the second one.
    const lines = await vi.waitFor(
      () => {
        const all = poisoned.out().split('\n');
        expect(all.some((line) => line.includes('-after"'))).toBe(true);
        return all;
      },
      { timeout: 30_000, interval: 50 },
    );
    expect(lines.some((line) => line.includes('"path":"/sessions/[redacted]-during"'))).toBe(true);
    expect(lines.some((line) => line.includes(`${secret}-during`))).toBe(false);
    // Once the session is gone the value is nobody's secret: nothing of another tenant is rewritten for it.
    expect(lines.some((line) => line.includes(`"path":"/sessions/${secret}-after"`))).toBe(true);
  }, 120_000);
});
