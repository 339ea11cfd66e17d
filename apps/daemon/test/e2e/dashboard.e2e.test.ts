/**
 * The dashboard in headless Chromium (Debian's `chromium`, driven by playwright-core) against a
 * real daemon on 127.0.0.1: sign-in with a one-time code traded for an HttpOnly cookie, the
 * servers listed, a restart clicked and its live event shown. Also what must not work: the API
 * without a credential, a used code, the cookie from another origin.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { harness, type Harness } from '../helpers.js';

const ECHO = fileURLToPath(new URL('../../../../test/fixtures/servers/echo.mjs', import.meta.url));
const CHROMIUM = process.env.MCPOOL_CHROMIUM ?? '/usr/bin/chromium';
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
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does), or set MCPOOL_CHROMIUM`);
  h = await harness({ mcpServers: { echo: { command: process.execPath, args: [ECHO, '--marker=dashboard-e2e'] } } }, { marks: ['dashboard-e2e'] });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
  // The flags this machine needs: no sandbox as root, and no background connections to the outside.
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
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

  it('signs in with a one-time code, lists the servers, and shows the live event of a restart it clicked', { timeout: 120_000 }, async () => {
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

      await row.getByRole('button', { name: 'Restart' }).click();
      await page.locator('.events li[data-type="server_restarted"]').waitFor({ timeout: 60_000 });
      expect(await page.locator('.events li[data-type="server_restarted"]').first().textContent()).toMatch(/echo restarted: #\d+ in \d+ ms/);
      if (SCREENSHOT) {
        mkdirSync(dirname(SCREENSHOT), { recursive: true });
        await page.setViewportSize({ width: 1200, height: 640 });
        await page.screenshot({ path: SCREENSHOT });
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

      // Sign out ends the cookie's session.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('Run mcpool ui').or(page.getByText('mcpool ui')).first().waitFor({ timeout: 30_000 });
      expect((await fetch(`${base}/workspace/mcp`, { headers: { cookie: jar } })).status).toBe(401);
    } finally {
      await context.close();
    }
  });
});
