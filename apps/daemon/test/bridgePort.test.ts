/**
 * `mcpool bridge --port N` reaches the daemon on 127.0.0.1:N (endpoint `/mcp`), as the other
 * client commands' `--port` does; with `--url` too it is a usage error. A real bridge process
 * run by an SDK stdio client, a real daemon on a socket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN_PATH, main } from 'mcpool';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

const mark = marker('bridge-port');
let h: Harness;
let port: number;

beforeAll(async () => {
  h = await harness({ mcpServers: { echo: fixtureConfig('echo.mjs', mark, { sharing: 'shared' }) } }, { marks: [mark] });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  port = (h.app.server.address() as { port: number }).port;
}, 60_000);
afterAll(async () => {
  await h?.close();
});

describe('mcpool bridge --port', () => {
  it('relays to /mcp on 127.0.0.1 at that port', { timeout: 60_000 }, async () => {
    const client = new Client({ name: 'bridge-port', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN_PATH, 'bridge', '--port', String(port)], env: { PATH: process.env.PATH ?? '', MCPOOL_TOKEN: h.token, MCPOOL_URL: 'http://127.0.0.1:9' }, stderr: 'ignore' }));
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('echo__echo');
    } finally {
      await client.close();
    }
  });

  it('with --url as well: a usage error, exit 2', async () => {
    const err: string[] = [];
    const code = await main(['node', 'mcpool', 'bridge', '--port', String(port), '--url', `http://127.0.0.1:${port}/mcp`], { stdout: () => undefined, stderr: (t) => err.push(t), env: { MCPOOL_TOKEN: h.token }, cwd: h.dir });
    expect(code).toBe(2);
    expect(err.join('\n')).toContain('give --url or --port, not both');
  });
});
