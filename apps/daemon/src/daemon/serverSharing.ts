/**
 * What the daemon learns and remembers about sharing its servers, beside the rule itself
 * (`sharingDefaults.ts`):
 * - whether a config's tools all declared `readOnlyHint` when it last started, by fingerprint
 *   (bounded: the oldest verdict goes first; a config that comes back is learned again);
 * - whose entry the warm hold keeps, by server name: the operator's at first, then the principal
 *   whose session used the server while no one else used the held entry — so a per-principal
 *   server keeps one entry warm for whoever uses it, not one for nobody. Forgotten when its server
 *   leaves the config.
 */
import type { SharingDefaultInfo } from '@mcpool/core';
import { fingerprint, type ServerConfig, type SharingPolicy, type ToolInfo } from '@mcpool/protocol';
import { OPERATOR_ID } from '../auth.js';
import { allToolsReadOnly, decideSharing, type SharingDecision } from './sharingDefaults.js';

/** Tool verdicts kept (one per config fingerprint started; reloads add new ones). */
const VERDICTS_KEPT = 512;

export class ServerSharing {
  readonly #readOnly = new Map<string, boolean>();
  readonly #holders = new Map<string, string>();

  /** The pool's `defaultSharing`: the policy of a config without `sharing`. */
  readonly policyOf = (info: SharingDefaultInfo): SharingPolicy => this.decision(info.config, info.fingerprintEra).policy;

  /** The policy `config` gets and why: its own `sharing`, else the default for what is known of it. */
  decision(config: ServerConfig, era: 'legacy' | 'modern' | undefined): SharingDecision {
    if (config.sharing !== undefined) return { policy: config.sharing, reason: 'set in its config' };
    return decideSharing({ config, fingerprintEra: era }, this.#readOnly.get(fingerprint(config)));
  }

  /** Remembers what a start of `config` listed. */
  learnTools(config: ServerConfig, tools: readonly ToolInfo[]): void {
    const fp = fingerprint(config);
    this.#readOnly.delete(fp);
    this.#readOnly.set(fp, allToolsReadOnly(tools));
    if (this.#readOnly.size > VERDICTS_KEPT) this.#readOnly.delete(this.#readOnly.keys().next().value!);
  }

  /** The principal whose entry of `name` the warm hold keeps. */
  holderOf(name: string): string {
    return this.#holders.get(name) ?? OPERATOR_ID;
  }

  setHolder(name: string, principal: string): void {
    if (principal === OPERATOR_ID) this.#holders.delete(name);
    else this.#holders.set(name, principal);
  }

  /** `name` left the config. */
  forget(name: string): void {
    this.#holders.delete(name);
  }
}
