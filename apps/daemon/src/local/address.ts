/**
 * Where a program on this machine finds the daemon: `--url`, `--port` (on 127.0.0.1),
 * `MCPOOL_URL`, else the host and port of the config `serve` would use (its `daemon` section, then
 * `MCPOOL_HOST` / `MCPOOL_PORT`). Also which config file that is: `--config`, `MCPOOL_CONFIG`,
 * `./.mcp.json`, the user config file.
 *
 * Light on purpose (node:fs, node:path and a JSONC reader, no schema): an IDE extension bundles
 * it and loads it in every window. `serve` validates the same fields strictly; a value it would
 * refuse tells a client nothing better than the default, so here it falls back to the default.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { userConfigFile } from './paths.js';

/** Where `serve` listens unless told otherwise. */
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 7070;

export interface FindConfigOptions {
  /** `--config` */
  flag?: string | undefined;
  env: Record<string, string | undefined>;
  /** @default process.cwd() */
  cwd?: string;
  /** @default os.homedir() */
  home?: string;
  platform?: NodeJS.Platform;
}

/**
 * The config file, first match wins. `missing`: a file named explicitly (flag or variable) does
 * not exist — a typo, which `serve` refuses rather than falling back.
 */
export type ConfigFileChoice =
  | { kind: 'file'; path: string; origin: 'flag' | 'env' | 'cwd' | 'user' }
  | { kind: 'builtin'; searched: string[] }
  | { kind: 'missing'; path: string; named: '--config' | 'MCPOOL_CONFIG' };

export function findConfigFile(options: FindConfigOptions): ConfigFileChoice {
  const cwd = options.cwd ?? process.cwd();
  const explicit: [string | undefined, 'flag' | 'env', '--config' | 'MCPOOL_CONFIG'][] = [
    [options.flag, 'flag', '--config'],
    [options.env.MCPOOL_CONFIG || undefined, 'env', 'MCPOOL_CONFIG'],
  ];
  for (const [value, origin, named] of explicit) {
    if (value === undefined) continue;
    const path = resolve(cwd, value);
    return existsSync(path) ? { kind: 'file', path, origin } : { kind: 'missing', path, named };
  }
  const local = resolve(cwd, '.mcp.json');
  if (existsSync(local)) return { kind: 'file', path: local, origin: 'cwd' };
  const user = userConfigFile({ env: options.env, ...(options.home ? { home: options.home } : {}), ...(options.platform ? { platform: options.platform } : {}) });
  if (existsSync(user)) return { kind: 'file', path: user, origin: 'user' };
  return { kind: 'builtin', searched: [local, user] };
}

const isPort = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 65_535;
const isHost = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

/** The host and port of a parsed config document's `daemon` section, with `MCPOOL_HOST`/`MCPOOL_PORT` over it. */
export function configuredAddress(doc: unknown, env: Record<string, string | undefined>): { host: string; port: number } {
  const section = typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? (doc as { daemon?: unknown }).daemon : undefined;
  const daemon = typeof section === 'object' && section !== null ? (section as { host?: unknown; port?: unknown }) : {};
  const envPort = env.MCPOOL_PORT ? Number(env.MCPOOL_PORT) : undefined;
  const host = isHost(env.MCPOOL_HOST) ? env.MCPOOL_HOST : isHost(daemon.host) ? daemon.host : DEFAULT_HOST;
  const port = isPort(envPort) ? envPort : isPort(daemon.port) ? daemon.port : DEFAULT_PORT;
  return { host, port };
}

/** `http://host:port` a client dials: a wildcard bind is reached on loopback, an IPv6 literal in brackets. */
export function dialUrl(host: string, port: number): string {
  const dial = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${dial}:${port}`;
}

export interface LocateOptions {
  /** `--url` */
  url?: string | undefined;
  /** `--port`: the daemon on 127.0.0.1 at this port. */
  port?: number | undefined;
  /** `--config`: where the address comes from. */
  config?: string | undefined;
}

/**
 * The URL the daemon listens on, as far as this machine's settings say (nothing is asked over the
 * network). `--url` wins over `--port`; a caller that must refuse both checks that itself.
 */
export async function localDaemonUrl(options: LocateOptions, io: { env: Record<string, string | undefined>; cwd: string }): Promise<string> {
  if (options.url) return options.url;
  if (options.port !== undefined) return dialUrl(DEFAULT_HOST, options.port);
  if (io.env.MCPOOL_URL) return io.env.MCPOOL_URL;
  let doc: unknown;
  const choice = findConfigFile({ flag: options.config, env: io.env, cwd: io.cwd });
  if (choice.kind === 'file') {
    try {
      doc = parseJsonc(await readFile(choice.path, 'utf8'), [], { allowTrailingComma: true });
    } catch {
      // An unreadable config tells nothing better than the defaults.
    }
  }
  const { host, port } = configuredAddress(doc, io.env);
  return dialUrl(host, port);
}
