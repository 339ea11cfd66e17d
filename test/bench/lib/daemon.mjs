/**
 * A real `mcpool serve` process for a bench script: its own temp dir, config and state dir, a
 * free port on 127.0.0.1, an operator token, no `MCPOOL_*` variable of the caller's environment.
 * `runDaemonBench` waits until it is ready, runs the measurement, prints its report as JSON (unless
 * `print: false`) and returns it, and stops the daemon (SIGTERM, waited for) and removes the dir
 * whatever happened. `stateDir` (kept; the caller removes it) lets a second daemon start on what
 * the first one left there, as a restart does.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from './gateways.mjs';

const BIN = fileURLToPath(new URL('../../../apps/daemon/bin/mcpool.js', import.meta.url));

/**
 * @param {{ label: string, config: (port: number) => object, env?: Record<string, string>, stateDir?: string, print?: boolean, nodeArgs?: string[] }} setup
 *   `nodeArgs`: Node's own options for the daemon (`--cpu-prof`, `--cpu-prof-dir=…`: V8's profiler, written on exit)
 * @param {(daemon: { base: string, pid: number, operator: string, auth: Record<string, string> }) => Promise<object>} measure
 */
export async function runDaemonBench(setup, measure) {
  const dir = mkdtempSync(join(tmpdir(), `mcpool-${setup.label}-`));
  const port = await freePort();
  const operator = `op-${randomUUID()}`;
  writeFileSync(join(dir, 'config.json'), JSON.stringify(setup.config(port)));
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('MCPOOL_'))), ...setup.env, MCPOOL_TOKEN: operator, MCPOOL_STATE_DIR: setup.stateDir ?? join(dir, 'state') };
  const child = spawn(process.execPath, [...(setup.nodeArgs ?? []), BIN, 'serve', '--config', join(dir, 'config.json')], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const base = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${operator}` };
  try {
    for (let i = 0; i < 200; i++) {
      const ready = await fetch(`${base}/readyz`, { headers: auth }).then((r) => r.json()).catch(() => undefined);
      if (ready?.ready) break;
      await delay(100);
    }
    const report = await measure({ base, pid: child.pid, operator, auth });
    if (setup.print !== false) console.log(JSON.stringify(report, null, 2));
    return report;
  } catch (error) {
    console.error('bench failed:', error, stderr.slice(-2000));
    process.exitCode = 1;
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}
