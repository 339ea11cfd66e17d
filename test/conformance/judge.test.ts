/**
 * How a conformance leg is judged (judge.mjs, used by runNext.mjs): the expected-failures files
 * in this directory parse and give every entry a reason, and a leg's results — the suite's
 * `checks.json` files, written here the way the suite writes them — come out as passed, failed,
 * expected, not scored, missing, and unexpected passes of listed entries.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expectedFailures, judge, readResults, requirementSet } from './judge.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const requirements = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/conformance-next/requirements/', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-judge-'));
  dirs.push(dir);
  return dir;
}

/** Writes `<dir>/<prefix><scenario>-<timestamp>/checks.json` with one check per `[id, status]`. */
function writeChecks(dir: string, prefix: string, scenario: string, checks: [string, string][]): void {
  const at = join(dir, `${prefix}${scenario}-2026-12-02T04-38-36-546Z`);
  mkdirSync(at, { recursive: true });
  writeFileSync(join(at, 'checks.json'), JSON.stringify(checks.map(([id, status]) => ({ id, name: id, status, timestamp: '' }))));
}

function writeYaml(text: string): string {
  const file = join(tempDir(), 'expected.yml');
  writeFileSync(file, text);
  return file;
}

describe('conformance judgement', () => {
  it('reads every expected-failures file of this directory, each entry with a reason and a required scenario of its revision', () => {
    const files = readdirSync(here).filter((name) => /^expected-failures-\d{4}-\d{2}-\d{2}\.yml$/.test(name));
    expect(files.sort()).toEqual(['expected-failures-2025-11-25.yml', 'expected-failures-2026-07-28.yml']);
    for (const name of files) {
      const revision = name.slice('expected-failures-'.length, -'.yml'.length);
      const expected = expectedFailures(join(here, name));
      for (const leg of ['server', 'client'] as const) {
        const set = requirementSet(join(requirements, `${revision}.yaml`), leg);
        for (const [entry, reason] of expected[leg]) {
          expect(set.scored.has(entry.split(':')[0] ?? entry), `${name} ${leg}: ${entry}`).toBe(true);
          expect(reason.length).toBeGreaterThan(10);
        }
      }
    }
  });

  it('refuses an entry without a reason', () => {
    const file = writeYaml('server:\n  - { scenario: tools-list }\n');
    expect(() => expectedFailures(file)).toThrow(/server\[0\] needs a "scenario" and a non-empty "reason"/);
  });

  it('sorts results into passed, failed, expected, not scored and missing, and names unexpected passes', () => {
    const dir = tempDir();
    writeChecks(dir, 'server-', 'ok', [['a', 'SUCCESS'], ['wire-schema-valid', 'SUCCESS']]);
    writeChecks(dir, 'server-', 'broken', [['a', 'FAILURE'], ['b', 'SUCCESS']]);
    writeChecks(dir, 'server-', 'warned', [['a', 'WARNING']]);
    writeChecks(dir, 'server-', 'known', [['a', 'FAILURE'], ['b', 'FAILURE']]);
    writeChecks(dir, 'server-', 'one-check', [['x', 'FAILURE'], ['y', 'SUCCESS']]);
    writeChecks(dir, 'server-', 'one-check-more', [['x', 'FAILURE'], ['y', 'FAILURE']]);
    writeChecks(dir, 'server-', 'fixed', [['a', 'SUCCESS']]);
    writeChecks(dir, 'server-', 'extension-x', [['a', 'FAILURE']]);
    const results = readResults(dir, 'server');
    expect(results.get('broken')).toEqual(['a']);
    expect(results.get('ok')).toEqual([]);

    const expected = expectedFailures(
      writeYaml(
        [
          'server:',
          '  - { scenario: known, reason: a whole scenario excused }',
          '  - { scenario: "one-check:x", reason: one check excused }',
          '  - { scenario: "one-check-more:x", reason: one check excused, another fails }',
          '  - { scenario: fixed, reason: fixed since }',
          '  - { scenario: "ok:z", reason: a check that no longer fails }',
          '  - { scenario: gone, reason: not a required scenario }',
        ].join('\n'),
      ),
    ).server;
    const set = {
      scored: new Set(['ok', 'broken', 'warned', 'known', 'one-check', 'one-check-more', 'fixed', 'never-ran']),
      notScored: new Map([['extension-x', 'extension']]),
    };
    const report = judge(results, expected, set);
    expect(report.passed.sort()).toEqual(['fixed', 'ok']);
    expect(report.failed.sort()).toEqual(['broken (a)', 'one-check-more (y)', 'warned (a)']);
    expect(report.expected.sort()).toEqual(['known', 'one-check']);
    expect(report.missing).toEqual(['never-ran']);
    expect(report.notScored).toEqual(['extension-x']);
    expect(report.notScoredFailing).toEqual(['extension-x']);
    expect(report.unexpectedPasses.sort()).toEqual(['fixed', 'gone (not a required scenario of this revision)', 'ok:z']);
  });

  it('finds a client scenario whose name nests a directory (auth/…)', () => {
    const dir = tempDir();
    writeChecks(dir, '', 'auth/metadata-default', [['a', 'FAILURE']]);
    writeChecks(dir, '', 'tools_call', [['a', 'SUCCESS']]);
    expect([...readResults(dir, 'client').keys()].sort()).toEqual(['auth/metadata-default', 'tools_call']);
  });
});
