// What the user of mcpool does when a remote server needs authorization, for the conformance
// driver (client.mjs): runs `mcpool auth <server> --no-open`, reads the authorization URL it
// prints, and "opens it in a browser" — fetches it and follows the redirects, the way a browser
// does after the user approves. The suite's test authorization server approves at once (its
// authorization endpoint redirects straight to the redirect URI with a code), so the last hop is
// the daemon's own loopback callback. Nothing here speaks OAuth: the daemon does all of it.
import { spawn } from 'node:child_process';
import { BIN } from './daemon.mjs';

/** A browser gives up on a redirect chain after about 20 hops; the suite needs one. */
const MAX_REDIRECTS = 10;
const HOP_TIMEOUT_MS = 10_000;

/**
 * Loads `url` as a browser would: GET, following `Location` on 3xx (relative to the current URL),
 * at most MAX_REDIRECTS hops. Resolves with the final `{ url, status, body }`.
 */
export async function browse(url, log = () => {}) {
  let current = new URL(url);
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const response = await fetch(current, { redirect: 'manual', signal: AbortSignal.timeout(HOP_TIMEOUT_MS) });
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel();
      log(`browser: ${response.status} ${current.origin}${current.pathname} → ${new URL(location, current).origin}${new URL(location, current).pathname}`);
      current = new URL(location, current);
      continue;
    }
    const body = await response.text();
    log(`browser: ${response.status} ${current.origin}${current.pathname}: ${body.trim().slice(0, 200)}`);
    return { url: current.href, status: response.status, body };
  }
  throw new Error(`more than ${MAX_REDIRECTS} redirects from ${url}`);
}

/**
 * Runs `mcpool auth <server> --no-open` against the daemon at `base` (its REST token from the
 * state directory `stateDir`, as for any CLI command on that machine), opens the URL it prints
 * with `browse`, and resolves with `{ ok, output }`: `ok` when the command exited 0 (the daemon
 * holds a token), `output` its stdout and stderr.
 */
export function authorizeAsUser({ base, stateDir, server, log = () => {}, timeoutS = 20 }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'auth', server, '--no-open', '--url', base, '--timeout', String(timeoutS)], {
      env: { ...process.env, MCPOOL_STATE_DIR: stateDir, MCPOOL_TOKEN: '', MCPOOL_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let opened = false;
    const onOutput = (chunk) => {
      output += chunk.toString('utf8');
      // `mcpool auth` prints the URL alone on an indented line under "authorize in your browser:".
      const match = opened ? null : /^\s+(https?:\/\/\S+)\s*$/m.exec(output);
      if (match === null) return;
      opened = true;
      log(`user: opening ${new URL(match[1]).origin}${new URL(match[1]).pathname}`);
      browse(match[1], log).catch((error) => log(`browser: ${error.message}`));
    };
    child.stdout.on('data', onOutput);
    child.stderr.on('data', onOutput);
    child.once('exit', (code) => {
      log(`user: mcpool auth ${server} exited ${code}: ${output.trim().split('\n').at(-1)}`);
      resolve({ ok: code === 0, output });
    });
  });
}
