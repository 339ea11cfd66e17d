/**
 * Our stdio client transport: the child runs in its own process group, so the whole tree an
 * `npx`/`uvx`/shell wrapper starts can be signalled at once. The SDK's `StdioClientTransport`
 * signals only the direct child and leaves wrapper grandchildren orphaned
 * (modelcontextprotocol/typescript-sdk#2023).
 *
 * Its thread reads and writes the child's stdio, whoever spawned the child (an actor thread's
 * supervisor does, so the process can always reap it). stdout is framed by the shared line
 * reader: linear in what it reads, and a message over `maxMessageBytes` is dropped as it streams
 * and reported, so the one call it answers fails and the connection goes on.
 *
 * This file knows bytes and process lifecycle only; MCP semantics live in the machine.
 */
import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { DEFAULT_MAX_LINE_BYTES, LineReader } from '@mcpool/protocol/lineReader';
import type { JsonRpcMessage, OversizedMessage, UpstreamTransport } from './upstreamTransport.js';
import { describeOversized } from './oversizedMessage.js';
import { spawnInThisThread, type ChildSpawner, type StdioChild } from './stdioChild.js';
import type { ReadGate } from '../sourceThrottle.js';

export interface ProcessGroupStdioOptions {
  command: string;
  args?: string[] | undefined;
  cwd?: string | undefined;
  /** Merged over a minimal default environment (HOME, LOGNAME, PATH, SHELL, TERM, USER; Windows: its own set). */
  env?: Record<string, string> | undefined;
  /** Budget of each shutdown step (stdin end, SIGTERM), in ms. @default 2000 */
  shutdownStepMs?: number | undefined;
  /** Called right after the child started (before any MCP message), with its pid = pgid. */
  onSpawn?: ((pid: number) => void) | undefined;
  /** Called with every stderr line (the pipe is always drained, so a chatty child never blocks). */
  onStderrLine?: ((line: string) => void) | undefined;
  /**
   * Asked of each message read from the child's stdout: what it refuses (a notification past
   * the bound) is dropped there; reading never stops, so answers are never held behind a flood.
   */
  readGate?: ReadGate | undefined;
  /**
   * The longest line (one message) read from the child's stdout, in bytes. A longer one is
   * dropped as it streams and reported through `onoversized`; reading goes on at the next line.
   * @default 64 MiB
   */
  maxMessageBytes?: number | undefined;
  /**
   * Who starts the process. An actor thread passes its supervisor's (which reaps the child
   * whatever becomes of the thread). @default spawned from this thread
   */
  spawner?: ChildSpawner | undefined;
}

/** A message could not reach the server because its process is gone or going. */
export class TransportLostError extends Error {
  override name = 'TransportLostError';
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/** What a send returns while the pipe has room: one settled promise, shared. */
const RESOLVED = Promise.resolve();

/** How long a root whose stdout ended may take to exit on its own before the group is ended. */
const LOST_GRACE_MS = 100;

/** How much of the child's stderr is kept for error messages. */
const STDERR_TAIL_BYTES = 4096;

/**
 * The variables a child inherits when its config does not set them: the ones sudo keeps by
 * default (and the Windows equivalents). The rest of our own environment (tokens, keys) stays
 * ours; a config passes what a server needs in `env`.
 */
const INHERITED_ENV =
  process.platform === 'win32'
    ? ['APPDATA', 'HOMEDRIVE', 'HOMEPATH', 'LOCALAPPDATA', 'PATH', 'PROCESSOR_ARCHITECTURE', 'SYSTEMDRIVE', 'SYSTEMROOT', 'TEMP', 'USERNAME', 'USERPROFILE', 'PROGRAMFILES']
    : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'];

export function defaultEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of INHERITED_ENV) {
    const value = process.env[key];
    // A value starting with `()` is an exported shell function: never passed on.
    if (value !== undefined && !value.startsWith('()')) env[key] = value;
  }
  return env;
}

/** Parses one line as a JSON-RPC message; throws on anything else (a banner printed to stdout). */
export function parseJsonRpcLine(line: string): JsonRpcMessage {
  const message = JSON.parse(line) as unknown;
  if (typeof message !== 'object' || message === null || Array.isArray(message) || (message as { jsonrpc?: unknown }).jsonrpc !== '2.0') {
    throw new TypeError(`not a JSON-RPC message: ${line.slice(0, 200)}`);
  }
  return message as JsonRpcMessage;
}

