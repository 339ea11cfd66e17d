/**
 * Continuations: a legacy server's request (sampling, elicitation, roots) during a modern caller's
 * call, offered to the caller as `input_required`, and the retry that answers it.
 *
 * Rules:
 * - The pool attributes the server's request to one call; that call's answer becomes
 *   `input_required`, the request under the key `upstream`, with a `requestState` minted here,
 *   and the server's request waits for the retry. A call offers one request at a time, and only
 *   one its caller declared the capability for; any other is refused to the server.
 * - A minted `requestState` is bound to what it continues — the caller (principal), the endpoint,
 *   the method, the tool or prompt name (a resource's URI) as the caller wrote it — and to its
 *   call: `mcpool.1.<call id>.<HMAC-SHA256 of all of it>` under a key made per router. The id is
 *   random (or the host's own, `mintId`: it ends at the last `.`, as the HMAC, base64url, has none), so the state says
 *   nothing a caller could read, and nobody without the key can make, alter or move one.
 * - A retry continues a call only when its state opens under the retry's own caller, endpoint,
 *   method and name, and names a call held here that no other retry is waiting on. Anything else
 *   — a forged state, a state of another tool or server, a state whose call is over — is refused
 *   with one -32602 and one message (`requestStateRefused`), whichever check failed.
 * - A call whose answer came while its caller had input to give keeps the answer for the retry
 *   for `graceMs`, then is forgotten (its timer never keeps the host alive).
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { ErrorCode, JsonRpcCode, PoolError } from '@mcpool/protocol';
import { serverRequestRefused } from '@mcpool/protocol/refusals';
import type { Sink } from './answers.js';
import { undeclared } from '../clientCapabilities.js';

type Params = Record<string, unknown>;

/** The prefix of a `requestState` minted here (a modern server's own states never start with it). */
const STATE_PREFIX = 'mcpool.1.';
/** The key of the one input request a call offers per round. */
export const INPUT_KEY = 'upstream';

/** What a continuation continues: who asked, on which endpoint, which method, which name. */
export interface Binding {
  principal: string;
  /** `/mcp/<server>`'s server; undefined for the aggregating endpoint. */
  scope: string | undefined;
  method: string;
  /** The tool or prompt name as the caller wrote it, or the resource URI. */
  name: string;
}

/** A modern caller's call in flight upstream; between two of its HTTP requests it may wait for the caller's input. */
export interface PendingCall {
  readonly binding: Binding;
  /** What the caller declared (a server request it did not declare is refused). */
  readonly capabilities: Params;
  /** Set when the call is first offered input: its state names it. */
  id: string | undefined;
  /** The HTTP request that gets the call's next answer (none while the caller has input to give). */
  sink: Sink | undefined;
  /** The call's answer, when it came while no request was waiting for it. */
  settled: { message: Record<string, unknown>; status: number } | undefined;
  /** The server's request waiting for the caller's input. */
  asked: { resolve: (result: Params) => void; reject: (error: unknown) => void } | undefined;
  timer: NodeJS.Timeout | undefined;
}

export interface ContinuationsOptions {
  /** How long a call's answer waits for a retry that has not come yet. @default 60000 */
  graceMs?: number;
  /**
   * The id of a call offered input, for `principal`: a host of several replicas seals its own
   * name into it, so that a retry landing on another replica can be sent here. It must not be
   * guessable. @default a random UUID
   */
  mintId?(principal: string): string;
}

export class Continuations {
  /** Calls offered input, by id, until their answer reached a retry (or the grace passed). */
  readonly #calls = new Map<string, PendingCall>();
  /** Seals the states minted here: a new key per router. */
  readonly #key = randomBytes(32);
  readonly #graceMs: number;
  readonly #mintId: (principal: string) => string;

  constructor(options: ContinuationsOptions = {}) {
    this.#graceMs = options.graceMs ?? 60_000;
    this.#mintId = options.mintId === undefined ? () => randomUUID() : (principal) => options.mintId!(principal);
  }

  /** Calls held for a retry (offered input, not yet answered to one). */
  get size(): number {
    return this.#calls.size;
  }

  /** Whether `state` is one minted here (else it is a server's own, or nobody's). */
  static minted(state: unknown): state is string {
    return typeof state === 'string' && state.startsWith(STATE_PREFIX);
  }

  /** The call id a state minted here names (what a host's `mintId` made), unchecked: the seal is checked where the call is held. */
  static callIdOf(state: string): string | undefined {
    if (!Continuations.minted(state)) return undefined;
    const rest = state.slice(STATE_PREFIX.length);
    const dot = rest.lastIndexOf('.');
    return dot > 0 ? rest.slice(0, dot) : undefined;
  }

