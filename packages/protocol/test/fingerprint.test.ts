import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KNOWN_CONFIG_FIELDS, normalizeServerConfig, type ServerConfig } from '../src/config.js';
import { ErrorCode, PoolError } from '../src/errors.js';
import {
  DEFAULT_POOLED_TRANSPORTS,
  HASHED_FIELDS,
  HOST_FIELDS,
  POOL_KEY_FIELDS,
  SESSION_FIELDS,
  connectionIdOf,
  fingerprint,
  isPoolable,
  parseConnectionId,
  sessionFieldsOf,
} from '../src/fingerprint.js';

/** Raw fields that normalisation consumes and that never reach a ServerConfig. */
const INPUT_ONLY_FIELDS = ['type', 'disabled'];

const base: ServerConfig = {
  transport: 'stdio',
  command: 'npx',
  args: ['-y', '@modelcontextprotocol/server-github'],
  env: { GITHUB_TOKEN: 'ghp_one', LOG_LEVEL: 'info' },
};

// Every ServerConfig field set (the type is Required, so a new field must appear here).
const full: Required<ServerConfig> = {
  transport: 'http',
  command: 'node',
  args: ['server.js'],
  cwd: '/srv',
  env: { A: '1', B: '2' },
  url: 'https://example.com/mcp',
  httpUrl: 'https://example.com/stream',
  headers: { Authorization: 'Bearer one', 'X-Team': 'core' },
  timeout: 30_000,
  maxMessageBytes: 64 * 1024 * 1024,
  oauth: { enabled: true, clientId: 'id', scopes: ['read', 'write'] },
  sharing: 'shared',
  start: 'eager',
  idleStopMs: 60_000,
  includeTools: ['a'],
  excludeTools: ['b'],
  trust: false,
  description: 'first',
};

// A different value for every field, so each one can be changed in turn.
const changed: Required<ServerConfig> = {
  transport: 'websocket',
  command: 'deno',
  args: ['server.ts'],
  cwd: '/srv2',
  env: { A: '1', B: '3' },
  url: 'https://example.com/mcp2',
  httpUrl: 'https://example.com/stream2',
  headers: { Authorization: 'Bearer two', 'X-Team': 'core' },
  timeout: 60_000,
  maxMessageBytes: 1024 * 1024,
  oauth: { enabled: true, clientId: 'id', scopes: ['read'] },
  sharing: 'per-session',
  start: 'lazy',
  idleStopMs: 0,
  includeTools: ['c'],
  excludeTools: ['d'],
  trust: true,
  description: 'second',
};

const HEX16 = /^[0-9a-f]{16}$/;

