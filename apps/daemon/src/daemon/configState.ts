/**
 * The config the daemon runs with, and what a new one changes. A reload replaces the config
 * whole (nothing live is mutated: a changed fingerprint gets new entries for new acquires while
 * the old ones drain); of the daemon settings only the live ones (client tokens, allowed hosts
 * and origins) apply at once, the others are reported as needing a restart. Every secret a config
 * holds is registered with the redactor before anything can echo it.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { ServerConfig } from '@mcpool/core';
import { fingerprint } from '@mcpool/protocol';
import type { ReloadResult } from '@mcpool/client';
import { OPERATOR_ID, clientPrincipals, operatorMcpToken, type TokenRegistry } from '../auth.js';
import type { DaemonSettings, LoadedConfig } from '../config/daemonConfig.js';
import type { UnavailableServer } from '../config/serverAvailability.js';
import type { SecretRedactor } from '../secrets.js';

/** Daemon settings a reload applies at once; any other change needs a daemon restart. */
const LIVE_SETTINGS = ['clients', 'allowedHosts', 'allowedOrigins'] as const satisfies readonly (keyof DaemonSettings)[];

export interface ConfigStateOptions {
  config: LoadedConfig;
  redactor: SecretRedactor;
  /** Rebuilt from the settings' clients (with the operator token) at start and on each reload. */
  tokens: TokenRegistry;
  operatorToken: string;
  /** Variables client tokens are read from. */
  env: Record<string, string | undefined>;
  logger: Logger;
}

/** What adopting a new config changes. */
export type ConfigChange = ReloadResult;

export class ConfigState {
  readonly #redactor: SecretRedactor;
  readonly #tokens: TokenRegistry;
  readonly #operatorToken: string;
  readonly #env: Record<string, string | undefined>;
  readonly #logger: Logger;
  #config: LoadedConfig;
  /** The start-time settings, with live settings updated on reload. */
  #settings: DaemonSettings;
  /** The redactor owners of the configured servers' secrets (a removed server's are dropped at reload). */
  #configOwners = new Set<string>();

  constructor(options: ConfigStateOptions) {
    this.#config = options.config;
    this.#settings = options.config.settings;
    this.#redactor = options.redactor;
    this.#tokens = options.tokens;
    this.#operatorToken = options.operatorToken;
    this.#env = options.env;
    this.#logger = options.logger;
    this.#applyServers();
    // The operator token and the MCP token derived from it (`mcpool token`).
    this.#redactor.setCredentials('operator', [this.#operatorToken, operatorMcpToken(this.#operatorToken)]);
    this.#applyClients();
  }

  get config(): Readonly<LoadedConfig> {
    return this.#config;
  }

  get settings(): Readonly<DaemonSettings> {
    return this.#settings;
  }

  /** The configured server `name`; own properties only (`__proto__` or `constructor` is an unknown name, not Object's). */
  server(name: string): ServerConfig | undefined {
    return Object.hasOwn(this.#config.servers, name) ? this.#config.servers[name] : undefined;
  }

  /** Why the configured server `name` cannot run, when it cannot. */
  unavailable(name: string): UnavailableServer | undefined {
    return Object.hasOwn(this.#config.unavailable, name) ? this.#config.unavailable[name] : undefined;
  }

  /** An unavailable server can run now (its command was found): from here on it is configured as `config`. */
  makeAvailable(name: string, config: ServerConfig): void {
    const { [name]: _found, ...unavailable } = this.#config.unavailable;
    this.#config = { ...this.#config, servers: { ...this.#config.servers, [name]: config }, unavailable };
    this.#applyServers();
  }

  /** What `next` would change, without applying it (`rejected`: the servers of `next` that cannot run and were not merged in). */
  changeTo(next: LoadedConfig): ConfigChange {
    const needsRestart = (Object.keys(next.settings) as (keyof DaemonSettings)[]).filter(
      (key) => !(LIVE_SETTINGS as readonly string[]).includes(key) && !isDeepStrictEqual(this.#settings[key], next.settings[key]),
    );
    return { source: next.source.kind === 'file' ? next.source.path : null, ...diffServers(this.#config.servers, next.servers), needsRestart, rejected: [] };
  }

  /** Runs with `next` from now on: its servers for new acquires, its live settings, its client tokens. */
  adopt(next: LoadedConfig): void {
    this.#config = next;
    this.#settings = { ...this.#settings, ...Object.fromEntries(LIVE_SETTINGS.map((key) => [key, next.settings[key]])) };
    this.#applyServers();
    this.#applyClients();
  }

  /**
   * The configured servers' secrets are kept out of the daemon's log lines (each server's own
   * answers are scrubbed of them by its connection). A secret-named value too short to scrub is
   * named in a warning, never shown.
   */
  #applyServers(): void {
    const configs = configsOf(this.#config);
    for (const [name, config] of configs) {
      const unprotected = this.#redactor.setServers(`config:${name}`, [config]);
      if (unprotected.length > 0) {
        this.#logger.warn({ server: name, values: unprotected }, `server ${name}: ${unprotected.join(', ')} named like a secret but too short to be scrubbed from answers and logs; use a longer value`);
      }
    }
    const owners = new Set(configs.map(([name]) => `config:${name}`));
    for (const owner of this.#configOwners) if (!owners.has(owner)) this.#redactor.drop(owner);
    this.#configOwners = owners;
  }

  #applyClients(): void {
    const { entries, problems } = clientPrincipals(this.#settings.clients, this.#env);
    for (const problem of problems) {
      this.#logger.warn({ client: problem.id, variable: problem.tokenEnv, problem: problem.problem }, `client ${problem.id} is disabled: its token variable ${problem.tokenEnv} is ${problem.problem === 'unset' ? 'unset' : 'too short'}`);
    }
    this.#redactor.setCredentials('clients', entries.map((entry) => entry.token));
    // The operator's MCP token (`mcpool token`): its principal, the read right only.
    const mcpToken = operatorMcpToken(this.#operatorToken);
    this.#tokens.replace([{ id: OPERATOR_ID, token: this.#operatorToken, rights: ['admin'] }, { id: OPERATOR_ID, token: mcpToken, rights: ['read'] }, ...entries]);
  }
}

/** Every parsed server config of a loaded config by name: those that run, and unavailable ones whose entry parsed (their secrets are known too). */
function configsOf(config: Readonly<LoadedConfig>): [string, ServerConfig][] {
  const parsed = Object.entries(config.unavailable).flatMap(([name, problem]) => (problem.config === undefined ? [] : [[name, problem.config] as [string, ServerConfig]]));
  return [...Object.entries(config.servers), ...parsed];
}

/** What changed between two server maps, by fingerprint (which never leaves the daemon). */
export function diffServers(
  previous: Record<string, ServerConfig>,
  next: Record<string, ServerConfig>,
): Pick<ReloadResult, 'added' | 'removed' | 'changed' | 'unchanged'> {
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  const unchanged: string[] = [];
  for (const name of Object.keys(next).sort()) {
    const before = previous[name];
    if (before === undefined) added.push(name);
    // A new sharing policy puts new acquires on other entries, as a new fingerprint does.
    else if (fingerprint(before) !== fingerprint(next[name]!) || before.sharing !== next[name]!.sharing) changed.push(name);
    else unchanged.push(name);
  }
  for (const name of Object.keys(previous).sort()) if (!Object.hasOwn(next, name)) removed.push(name);
  return { added, removed, changed, unchanged };
}
