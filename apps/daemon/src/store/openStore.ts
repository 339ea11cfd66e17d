/**
 * The shared store the settings name: the state directory (the default), or Redis at the URL in
 * the variable `store.urlEnv`. Redis's client is loaded only then.
 */
import { ConfigError } from '@mcpool/protocol';
import type { Logger } from 'pino';
import type { StoreSettings } from '../config/teamSettings.js';
import { FileStore } from './fileStore.js';
import type { SharedStore } from './sharedStore.js';

/** @throws ConfigError when Redis is chosen and its variable is unset or not a redis:// URL. */
export async function openStore(settings: StoreSettings, stateDir: string, env: Record<string, string | undefined>, logger: Pick<Logger, 'info' | 'warn'>): Promise<SharedStore> {
  if (settings.kind === 'file') return new FileStore(stateDir);
  const url = env[settings.urlEnv];
  if (url === undefined || !/^rediss?:\/\/\S+$/.test(url)) {
    throw new ConfigError([{ path: `env.${settings.urlEnv}`, expected: 'a redis:// or rediss:// URL (daemon.store.kind is redis)', received: url === undefined || url === '' ? 'got nothing' : 'got something else' }]);
  }
  const { RedisStore } = await import('./redisStore.js');
  const store = new RedisStore({ url, keyPrefix: settings.keyPrefix, logger });
  await store.open();
  return store;
}
