/**
 * `logging/setLevel` against one shared upstream: each legacy session filters at its own level,
 * the upstream gets the most verbose level any session asked for.
 */
import { describe, expect, it } from 'vitest';
import { UpstreamLogLevels, passes } from '../src/legacy/logLevels.js';

describe('log levels', () => {
  it('a session filters at its own level; upstream gets the most verbose level asked for', () => {
    expect(passes('info', undefined)).toBe(true);
    expect(passes('info', 'error')).toBe(false);
    expect(passes('critical', 'error')).toBe(true);
    const levels = new UpstreamLogLevels();
    expect(levels.set('entry', 'a', 'error')).toBe('error');
    expect(levels.set('entry', 'b', 'debug')).toBe('debug');
    // Less verbose than what upstream has: nothing to send.
    expect(levels.set('entry', 'c', 'warning')).toBeUndefined();
    // A reconnected upstream knows no level: send it again.
    expect(levels.reset('entry')).toBe('debug');
    levels.forget('b');
    expect(levels.set('entry', 'a', 'error')).toBe('warning');
  });
});