  /** A call forwarded now, answering `sink`; it may be offered input later. */
  begin(binding: Binding, capabilities: Params, sink: Sink): PendingCall {
    return { binding, capabilities, id: undefined, sink, settled: undefined, asked: undefined, timer: undefined };
  }

  /**
   * The server's request the pool attributed to `call`: the call's answer becomes
   * `input_required`, and the request waits for the retry (or for the server to cancel it).
   */
  offer(call: PendingCall, request: { method: string; params: Params }, signal: AbortSignal): Promise<Params> {
    const sink = call.sink;
    if (sink === undefined || call.asked !== undefined) return Promise.reject(serverRequestRefused(request.method, 'its call is waiting for its caller’s answer to another request'));
    const why = undeclared(request.method, call.capabilities, 'the caller');
    if (why !== undefined) return Promise.reject(serverRequestRefused(request.method, why));
    return new Promise<Params>((resolve, reject) => {
      call.asked = { resolve, reject };
      signal.addEventListener(
        'abort',
        () => {
          if (call.asked?.resolve !== resolve) return;
          call.asked = undefined;
          reject(new PoolError(ErrorCode.CALL_CANCELLED, `${request.method} was cancelled by the server`));
        },
        { once: true },
      );
      call.id ??= this.#mintId(call.binding.principal);
      this.#calls.set(call.id, call);
      call.sink = undefined;
      const inputRequests = { [INPUT_KEY]: { method: request.method, params: request.params } };
      sink.finish({ jsonrpc: '2.0', id: sink.id, result: { resultType: 'input_required', inputRequests, requestState: this.#seal(call.id, call.binding) } }, 200);
    });
  }

  /** The call's answer: to the request waiting for it, or kept for the retry a while. */
  settle(call: PendingCall, message: Record<string, unknown>, status: number): void {
    if (call.sink !== undefined) {
      call.sink.finish(message, status);
      if (call.id !== undefined) this.#calls.delete(call.id);
      return;
    }
    // Its caller was offered input and has not retried yet: the answer waits for the retry.
    call.settled = { message, status };
    call.timer = setTimeout(() => this.#calls.delete(call.id!), this.#graceMs);
    call.timer.unref();
  }

  /**
   * A retry carrying a state minted here, on the request `binding` describes: the caller's input
   * goes to the server's waiting request, and `sink` gets the call's next answer.
   * @returns false when the state continues no call of this binding (the caller is refused).
   */
  resume(state: string, binding: Binding, inputResponses: Params, sink: Sink): boolean {
    const call = this.#open(state, binding);
    if (call === undefined || call.sink !== undefined) return false;
    call.sink = sink;
    clearTimeout(call.timer);
    if (call.settled !== undefined) {
      this.#calls.delete(call.id!);
      sink.finish(call.settled.message, call.settled.status);
      return true;
    }
    const asked = call.asked;
    if (asked === undefined) return true;
    call.asked = undefined;
    const response = inputResponses[INPUT_KEY];
    if (typeof response !== 'object' || response === null || Array.isArray(response)) {
      asked.reject(new PoolError(ErrorCode.DOWNSTREAM_ERROR, `the client answered without inputResponses.${INPUT_KEY}`, { data: { mcpCode: JsonRpcCode.INVALID_PARAMS } }));
    } else {
      asked.resolve(response as Params);
    }
    return true;
  }

  /** Forgets every held call (the router is closing). */
  clear(): void {
    for (const call of this.#calls.values()) clearTimeout(call.timer);
    this.#calls.clear();
  }

  #mac(id: string, binding: Binding): string {
    const bound = JSON.stringify([binding.principal, binding.scope ?? null, binding.method, binding.name, id]);
    return createHmac('sha256', this.#key).update(bound).digest('base64url');
  }

  #seal(id: string, binding: Binding): string {
    return `${STATE_PREFIX}${id}.${this.#mac(id, binding)}`;
  }

  /** The call `state` continues, if it was minted here for `binding`. */
  #open(state: string, binding: Binding): PendingCall | undefined {
    const id = Continuations.callIdOf(state);
    if (id === undefined) return undefined;
    const mac = state.slice(STATE_PREFIX.length + id.length + 1);
    const expected = Buffer.from(this.#mac(id, binding));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const call = this.#calls.get(id);
    if (call === undefined) return undefined;
    const bound = call.binding;
    return bound.principal === binding.principal && bound.scope === binding.scope && bound.method === binding.method && bound.name === binding.name ? call : undefined;
  }
}
