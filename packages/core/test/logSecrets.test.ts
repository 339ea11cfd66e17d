/**
 * Logs never hold an env value or header: a server that prints its own token to stderr has it
 * scrubbed before the actor logs the line, even at debug level. The pool runs in a child process
 * so that everything written to fd 2 (actor threads included) can be read.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FIXTURES, marker, pidsWithMarker } from '../../../test/helpers/processes.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CANARY = 'canary-token-5f0c2d9e71';

describe('secrets in logs', () => {
  it('a token the server prints to stderr never reaches the log, at debug level', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpool-logsecrets-'));
    const mark = marker('logsecrets');
    try {
      const script = join(dir, 'host.mjs');
      writeFileSync(
        script,
        [
          `import { pino } from ${JSON.stringify(pathToFileURL(join(ROOT, 'node_modules/pino/pino.js')).href)};`,
          `import { McpTransportPool } from ${JSON.stringify(pathToFileURL(join(ROOT, 'packages/core/dist/index.js')).href)};`,
          `const pool = new McpTransportPool({ stateDir: false, logger: pino({ level: 'debug' }, pino.destination(2)) });`,
          // bash prints the token to stderr, then becomes the echo server.
          `const view = await pool.acquire('leaky', { command: 'bash', args: ['--norc', '-c', 'echo "my token is $API_TOKEN" >&2; exec "$1" "$2" "$0"', ${JSON.stringify(mark)}, process.execPath, ${JSON.stringify(FIXTURES + 'echo.mjs')}], env: { API_TOKEN: ${JSON.stringify(CANARY)} } }, 's1');`,
          `await view.callTool('echo', { text: 'hi' });`,
          `await pool.drainAll();`,
        ].join('\n'),
      );
      const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MCPOOL_LOG_LEVEL: 'debug' } });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));

      expect(code).toBe(0);
      expect(output).toContain('server stderr');
      expect(output).toContain('my token is [redacted]');
      expect(output).not.toContain(CANARY);
      expect(pidsWithMarker(mark)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
