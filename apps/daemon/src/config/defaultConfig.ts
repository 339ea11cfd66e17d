/**
 * The built-in config used when no config file exists anywhere: one bundled demo server, so
 * `mcpool serve` works on a fresh machine. It runs with the same node as the daemon.
 */
import { fileURLToPath } from 'node:url';

/** The bundled demo MCP server (`apps/daemon/demo/demoServer.mjs`). */
export const DEMO_SERVER_PATH = fileURLToPath(new URL('../../demo/demoServer.mjs', import.meta.url));

/** The built-in config document, in the `mcpServers` format. */
export function builtinConfigDocument(): Record<string, unknown> {
  return {
    mcpServers: {
      demo: {
        command: process.execPath,
        args: [DEMO_SERVER_PATH],
        description: 'The demo server bundled with mcpool (tools: hello, add, time).',
      },
    },
  };
}
