/**
 * `mcpool status` as a table: a server that failed to start shows its whole error under its row —
 * an `npx -y` of a mistyped package says `npm error code E404` first, and the line that names the
 * package after it — and the summary counts `/mcp` sessions beside REST ones. A real daemon, a
 * real child that writes npm's multi-line error and exits, the real command line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from 'mcpool';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';
import { connectClient } from './gatewayHelpers.js';

const mark = marker('status-table');
let h: Harness;
let base: string;

beforeAll(async () => {
  // Servers that start with the daemon (`start: "eager"`): the good one's row is a running, held entry.
  h = await harness({ mcpServers: { memroy: fixtureConfig('npmNotFound.mjs', mark), echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }) }, daemon: { start: 'eager' } }, { marks: [mark] });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function status(): Promise<string> {
  const out: string[] = [];
  const code = await main(['node', 'mcpool', 'status'], { stdout: (t) => out.push(t), stderr: (t) => out.push(t), env: { MCPOOL_URL: base, MCPOOL_TOKEN: h.token }, cwd: h.dir });
  expect(code).toBe(0);
  return out.join('\n');
}

describe('mcpool status', () => {
  it('shows a multi-line start failure whole: the npm 404 line that names the package, not only `npm error code E404`', async () => {
    const table = await status();
    const lines = table.split('\n');
    const row = lines.findIndex((line) => line.startsWith('memroy'));
    expect(lines[row]).toMatch(/^memroy\s+failed\s+-\s+disconnected\s+0\s+0\s+MCPOOL_SPAWN_FAILED: .*stderr: npm error code E404$/);
    // The rest of the error follows, indented under the DETAIL column.
    expect(lines[row + 1]).toMatch(/^\s+npm error 404 Not Found - GET https:\/\/registry\.npmjs\.org\/@modelcontextprotocol%2fserver-memroy - Not found$/);
    expect(table).toContain("npm error 404  '@modelcontextprotocol/server-memroy@*' is not in this registry.");
    // The next server's row is still a row of its own.
    // Its life state and what its start cost.
    expect(lines.find((line) => line.startsWith('echo'))).toMatch(/^echo\s+active\s+running · start \d+ ms\s+connected\s+1\s+1\s+#0 active/);
  });

  it('counts /mcp sessions beside REST ones', async () => {
    const { client } = await connectClient(`${base}/mcp`, h.token);
    try {
      expect(await status()).toMatch(/ · sessions: 1 \/mcp, 0 REST · /);
    } finally {
      await client.close();
    }
  });
});
