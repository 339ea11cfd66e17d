#!/usr/bin/env node
// `npm run test:stress [-- --cpu=N]`: the whole `npm test` with `stress-ng --cpu N` (default 2)
// running beside it, to prove the suite holds on a busy machine. stress-ng is started by this
// script, in its own process group, and that group alone is stopped when the run ends — passed,
// failed or interrupted. Prints how long the run took.
import { spawn, spawnSync } from 'node:child_process';
import process from 'node:process';

const cpu = Number(process.argv.find((arg) => arg.startsWith('--cpu='))?.slice('--cpu='.length) ?? 2);
if (!Number.isInteger(cpu) || cpu < 1) {
  console.error(`test:stress: --cpu must be a positive integer, got ${cpu}`);
  process.exit(2);
}

const probe = spawnSync('stress-ng', ['--version'], { stdio: 'ignore' });
if (probe.error !== undefined || probe.status !== 0) {
  console.error('test:stress: stress-ng is not installed. On Debian/Ubuntu: `sudo apt-get install -y stress-ng`; on macOS: `brew install stress-ng`.');
  process.exit(2);
}

// Its own process group (detached): stopping -pid reaches its workers too, and nothing else.
// `--timeout` is a backstop should this script itself be killed with SIGKILL.
const stress = spawn('stress-ng', ['--cpu', String(cpu), '--timeout', '3h', '--quiet'], { detached: true, stdio: 'ignore' });
const stressPid = stress.pid;
if (stressPid === undefined) {
  console.error('test:stress: could not start stress-ng');
  process.exit(2);
}
let stressExited = false;
stress.once('exit', () => {
  stressExited = true;
});

function stopStress() {
  if (stressExited) return;
  try {
    process.kill(-stressPid, 'SIGTERM');
  } catch {
    // Already gone.
  }
}
process.once('exit', stopStress);

console.log(`test:stress: stress-ng --cpu ${cpu} running (pid ${stressPid}); running npm test beside it`);
const started = Date.now();
const npm = process.env.npm_execpath ? process.execPath : 'npm';
const npmArgs = process.env.npm_execpath ? [process.env.npm_execpath, 'test'] : ['test'];
const suite = spawn(npm, npmArgs, { stdio: 'inherit' });

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    suite.kill(signal);
    stopStress();
  });
}

suite.once('exit', (code, signal) => {
  stopStress();
  const seconds = Math.round((Date.now() - started) / 1000);
  const outcome = code === 0 ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`;
  console.log(`test:stress: npm test ${outcome} in ${seconds} s with stress-ng --cpu ${cpu} beside it`);
  process.exitCode = code ?? 1;
});
