/**
 * The envelope of a modern server's own `requestState`: it opens only under the binding it was
 * wrapped for, and under any key of the set it was wrapped with (replicas sharing keys, rotation).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { UpstreamStates } from '../src/modern/upstreamStates.js';

const alice = { principal: 'alice', scope: undefined, method: 'tools/call', name: 'dual__confirm' };

describe('upstream state envelopes', () => {
  it('open to the server’s state only for the binding they were wrapped for', () => {
    const states = new UpstreamStates();
    const envelope = states.wrap('v1.server.state', alice);
    expect(states.open(envelope, alice)).toBe('v1.server.state');
    for (const other of [{ ...alice, principal: 'bob' }, { ...alice, scope: 'dual' }, { ...alice, method: 'prompts/get' }, { ...alice, name: 'dual__other' }]) {
      expect(states.open(envelope, other)).toBeUndefined();
    }
    expect(states.open('v1.server.state', alice)).toBeUndefined();
    expect(states.open(envelope.replace('v1.server.state', 'v1.server.statf'), alice)).toBeUndefined();
    expect(new UpstreamStates().open(envelope, alice)).toBeUndefined();
  });

  it('replicas given the same keys open each other’s, and a rotated-in key still opens the old one', () => {
    const [oldKey, newKey] = [randomBytes(32), randomBytes(32)];
    const envelope = new UpstreamStates([oldKey]).wrap('s', alice);
    expect(new UpstreamStates([oldKey]).open(envelope, alice)).toBe('s');
    expect(new UpstreamStates([newKey, oldKey]).open(envelope, alice)).toBe('s');
    expect(new UpstreamStates([newKey]).open(envelope, alice)).toBeUndefined();
  });
});
