/**
 * Which config the daemon uses, first match wins: `--config FILE`, `MCPOOL_CONFIG`, `./.mcp.json`,
 * the user config file; with none of them, the built-in default (the bundled demo server).
 * A path given explicitly (flag or variable) must exist: a typo is an error, not a silent default.
 * The order itself is {@link findConfigFile}'s, which clients use to find the daemon's address.
 */
import { ConfigError } from '@mcpool/protocol';
import type { ConfigSource } from './daemonConfig.js';
import { findConfigFile } from '../local/address.js';

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
  const choice = findConfigFile(options);
  if (choice.kind === 'missing') throw new ConfigError([{ path: '', expected: `the file named by ${choice.named} to exist`, received: 'got no such file' }], choice.path);
  return choice;
}
