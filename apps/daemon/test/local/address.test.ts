/**
 * Where a client on this machine looks for the daemon (`mcpool/local`, shared by the `mcpool`
 * commands and the VS Code extension): `--url`, then `--port`, then `MCPOOL_URL`, then the config
 * `serve` would use — its `daemon.host`/`daemon.port` under `MCPOOL_HOST`/`MCPOOL_PORT` — and the
 * defaults when the config says nothing usable.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findConfigFile, localDaemonUrl } from 'mcpool/local';

const dir = mkdtempSync(join(tmpdir(), 'mcpool-address-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function config(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** An environment with no user config (a HOME of its own). */
const env = (extra: Record<string, string> = {}): Record<string, string> => ({ HOME: join(dir, 'home'), XDG_CONFIG_HOME: join(dir, 'home', '.config'), ...extra });

describe('finding the daemon', () => {
  it('takes --url, then --port, then MCPOOL_URL, before any config', async () => {
    const file = config('a.json', '{ "daemon": { "port": 9001 } }');
    const io = { env: env({ MCPOOL_URL: 'http://127.0.0.1:9100' }), cwd: dir };
    expect(await localDaemonUrl({ url: 'http://127.0.0.1:9200', port: 9300, config: file }, io)).toBe('http://127.0.0.1:9200');
    expect(await localDaemonUrl({ port: 9300, config: file }, io)).toBe('http://127.0.0.1:9300');
    expect(await localDaemonUrl({ config: file }, io)).toBe('http://127.0.0.1:9100');
  });

  it("reads the config's daemon section (JSONC), under MCPOOL_HOST and MCPOOL_PORT", async () => {
    const file = config('b.json', '{\n  // the team port\n  "daemon": { "host": "localhost", "port": 9002, },\n}');
    expect(await localDaemonUrl({ config: file }, { env: env(), cwd: dir })).toBe('http://localhost:9002');
    expect(await localDaemonUrl({ config: file }, { env: env({ MCPOOL_PORT: '9003' }), cwd: dir })).toBe('http://localhost:9003');
    expect(await localDaemonUrl({ config: file }, { env: env({ MCPOOL_HOST: '::1' }), cwd: dir })).toBe('http://[::1]:9002');
  });

  it('dials loopback for a wildcard bind, and falls back to the defaults for what serve would refuse', async () => {
    expect(await localDaemonUrl({ config: config('c.json', '{ "daemon": { "host": "0.0.0.0", "port": 9004 } }') }, { env: env(), cwd: dir })).toBe('http://127.0.0.1:9004');
    expect(await localDaemonUrl({ config: config('d.json', '{ "daemon": { "port": "seventy" } }') }, { env: env(), cwd: dir })).toBe('http://127.0.0.1:7070');
    expect(await localDaemonUrl({ config: config('e.json', 'not json at all') }, { env: env(), cwd: dir })).toBe('http://127.0.0.1:7070');
    expect(await localDaemonUrl({ config: join(dir, 'missing.json') }, { env: env(), cwd: dir })).toBe('http://127.0.0.1:7070');
    expect(await localDaemonUrl({}, { env: env({ MCPOOL_PORT: '99999' }), cwd: dir })).toBe('http://127.0.0.1:7070');
  });

  it('looks for the config as serve does: --config, MCPOOL_CONFIG, ./.mcp.json, the user config', async () => {
    const cwd = join(dir, 'project');
    mkdirSync(join(dir, 'home', '.config', 'mcpool'), { recursive: true });
    mkdirSync(cwd, { recursive: true });
    const user = join(dir, 'home', '.config', 'mcpool', 'config.json');
    writeFileSync(user, '{ "daemon": { "port": 9005 } }');
    expect(findConfigFile({ env: env(), cwd })).toEqual({ kind: 'file', path: user, origin: 'user' });
    expect(await localDaemonUrl({}, { env: env(), cwd })).toBe('http://127.0.0.1:9005');
    writeFileSync(join(cwd, '.mcp.json'), '{ "daemon": { "port": 9006 } }');
    expect(await localDaemonUrl({}, { env: env(), cwd })).toBe('http://127.0.0.1:9006');
    const named = config('f.json', '{ "daemon": { "port": 9007 } }');
    expect(await localDaemonUrl({}, { env: env({ MCPOOL_CONFIG: named }), cwd })).toBe('http://127.0.0.1:9007');
    expect(findConfigFile({ env: env({ MCPOOL_CONFIG: join(dir, 'typo.json') }), cwd })).toEqual({ kind: 'missing', path: join(dir, 'typo.json'), named: 'MCPOOL_CONFIG' });
  });
});
