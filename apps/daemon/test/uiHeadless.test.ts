/**
 * `mcpool ui` says "opened in your browser" only when a browser opened. With no display (an SSH
 * session, a container) or an opener that fails (`xdg-open: no method available`, exit 3), it
 * prints the sign-in address and exits 1; `--no-open` prints it and exits 0. A real daemon; the
 * opener is a real program on PATH (a script that exits as `xdg-open` would).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from 'mcpool';
import { harness, type Harness } from './helpers.js';

let h: Harness;
let port: number;

beforeAll(async () => {
  h = await harness({ mcpServers: {} });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  port = (h.app.server.address() as { port: number }).port;
}, 60_000);
afterAll(async () => {
  await h?.close();
});

/** A `xdg-open` that exits with `code` (and records the address it was given). */
function fakeOpener(code: number): string {
  const dir = join(h.dir, `opener-${code}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'xdg-open'), `#!/bin/sh\necho "$1" > "${dir}/opened"\nexit ${code}\n`);
  chmodSync(join(dir, 'xdg-open'), 0o755);
  return dir;
}

async function ui(env: Record<string, string | undefined>, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['node', 'mcpool', 'ui', '--port', String(port), ...args], { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: { MCPOOL_TOKEN: h.token, ...env }, cwd: h.dir });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const ADDRESS = () => new RegExp(`http://127\\.0\\.0\\.1:${port}/\\?code=[\\w-]+`);

describe.skipIf(process.platform === 'darwin' || process.platform === 'win32')('mcpool ui on a machine without a browser', () => {
  it('no display: prints the address, never "opened", exit 1', async () => {
    const result = await ui({ PATH: process.env.PATH, DISPLAY: undefined, WAYLAND_DISPLAY: undefined });
    expect(result.code).toBe(1);
    expect(result.err).toContain('could not open a browser: no display here (neither DISPLAY nor WAYLAND_DISPLAY is set)');
    expect(result.out).toMatch(ADDRESS());
    expect(result.out).not.toContain('opened');
  });

  it('an opener that fails (xdg-open exits 3): the address, exit 1', async () => {
    const result = await ui({ PATH: `${fakeOpener(3)}:${process.env.PATH ?? ''}`, DISPLAY: ':99' });
    expect(result.code).toBe(1);
    expect(result.err).toContain('xdg-open failed (exit code 3)');
    expect(result.out).toMatch(ADDRESS());
    expect(result.out).not.toContain('opened');
  });

  it('no opener at all: the address, exit 1; an opener that works: "opened", exit 0; --no-open: the address, exit 0', async () => {
    const none = await ui({ PATH: join(h.dir, 'empty-path'), DISPLAY: ':99' });
    expect(none.code).toBe(1);
    expect(none.err).toContain('no browser opener (xdg-open: ENOENT)');
    const works = await ui({ PATH: `${fakeOpener(0)}:${process.env.PATH ?? ''}`, DISPLAY: ':99' });
    expect(works).toMatchObject({ code: 0, out: `opened http://127.0.0.1:${port}/ in your browser` });
    const printed = await ui({ DISPLAY: undefined }, '--no-open');
    expect(printed.code).toBe(0);
    expect(printed.out).toMatch(ADDRESS());
  });
});
