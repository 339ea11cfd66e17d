/**
 * A modern server's own `requestState`, bound to the caller it was given to. A server shared by
 * several principals cannot tell them apart, so a state it minted for one would continue the call
 * for whoever sends it back. The gateway hands the caller an envelope instead:
 * `mcpool.u1.<HMAC-SHA256>.<the server's state>`, the MAC over the caller (principal), the
 * endpoint, the method, the tool or prompt name (a resource's URI) as the caller wrote it, and the
 * state, under a key made per router.
 *
 * Rules:
 * - An `input_required` result of a modern server leaves with its `requestState` enveloped.
 * - A retry to a modern server goes upstream with the server's state, byte for byte, only when its
 *   envelope opens under the retry's own caller, endpoint, method and name; a state that is not an
 *   envelope (a bare server state, another caller's, an altered one) is refused before anything
 *   is sent, with the same -32602 as any refused `requestState`.
 * - Nothing is held here: the envelope carries the state, so a retry needs no memory of the first
 *   round (and a router that closed forgets nothing).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Binding } from './continuations.js';

/** The prefix of an enveloped upstream state (the gateway's own continuations use `mcpool.1.`). */
const ENVELOPE_PREFIX = 'mcpool.u1.';
/** A base64url HMAC-SHA256 is 43 characters. */
const MAC_LENGTH = 43;

export class UpstreamStates {
  readonly #keys: readonly Uint8Array[];

  /** @param keys the first wraps, all open. @default one random key */
  constructor(keys: readonly Uint8Array[] = []) {
    this.#keys = keys.length > 0 ? keys : [randomBytes(32)];
  }

  /** The envelope of `state`, a modern server's own, for the caller `binding` describes. */
  wrap(state: string, binding: Binding): string {
    return `${ENVELOPE_PREFIX}${this.#mac(this.#keys[0]!, state, binding)}.${state}`;
  }

  /** The server's state inside `envelope`, if it was wrapped here for `binding`; else undefined (refused). */
  open(envelope: unknown, binding: Binding): string | undefined {
    if (typeof envelope !== 'string' || !envelope.startsWith(ENVELOPE_PREFIX)) return undefined;
    const rest = envelope.slice(ENVELOPE_PREFIX.length);
    if (rest.length <= MAC_LENGTH || rest[MAC_LENGTH] !== '.') return undefined;
    const state = rest.slice(MAC_LENGTH + 1);
    const given = Buffer.from(rest.slice(0, MAC_LENGTH));
    for (const key of this.#keys) {
      const expected = Buffer.from(this.#mac(key, state, binding));
      if (given.length === expected.length && timingSafeEqual(given, expected)) return state;
    }
    return undefined;
  }

  #mac(key: Uint8Array, state: string, binding: Binding): string {
    const bound = JSON.stringify([binding.principal, binding.scope ?? null, binding.method, binding.name, state]);
    return createHmac('sha256', key).update(bound).digest('base64url');
  }
}
