/**
 * The `mcpool serve` process's young generation stays at its initial two 1 MB semi-spaces under a
 * burst of concurrent requests, also after an actor thread has started (V8 puts the growth flag
 * back to its default whenever a new heap is configured, as at a worker's start). Read from the
 * daemon's own `/metrics` (prom-client's per-space heap gauges). And what only some runs use is
 * not loaded by the command's modules: the pretty printer (a terminal), the OpenTelemetry SDK
 * (an OTLP endpoint configured).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, openSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { holdYoungGeneration } from '../src/heapWatch.js';

const BIN = fileURLToPath(new URL('../bin/mcpool.js', import.meta.url));
const ECHO = fileURLToPath(new URL('../../../test/fixtures/servers/echo.mjs', import.meta.url));
const HEAP_WATCH = pathToFileURL(fileURLToPath(new URL('../dist/heapWatch.js', import.meta.url))).href;
const CLI = pathToFileURL(fileURLToPath(new URL('../dist/cli.js', import.meta.url))).href;
const LOGGER = pathToFileURL(fileURLToPath(new URL('../dist/logger.js', import.meta.url))).href;
const SECRETS = pathToFileURL(fileURLToPath(new URL('../dist/secrets.js', import.meta.url))).href;
const LONG = 120_000;
const TOKEN = 'footprint-test-operator-token-0123456789';

let daemon: ChildProcess | undefined;
const dirs: string[] = [];
afterEach(async () => {
  if (daemon !== undefined && daemon.exitCode === null && daemon.signalCode === null) {
    const exited = new Promise((resolve) => daemon!.once('exit', resolve));
    daemon.kill('SIGTERM');
    await exited;
  }
  daemon = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${TOKEN}` };

/** `mcpool_nodejs_heap_space_size_total_bytes{space="new"}` from the daemon's `/metrics`, in KB. */
async function newSpaceKb(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`, { headers: auth })).text();
  const match = /^mcpool_nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/m.exec(text);
  if (match === null) throw new Error(`no new-space gauge in /metrics: ${text.slice(0, 300)}`);
  return Number(match[1]) / 1024;
}

describe('the serve process young generation', () => {
  it('stays at its initial size under a burst of requests, after an actor thread started', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-footprint-'));
    dirs.push(dir);
    const stateDir = join(dir, 'state');
    mkdirSync(stateDir, { recursive: true });
    const configPath = join(dir, 'mcpool.json');
    writeFileSync(configPath, JSON.stringify({ mcpServers: { echo: { command: process.execPath, args: [ECHO] } }, daemon: { port: 0, watchConfig: false } }));
    const logFile = join(dir, 'out.log');
    const fd = openSync(logFile, 'a', 0o600);
    try {
      daemon = spawn(process.execPath, [BIN, 'serve', '--config', configPath], {
        cwd: dir,
        env: { PATH: process.env.PATH, HOME: dir, MCPOOL_STATE_DIR: stateDir, MCPOOL_TOKEN: TOKEN },
        stdio: ['ignore', fd, fd],
      });
    } finally {
      closeSync(fd);
    }
    const base = await vi.waitFor(
      () => {
        const text = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
        const match = /http:\/\/127\.0\.0\.1:(\d+)/.exec(text);
        if (match === null) throw new Error(`not listening yet: ${text.slice(-500)}`);
        return `http://127.0.0.1:${match[1]}`;
      },
      { timeout: 60_000, interval: 50 },
    );
    // The server warmed: its actor thread (a new V8 heap) has started.
    await vi.waitFor(
      async () => {
        const ready = (await (await fetch(`${base}/readyz`, { headers: auth })).json()) as { ready?: boolean };
        expect(ready.ready).toBe(true);
      },
      { timeout: 60_000, interval: 100 },
    );
    // A heap check (every second) has run since the thread started.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // 16 requests in flight at a time: their objects survive scavenges, which is what makes V8
    // grow the young generation.
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next++ < 1500) expect((await fetch(`${base}/workspace/mcp`, { headers: auth })).status).toBe(200);
    };
    await Promise.all(Array.from({ length: 16 }, lane));
    expect(await newSpaceKb(base)).toBeLessThanOrEqual(2048);
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
