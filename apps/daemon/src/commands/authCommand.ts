/**
 * `mcpool auth <server>`: asks the daemon to start an OAuth authorization of a remote server,
 * shows (and, unless `--no-open`, opens) where to authorize, and waits for the daemon's
 * `auth_completed` event. The browser is started with `execFile` — the URL is one argument, no
 * shell ever parses it — and only after the daemon validated it (https, or http on loopback).
 */
import { execFile } from 'node:child_process';
import type { AuthStartResponse, McpoolClient } from '@mcpool/client';
import type { CommandIo } from './clientCommands.js';

export interface AuthCommandOptions {
  device?: boolean;
  /** `--no-open` sets it false. @default true */
  open?: boolean;
  /** `--no-wait` sets it false. @default true */
  wait?: boolean;
  /** Seconds to wait for the authorization at most. @default until the flow expires */
  timeout?: number;
}

/** The program and arguments that open `url` in the user's browser, per platform (never a shell). */
export function browserCommand(url: string, platform: NodeJS.Platform = process.platform): [string, string[]] {
  if (platform === 'darwin') return ['open', [url]];
  if (platform === 'win32') return ['rundll32', ['url.dll,FileProtocolHandler', url]];
  return ['xdg-open', [url]];
}

export function formatAuthStart(server: string, start: AuthStartResponse): string {
  if (start.flow === 'device_code') {
    const direct = start.verificationUriComplete === undefined ? '' : `\n  or open ${start.verificationUriComplete}`;
    return `${server}: open ${start.verificationUri} and enter the code ${start.userCode}${direct}\n  (valid until ${start.expiresAt})`;
  }
  return `${server}: authorize in your browser:\n  ${start.authorizationUrl}\n  (valid until ${start.expiresAt})`;
}

/** How long `mcpool auth` waits for the user by default: as long as a flow of the daemon lives. */
const DEFAULT_WAIT_S = 600;

/**
 * How the flow of `server` ended: `auth_completed` (true), `auth_failed` (its message), or
 * `signal` aborted first (false).
 */
export async function waitForAuthorization(client: McpoolClient, server: string, signal: AbortSignal): Promise<true | false | { failed: string }> {
  const stream = client.events({ signal });
  try {
    for await (const event of stream) {
      if (event.data.type === 'auth_completed' && event.data.serverName === server) return true;
      if (event.data.type === 'auth_failed' && event.data.serverName === server) return { failed: event.data.message };
    }
    return false;
  } catch {
    return false;
  } finally {
    stream.close();
  }
}

export async function runAuthCommand(client: McpoolClient, server: string, options: AuthCommandOptions, io: CommandIo): Promise<boolean> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), (options.timeout ?? DEFAULT_WAIT_S) * 1000);
  try {
    // Subscribed before the flow starts, so a fast authorization is not missed.
    const waiting = options.wait === false ? undefined : waitForAuthorization(client, server, controller.signal);
    let start: AuthStartResponse;
    try {
      start = await client.authorizeServer(server, options.device === true ? { device: true } : {});
    } catch (error) {
      controller.abort();
      await waiting;
      throw error;
    }
    io.stdout(formatAuthStart(server, start));
    if (options.open !== false) openBrowser(start.flow === 'device_code' ? (start.verificationUriComplete ?? start.verificationUri) : start.authorizationUrl);
    if (waiting === undefined) return true;
    io.stdout('waiting for the authorization…');
    const done = await waiting;
    if (done === true) io.stdout(`${server}: authorized`);
    else if (done === false) io.stderr(`${server}: not authorized within ${options.timeout ?? DEFAULT_WAIT_S} s`);
    else io.stderr(`${server}: the authorization failed: ${done.failed}`);
    return done === true;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

function openBrowser(url: string): void {
  const [command, args] = browserCommand(url);
  try {
    execFile(command, args, { windowsHide: true }, () => undefined).unref();
  } catch {
    // No browser here: the URL is printed.
  }
}
