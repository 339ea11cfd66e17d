// How runNext.mjs judges one leg of a conformance run: its expected-failures file, the suite's
// requirement set for the revision, and the `checks.json` files the suite wrote. Pure reading and
// counting, no process: judge.test.ts covers it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse as parseYaml } from 'yaml';

export const LEGS = ['server', 'client'];

/**
 * The expected failures in `file` (one revision's): `{ server: Map<entry, reason>, client: Map<entry, reason> }`.
 * An entry is a scenario name or `<scenario>:<check-id>` (the suite's own syntax); each must have
 * a reason, so the list says why and can be pruned knowingly.
 */
export function expectedFailures(file) {
  const doc = parseYaml(readFileSync(file, 'utf8')) ?? {};
  const out = {};
  for (const leg of LEGS) {
    out[leg] = new Map();
    for (const [i, item] of (doc[leg] ?? []).entries()) {
      if (typeof item?.scenario !== 'string' || typeof item.reason !== 'string' || item.reason.trim() === '') {
        throw new Error(`${file}: ${leg}[${i}] needs a "scenario" and a non-empty "reason"`);
      }
      out[leg].set(item.scenario, item.reason.trim());
    }
  }
  return { file, ...out };
}

/** From a suite requirements file (`requirements/<revision>.yaml`): what one leg requires (scored) and runs without scoring. */
export function requirementSet(file, leg) {
  const doc = parseYaml(readFileSync(file, 'utf8'));
  return {
    scored: new Set(doc[leg] ?? []),
    notScored: new Map((doc.not_scored ?? []).filter((e) => e.leg === leg).map((e) => [e.scenario, e.reason])),
  };
}

/**
 * Per scenario, the ids of its failing checks (FAILURE or WARNING: the suite's baseline mode
 * counts a warning as a failure), read from the `checks.json` files the suite writes under `dir`
 * (`[server-]<scenario>-<timestamp>/checks.json`; a scenario named `auth/x` nests a directory).
 */
export function readResults(dir, leg) {
  const results = new Map();
  const walk = (at) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(at, entry.name);
      const checksFile = join(path, 'checks.json');
      if (!existsSync(checksFile)) {
        walk(path);
        continue;
      }
      const name = relative(dir, path).replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '').replace(leg === 'server' ? /^server-/ : /^$/, '');
      const checks = JSON.parse(readFileSync(checksFile, 'utf8'));
      results.set(name, checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map((c) => c.id));
    }
  };
  if (existsSync(dir)) walk(dir);
  return results;
}

/**
 * Judges one leg's results against its expected failures. A scored scenario is: passed (no failing
 * check), expected (every failing check is excused, by the scenario's own entry or by
 * `<scenario>:<check>` entries), or failed. A listed scenario that passed is an unexpected pass.
 */
export function judge(results, expected, set) {
  const report = { passed: [], failed: [], expected: [], unexpectedPasses: [], notScored: [], notScoredFailing: [], missing: [] };
  for (const name of set.scored) {
    const failing = results.get(name);
    if (failing === undefined) {
      report.missing.push(name);
      continue;
    }
    const excused = (check) => expected.has(name) || expected.has(`${name}:${check}`);
    const entries = [...expected.keys()].filter((k) => k === name || k.startsWith(`${name}:`));
    if (failing.length === 0) {
      report.passed.push(name);
      report.unexpectedPasses.push(...entries);
    } else if (failing.every(excused)) {
      report.expected.push(name);
      const stale = [...expected.keys()].filter((k) => k.startsWith(`${name}:`) && !failing.includes(k.slice(name.length + 1)));
      report.unexpectedPasses.push(...stale);
    } else {
      report.failed.push(`${name} (${failing.filter((c) => !excused(c)).join(', ')})`);
    }
  }
  for (const name of set.notScored.keys()) {
    const failing = results.get(name);
    if (failing === undefined) continue;
    report.notScored.push(name);
    if (failing.length > 0) report.notScoredFailing.push(name);
  }
  for (const key of expected.keys()) {
    const name = key.split(':')[0];
    if (!set.scored.has(name)) report.unexpectedPasses.push(`${key} (not a required scenario of this revision)`);
  }
  return report;
}
