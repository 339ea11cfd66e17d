/**
 * `mcpool service` and `mcpool logs` through the real command line: the systemd unit it writes
 * passes `systemd-analyze verify`, the launchd agent is a well-formed plist, and `logs` reads,
 * filters and follows the daemon's log file (a real `mcpool logs -f` process).
 */
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from 'mcpool';
import { launchdPlist, systemdUnit } from '../src/service/units.js';

const BIN = fileURLToPath(new URL('../bin/mcpool.js', import.meta.url));

let home: string;
let env: Record<string, string>;

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['node', 'mcpool', ...args], { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env, cwd: home });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'mcpool service '));
  env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), MCPOOL_STATE_DIR: join(home, 'state dir'), PATH: process.env.PATH ?? '/usr/bin:/bin' };
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

describe.runIf(process.platform === 'linux')('mcpool service (systemd)', () => {
  it('install writes a user unit that systemd-analyze verifies; status and uninstall follow it', async () => {
    const config = join(home, 'my config.json');
    writeFileSync(config, '{"mcpServers":{}}');
    const install = await run(['service', 'install', '--no-start', '--config', config]);
    expect(install.code).toBe(0);
    const unitFile = join(home, '.config', 'systemd', 'user', 'mcpool.service');
    const unit = readFileSync(unitFile, 'utf8');
    expect(unit).toContain('Restart=on-failure');
    expect(unit).toContain(`serve --config "${config}"`);
    expect(unit).toContain(`WorkingDirectory=${join(home, 'state dir')}\n`);
    expect(unit).toContain(`StandardOutput=append:${join(home, 'state dir', 'daemon.log')}`);
    expect(unit).toMatch(/^Environment="?PATH=/m);
    // systemd's own checker: it parses the unit and checks ExecStart's binary exists.
    const verify = execFileSync('systemd-analyze', ['verify', unitFile], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(verify.trim()).toBe('');

    const status = await run(['service', 'status']);
    expect(status.out).toContain(`installed: ${unitFile}`);
    // No user systemd session runs here, so it cannot be running: not 0.
    expect(status.code).not.toBe(0);

    const uninstall = await run(['service', 'uninstall']);
    expect(uninstall.out).toContain(`removed ${unitFile}`);
    expect(existsSync(unitFile)).toBe(false);
    expect((await run(['service', 'status'])).code).toBe(1);
    expect((await run(['service', 'uninstall'])).code).toBe(1);
  });

  it('a unit with a broken ExecStart fails systemd-analyze verify (the check can fail)', () => {
    const unitFile = join(home, 'mcpool.service');
    writeFileSync(unitFile, systemdUnit({ node: join(home, 'no-such-node'), bin: BIN, stateDir: home, env: {} }));
    expect(() => execFileSync('systemd-analyze', ['verify', unitFile], { stdio: 'pipe' })).toThrow();
  });
});

describe('the launchd agent', () => {
  it('is a plist with the serve arguments, restart on failure and the log file, XML-escaped', () => {
    const plist = launchdPlist({ node: '/usr/local/bin/node', bin: '/opt/mcpool/bin/mcpool.js', config: '/Users/a&b/config.json', stateDir: '/Users/a&b/state', env: { MCPOOL_STATE_DIR: '/Users/a&b/state' } });
    expect(plist).toContain('<string>dev.mcpool.daemon</string>');
    expect(plist).toContain('<string>serve</string>\n    <string>--config</string>\n    <string>/Users/a&amp;b/config.json</string>');
    expect(plist).toMatch(/<key>KeepAlive<\/key>\s*<dict>\s*<key>SuccessfulExit<\/key>\s*<false\/>/);
    expect(plist).toContain('<key>StandardOutPath</key>\n  <string>/Users/a&amp;b/state/daemon.log</string>');
    expect(plist).not.toMatch(/&(?!amp;|lt;|gt;|quot;)/);
  });
});

describe('mcpool logs', () => {
  const record = (fields: Record<string, unknown>): string => JSON.stringify({ level: 30, time: Date.UTC(2026, 11, 1, 12, 0, 0), ...fields });

  beforeEach(() => {
    mkdirSync(join(home, 'state dir'), { recursive: true });
    writeFileSync(
      join(home, 'state dir', 'daemon.log'),
      [
        record({ component: 'daemon', msg: 'listening on http://127.0.0.1:7070' }),
        record({ level: 50, component: 'actor', server: 'github', entryIndex: 0, msg: 'connection failed', error: { code: 'MCPOOL_SPAWN_FAILED', message: 'exit 1' } }),
        record({ component: 'actor', server: 'memory', entryIndex: 1, msg: 'active' }),
        'a line that is not JSON',
        '',
      ].join('\n'),
    );
  });

  it('prints the records as lines, and only one server’s with its name', async () => {
    const all = await run(['logs']);
    expect(all.code).toBe(0);
    expect(all.out.split('\n')).toEqual([
      '12:00:00.000 INFO  [daemon] listening on http://127.0.0.1:7070',
      '12:00:00.000 ERROR [actor github#0] connection failed — MCPOOL_SPAWN_FAILED: exit 1',
      '12:00:00.000 INFO  [actor memory#1] active',
      'a line that is not JSON',
    ]);
    const github = await run(['logs', 'github', '--json']);
    expect(github.out.split('\n')).toHaveLength(1);
    expect(JSON.parse(github.out)).toMatchObject({ server: 'github', msg: 'connection failed' });
    expect((await run(['logs', '-n', '1'])).out).toBe('a line that is not JSON');
  });

  it('says where it looked when there is no log', async () => {
    rmSync(join(home, 'state dir'), { recursive: true });
    const none = await run(['logs']);
    expect(none.code).toBe(1);
    expect(none.err).toContain(join(home, 'state dir', 'daemon.log'));
  });

  it('-f follows the file in a real process until SIGTERM', { timeout: 60_000 }, async () => {
    const child = spawn(process.execPath, [BIN, 'logs', 'memory', '-f', '-n', '0'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    try {
      // The follower starts at the file's end whenever it gets there: keep appending (bounded)
      // until a line shows up, then check it printed only this server's lines.
      const deadline = Date.now() + 45_000;
      while (!out.includes('restarted') && Date.now() < deadline) {
        appendFileSync(join(home, 'state dir', 'daemon.log'), `${record({ component: 'actor', server: 'github', msg: 'not this one' })}\n`);
        appendFileSync(join(home, 'state dir', 'daemon.log'), `${record({ component: 'actor', server: 'memory', entryIndex: 1, msg: 'restarted' })}\n`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const lines = out.trim().split('\n');
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toBe('12:00:00.000 INFO  [actor memory#1] restarted');
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });
});