describe('fingerprint', () => {
  it('is 16 lowercase hex chars and deterministic', () => {
    expect(fingerprint(base)).toMatch(HEX16);
    expect(fingerprint(base)).toBe(fingerprint(base));
  });

  it('gives structurally equal objects the same key', () => {
    expect(fingerprint(structuredClone(full))).toBe(fingerprint(full));
  });

  it('ignores the order of env and header keys', () => {
    const reordered: ServerConfig = {
      ...full,
      env: { B: '2', A: '1' },
      headers: { 'X-Team': 'core', Authorization: 'Bearer one' },
    };
    expect(fingerprint(reordered)).toBe(fingerprint(full));
  });

  it('ignores the order of top-level keys', () => {
    const reversed = Object.fromEntries(Object.entries(full).reverse()) as unknown as ServerConfig;
    expect(fingerprint(reversed)).toBe(fingerprint(full));
  });

  it('changes when one byte of an env value changes', () => {
    expect(fingerprint({ ...base, env: { ...base.env, GITHUB_TOKEN: 'ghp_onf' } })).not.toBe(fingerprint(base));
  });

  it('changes with a different Authorization header', () => {
    const remote: ServerConfig = { transport: 'http', url: 'https://api.example.com/mcp', headers: { Authorization: 'Bearer a' } };
    expect(fingerprint({ ...remote, headers: { Authorization: 'Bearer b' } })).not.toBe(fingerprint(remote));
  });

  it('keeps the key when only per-session fields change', () => {
    const session: ServerConfig = { ...base, includeTools: ['x'], excludeTools: ['y'], trust: true, description: 'mine' };
    expect(fingerprint(session)).toBe(fingerprint(base));
  });

  it('treats empty args, env and headers as absent, but keeps argv order significant', () => {
    const bare: ServerConfig = { transport: 'stdio', command: 'srv' };
    expect(fingerprint({ ...bare, args: [], env: {}, headers: {} })).toBe(fingerprint(bare));
    expect(fingerprint({ ...bare, args: ['a', 'b'] })).not.toBe(fingerprint({ ...bare, args: ['b', 'a'] }));
  });

  it('keeps an empty env value distinct from an absent variable', () => {
    const bare: ServerConfig = { transport: 'stdio', command: 'srv' };
    expect(fingerprint({ ...bare, env: { DEBUG: '' } })).not.toBe(fingerprint(bare));
  });

  it('does not confuse a value boundary with a key boundary', () => {
    const a: ServerConfig = { ...base, env: { AB: 'C' } };
    const b: ServerConfig = { ...base, env: { A: 'BC' } };
    expect(fingerprint(a)).not.toBe(fingerprint(b));
  });

  describe('OAuth', () => {
    const remote: ServerConfig = { transport: 'http', url: 'https://api.example.com/mcp' };

    it('treats undefined, null, {} and {enabled:false} as no OAuth', () => {
      const none = fingerprint(remote);
      for (const oauth of [undefined, null, {}, { enabled: false }, { enabled: false, clientId: 'x' }, { scopes: [] }]) {
        expect(fingerprint({ ...remote, oauth: oauth as ServerConfig['oauth'] })).toBe(none);
      }
    });

    it('distinguishes enabled OAuth from none', () => {
      expect(fingerprint({ ...remote, oauth: { enabled: true } })).not.toBe(fingerprint(remote));
    });

    it('ignores the order of scopes and audiences', () => {
      const a = { ...remote, oauth: { enabled: true, scopes: ['b', 'a'], audiences: ['y', 'x'] } };
      const b = { ...remote, oauth: { audiences: ['x', 'y'], scopes: ['a', 'b'], enabled: true } };
      expect(fingerprint(a)).toBe(fingerprint(b));
    });

    it('hashes every OAuth field, secrets and URLs included', () => {
      const oauth = { enabled: true, clientId: 'id' };
      const keyed = fingerprint({ ...remote, oauth });
      for (const extra of [
        { clientSecret: 's' },
        { audiences: ['aud'] },
        { redirectUri: 'http://localhost/cb' },
        { tokenParamName: 'tok' },
        { registrationUrl: 'https://r' },
        { authorizationUrl: 'https://a' },
        { tokenUrl: 'https://t' },
      ]) {
        expect(fingerprint({ ...remote, oauth: { ...oauth, ...extra } })).not.toBe(keyed);
      }
    });
  });

  it('is invariant under key reordering of env and headers (property)', () => {
    const entries = fc.uniqueArray(fc.tuple(fc.string(), fc.string()), { selector: ([key]) => key, maxLength: 8 });
    const permuted = entries.chain((list) =>
      fc.tuple(fc.constant(list), fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length })),
    );
    fc.assert(
      fc.property(permuted, permuted, ([env, envShuffled], [headers, headersShuffled]) => {
        const a: ServerConfig = { ...base, env: Object.fromEntries(env), headers: Object.fromEntries(headers) };
        const b: ServerConfig = { ...base, env: Object.fromEntries(envShuffled), headers: Object.fromEntries(headersShuffled) };
        expect(fingerprint(b)).toBe(fingerprint(a));
      }),
    );
  });
});

