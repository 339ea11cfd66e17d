// One "window" of the start-once test: a process that wants the daemon, as an editor window or a
// bridge does. Prints {ok, spawned, failure} as JSON and exits.
// argv: <baseUrl> <stateDir> <config> <bin>
import { DaemonStarter } from 'mcpool/local';

const [baseUrl, stateDir, config, bin] = process.argv.slice(2);
const starter = new DaemonStarter({
  baseUrl,
  command: [process.execPath, bin],
  serveArgs: ['--config', config],
  stateDir,
  env: { PATH: process.env.PATH, HOME: process.env.HOME, MCPOOL_STATE_DIR: stateDir },
  cwd: stateDir,
  logger: { info: () => undefined, error: () => undefined },
  healthTimeoutMs: 90_000,
});
const ok = await starter.ensure();
process.stdout.write(JSON.stringify({ ok, spawned: starter.pid ?? null, failure: starter.failure ?? null }));
