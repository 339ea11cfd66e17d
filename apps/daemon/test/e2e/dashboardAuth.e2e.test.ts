/**
 * The dashboard's "Authorize" button in headless Chromium, against a daemon whose remote server
 * answers 401: the row shows `auth_required` and the button; clicking it opens the authorization
 * server's page in a new tab, where the user signs in and consents (oidc-provider's own forms);
 * the browser lands on the daemon's loopback redirect, the row leaves `auth_required`, and it is
 * active once a session uses the server (servers start on first use).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { oauthStack, type OAuthStack } from '../oauthStack.js';
import { launchChromium } from './chromium.js';

const open: (() => Promise<void>)[] = [];
let s: OAuthStack;
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
  s = await oauthStack(open, { listen: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const close of open.splice(0).reverse()) await close().catch(() => undefined);
});

describe('the dashboard', () => {
  it('authorizes a server that waits for it, through the authorization server’s own pages', { timeout: 180_000 }, async () => {
    const response = await fetch(`${s.base}/ui/login-code`, { method: 'POST', headers: { authorization: `Bearer ${s.h.token}`, 'content-type': 'application/json' }, body: '{}' });
    const { code } = (await response.json()) as { code: string };
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${s.base}/?code=${code}`);
      const row = page.locator('tr[data-server="remote"]');
      await row.locator('.status', { hasText: 'auth_required' }).first().waitFor({ timeout: 60_000 });
      const popup = context.waitForEvent('page', { timeout: 60_000 });
      await row.locator('button.authorize').click();
      const as = await popup;
      await as.waitForURL((url) => url.href.startsWith(s.as.issuer), { timeout: 60_000 });
      // oidc-provider's development sign-in, then its consent form.
      await as.locator('input[name="login"]').fill('alice');
      await as.locator('input[name="password"]').fill('any');
      await as.locator('button[type="submit"]').first().click();
      await as.locator('button[type="submit"]', { hasText: /continue/i }).first().click();
      await as.locator('body', { hasText: 'remote is authorized' }).waitFor({ timeout: 60_000 });
      await row.locator('.status', { hasText: 'auth_required' }).first().waitFor({ state: 'detached', timeout: 60_000 });
      expect((await s.h.request({ method: 'POST', url: '/sessions', payload: { servers: ['remote'] } })).json()).toMatchObject({ servers: [{ name: 'remote', status: 'connected' }] });
      await row.locator('.status', { hasText: 'active' }).first().waitFor({ timeout: 60_000 });
      expect(s.events).toContainEqual({ type: 'auth_completed', serverName: 'remote' });
    } finally {
      await context.close();
    }
  });
});
