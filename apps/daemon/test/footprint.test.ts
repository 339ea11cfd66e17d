/**
 * The `mcpool serve` process's young generation stays at its initial two 1 MB semi-spaces under a
 * burst of concurrent requests, also after an actor thread has started (V8 puts the growth flag
 * back to its default whenever a new heap is configured, as at a worker's start). Read from the
 * daemon's own `/metrics` (prom-client's per-space heap gauges). And what only some runs use is
 * not loaded by the command's modules: the pretty printer (a terminal), the OpenTelemetry SDK
 * (an OTLP endpoint configured).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { holdYoungGeneration } from '../src/heapWatch.js';
import { startDaemonProcess, type DaemonProcess } from './e2e/daemonProcess.js';

const HEAP_WATCH = pathToFileURL(fileURLToPath(new URL('../dist/heapWatch.js', import.meta.url))).href;
const CLI = pathToFileURL(fileURLToPath(new URL('../dist/cli.js', import.meta.url))).href;
const LOGGER = pathToFileURL(fileURLToPath(new URL('../dist/logger.js', import.meta.url))).href;
const SECRETS = pathToFileURL(fileURLToPath(new URL('../dist/secrets.js', import.meta.url))).href;
const LONG = 120_000;

let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
});

/** `mcpool_nodejs_heap_space_size_total_bytes{space="new"}` from the daemon's `/metrics`, in KB. */
async function newSpaceKb(base: string, auth: { authorization: string }): Promise<number> {
  const text = await (await fetch(`${base}/metrics`, { headers: auth })).text();
  const match = /^mcpool_nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/m.exec(text);
  if (match === null) throw new Error(`no new-space gauge in /metrics: ${text.slice(0, 300)}`);
  return Number(match[1]) / 1024;
}

describe('the serve process young generation', () => {
  it('stays at its initial size under a burst of requests, after an actor thread started', async () => {
    const mark = marker('footprint');
    // Ready: the server warmed, so its actor thread (a new V8 heap) has started.
    daemon = await startDaemonProcess('footprint', mark, { echo: fixtureConfig('echo.mjs', mark) });
    const { url: base, auth } = daemon;
    // A heap check (every second) has run since the thread started.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // 16 requests in flight at a time: their objects survive scavenges, which is what makes V8
    // grow the young generation.
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next++ < 1500) expect((await fetch(`${base}/workspace/mcp`, { headers: auth })).status).toBe(200);
    };
    await Promise.all(Array.from({ length: 16 }, lane));
    expect(await newSpaceKb(base, auth)).toBeLessThanOrEqual(2048);
  }, LONG);

  it('holds it again after a worker thread started later, at the next heap check', async () => {
    // Its own process: the test runner's young generation has long grown.
    const script = `
      import { getHeapSpaceStatistics } from 'node:v8';
      import { Worker } from 'node:worker_threads';
      import { startHeapWatch, HEAP_CHECK_MS } from ${JSON.stringify(HEAP_WATCH)};
      const watch = startHeapWatch(undefined, { holdYoung: true });
      const worker = new Worker('setTimeout(() => {}, 50)', { eval: true });
      await new Promise((resolve) => worker.once('exit', resolve));
      await new Promise((resolve) => setTimeout(resolve, HEAP_CHECK_MS + 500));
      // Survivors at every scavenge: what makes V8 grow the young generation.
      const held = [];
      for (let round = 0; round < 30; round++) {
        for (let i = 0; i < 100000; i++) held.push({ i, s: 'x' + i });
        if (held.length > 500000) held.splice(0, 200000);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      watch.stop();
      console.log(getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size / 1024);
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(Number(out.trim())).toBeLessThanOrEqual(2048);
  }, LONG);

  it('leaves a semi-space size the user chose alone', () => {
    expect(holdYoungGeneration(['--max-semi-space-size=8'], undefined)).toBe(false);
    expect(holdYoungGeneration([], '--min-semi-space-size=2')).toBe(false);
  });
});

describe('modules the daemon loads only when used', () => {
  /** Packages loaded (CommonJS cache, which ESM imports of CommonJS packages fill too) after `script`, in a fresh process. */
  const loadedAfter = (script: string): string[] => {
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', `${script}\nimport { createRequire } from 'node:module';\nconsole.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));`],
      { encoding: 'utf8', timeout: 60_000, cwd: dirname(fileURLToPath(import.meta.url)) },
    );
    return JSON.parse(out) as string[];
  };

  it('the command and a JSON-lines logger load neither pino-pretty nor the OpenTelemetry SDK', () => {
    const loaded = loadedAfter(
      `await import(${JSON.stringify(CLI)});
       const { createLogger } = await import(${JSON.stringify(LOGGER)});
       const { SecretRedactor } = await import(${JSON.stringify(SECRETS)});
       createLogger({ redactor: new SecretRedactor(), pretty: false, level: 'silent' });`,
    );
    expect(loaded.some((path) => path.includes('/pino/'))).toBe(true);
    expect(loaded.filter((path) => path.includes('/pino-pretty/'))).toEqual([]);
    expect(loaded.filter((path) => /@opentelemetry\/(sdk-|exporter-|resources)/.test(path))).toEqual([]);
  });

  it('a terminal logger loads pino-pretty', () => {
    const loaded = loadedAfter(
      `const { createLogger } = await import(${JSON.stringify(LOGGER)});
       const { SecretRedactor } = await import(${JSON.stringify(SECRETS)});
       createLogger({ redactor: new SecretRedactor(), pretty: true, level: 'silent' });`,
    );
    expect(loaded.some((path) => path.includes('/pino-pretty/'))).toBe(true);
  });
});
