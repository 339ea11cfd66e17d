/**
 * Test harness: a real Daemon and its fastify app over a temporary config file, with logs
 * captured in memory. Routes are exercised with `app.inject()` (no socket).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Daemon, SecretRedactor, buildApp, createLogger, loadConfig, type ConfigSource, type DaemonClock, type DaemonOptions, type LoadedConfig } from 'mcpool';
import { killMarked } from '../../../test/helpers/processes.js';

export interface Harness {
  app: FastifyInstance;
  daemon: Daemon;
  token: string;
  dir: string;
  configPath: string;
  env: Record<string, string>;
  logs: string[];
  /** Rewrites the config file (for reloads). */
  writeConfig(doc: unknown): void;
  /** Listens on 127.0.0.1, a free port; answers the base URL. */
  listen(): Promise<string>;
  /** `app.inject` with the operator token (unless `token: null`) and a loopback Host. */
  request(options: InjectOptions & { token?: string | null }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** Collects log lines (JSON) in memory. */
export function memoryDestination(lines: string[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString('utf8').split('\n').filter((line) => line.length > 0));
      callback();
    },
  });
}

export interface HarnessOptions {
  env?: Record<string, string>;
  /** Marks of fixture processes to kill (and count) when closing. */
  marks?: string[];
  /** Start warming the servers (and wait for it). @default true */
  start?: boolean;
  /** The daemon's log level; the actor threads log to stderr at the same level. @default 'warn' */
  logLevel?: 'debug' | 'info' | 'warn';
  /** Extra pool options (over `shutdownStepMs: 500`). */
  poolOptions?: DaemonOptions['poolOptions'];
  /** Run the OAuth client of remote servers, its grants under the state directory. @default false */
  oauth?: boolean;
  /** The daemon's clock (tests of idle rules move it). @default the system clock */
  clock?: DaemonClock;
  /** Where OAuth grants are kept (with `oauth`). @default the state directory */
  store?: DaemonOptions['store'];
}

export async function harness(doc: unknown, options: HarnessOptions = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-daemon-'));
  const configPath = join(dir, 'mcpool.json');
  const writeConfig = (next: unknown): void => writeFileSync(configPath, JSON.stringify(next, null, 2));
  writeConfig(doc);
  const env = { MCPOOL_STATE_DIR: join(dir, 'state'), ...options.env };
  const source: ConfigSource = { kind: 'file', path: configPath, origin: 'flag' };
  const config: LoadedConfig = await loadConfig(source, env);
  const logs: string[] = [];
  const redactor = new SecretRedactor();
  const logger = createLogger({ level: options.logLevel ?? 'warn', destination: memoryDestination(logs), redactor });
  const token = `operator-${randomUUID()}`;
  const daemon = new Daemon({ config, logger, redactor, operatorToken: token, env, reloadConfig: () => loadConfig(source, env), groupLedgerDir: join(dir, 'state', 'groups'), catalogDir: join(dir, 'state', 'catalog'), poolOptions: { shutdownStepMs: 500, ...options.poolOptions }, ...(options.oauth === true ? { oauthStateDir: join(dir, 'state') } : {}), ...(options.store === undefined ? {} : { store: options.store }), ...(options.clock === undefined ? {} : { clock: options.clock }) });
  const app = await buildApp({ daemon, logger, redactor });
  if (options.start !== false) await daemon.start();
  return {
    app,
    daemon,
    token,
    dir,
    configPath,
    env,
    logs,
    writeConfig,
    listen: async () => {
      await app.listen({ host: '127.0.0.1', port: 0 });
      return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    },
    request: ({ token: given, headers, ...rest }) =>
      app.inject({
        ...rest,
        headers: { host: '127.0.0.1:7070', ...(given === null ? {} : { authorization: `Bearer ${given ?? token}` }), ...headers },
      }),
    async close() {
      await daemon.shutdown('test');
      await app.close();
      rmSync(dir, { recursive: true, force: true });
      for (const mark of options.marks ?? []) killMarked(mark);
    },
  };
}
