/**
 * The dashboard in headless Chromium (Debian's `chromium`, driven by playwright-core) against a
 * real daemon on 127.0.0.1: sign-in with a one-time code traded for an HttpOnly cookie, the
 * servers listed, a restart clicked and its live event shown; the sessions panel with a REST and
 * a `/mcp` session of a named client; per server call figures after calls; the stderr tail of a
 * server that prints its secret, scrubbed. Also what must not work: the API without a credential,
 * a used code, the cookie from another origin.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium } from './chromium.js';
import { harness, type Harness } from '../helpers.js';
import { connectClient } from '../gatewayHelpers.js';

const ECHO = fileURLToPath(new URL('../../../../test/fixtures/servers/echo.mjs', import.meta.url));
/** Prints `leaky: secret is <FIXTURE_SECRET>` to stderr at start and on every call. */
const LEAKY = fileURLToPath(new URL('../../../../test/fixtures/servers/leaky.mjs', import.meta.url));
/** Writes npm's multi-line E404 to stderr and exits 1: a server that fails to start. */
const NPM_NOT_FOUND = fileURLToPath(new URL('../../../../test/fixtures/servers/npmNotFound.mjs', import.meta.url));
const SECRET = `dash-secret-${randomUUID()}`;
const IDE_TOKEN = `ide-${randomUUID()}`;
/** Set to a path to (re)take the README's screenshot. */
const SCREENSHOT = process.env.MCPOOL_SCREENSHOT;

let h: Harness;
let base: string;
let browser: Browser;

