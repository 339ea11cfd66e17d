/**
 * What a connection thread shares with the supervisor so that the supervisor can tell, without
 * waiting for an answer, whether the thread's event loop turns: an `Int32Array` over a
 * `SharedArrayBuffer` handed to the thread at its creation (`workerData.liveness`).
 *
 * - `beats`: bumped by the thread each time its loop handles a {@link BEAT} message. The
 *   supervisor posts one only when it saw no other sign of the loop turning (idle time).
 * - `threadId`: the kernel's id of the thread (Linux: from `/proc/thread-self`), 0 where unknown;
 *   the supervisor reads the thread's CPU time and state by it.
 *
 * Plain data with no import, so the actor thread can take it without loading anything else.
 */
export const LIVENESS_CELLS = { beats: 0, threadId: 1, length: 2 } as const;

/** The message that asks a connection thread to bump its `beats` cell. */
export const BEAT = { k: 'beat' } as const;

/** Whether `message` is {@link BEAT}. */
export function isBeat(message: unknown): boolean {
  return typeof message === 'object' && message !== null && (message as { k?: unknown }).k === BEAT.k;
}
