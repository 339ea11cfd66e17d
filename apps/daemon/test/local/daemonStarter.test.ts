/**
 * Starting the daemon once however many processes ask at once (`mcpool/local`'s DaemonStarter, as
 * every editor window and `mcpool bridge --autostart` use it): ten processes find no daemon at the
 * same moment; exactly one runs `mcpool serve`, all ten end up with the daemon, and one daemon
 * process exists. A start that fails is attempted once, reported to all, and not tried again
 * during the cool-down. Real processes, a real daemon on a port of its own, on 127.0.0.1.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { DaemonStarter, START_FAILED_FILE } from 'mcpool/local';
import { fixtureConfig, isAlive, killMarked, marker, pidsWithMarker } from '../../../../test/helpers/processes.js';
import { BIN } from '../e2e/bridgeProcess.js';
import { freePort } from '../../../../test/helpers/ports.js';

const run = promisify(execFile);
const ONCE = fileURLToPath(new URL('./startOnce.mjs', import.meta.url));
const mark = marker('start-once');
const dir = mkdtempSync(join(tmpdir(), 'mcpool-start-once-'));
const started: number[] = [];

afterAll(() => {
  for (const pid of started.filter(isAlive)) process.kill(pid, 'SIGKILL');
  killMarked(mark);
  rmSync(dir, { recursive: true, force: true });
});


interface Outcome {
  ok: boolean;
  spawned: number | null;
  failure: string | null;
}

/** `count` processes asking for the daemon at once. */
async function racers(count: number, baseUrl: string, stateDir: string, config: string): Promise<Outcome[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const { stdout } = await run(process.execPath, [ONCE, baseUrl, stateDir, config, BIN], { env: { PATH: process.env.PATH, HOME: dir }, timeout: 150_000 });
      return JSON.parse(stdout) as Outcome;
    }),
  );
}

describe('starting the daemon once', () => {
  it('ten processes at once: one `mcpool serve`, and every one of them gets the daemon', async () => {
    const stateDir = join(dir, 'state-ten');
    const port = await freePort();
    const config = join(dir, 'ten.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { echo: fixtureConfig('echo.mjs', mark) }, daemon: { port, watchConfig: false } }));
    const outcomes = await racers(10, `http://127.0.0.1:${port}`, stateDir, config);
    const spawned = outcomes.map((outcome) => outcome.spawned).filter((pid): pid is number => pid !== null);
    started.push(...spawned);
    expect(outcomes.every((outcome) => outcome.ok), JSON.stringify(outcomes)).toBe(true);
    expect(spawned).toHaveLength(1);
    // One daemon process for that config: the others never spawned one (none lost a port race).
    expect(pidsWithMarker(config)).toEqual(spawned);
    expect(readFileSync(join(stateDir, 'daemon.log'), 'utf8')).not.toContain('already in use');

    // A later asker finds it up and starts nothing.
    const again = await racers(1, `http://127.0.0.1:${port}`, stateDir, config);
    expect(again).toEqual([{ ok: true, spawned: null, failure: null }]);

    const token = readFileSync(join(stateDir, 'token'), 'utf8').trim();
    const stop = await fetch(`http://127.0.0.1:${port}/workspace/shutdown`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(stop.status).toBe(202);
    await vi.waitFor(() => expect(isAlive(spawned[0]!)).toBe(false), { timeout: 30_000, interval: 50 });
  }, 240_000);

  it('a start that fails is made once, reported to every asker, and not made again during the cool-down', async () => {
    const stateDir = join(dir, 'state-broken');
    const port = await freePort();
    const config = join(dir, 'broken.json');
    writeFileSync(config, '{ "mcpServers": ');
    const outcomes = await racers(5, `http://127.0.0.1:${port}`, stateDir, config);
    started.push(...outcomes.flatMap((outcome) => (outcome.spawned === null ? [] : [outcome.spawned])));
    expect(outcomes.every((outcome) => !outcome.ok)).toBe(true);
    expect(outcomes.filter((outcome) => outcome.spawned !== null)).toHaveLength(1);
    for (const outcome of outcomes) expect(outcome.failure).toMatch(/exited \(code 2\); see .*daemon\.log/);
    const record = JSON.parse(readFileSync(join(stateDir, START_FAILED_FILE), 'utf8')) as { at: number; message: string };
    expect(record.message).toMatch(/exited \(code 2\)/);

    // Within the cool-down nobody starts it again; after it, the next asker does.
    const later = await racers(1, `http://127.0.0.1:${port}`, stateDir, config);
    expect(later).toEqual([{ ok: false, spawned: null, failure: record.message }]);
    writeFileSync(join(stateDir, START_FAILED_FILE), JSON.stringify({ ...record, at: record.at - 60_000 }));
    const retried = await racers(1, `http://127.0.0.1:${port}`, stateDir, config);
    started.push(...retried.flatMap((outcome) => (outcome.spawned === null ? [] : [outcome.spawned])));
    expect(retried[0]).toMatchObject({ ok: false, spawned: expect.any(Number) });
  }, 240_000);

  it('a command that does not exist is a failure that names it, not a crash', async () => {
    const stateDir = join(dir, 'state-missing');
    mkdirSync(stateDir, { recursive: true });
    const starter = new DaemonStarter({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      command: [join(dir, 'no-such-mcpool')],
      stateDir,
      env: { PATH: process.env.PATH },
      cwd: stateDir,
      logger: { info: () => undefined, error: () => undefined },
    });
    expect(await starter.ensure()).toBe(false);
    expect(starter.failure).toMatch(/no-such-mcpool/);
  });

  it('refuses options it cannot work with, naming them', () => {
    const base = { stateDir: dir, env: {}, cwd: dir, logger: { info: () => undefined, error: () => undefined } };
    expect(() => new DaemonStarter({ ...base, baseUrl: 'ftp://x', command: ['mcpool'] })).toThrow(/options\.baseUrl/);
    expect(() => new DaemonStarter({ ...base, baseUrl: 'http://127.0.0.1:1', command: [''] })).toThrow(/options\.command/);
  });
});
