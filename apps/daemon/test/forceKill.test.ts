/**
 * The forced exit kills, from one synchronous ps snapshot, every process this one started: a
 * child in its own process group, that child's children, and a grandchild that left for a
 * group of its own (setsid) — real processes, found again by their marker afterwards.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import { killDescendantsSync } from '../src/forceKill.js';
import { killMarked, marker, pidsWithMarker } from '../../../test/helpers/processes.js';

const marks: string[] = [];
afterEach(() => {
  for (const mark of marks.splice(0)) killMarked(mark);
});

describe('killDescendantsSync', () => {
  it.skipIf(process.platform === 'win32')('ends children, grandchildren and a setsid grandchild in another group', async () => {
    const mark = marker('forcekill');
    marks.push(mark);
    // $0 is the marker in every bash of the tree (`; :` keeps each bash from exec-ing its sleep);
    // setsid gives the last one a group of its own.
    const child = spawn('bash', ['--norc', '-c', `bash -c 'sleep 60; :' ${mark} & setsid bash -c 'sleep 60; :' ${mark} & wait`, mark], { detached: true, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await vi.waitFor(() => expect(pidsWithMarker(mark).length).toBeGreaterThanOrEqual(3), { timeout: 10_000, interval: 20 });

    expect(killDescendantsSync()).toBeGreaterThanOrEqual(3);

    await exited;
    await vi.waitFor(() => expect(pidsWithMarker(mark)).toEqual([]), { timeout: 10_000, interval: 20 });
  });
});
