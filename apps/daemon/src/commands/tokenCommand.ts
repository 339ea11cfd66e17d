/**
 * `mcpool token`: prints the operator's MCP token (see `operatorMcpToken`), the one an MCP client
 * that keeps its secrets itself is given — VS Code asks for it once (`mcpool import --rewrite`
 * writes the `${input:mcpool-token}` prompt) and keeps it in its secret storage. It has the read
 * right only: it uses the configured servers through `/mcp`, and cannot start a command.
 */
import { homedir } from 'node:os';
import type { Command } from 'commander';
import { operatorMcpToken, readOperatorToken } from '../auth.js';
import { defaultStateDir } from '../config/paths.js';
import { UsageError, type CommandIo } from './clientCommands.js';

export function registerTokenCommand(program: Command, io: CommandIo): void {
  program
    .command('token')
    .description('print the MCP token for clients that keep secrets themselves (VS Code asks for it once): it can use the pool through /mcp, never start a command')
    .action(async () => {
      const stateDir = defaultStateDir({ env: io.env, home: io.env.HOME || homedir() });
      const operator = await readOperatorToken(stateDir, io.env);
      if (operator === undefined) throw new UsageError(`no token: set MCPOOL_TOKEN, or start \`mcpool serve\` once (it writes ${stateDir}/token)`);
      io.stdout(operatorMcpToken(operator));
    });
}
