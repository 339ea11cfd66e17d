// Types for judge.mjs, so TypeScript tests can import it.

export type Leg = 'server' | 'client';
export declare const LEGS: readonly Leg[];

export interface ExpectedFailures {
  file: string;
  /** Entry (a scenario, or `<scenario>:<check-id>`) → its reason. */
  server: Map<string, string>;
  client: Map<string, string>;
}
export declare function expectedFailures(file: string): ExpectedFailures;

export interface RequirementSet {
  scored: Set<string>;
  /** Scenario → why it is not scored. */
  notScored: Map<string, string>;
}
export declare function requirementSet(file: string, leg: Leg): RequirementSet;

/** Scenario → the ids of its failing (FAILURE or WARNING) checks; empty when it passed. */
export declare function readResults(dir: string, leg: Leg): Map<string, string[]>;

export interface LegReport {
  passed: string[];
  /** `<scenario> (<failing check ids>)`. */
  failed: string[];
  expected: string[];
  /** Expected-failure entries whose scenario or check passed, or that name no required scenario. */
  unexpectedPasses: string[];
  notScored: string[];
  notScoredFailing: string[];
  /** Required scenarios with no checks.json. */
  missing: string[];
}
export declare function judge(results: Map<string, string[]>, expected: Map<string, string>, set: RequirementSet): LegReport;
