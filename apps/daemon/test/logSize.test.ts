/**
 * Logs that fit a laptop: per-session and per-request lines are debug, so a client opening and
 * closing sessions (or a stream of refused requests) writes nothing at info; and the file an
 * autostarted or service daemon appends to (`<state dir>/daemon.log`) stays under
 * `daemon.logMaxBytes`, the previous part kept as `daemon.log.1`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { harness, type Harness } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/mcpool.js', import.meta.url));
const LONG = 120_000;

let h: Harness | undefined;
let daemon: ChildProcess | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (daemon !== undefined && daemon.exitCode === null && daemon.signalCode === null) {
    const exited = new Promise((resolve) => daemon!.once('exit', resolve));
    daemon.kill('SIGTERM');
    await exited;
  }
  daemon = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('log levels', () => {
  it('at info, sessions opened and closed and refused requests write no line', async () => {
    h = await harness({ mcpServers: {}, daemon: { keepWarm: false } }, { logLevel: 'info' });
    const before = h.logs.length;
    for (let i = 0; i < 10; i++) {
      const created = await h.request({ method: 'POST', url: '/sessions', payload: { label: `s${i}` } });
      expect(created.statusCode).toBe(201);
      const id = created.json<{ id: string }>().id;
      expect((await h.request({ method: 'DELETE', url: `/sessions/${id}` })).statusCode).toBe(204);
      expect((await h.request({ method: 'GET', url: '/workspace/mcp', token: 'wrong' })).statusCode).toBe(401);
    }
    expect(h.logs.slice(before)).toEqual([]);
  }, LONG);

  it('at debug, the same lines are there', async () => {
    h = await harness({ mcpServers: {}, daemon: { keepWarm: false } }, { logLevel: 'debug' });
    const created = await h.request({ method: 'POST', url: '/sessions', payload: { label: 's' } });
    await h.request({ method: 'DELETE', url: `/sessions/${created.json<{ id: string }>().id}` });
    await h.request({ method: 'GET', url: '/workspace/mcp', token: 'wrong' });
    const messages = h.logs.map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages).toEqual(expect.arrayContaining(['session created', 'session closed', 'request refused']));
  }, LONG);
});

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end();
  });
}

describe('daemon.log', () => {
  it('stays under logMaxBytes when the daemon appends to it, the previous part in daemon.log.1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-logsize-'));
    dirs.push(dir);
    const stateDir = join(dir, 'state');
    mkdirSync(stateDir, { recursive: true });
    const maxBytes = 64 * 1024;
    const configPath = join(dir, 'mcpool.json');
    writeFileSync(configPath, JSON.stringify({ mcpServers: {}, daemon: { port: 0, keepWarm: false, logMaxBytes: maxBytes } }));
    const logFile = join(stateDir, 'daemon.log');
    // As autostart and the service unit do: the file opened for appending, as stdout and stderr.
    const fd = openSync(logFile, 'a', 0o600);
    try {
      daemon = spawn(process.execPath, [BIN, 'serve', '--config', configPath, '--log-level', 'debug'], {
        cwd: dir,
        env: { PATH: process.env.PATH, HOME: dir, MCPOOL_STATE_DIR: stateDir },
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
    // Each refused request is one debug line of ~200 bytes: 2,000 of them write ~6× the bound.
    for (let i = 0; i < 2000; i++) expect(await get(`${base}/workspace/mcp`)).toBe(401);
    await vi.waitFor(() => expect(existsSync(`${logFile}.1`)).toBe(true), { timeout: 10_000, interval: 50 });
    // Checked every eighth of the bound, so one check's worth (and a line) over it at most.
    expect(statSync(logFile).size).toBeLessThanOrEqual(maxBytes + maxBytes / 8 + 4096);
    expect(statSync(`${logFile}.1`).size).toBeGreaterThanOrEqual(maxBytes);
    expect(statSync(`${logFile}.1`).size).toBeLessThanOrEqual(maxBytes + maxBytes / 8 + 4096);
    // The file starts again on a line boundary: every line in it is whole JSON.
    const lines = readFileSync(logFile, 'utf8').split('\n').filter((line) => line.length > 0);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
  }, LONG);
});
