/**
 * A session's filter over a shared server: `includeTools` / `excludeTools` (exclude wins) applied
 * to tools and prompts alike — a prompt left unfiltered would reach the shared client around a
 * restriction (an earlier pool filtered tools only). Resources are not filtered.
 */
import type { PromptInfo, SessionTool, ToolInfo } from '@mcpool/protocol';

export interface SessionFields {
  includeTools?: string[] | undefined;
  excludeTools?: string[] | undefined;
  trust?: boolean | undefined;
}

export class SessionFilter {
  readonly #include: Set<string> | undefined;
  readonly #exclude: Set<string>;
  readonly trust: boolean;

  constructor(fields: SessionFields = {}) {
    // An include entry may carry an argument restriction, `name(args)`: the name part selects.
    this.#include = fields.includeTools ? new Set(fields.includeTools.map((entry) => entry.replace(/\(.*\)$/s, '').trim())) : undefined;
    this.#exclude = new Set(fields.excludeTools ?? []);
    this.trust = fields.trust ?? false;
  }

  allows(name: string): boolean {
    if (this.#exclude.has(name)) return false;
    return this.#include === undefined || this.#include.has(name);
  }

  /** This session's tools: filtered, each a fresh object carrying the session's trust. */
  tools(shared: readonly ToolInfo[]): SessionTool[] {
    const out: SessionTool[] = [];
    for (const tool of shared) if (this.allows(tool.name)) out.push({ ...tool, trust: this.trust });
    return out;
  }

  prompts(shared: readonly PromptInfo[]): PromptInfo[] {
    return shared.filter((prompt) => this.allows(prompt.name));
  }
}