async function loginCode(): Promise<string> {
  const response = await fetch(`${base}/ui/login-code`, { method: 'POST', headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' }, body: '{}' });
  expect(response.status).toBe(200);
  return ((await response.json()) as { code: string }).code;
}

beforeAll(async () => {
  h = await harness(
    {
      mcpServers: {
        echo: { command: process.execPath, args: [ECHO, '--marker=dashboard-e2e'] },
        leaky: { command: process.execPath, args: [LEAKY, '--marker=dashboard-e2e'], env: { FIXTURE_SECRET: SECRET } },
        memroy: { command: process.execPath, args: [NPM_NOT_FOUND, '--marker=dashboard-e2e'] },
        gh: { command: process.execPath, args: [ECHO, '--marker=dashboard-e2e'], env: { TOKEN: '${env:DASH_UNSET_VARIABLE}' } },
      },
      daemon: { clients: [{ id: 'ide', tokenEnv: 'DASH_IDE_TOKEN', rights: ['read', 'write'] }] },
    },
    { marks: ['dashboard-e2e'], env: { DASH_IDE_TOKEN: IDE_TOKEN } },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

describe('the dashboard', () => {
  it('serves the page and its assets without a token, and nothing else', async () => {
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await page.text();
    const asset = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    expect((await fetch(`${base}${asset!}`)).status).toBe(200);
    expect((await fetch(`${base}/workspace/mcp`)).status).toBe(401);
    expect((await fetch(`${base}/ui/assets/../../../package.json`)).status).not.toBe(200);
    // The page holds no data: no server name in it.
    expect(html).not.toContain('echo');
  });

  it('signs in with a one-time code, lists the servers, and shows the live event of a restart it clicked', { timeout: 180_000 }, async () => {
    // 1. Traffic to show: a REST session of the operator with two echo calls, and a /mcp session of
    // the `ide` client with one call on echo and one on leaky (which prints its secret to stderr).
    const auth = { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' };
    const created = await fetch(`${base}/sessions`, { method: 'POST', headers: auth, body: JSON.stringify({ servers: ['echo'], label: 'ops' }) });
    expect(created.status).toBe(201);
    const restId = ((await created.json()) as { id: string }).id;
    for (const text of ['one', 'two']) {
      const call = await fetch(`${base}/sessions/${restId}/tools/call`, { method: 'POST', headers: auth, body: JSON.stringify({ server: 'echo', name: 'echo', arguments: { text } }) });
      expect(call.status).toBe(200);
    }
    const mcp = await connectClient(`${base}/mcp`, IDE_TOKEN, {}, 'dash-ide');
    const mcpId = mcp.transport.sessionId!;
    expect((await mcp.client.callTool({ name: 'echo__echo', arguments: { text: 'three' } })).content).toEqual([{ type: 'text', text: 'three' }]);
    await mcp.client.callTool({ name: 'leaky__leak', arguments: {} });

    const code = await loginCode();
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${base}/?code=${code}`);
      const row = page.locator('tr[data-server="echo"]');
      await row.waitFor({ timeout: 60_000 });
      expect(await row.locator('.status').first().textContent()).toMatch(/ready|active|idle|degraded/);
      // The code left the address bar (and so the history) at once.
      expect(page.url()).toBe(`${base}/`);
      const cookies = await context.cookies();
      const cookie = cookies.find((c) => c.name === 'mcpool_ui');
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });

      // 2. Sessions: the REST one of the operator and the /mcp one of `ide`, each with its servers.
      const restRow = page.locator(`.sessions tr[data-session="${restId}"]`);
      await restRow.waitFor({ timeout: 30_000 });
      expect(await restRow.getAttribute('data-kind')).toBe('rest');
      expect(await restRow.locator('.client').textContent()).toBe('operator');
      expect(await restRow.locator('.held').textContent()).toBe('echo');
      const mcpRow = page.locator(`.sessions tr[data-session="${mcpId}"]`);
      await mcpRow.waitFor({ timeout: 30_000 });
      expect(await mcpRow.getAttribute('data-kind')).toBe('mcp');
      expect(await mcpRow.locator('.client').textContent()).toBe('ide');
      expect(await mcpRow.locator('.held').textContent()).toBe('echo, leaky, memroy (failed)');
      expect(await mcpRow.locator('code').textContent()).toBe(mcpId.slice(0, 8));
      // Beside the token's client, the MCP client as it named itself.
      expect(await mcpRow.locator('.mcp-client').textContent()).toBe('dash-ide 1.0.0');
      expect(await restRow.locator('.mcp-client').textContent()).toBe('—');

      // 3. Per server figures: echo had three calls (two REST, one /mcp), leaky one; each entry shows its era and policy.
      await page.locator('tr[data-server="echo"] td.calls', { hasText: /^3$/ }).waitFor({ timeout: 30_000 });
      await page.locator('tr[data-server="leaky"] td.calls', { hasText: /^1$/ }).waitFor({ timeout: 30_000 });
      expect(await row.locator('td.p50').textContent()).toMatch(/\d+(\.\d)? ms/);
      // Its life state, with what its last start cost.
      expect(await row.locator('td.state').textContent()).toMatch(/^running \d+ ms$/);
      expect(await row.locator('td.p95').textContent()).toMatch(/\d+(\.\d)? ms/);
      expect(await row.locator('.entry .era').first().textContent()).toMatch(/^(legacy|modern)$/);
      expect(await row.locator('.entry .sharing').first().textContent()).toMatch(/^(shared|per-principal|per-session)$/);

      // 4. The stderr panel of leaky: its line, with the configured secret scrubbed, nowhere in the page.
      await page.locator('details[data-stderr="leaky"] summary').click();
      await page.locator('details[data-stderr="leaky"] pre', { hasText: 'leaky: secret is [redacted]' }).waitFor({ timeout: 30_000 });
      expect(await page.content()).not.toContain(SECRET);

      // 5. A server that failed to start: its card shows the stderr its last error holds (no live entry to read).
      const failed = page.locator('tr[data-server="memroy"]');
      expect(await failed.locator('.status').first().textContent()).toBe('failed');
      await page.locator('details[data-stderr="memroy"] summary').click();
      await page.locator('details[data-stderr="memroy"] pre', { hasText: 'npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-memroy' }).waitFor({ timeout: 30_000 });
      expect(await page.locator('details[data-stderr="memroy"] summary').textContent()).toContain('from its last error');
      // An unavailable server says why.
      const unavailable = page.locator('tr[data-server="gh"]');
      expect(await unavailable.locator('.status').first().textContent()).toBe('unavailable');
      expect(await unavailable.locator('td.error').textContent()).toContain('environment variable DASH_UNSET_VARIABLE is not set');

      await row.getByRole('button', { name: 'Restart' }).click();
      await page.locator('.events li[data-type="server_restarted"]').waitFor({ timeout: 60_000 });
      expect(await page.locator('.events li[data-type="server_restarted"]').first().textContent()).toMatch(/echo restarted: #\d+ in \d+ ms/);
      // A restart that fails reads as one.
      await failed.getByRole('button', { name: 'Restart' }).click();
      const failedRestart = page.locator('.events li[data-type="server_restarted"]', { hasText: 'memroy' });
      await failedRestart.waitFor({ timeout: 60_000 });
      expect(await failedRestart.first().textContent()).toMatch(/memroy: restart failed \(start_failed\)$/);
      expect(await failedRestart.first().textContent()).not.toContain('#-1');
      if (SCREENSHOT) {
        mkdirSync(dirname(SCREENSHOT), { recursive: true });
        await page.setViewportSize({ width: 1280, height: 600 });
        // Wait for a stats poll after the restart, so the Restarts column shows it.
        await page.locator('tr[data-server="echo"] td.restarts', { hasText: /^[1-9]/ }).waitFor({ timeout: 30_000 });
        await page.screenshot({ path: SCREENSHOT, fullPage: true });
      }

      // A code works once.
      expect((await fetch(`${base}/ui/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) })).status).toBe(401);
      // The cookie reads the API; a change needs the page's own Origin, and another origin is refused.
      const jar = `mcpool_ui=${cookie!.value}`;
      expect((await fetch(`${base}/workspace/mcp`, { headers: { cookie: jar } })).status).toBe(200);
      const restart = (headers: Record<string, string>) => fetch(`${base}/workspace/mcp/echo/restart`, { method: 'POST', headers: { cookie: jar, 'content-type': 'application/json', ...headers }, body: '{}' });
      expect((await restart({})).status).toBe(401);
      expect((await restart({ origin: 'http://evil.example' })).status).toBe(403);
      expect((await restart({ origin: base })).status).toBe(200);

      // 6. The bulk action ends the idle sessions: the REST one and the /mcp one (no call, no stream open).
      await page.getByRole('button', { name: 'End idle sessions' }).click();
      await page.locator('.notice', { hasText: /ended \d+ idle session/ }).waitFor({ timeout: 30_000 });
      await expect.poll(async () => page.locator(`.sessions tr[data-session="${restId}"]`).count(), { timeout: 30_000 }).toBe(0);
      expect((await fetch(`${base}/sessions/${restId}`, { headers: auth })).status).toBe(404);

      // Sign out ends the cookie's session.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('Run mcpool ui').or(page.getByText('mcpool ui')).first().waitFor({ timeout: 30_000 });
      expect((await fetch(`${base}/workspace/mcp`, { headers: { cookie: jar } })).status).toBe(401);
    } finally {
      await context.close();
      await mcp.client.close().catch(() => undefined);
    }
  });
});
