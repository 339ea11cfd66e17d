/**
 * Zod issues → `{path, expected, received}` issues that say what was expected and never echo the
 * value received (config values and request bodies carry secrets).
 */
import type { z } from 'zod';

export interface Issue {
  path: string;
  expected: string;
  received: string;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && Number.isNaN(value)) return 'not a number';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

export function joinPath(base: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc === '' ? String(key) : `${acc}.${String(key)}`), base);
}

/** Zod issues → config issues that name what was expected and never echo a value. */
export function issuesFrom(error: z.ZodError, base: string | ((path: readonly PropertyKey[]) => string)): Issue[] {
  return error.issues.map((issue) => {
    const path = typeof base === 'string' ? joinPath(base, issue.path) : base(issue.path);
    const input = (issue as { input?: unknown }).input;
    switch (issue.code) {
      case 'invalid_type':
        return { path, expected: issue.expected === 'int' ? 'an integer' : `${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}`, received: `got ${kindOf(input)}` };
      case 'too_small':
        return { path, expected: issue.origin === 'array' ? `at least ${String(issue.minimum)} item(s)` : issue.origin === 'string' ? 'a non-empty string' : `a number >= ${String(issue.minimum)}`, received: typeof input === 'number' ? `got ${input}` : 'got less' };
      case 'too_big':
        return { path, expected: `a number <= ${String(issue.maximum)}`, received: typeof input === 'number' ? `got ${input}` : 'got more' };
      case 'invalid_value':
        return { path, expected: `one of ${issue.values.map((v) => JSON.stringify(v)).join(' | ')}`, received: 'got another value' };
      case 'unrecognized_keys':
        return { path, expected: 'only known settings', received: `got unknown key(s) ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` };
      case 'invalid_format':
        return { path, expected: path.endsWith('tokenEnv') ? 'an environment variable name' : 'an identifier of letters, digits, _ . -', received: 'got another string' };
      default:
        return { path, expected: 'a valid value', received: 'got an invalid one' };
    }
  });
}

