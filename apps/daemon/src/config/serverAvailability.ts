/**
 * Which configured servers can run. A server that cannot is one server's problem, never the
 * daemon's: it is `unavailable`, with one reason as a typed code, and the others run.
 * - `MCPOOL_CONFIG_VARIABLE_UNSET`: its entry names environment variables that are not set;
 * - `MCPOOL_COMMAND_NOT_FOUND`: a stdio server whose command does not exist where it would be
 *   spawned (see `commandPath.ts`);
 * - `MCPOOL_CONFIG_INVALID`: anything else wrong with its entry (a bad field, a bad URL).
 * Messages name paths, variables and commands, never a value.
 */
import { ConfigError, ErrorCode, type ParsedServerEntries, type ServerConfig } from '@mcpool/protocol';
import { canonicalCommand, resolveCommand, type CommandLookup } from './commandPath.js';

/** Why a configured server cannot run. */
export interface UnavailableServer {
  code: typeof ErrorCode.CONFIG_INVALID | typeof ErrorCode.CONFIG_VARIABLE_UNSET | typeof ErrorCode.COMMAND_NOT_FOUND;
  message: string;
  /** `MCPOOL_CONFIG_VARIABLE_UNSET`: the variables, sorted. */
  variables?: string[];
  /** `MCPOOL_COMMAND_NOT_FOUND`: the entry, parsed, so the command can be looked for again (a restart). */
  config?: ServerConfig;
}

/** The reason of an entry the config parser rejected. */
export function unavailableFrom(error: ConfigError): UnavailableServer {
  const issues = error.data.issues;
  // Only unset variables: the entry is right, the environment lacks something. Any other
  // problem makes it a bad entry, whatever else it needs.
  if (issues.length > 0 && issues.every((issue) => issue.unsetVariable !== undefined)) {
    const variables = [...new Set(issues.map((issue) => issue.unsetVariable!))].sort();
    const where = [...new Set(issues.map((issue) => issue.path))].join(', ');
    const message =
      variables.length === 1
        ? `environment variable ${variables[0]} is not set (${where} needs it)`
        : `environment variables ${variables.join(', ')} are not set (${where} need them)`;
    return { code: ErrorCode.CONFIG_VARIABLE_UNSET, message, variables };
  }
  return { code: ErrorCode.CONFIG_INVALID, message: issues.map((issue) => `${issue.path || '(root)'}: expected ${issue.expected}, ${issue.received}`).join('; ') };
}

/** A stdio server whose command cannot be found, or undefined when it can (or is not stdio). */
export function missingCommand(config: ServerConfig, lookup: CommandLookup = {}): UnavailableServer | undefined {
  if (config.transport !== 'stdio') return undefined;
  const resolution = resolveCommand(config, lookup);
  if ('found' in resolution) return undefined;
  return { code: ErrorCode.COMMAND_NOT_FOUND, message: `command not found: ${resolution.missing}`, config };
}

/**
 * Splits parsed entries into the servers that can run (commands in their canonical spelling) and
 * the unavailable ones with their reason, in the document's order.
 */
export function vetServers(parsed: Pick<ParsedServerEntries, 'servers' | 'rejected'>, lookup: CommandLookup = {}): { servers: Record<string, ServerConfig>; unavailable: Record<string, UnavailableServer> } {
  const servers = new Map<string, ServerConfig>();
  const unavailable = new Map<string, UnavailableServer>();
  for (const [name, error] of Object.entries(parsed.rejected)) unavailable.set(name, unavailableFrom(error));
  for (const [name, config] of Object.entries(parsed.servers)) {
    const missing = missingCommand(config, lookup);
    if (missing === undefined) servers.set(name, canonicalCommand(config, lookup));
    else unavailable.set(name, missing);
  }
  return { servers: Object.fromEntries(servers), unavailable: Object.fromEntries(unavailable) };
}
