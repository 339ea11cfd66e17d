/**
 * Headless Chromium for the dashboard tests: Debian's `chromium` (or `MCPOOL_CHROMIUM`), driven by
 * playwright-core, with the flags this machine needs (no sandbox as root, no background
 * connections to the outside).
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.MCPOOL_CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does), or set MCPOOL_CHROMIUM`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
