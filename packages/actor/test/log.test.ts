/**
 * The actor thread's logger: lines become the records the supervisor writes to the host's logger,
 * as plain data (the control channel clones them), and nothing is built below the level.
 */
import { describe, expect, it } from 'vitest';
import type { LogRecord } from '@mcpool/protocol';
import { createActorLogger } from '../src/log.js';

function recorder(): { records: LogRecord[]; post: (record: LogRecord) => void } {
  const records: LogRecord[] = [];
  return { records, post: (record) => records.push(record) };
}

describe('actor logger', () => {
  it('is silent until a level is set; then lines at or above it leave, folded onto four levels, with every binding', () => {
    const { records, post } = recorder();
    const root = createActorLogger(post, { threadId: 3 });
    root.error({ a: 1 }, 'dropped');
    expect(records).toEqual([]);
    expect(root.isLevelEnabled('error')).toBe(false);

    const logger = root.child({ server: 's', entryIndex: 0 });
    logger.level = 'info';
    expect(logger.level).toBe('info');
    expect(logger.isLevelEnabled('debug')).toBe(false);
    expect(logger.isLevelEnabled('warn')).toBe(true);
    expect(logger.isLevelEnabled('silent')).toBe(false);
    expect(logger.isLevelEnabled('loud')).toBe(false);
    logger.debug({ no: true }, 'below the level');
    logger.info('restarting');
    logger.warn({ reason: 'x' }, 'held back');
    logger.fatal({}, 'died');
    logger.info({ only: 'fields' });
    expect(records).toEqual([
      { level: 'info', msg: 'restarting', fields: { threadId: 3, server: 's', entryIndex: 0 } },
      { level: 'warn', msg: 'held back', fields: { threadId: 3, server: 's', entryIndex: 0, reason: 'x' } },
      { level: 'error', msg: 'died', fields: { threadId: 3, server: 's', entryIndex: 0 } },
      { level: 'info', msg: '', fields: { threadId: 3, server: 's', entryIndex: 0, only: 'fields' } },
    ]);
    // The parent keeps its own level.
    root.error('still silent');
    expect(records).toHaveLength(4);
    expect(() => (logger.level = 'loud')).toThrow(/unknown log level/);
  });

  it('writes fields as plain data: `err` as type, message, stack, own fields and cause; other errors, cycles and bigints as JSON-safe values', () => {
    const { records, post } = recorder();
    const logger = createActorLogger(post);
    logger.level = 'debug';
    const cause = new RangeError('inner');
    const err = Object.assign(new TypeError('outer', { cause }), { code: 'E_X' });
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    const shared = { n: 1 };
    logger.error({ err, error: Object.assign(new Error('plain'), { status: 500 }), cyclic, pair: [shared, shared], big: 10n, fn: () => 1 }, 'failed');
    const [record] = records;
    expect(record?.msg).toBe('failed');
    const fields = record!.fields as Record<string, unknown> & { err: Record<string, unknown> };
    expect(fields.err).toMatchObject({ type: 'TypeError', message: 'outer', code: 'E_X', cause: { type: 'RangeError', message: 'inner' } });
    expect(typeof fields.err.stack).toBe('string');
    expect(fields.error).toEqual({ status: 500 });
    expect(fields.cyclic).toEqual({ name: 'loop', self: '[Circular]' });
    // A value seen twice side by side is no cycle.
    expect(fields.pair).toEqual([{ n: 1 }, { n: 1 }]);
    expect(fields.big).toBe('10');
    expect('fn' in fields).toBe(false);
    // Plain data: what a MessagePort clones without losing anything.
    expect(structuredClone(record)).toEqual(record);
  });

  it('loses only the line when posting throws (the channel is gone)', () => {
    const logger = createActorLogger(() => {
      throw new Error('port closed');
    });
    logger.level = 'info';
    expect(() => logger.info('lost')).not.toThrow();
  });
});
