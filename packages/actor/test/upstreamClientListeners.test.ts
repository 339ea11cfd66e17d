/**
 * The upstream client's close listeners (the connection machine's watch among them): one that
 * throws is reported through the actor's logger, never swallowed, and the others still hear the
 * close. A real child, killed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ProcessGroupStdioTransport, UpstreamClient } from '@mcpool/actor';
import { expectNoSurvivors, FIXTURES, killMarked, marker } from '../../../test/helpers/processes.js';

const marks: string[] = [];
afterEach(async () => {
  for (const mark of marks.splice(0)) await expectNoSurvivors(mark);
});

describe('UpstreamClient close listeners', () => {
  it('a listener that throws is logged, and the next one still hears the close', async () => {
    const mark = marker('close-listener');
    marks.push(mark);
    const errors: { obj: object; msg: string | undefined }[] = [];
    const transport = new ProcessGroupStdioTransport({ command: process.execPath, args: [FIXTURES + 'echo.mjs', mark], shutdownStepMs: 200 });
    const client = new UpstreamClient(transport, { cancelBy: 'notification', logger: { error: (obj, msg) => errors.push({ obj, msg }) } });
    try {
      await client.start();
      client.onClose(() => {
        throw new Error('the watch broke');
      });
      const heard = new Promise<void>((resolve) => client.onClose(() => resolve()));
      expect(killMarked(mark)).toBeGreaterThan(0);
      await heard;
      expect(errors).toHaveLength(1);
      expect(errors[0]!.msg).toBe('a close listener of the upstream client threw');
      expect((errors[0]!.obj as { err?: Error }).err?.message).toBe('the watch broke');
    } finally {
      await client.close();
    }
  });
});
