/**
 * Which config the daemon uses, first match wins: `--config FILE`, `MCPOOL_CONFIG`, `./.mcp.json`,
 * the user config file; with none of them, the built-in default (the bundled demo server).
 * A path given explicitly (flag or variable) must exist: a typo is an error, not a silent default.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '@mcpool/protocol';
import type { ConfigSource } from './daemonConfig.js';
import { userConfigFile } from './paths.js';

export interface DiscoverOptions {
  /** `--config` */
  flag?: string;
  env: Record<string, string | undefined>;
  /** @default process.cwd() */
  cwd?: string;
  /** @default os.homedir() */
  home?: string;
  platform?: NodeJS.Platform;
}

/** @throws ConfigError when an explicitly named file does not exist. */
export function discoverConfig(options: DiscoverOptions): ConfigSource {
  const cwd = options.cwd ?? process.cwd();
  const explicit: [string | undefined, 'flag' | 'env', string][] = [
    [options.flag, 'flag', '--config'],
    [options.env.MCPOOL_CONFIG || undefined, 'env', 'MCPOOL_CONFIG'],
  ];
  for (const [value, origin, name] of explicit) {
    if (value === undefined) continue;
    const path = resolve(cwd, value);
    if (!existsSync(path)) throw new ConfigError([{ path: '', expected: `the file named by ${name} to exist`, received: 'got no such file' }], path);
    return { kind: 'file', path, origin };
  }
  const local = resolve(cwd, '.mcp.json');
  if (existsSync(local)) return { kind: 'file', path: local, origin: 'cwd' };
  const user = userConfigFile({ env: options.env, ...(options.home ? { home: options.home } : {}), ...(options.platform ? { platform: options.platform } : {}) });
  if (existsSync(user)) return { kind: 'file', path: user, origin: 'user' };
  return { kind: 'builtin', searched: [local, user] };
}
