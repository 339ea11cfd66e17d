/**
 * The operator token file (created 0600 in a 0700 state dir, reused, tightened), MCPOOL_TOKEN,
 * and the constant-time token registry with rights.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@mcpool/protocol';
import { TokenRegistry, ensureOperatorToken } from 'mcpool';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcpool-auth-'));
  dirs.push(dir);
  return join(dir, 'state', 'mcpool');
}

describe('ensureOperatorToken', () => {
  it('creates a random token 0600 in a 0700 directory on first run, then reads the same one back', async () => {
    const dir = stateDir();
    const first = await ensureOperatorToken(dir, {});
    expect(first).toMatchObject({ source: 'file', created: true, path: join(dir, 'token') });
    expect(first.token.length).toBeGreaterThanOrEqual(32);
    expect(statSync(join(dir, 'token')).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(dir, 'token'), 'utf8').trim()).toBe(first.token);
    const second = await ensureOperatorToken(dir, {});
    expect(second).toMatchObject({ token: first.token, created: false, tightened: false });
  });

  it('tightens a token file others can read', async () => {
    const dir = stateDir();
    const { token } = await ensureOperatorToken(dir, {});
    chmodSync(join(dir, 'token'), 0o644);
    expect(await ensureOperatorToken(dir, {})).toMatchObject({ token, tightened: true });
    expect(statSync(join(dir, 'token')).mode & 0o777).toBe(0o600);
  });

  it('takes MCPOOL_TOKEN instead, writing nothing, and refuses a short one', async () => {
    const dir = stateDir();
    expect(await ensureOperatorToken(dir, { MCPOOL_TOKEN: 'a-long-enough-token-value' })).toMatchObject({ token: 'a-long-enough-token-value', source: 'env' });
    expect(() => statSync(join(dir, 'token'))).toThrow();
    await expect(ensureOperatorToken(dir, { MCPOOL_TOKEN: 'short' })).rejects.toBeInstanceOf(ConfigError);
  });

  it('refuses a token file that is too short to be safe', async () => {
    const dir = stateDir();
    await ensureOperatorToken(dir, {});
    writeFileSync(join(dir, 'token'), 'abc\n');
    await expect(ensureOperatorToken(dir, {})).rejects.toThrow(/at least 16/);
  });
});

describe('TokenRegistry', () => {
  it('identifies each token’s principal with its rights; write includes read', () => {
    const registry = new TokenRegistry([
      { id: 'operator', token: 'operator-token-0000', rights: ['read', 'write'] },
      { id: 'viewer', token: 'viewer-token-00000', rights: ['read'] },
      { id: 'writer', token: 'writer-token-00000', rights: ['write'] },
    ]);
    expect(registry.identify('viewer-token-00000')).toMatchObject({ id: 'viewer' });
    expect([...registry.identify('viewer-token-00000')!.rights]).toEqual(['read']);
    expect([...registry.identify('writer-token-00000')!.rights].sort()).toEqual(['read', 'write']);
    expect(registry.identify('viewer-token-0000')).toBeUndefined();
    expect(registry.identify('')).toBeUndefined();
  });

  it('forgets replaced tokens (reload rotates client tokens)', () => {
    const registry = new TokenRegistry([{ id: 'a', token: 'old-token-000000000', rights: ['read'] }]);
    registry.replace([{ id: 'a', token: 'new-token-000000000', rights: ['read'] }]);
    expect(registry.identify('old-token-000000000')).toBeUndefined();
    expect(registry.identify('new-token-000000000')?.id).toBe('a');
  });
});
