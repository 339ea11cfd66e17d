/**
 * The secret rule: which config values are secrets, and scrubbing that rewrites values only —
 * never keys, never the JSON around them — so no value, however chosen, can break a message.
 */
import { describe, expect, it } from 'vitest';
import { SecretSet, classifySecret, secretSetOf, secretsOfConfig } from '@mcpool/protocol/secrets';

describe('which values are secrets', () => {
  it('long values are, except under the well-known names that never hold one', () => {
    expect(classifySecret('DATABASE_URL', 'postgres://u:p@db/x')).toEqual({ value: 'postgres://u:p@db/x', wholeWord: false });
    expect(classifySecret('HOME', '/home/bob')).toBeUndefined();
    expect(classifySecret('NODE_ENV', 'production')).toBeUndefined();
    expect(classifySecret('LC_ALL', 'en_US.UTF-8')).toBeUndefined();
    expect(classifySecret('Accept', 'application/json')).toBeUndefined();
    // A path is where something is: not a secret unless its name says so.
    expect(classifySecret('WORKSPACE_DIR', '/home/bob/project')).toBeUndefined();
    expect(classifySecret('ROOT', 'C:\\Users\\bob\\src')).toBeUndefined();
    expect(classifySecret('KEY_FILE', '/home/bob/.ssh/id_ed25519')).toEqual({ value: '/home/bob/.ssh/id_ed25519', wholeWord: false });
    expect(classifySecret('DSN', '/db?password=hunter22')).toEqual({ value: '/db?password=hunter22', wholeWord: false });
  });

  it('short values are secrets only when their name says so, matched as whole words; too short ones are reported', () => {
    expect(classifySecret('SHORTPIN', '1234567')).toEqual({ value: '1234567', wholeWord: true });
    expect(classifySecret('X-Api-Key', 'abcd')).toEqual({ value: 'abcd', wholeWord: true });
    expect(classifySecret('DEBUG', 'true')).toBeUndefined();
    // A name part must end in the word: a count of tokens is not a token.
    expect(classifySecret('MAX_TOKENS', '4096')).toBeUndefined();
    expect(classifySecret('clientSecret', 'abcd')).toEqual({ value: 'abcd', wholeWord: true });
    expect(classifySecret('PIN', '12')).toBe('too-short');
    const found = secretsOfConfig({ env: { PIN: '12', LEVEL: 'info', TOKEN: 'abcdef' }, headers: { Authorization: 'Bearer tok-1234567890' }, oauth: { clientSecret: 'cs-0123456789' } });
    expect(found.unprotected).toEqual(['env.PIN']);
    expect(found.secrets.map((s) => s.value).sort()).toEqual(['Bearer tok-1234567890', 'abcdef', 'cs-0123456789', 'tok-1234567890']);
  });
});

describe('scrubbing', () => {
  const poison = new SecretSet([
    { value: '"jsonrpc":"2.0"', wholeWord: false },
    { value: 'protocolVersion', wholeWord: false },
    { value: '{"initialized":true,', wholeWord: false },
    { value: '1234567', wholeWord: true },
  ]);

  it('rewrites values only: keys and the JSON around them stay, whatever the secrets hold', () => {
    const message = { jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-11-25', text: 'say protocolVersion and "jsonrpc":"2.0"', n: 1234567 } };
    const scrubbed = poison.scrubMessage(message);
    expect(scrubbed).toEqual({ jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-11-25', text: 'say [redacted] and [redacted]', n: 1234567 } });
    expect(JSON.parse(poison.stringify(message))).toEqual(scrubbed);
  });

  it('matches a short secret as a whole word only', () => {
    expect(poison.scrubText('pin 1234567, not 12345678 or x1234567')).toBe('pin [redacted], not 12345678 or x1234567');
  });

  it('returns what holds no secret as is, and keeps a "__proto__" key an own property', () => {
    const clean = { a: ['x', { b: 'y' }] };
    expect(poison.scrubValue(clean)).toBe(clean);
    const tricky = JSON.parse('{"__proto__": "protocolVersion"}') as Record<string, unknown>;
    const out = poison.scrubValue(tricky);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(out['__proto__']).toBe('[redacted]');
  });

  it('a config with no secret scrubs nothing', () => {
    const set = secretSetOf({ env: { HOME: '/home/bob', NODE_ENV: 'production' } });
    expect(set.size).toBe(0);
    const message = { result: { text: 'deploy to production from /home/bob/project' } };
    expect(set.scrubMessage(message)).toBe(message);
  });
});
