/**
 * Our stdio client transport: the child runs in its own process group, so the whole tree an
 * `npx`/`uvx`/shell wrapper starts can be signalled at once. The SDK's `StdioClientTransport`
 * signals only the direct child and leaves wrapper grandchildren orphaned
 * (reference/mcp-spec-facts.md §1.6, SDK issue #2023).
 *
 * This file knows bytes and process lifecycle only; MCP semantics live in the machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface ProcessGroupStdioOptions {
  command: string;
  args?: string[] | undefined;
  cwd?: string | undefined;
  /** Merged over the SDK's minimal default environment (HOME, PATH, …), as the SDK does. */
  env?: Record<string, string> | undefined;
  /** Budget of each shutdown step (stdin end, SIGTERM), in ms. @default 2000 */
  shutdownStepMs?: number | undefined;
  /** Called right after the child started (before any MCP message), with its pid = pgid. */
  onSpawn?: ((pid: number) => void) | undefined;
  /** Called with every stderr line (the pipe is always drained, so a chatty child never blocks). */
  onStderrLine?: ((line: string) => void) | undefined;
}

/** A message could not reach the server because its process is gone or going. */
export class TransportLostError extends Error {
  override name = 'TransportLostError';
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/** How much of the child's stderr is kept for error messages. */
const STDERR_TAIL_BYTES = 4096;

export class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #options: ProcessGroupStdioOptions;
  readonly #readBuffer = new ReadBuffer();
  #child: ChildProcess | undefined;
  #exited = false;
  #exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #stderrTail = '';
  #closing: Promise<void> | undefined;
  #closeNotified = false;
  #delivering = false;

  constructor(options: ProcessGroupStdioOptions) {
    this.#options = options;
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
    if (this.#child !== undefined) throw new Error('ProcessGroupStdioTransport already started');
    const { command, args = [], cwd, env } = this.#options;
    const child = spawn(command, args, {
      cwd,
      env: { ...getDefaultEnvironment(), ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
      // Its own process group: kill(-pgid) reaches every descendant that did not leave the group.
      detached: true,
      windowsHide: true,
    });
    this.#child = child;

    child.on('exit', (code, signal) => {
      this.#exited = true;
      this.#exitInfo = { code, signal };
      // A grandchild that inherited stdout keeps the pipe open, so 'close' may never come: the
      // root's exit is the loss of the server. Give buffered stdout a moment to arrive first.
      setTimeout(() => this.#notifyClose(), 50).unref();
    });
    child.on('close', () => this.#notifyClose());
    child.stdout.on('data', (chunk: Buffer) => {
      this.#readBuffer.append(chunk);
      this.#drainReadBuffer();
    });
    child.stdout.on('error', (error) => this.onerror?.(error));
    child.stdin.on('error', (error) => {
      // EPIPE after the child died is expected; the exit path reports the loss.
      if ((error as NodeJS.ErrnoException).code !== 'EPIPE') this.onerror?.(error);
    });
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

    await new Promise<void>((resolve, reject) => {
      const onSpawn = (): void => {
        child.off('error', onError);
        child.on('error', (error) => this.onerror?.(error));
        if (child.pid !== undefined) this.#options.onSpawn?.(child.pid);
        resolve();
      };
      const onError = (error: Error): void => {
        child.off('spawn', onSpawn);
        reject(error);
      };
      child.once('spawn', onSpawn);
      child.once('error', onError);
    });
  }

  #drainReadBuffer(): void {
    if (this.#delivering) return;
    this.#delivering = true;
    void this.#deliver().finally(() => {
      this.#delivering = false;
    });
  }

  async #deliver(): Promise<void> {
    for (let i = 0; i < 1_000_000; i++) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#readBuffer.readMessage();
      } catch (error) {
        // A line that is not JSON-RPC (a banner on stdout): report and keep reading, as the SDK does.
        this.onerror?.(error as Error);
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
      // The SDK runs notification handlers one microtask late but settles responses at once, so a
      // progress notification read in the same chunk as its response would find its handler gone.
      // Let the notification's handler run before the next message is delivered.
      if (!('id' in message)) await Promise.resolve();
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (stdin === undefined || stdin === null || this.#exited || stdin.destroyed) {
      throw new TransportLostError('the server process is not running');
    }
    const line = serializeMessage(message);
    try {
      if (!stdin.write(line)) await once(stdin, 'drain');
    } catch (error) {
      // EPIPE and friends: the child is dying; the loss itself is reported by its exit.
      throw new TransportLostError(`writing to the server failed: ${(error as Error).message}`, error);
    }
  }

  /** Resolves when the child has exited (at once if it has), or after `ms`. */
  async waitForExit(ms: number): Promise<boolean> {
    const child = this.#child;
    if (child === undefined || this.#exited) return true;
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([
      once(child, 'exit').then(() => true),
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
    const child = this.#child;
    if (child === undefined || child.pid === undefined) return;
    const pgid = child.pid;
    const step = this.#options.shutdownStepMs ?? 2000;
    child.stdin?.end();
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

  #notifyClose(force = false): void {
    if (this.#closeNotified) return;
    // Reported once, to the SDK's Protocol, which rejects its pending requests on it.
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
