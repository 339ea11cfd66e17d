/**
 * A server named `__proto__`, `constructor` or `prototype` (or holding a control character) is
 * refused with the typed config error that names it, wherever a name comes in: the config file at
 * start, a reload, a session's injected servers. Never dropped silently.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@mcpool/protocol';
import { loadConfig } from 'mcpool';
import { fixtureConfig, marker } from '../../../test/helpers/processes.js';
import { harness, type Harness } from './helpers.js';

const mark = marker('server-names');
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('unsafe server names', () => {
  it('a config file naming a server __proto__ does not load: the typed error names it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-names-'));
    try {
      const path = join(dir, 'mcpool.json');
      writeFileSync(path, '{"mcpServers":{"echo":{"command":"node"},"__proto__":{"command":"node"}}}');
      const loading = loadConfig({ kind: 'file', path, origin: 'flag' }, { MCPOOL_STATE_DIR: join(dir, 'state') });
      await expect(loading).rejects.toBeInstanceOf(ConfigError);
      await expect(loading).rejects.toMatchObject({ code: 'MCPOOL_CONFIG_INVALID', message: expect.stringContaining('"__proto__"') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a reload adding a server named constructor is refused whole, and a session cannot inject one', async () => {
    const doc = { mcpServers: { echo: fixtureConfig('echo.mjs', mark) } };
    h = await harness(doc, { marks: [mark] });
    writeFileSync(h.configPath, `{"mcpServers":{"echo":${JSON.stringify(doc.mcpServers.echo)},"constructor":{"command":"node"}}}`);
    const reload = await h.request({ method: 'POST', url: '/workspace/mcp/reload-all' });
    expect(reload.statusCode).toBe(409);
    expect(reload.json()).toMatchObject({ code: 'MCPOOL_CONFIG_REJECTED', message: expect.stringContaining('"constructor"') });
    expect(Object.keys(h.daemon.config.servers)).toEqual(['echo']);

    for (const name of ['constructor', 'prototype', 'bad\nname']) {
      const injected = await h.request({ method: 'POST', url: '/sessions', payload: { servers: [], mcpServers: { [name]: { command: 'node' } } } });
      expect(injected.statusCode, name).toBe(400);
      expect(injected.json(), name).toMatchObject({ code: 'MCPOOL_CONFIG_INVALID', message: expect.stringContaining(JSON.stringify(name)) });
    }
  });
});