export class ProcessGroupStdioTransport implements UpstreamTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JsonRpcMessage) => void;
  onlost?: () => void;
  onoversized?: (message: OversizedMessage) => void;

  readonly #options: ProcessGroupStdioOptions;
  readonly #reader: LineReader;
  readonly #maxMessageBytes: number;
  /** The spawn under way or done; a close waits for it, so a child started meanwhile is ended too. */
  #starting: Promise<StdioChild> | undefined;
  #child: StdioChild | undefined;
  #exited = false;
  #exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #stderrTail = '';
  #closing: Promise<void> | undefined;
  #closeNotified = false;
  #lostNotified = false;
  /** Set while stdin's buffer is full: resolves when it drained. */
  #drained: Promise<void> | undefined;
  #delivering = false;

  constructor(options: ProcessGroupStdioOptions) {
    this.#options = options;
    this.#maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#reader = new LineReader({ maxLineBytes: this.#maxMessageBytes });
  }

  /** The child's pid; also its process group id. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get exited(): boolean {
    return this.#exited;
  }

  /** The last few KB the child wrote to stderr (for error messages). */
  get stderrTail(): string {
    return this.#stderrTail;
  }

  get exitInfo(): { code: number | null; signal: NodeJS.Signals | null } | undefined {
    return this.#exitInfo;
  }

  async start(): Promise<void> {
    if (this.#starting !== undefined) throw new Error('ProcessGroupStdioTransport already started');
    if (this.#closing !== undefined) throw new TransportLostError('the transport was closed before it started');
    const { command, args = [], cwd, env } = this.#options;
    const spawner = this.#options.spawner ?? spawnInThisThread;
    this.#starting = spawner({ command, args, cwd, env: { ...defaultEnvironment(), ...env } });
    const child = await this.#starting;
    this.#child = child;

    void child.exited.then(({ code, signal }) => {
      this.#exited = true;
      this.#exitInfo = { code, signal: signal as NodeJS.Signals | null };
      // A grandchild that inherited stdout keeps it open, so it may never close: the root's exit
      // is the loss of the server. Give buffered stdout a moment to arrive first.
      setTimeout(() => this.#notifyClose(), 50).unref();
    });
    // Closed: exited, and both output streams closed (what a ChildProcess calls 'close').
    void Promise.all([child.exited, closed(child.stdout), closed(child.stderr)]).then(() => this.#notifyClose());
    child.stdout.on('data', (chunk: Buffer) => {
      this.#reader.push(chunk);
      this.#drainReadBuffer();
    });
    // The end of stdout is the end of every answer: whatever was written before it has been
    // read (a stream emits 'end' after its last 'data'), so calls still waiting are lost now,
    // 10–50 ms before the process's exit is reaped and reported.
    child.stdout.on('end', () => this.#notifyLost());
    child.stdout.on('error', (error) => this.onerror?.(error));
    child.stdin.on('error', (error) => {
      // EPIPE: the child closed its stdin, which a server does only when it is dying.
      if ((error as NodeJS.ErrnoException).code === 'EPIPE') this.#notifyLost();
      else this.onerror?.(error);
    });
    child.stderr.on('error', () => undefined);
    let partial = '';
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.#stderrTail = (this.#stderrTail + text).slice(-STDERR_TAIL_BYTES);
      const onLine = this.#options.onStderrLine;
      if (onLine === undefined) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      if (partial.length > STDERR_TAIL_BYTES) partial = partial.slice(-STDERR_TAIL_BYTES);
      for (const line of lines) if (line.length > 0) onLine(line);
    });
    this.#options.onSpawn?.(child.pid);
  }

  #drainReadBuffer(): void {
    if (this.#delivering) return;
    this.#delivering = true;
    try {
      // Messages are delivered in order, synchronously: a progress notification read in the same
      // chunk as its response reaches its handler before the response settles the request.
      for (let i = 0; i < 1_000_000; i++) {
        const line = this.#reader.next();
        if (line === undefined) return;
        if (typeof line !== 'string') {
          // Over the limit, dropped as it streamed: the call it answers fails, the connection goes on.
          this.#reportOversized(describeOversized(line, this.#maxMessageBytes));
          continue;
        }
        if (line.trim().length === 0) continue;
        let message: JsonRpcMessage;
        try {
          message = parseJsonRpcLine(line);
        } catch (error) {
          // A line that is not JSON-RPC (a banner on stdout): report and keep reading.
          this.onerror?.(error as Error);
          continue;
        }
        // A server-initiated message (a method, no answer to ours) is counted; a notification past
        // the bound is dropped here, read and never waited for, so answers behind it are not held up.
        if (this.#options.readGate?.admit(message) === false) continue;
        this.onmessage?.(message);
      }
    } finally {
      this.#delivering = false;
    }
  }

  #reportOversized(message: OversizedMessage): void {
    if (this.onoversized !== undefined) this.onoversized(message);
    else this.onerror?.(new Error(`dropped a message of ${message.bytes} bytes, over the limit of ${message.limit}`));
  }

  send(message: JsonRpcMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (stdin === undefined || stdin === null || this.#exited || stdin.destroyed || stdin.writableEnded) {
      return Promise.reject(new TransportLostError('the server process is not running'));
    }
    // Each line is written as it is sent, not joined with the rest of its tick: the server starts
    // on a request while the actor is still reading the others of a batch, and under concurrency
    // that overlap is worth more than the syscalls a joined write saves.
    // EPIPE and friends arrive as the stream's 'error' (the child is dying), handled at start.
    if (!stdin.write(`${JSON.stringify(message)}\n`) && this.#drained === undefined) {
      // Never rejects: a stream that fails instead of draining is the child's loss, reported
      // (and every call in flight rejected) by the stream's own 'error' and the end of stdout.
      const clear = (): void => {
        this.#drained = undefined;
      };
      this.#drained = once(stdin, 'drain').then(clear, clear);
    }
    // A full pipe holds new writes back until it drains: the caller's send waits with them.
    return this.#drained ?? RESOLVED;
  }

  /** Resolves when the child has exited (at once if it has), or after `ms`. */
  async waitForExit(ms: number): Promise<boolean> {
    const child = this.#child;
    if (child === undefined || this.#exited) return true;
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([
      child.exited.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
    clearTimeout(timer);
    return exited;
  }

  /**
   * Ends the child and its whole process group: stdin end → wait → SIGTERM the group → wait →
   * SIGKILL the group (spec lifecycle "Shutdown"; the group part is ours). Resolves when the root
   * has exited and the group is empty, or after the SIGKILL grace. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown().finally(() => this.#notifyClose(true));
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    // A close during the start ends the child the start brings, once it is there.
    const child = await this.#starting?.catch(() => undefined);
    if (child === undefined) return;
    const pgid = child.pid;
    const step = this.#options.shutdownStepMs ?? 2000;
    child.stdin.end();
    if (await this.#waitForGroupExit(pgid, step)) return;
    signalGroup(pgid, 'SIGTERM');
    if (await this.#waitForGroupExit(pgid, step)) return;
    signalGroup(pgid, 'SIGKILL');
    await this.#waitForGroupExit(pgid, 1000);
  }

  /** Kills the whole group at once, without the graceful steps (actor teardown on fatal errors). */
  killGroupNow(): void {
    const pid = this.#child?.pid;
    if (pid !== undefined) signalGroup(pid, 'SIGKILL');
  }

  async #waitForGroupExit(pgid: number, budgetMs: number): Promise<boolean> {
    const deadline = Date.now() + budgetMs;
    // Poll: the root's exit is an event, but grandchildren in the group are not our children.
    for (let i = 0; i < 10_000; i++) {
      if (this.#exited && !groupAlive(pgid)) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await delay(Math.min(left, this.#exited ? 10 : 20));
    }
    return false;
  }

  #notifyLost(): void {
    if (this.#lostNotified || this.#closeNotified) return;
    this.#lostNotified = true;
    // Lines still held by the reader are answers that arrived before the end: deliver them first.
    this.#drainReadBuffer();
    this.onlost?.();
    // A wrapper (a shell, npx) can outlive the server it ran: with no stdout there is nothing
    // left to talk to, so the group is ended and the close follows, as when the root exits.
    if (!this.#exited) {
      setTimeout(() => {
        if (!this.#exited) void this.close();
      }, LOST_GRACE_MS).unref();
    }
  }

  #notifyClose(force = false): void {
    if (this.#closeNotified) return;
    // Reported once, to the client, which rejects its pending requests on it.
    if (!this.#exited && !force) return;
    this.#closeNotified = true;
    this.onclose?.();
  }
}

/** True while any process (zombies included) is in group `pgid`. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Signals a whole process group; a group that is already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once `stream` has closed (at once if it has). */
function closed(stream: NodeJS.ReadableStream & { closed?: boolean }): Promise<void> {
  if (stream.closed === true) return Promise.resolve();
  return new Promise<void>((resolve) => stream.once('close', () => resolve()));
}
