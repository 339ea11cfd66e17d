/**
 * The client capability each server→client request needs, for both eras: a client answers
 * `sampling/createMessage`, `elicitation/create` and `roots/list` only when it declared
 * `sampling`, `elicitation` or `roots` (a `null` declaration declares nothing); any other request
 * of a server no client capability covers.
 */
import type { Params } from './json.js';

const CAPABILITY_OF: Readonly<Record<string, string>> = { 'sampling/createMessage': 'sampling', 'elicitation/create': 'elicitation', 'roots/list': 'roots' };

const declared = (capabilities: Params | undefined, kind: string): boolean => capabilities?.[kind] !== undefined && capabilities[kind] !== null;

/**
 * Why a client with `capabilities` cannot take the server's `method`, or undefined when it can:
 * "the caller did not declare the sampling capability".
 * @param who the client, for the reason: "the caller", "the session's client".
 */
export function undeclared(method: string, capabilities: Params | undefined, who: string): string | undefined {
  const capability = CAPABILITY_OF[method];
  return capability !== undefined && declared(capabilities, capability) ? undefined : `${who} did not declare the ${capability ?? method} capability`;
}

/** Whether `capabilities` declare anything a server→client request needs. */
export function takesServerRequests(capabilities: Params | undefined): boolean {
  return Object.values(CAPABILITY_OF).some((kind) => declared(capabilities, kind));
}