describe('field classification', () => {
  const classes: readonly (readonly string[])[] = [HASHED_FIELDS, SESSION_FIELDS, POOL_KEY_FIELDS, HOST_FIELDS];
  const classified = new Set<string>(classes.flat());

  it('hashes, declares per-session or folds into the pool key every field, each in one class only', () => {
    expect(classes.flat()).toHaveLength(classified.size);
    expect([...classified].sort()).toEqual(Object.keys(full).sort());
  });

  it('classifies every raw field the schema knows (or lists it as input-only)', () => {
    const unclassified = KNOWN_CONFIG_FIELDS.filter((field) => !classified.has(field) && !INPUT_ONLY_FIELDS.includes(field));
    expect(unclassified).toEqual([]);
  });

  it('classifies every field normalisation can emit', () => {
    const raw = { ...full, command: undefined, args: undefined, cwd: undefined, env: undefined, url: undefined };
    const { config } = normalizeServerConfig(raw, { env: {} });
    for (const field of Object.keys(config)) expect(classified).toContain(field);
    // The raw entry above exercised most of the schema; the rest are stdio-only.
    const stdio = normalizeServerConfig({ ...full, transport: 'stdio', url: undefined, httpUrl: undefined }, { env: {} }).config;
    for (const field of Object.keys(stdio)) expect(classified).toContain(field);
  });

  it.each(HASHED_FIELDS)('changing hashed field %s changes the key', (field) => {
    expect(fingerprint({ ...full, [field]: changed[field] })).not.toBe(fingerprint(full));
  });

  // The pool appends these to the fingerprint itself (core's pool tests show they split entries).
  it.each(POOL_KEY_FIELDS)('changing pool-key field %s keeps the fingerprint', (field) => {
    expect(fingerprint({ ...full, [field]: changed[field] })).toBe(fingerprint(full));
    expect(fingerprint({ ...full, [field]: undefined })).toBe(fingerprint(full));
  });

  // Read by the host (when to start and stop the server), never by the pool.
  it.each(HOST_FIELDS)('changing host field %s keeps the fingerprint', (field) => {
    expect(fingerprint({ ...full, [field]: changed[field] })).toBe(fingerprint(full));
    expect(fingerprint({ ...full, [field]: undefined })).toBe(fingerprint(full));
  });

  it.each(SESSION_FIELDS)('changing session field %s keeps the key', (field) => {
    expect(fingerprint({ ...full, [field]: changed[field] })).toBe(fingerprint(full));
    expect(fingerprint({ ...full, [field]: undefined })).toBe(fingerprint(full));
  });
});

describe('connection ids', () => {
  const fp = fingerprint(base);

  it('round-trips a name containing ::', () => {
    const id = connectionIdOf('ext::github', fp);
    expect(id).toBe(`ext::github::${fp}`);
    expect(parseConnectionId(id)).toEqual({ name: 'ext::github', fingerprint: fp });
  });

  it('keeps ext and ext::github apart', () => {
    expect(parseConnectionId(connectionIdOf('ext', fp)).name).toBe('ext');
    expect(parseConnectionId(connectionIdOf('ext::github', fp)).name).toBe('ext::github');
  });

  it('parses a name ending in a colon', () => {
    expect(parseConnectionId(`a:::${fp}`)).toEqual({ name: 'a:', fingerprint: fp });
  });

  it.each(['', 'github', `::${fp}`, 'github::', 'github::XYZ', `github::${fp.toUpperCase()}`, `github::${fp}0`])(
    'rejects the malformed id %j',
    (id) => {
      expect(() => parseConnectionId(id)).toThrow(PoolError);
      try {
        parseConnectionId(id);
      } catch (error) {
        expect((error as PoolError).code).toBe(ErrorCode.INVALID_ARGUMENT);
      }
    },
  );

  it('refuses to build an id it could not parse', () => {
    expect(() => connectionIdOf('', fp)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    expect(() => connectionIdOf('github', 'not-hex')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
  });
});

describe('isPoolable', () => {
  it('pools stdio and websocket by default', () => {
    expect(DEFAULT_POOLED_TRANSPORTS).toEqual(['stdio', 'websocket']);
    expect(isPoolable({ transport: 'stdio', command: 'x' })).toBe(true);
    expect(isPoolable({ transport: 'websocket', url: 'wss://x' })).toBe(true);
    expect(isPoolable({ transport: 'http', url: 'https://x' })).toBe(false);
    expect(isPoolable({ transport: 'sse', url: 'https://x' })).toBe(false);
  });

  it('pools http only when the operator opts in', () => {
    expect(isPoolable({ transport: 'http', url: 'https://x' }, ['stdio', 'http'])).toBe(true);
    expect(isPoolable({ transport: 'websocket', url: 'wss://x' }, ['stdio', 'http'])).toBe(false);
  });
});

describe('sessionFieldsOf', () => {
  it('returns only the per-session fields that are set', () => {
    expect(sessionFieldsOf(full)).toEqual({ includeTools: ['a'], excludeTools: ['b'], trust: false, description: 'first' });
    expect(sessionFieldsOf({ ...base, trust: true })).toEqual({ trust: true });
    expect(sessionFieldsOf(base)).toEqual({});
  });
});
